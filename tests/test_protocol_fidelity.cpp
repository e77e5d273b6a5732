// The `fidelity` topic (docs/protocol.md): a report survives encode -> wire -> decode bit for bit
// (NaN summaries as null), and every malformed message is refused with a ProtocolError naming
// what is wrong, never a crash.
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "protocol/fidelity_topic.hpp"
#include "protocol/message.hpp"

using namespace livedrp::protocol;
using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

FidelityReport sample_report() {
  FidelityReport r;
  r.sequence = 4242;
  r.pulse_id = 123'456'789'000ULL;
  r.codec = "lossy";
  r.error_bound = 0.5;
  r.samples = 12;
  r.skipped = 3;
  r.failed = 0;
  r.samples_hz = 2;
  r.stream_bytes = 1'000'000;
  r.uncompressed_bytes = 8'650'752;
  r.max_pixel_error = 0.4999;
  r.evaluation_ms = 312.5;
  r.has_profile = true;
  r.unit = RadialUnit::QInverseNm;
  for (int bin = 0; bin < 6; ++bin) {
    r.centres.push_back(0.5 + bin);
    r.original.push_back(100.0 / (bin + 1));
    r.decompressed.push_back(100.0 / (bin + 1) + 0.01 * bin);
    r.relative.push_back((r.decompressed.back() - r.original.back()) / r.original.back());
  }
  r.original[5] = r.decompressed[5] = r.relative[5] = kNaN;  // a bin without pixels
  r.compared_bins = 5;
  r.max_abs_relative = 0.0025;
  r.mean_abs_relative = 0.001;
  r.rms_relative = 0.0012;
  r.has_peaks = true;
  r.params_version = 2;
  r.match_radius_px = 2;
  r.found_original = 25;
  r.found_decompressed = 24;
  r.peaks_original = 22;
  r.peaks_decompressed = 21;
  r.kept = 20;
  r.lost = 2;
  r.added = 1;
  r.recall = 20.0 / 22;
  r.precision = 20.0 / 21;
  r.mean_shift_px = 0.125;
  r.max_shift_px = 0.75;
  return r;
}

Message through_the_wire(const Message& message) {
  const std::vector<std::string> parts = encode(message);
  return decode(std::vector<std::string_view>(parts.begin(), parts.end()));
}

bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::isnan(a[i]) ? !std::isnan(b[i]) : a[i] != b[i]) return false;
  return true;
}

bool same(double a, double b) {
  return std::isnan(a) ? std::isnan(b) : a == b;
}

// The error text of decoding `message`; empty when it decodes.
QString refusal(const Message& message) {
  try {
    fidelity_from_message(message);
  } catch (const ProtocolError& error) {
    return QString::fromUtf8(error.what());
  }
  return {};
}

// The sample's message with `change` applied to it after encoding.
Message altered(const std::function<void(Message&)>& change) {
  Message message = make_fidelity_message(sample_report());
  change(message);
  return message;
}

}  // namespace

class TestProtocolFidelity : public QObject {
  Q_OBJECT
 private slots:
  void a_report_survives_the_wire_field_for_field() {
    const FidelityReport sent = sample_report();
    const Message message = through_the_wire(make_fidelity_message(sent));
    QCOMPARE(message.topic, std::string(kTopicFidelity));
    QCOMPARE(message.sequence, sent.sequence);
    QCOMPARE(message.frames.size(), std::size_t(4));
    const FidelityReport got = fidelity_from_message(message);
    QCOMPARE(got.sequence, sent.sequence);
    QCOMPARE(got.pulse_id, sent.pulse_id);
    QCOMPARE(got.codec, sent.codec);
    QCOMPARE(got.error_bound, sent.error_bound);
    QCOMPARE(got.samples, sent.samples);
    QCOMPARE(got.skipped, sent.skipped);
    QCOMPARE(got.samples_hz, sent.samples_hz);
    QCOMPARE(got.stream_bytes, sent.stream_bytes);
    QCOMPARE(got.uncompressed_bytes, sent.uncompressed_bytes);
    QCOMPARE(got.max_pixel_error, sent.max_pixel_error);
    QCOMPARE(got.evaluation_ms, sent.evaluation_ms);
    QCOMPARE(got.unit, sent.unit);
    QVERIFY(same_values(got.centres, sent.centres));
    QVERIFY(same_values(got.original, sent.original));
    QVERIFY(same_values(got.decompressed, sent.decompressed));
    QVERIFY(same_values(got.relative, sent.relative));
    QCOMPARE(got.compared_bins, sent.compared_bins);
    QCOMPARE(got.max_abs_relative, sent.max_abs_relative);
    QCOMPARE(got.rms_relative, sent.rms_relative);
    QCOMPARE(got.params_version, sent.params_version);
    QCOMPARE(got.kept, sent.kept);
    QCOMPARE(got.lost, sent.lost);
    QCOMPARE(got.added, sent.added);
    QCOMPARE(got.recall, sent.recall);
    QCOMPARE(got.precision, sent.precision);
    QCOMPARE(got.mean_shift_px, sent.mean_shift_px);
    QCOMPARE(got.max_shift_px, sent.max_shift_px);
  }

  void undefined_shares_and_shifts_travel_as_null() {
    FidelityReport r = sample_report();
    r.peaks_original = r.found_original = 0;
    r.peaks_decompressed = r.found_decompressed = 3;
    r.kept = r.lost = 0;
    r.added = 3;
    r.recall = kNaN;
    r.precision = 0;
    r.mean_shift_px = r.max_shift_px = kNaN;
    const Message message = make_fidelity_message(r);
    QVERIFY(message.payload.at("recall").is_null());
    QVERIFY(message.payload.at("mean_shift_px").is_null());
    const FidelityReport got = fidelity_from_message(through_the_wire(message));
    QVERIFY(std::isnan(got.recall));
    QCOMPARE(got.precision, 0.0);
    QVERIFY(same(got.max_shift_px, kNaN));
  }

  void a_report_without_profile_has_no_frames_and_one_without_peaks_no_peak_fields() {
    FidelityReport r = sample_report();
    r.has_profile = false;
    Message message = make_fidelity_message(r);
    QVERIFY(message.frames.empty());
    QVERIFY(!message.payload.contains("bins"));
    QVERIFY(!fidelity_from_message(through_the_wire(message)).has_profile);
    r = sample_report();
    r.has_peaks = false;
    message = make_fidelity_message(r);
    QVERIFY(!message.payload.contains("kept"));
    QVERIFY(!fidelity_from_message(through_the_wire(message)).has_peaks);
  }

  void lossless_reports_carry_a_zero_bound() {
    FidelityReport r = sample_report();
    r.codec = "lossless";
    r.error_bound = 0;
    QCOMPARE(fidelity_from_message(make_fidelity_message(r)).codec, std::string("lossless"));
    r.error_bound = 0.5;
    QVERIFY_THROWS_EXCEPTION(ProtocolError, make_fidelity_message(r));
  }

  void malformed_messages_are_refused_naming_the_field() {
    const struct {
      const char* expected;  // a piece of the error text
      std::function<void(Message&)> change;
    } cases[] = {
        {"payload", [](Message& m) { m.payload = json::array(); }},
        {"codec", [](Message& m) { m.payload["codec"] = "zstd"; }},
        {"codec", [](Message& m) { m.payload.erase("codec"); }},
        {"error_bound", [](Message& m) { m.payload["error_bound"] = -1; }},
        {"error_bound", [](Message& m) { m.payload["error_bound"] = nullptr; }},
        {"samples", [](Message& m) { m.payload["samples"] = -3; }},
        {"samples", [](Message& m) { m.payload["samples"] = "many"; }},
        {"samples_hz", [](Message& m) { m.payload["samples_hz"] = 0; }},
        {"max_pixel_error", [](Message& m) { m.payload["max_pixel_error"] = -0.5; }},
        {"has_profile", [](Message& m) { m.payload["has_profile"] = 1; }},
        {"frames", [](Message& m) { m.frames.pop_back(); }},
        {"frames", [](Message& m) { m.payload["has_profile"] = false; }},
        {"bins", [](Message& m) { m.payload["bins"] = 0; }},
        {"shape", [](Message& m) { m.payload["bins"] = 5; }},
        {"unit", [](Message& m) { m.payload["unit"] = "furlongs"; }},
        {"float64", [](Message& m) { m.frames[3].dtype = DType::Int32; }},
        {"centres", [](Message& m) { std::memset(m.frames[0].data.data(), 0, 16); }},
        {"relative[1] is infinite",
         [](Message& m) {
           const double inf = std::numeric_limits<double>::infinity();
           std::memcpy(m.frames[3].data.data() + sizeof(double), &inf, sizeof(double));
         }},
        {"compared_bins", [](Message& m) { m.payload["compared_bins"] = 7; }},
        {"max_abs_relative", [](Message& m) { m.payload["max_abs_relative"] = nullptr; }},
        {"max_abs_relative", [](Message& m) { m.payload["compared_bins"] = 0; }},
        {"lost", [](Message& m) { m.payload["lost"] = 5; }},
        {"added", [](Message& m) { m.payload["added"] = 0; }},
        {"kept", [](Message& m) { m.payload["kept"] = 18446744073709551615ULL; }},
        {"found_original", [](Message& m) { m.payload["found_original"] = 1; }},
        {"recall", [](Message& m) { m.payload["recall"] = 1.5; }},
        {"recall", [](Message& m) { m.payload["recall"] = nullptr; }},
        {"precision", [](Message& m) { m.payload["precision"] = "high"; }},
        {"max_shift_px", [](Message& m) { m.payload["max_shift_px"] = 3.0; }},
        {"match_radius_px", [](Message& m) { m.payload["match_radius_px"] = 0; }},
        {"has_profile and has_peaks",
         [](Message& m) {
           m.payload["has_profile"] = false;
           m.payload["has_peaks"] = false;
           m.frames.clear();
         }},
        {"topic", [](Message& m) { m.topic = "profile"; }},
    };
    for (const auto& c : cases) {
      const QString error = refusal(altered(c.change));
      QVERIFY2(!error.isEmpty(), c.expected);
      QVERIFY2(error.contains(QLatin1String(c.expected)),
               qPrintable(QStringLiteral("expected '%1' in: %2").arg(c.expected, error)));
    }
  }

  void the_encoder_refuses_a_report_that_does_not_add_up() {
    FidelityReport r = sample_report();
    r.kept = 30;  // more than either list holds
    QVERIFY_THROWS_EXCEPTION(ProtocolError, make_fidelity_message(r));
    r = sample_report();
    r.relative.pop_back();
    QVERIFY_THROWS_EXCEPTION(ProtocolError, make_fidelity_message(r));
  }
};

QTEST_GUILESS_MAIN(TestProtocolFidelity)
#include "test_protocol_fidelity.moc"
