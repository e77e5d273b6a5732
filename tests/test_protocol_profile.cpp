// The `profile` topic (docs/protocol.md): a radial profile survives encode -> wire -> decode bit
// for bit, and every malformed profile is refused with an error naming what is wrong.
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "protocol/message.hpp"
#include "protocol/profile_topic.hpp"

using namespace livedrp::protocol;
using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

RadialProfile sample_profile() {
  RadialProfile profile;
  profile.unit = RadialUnit::QInverseAngstrom;
  profile.sequence = 123'456;
  profile.pulse_id = 987'654'321'000ULL;
  profile.average_window = 100;
  profile.average_events = 37;
  for (int bin = 0; bin < 10; ++bin) {
    profile.centres.push_back(0.05 + 0.1 * bin);
    profile.latest.push_back(1000.0 / (1 + bin) + 0.125);
    profile.average.push_back(900.0 / (1 + bin) - 0.375);
  }
  profile.latest[4] = kNaN;  // a fully masked ring: no pixel, not zero
  return profile;
}

Message through_the_wire(const Message& message) {
  const std::vector<std::string> parts = encode(message);
  return decode(std::vector<std::string_view>(parts.begin(), parts.end()));
}

bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) != std::isnan(b[i])) return false;
    if (!std::isnan(a[i]) && a[i] != b[i]) return false;
  }
  return true;
}

Frame float32_frame(const std::vector<double>& values) {
  Frame frame;
  frame.dtype = DType::Float32;
  frame.shape = {values.size()};
  frame.data.resize(values.size() * sizeof(float));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float value = float(values[i]);
    std::memcpy(frame.data.data() + i * sizeof(float), &value, sizeof(float));
  }
  return frame;
}

void set_double(Frame& frame, std::size_t index, double value) {
  std::memcpy(frame.data.data() + index * sizeof(double), &value, sizeof(double));
}

struct BadCase {
  const char* name;
  std::function<void(Message&)> spoil;
  const char* expected;  // part of the error text
};

}  // namespace

class ProtocolProfileTest : public QObject {
  Q_OBJECT

 private slots:
  void roundTripKeepsEveryFieldAndValue() {
    const RadialProfile original = sample_profile();
    Message message = make_profile_message(original);
    message.run = 42;
    const Message decoded = through_the_wire(message);
    QCOMPARE(decoded.topic, std::string("profile"));
    QCOMPARE(decoded.run, std::int64_t(42));
    // The header names the latest event.
    QCOMPARE(decoded.sequence, original.sequence);
    QCOMPARE(decoded.pulse_id, original.pulse_id);
    QVERIFY(decoded.time_ns > 0);

    const RadialProfile profile = profile_from_message(decoded);
    QCOMPARE(profile.unit, RadialUnit::QInverseAngstrom);
    QCOMPARE(profile.sequence, original.sequence);
    QCOMPARE(profile.pulse_id, original.pulse_id);
    QCOMPARE(profile.average_window, std::uint64_t(100));
    QCOMPARE(profile.average_events, std::uint64_t(37));
    QVERIFY(same_values(profile.centres, original.centres));
    QVERIFY(same_values(profile.latest, original.latest));
    QVERIFY(same_values(profile.average, original.average));
    QVERIFY(std::isnan(profile.latest[4]));
  }

  void payloadAndFramesAreWhatTheDocumentSays() {
    const Message message = make_profile_message(sample_profile());
    QCOMPARE(message.payload.at("unit").get<std::string>(), std::string("q_A^-1"));
    QCOMPARE(message.payload.at("bins").get<std::uint64_t>(), std::uint64_t(10));
    QCOMPARE(message.payload.at("average_window").get<std::uint64_t>(), std::uint64_t(100));
    QCOMPARE(message.payload.at("average_events").get<std::uint64_t>(), std::uint64_t(37));
    QCOMPARE(message.frames.size(), std::size_t(3));
    for (const Frame& frame : message.frames) {
      QCOMPARE(frame.dtype, DType::Float64);
      QCOMPARE(frame.shape, std::vector<std::uint64_t>{10});
    }
    double first_centre = 0;
    std::memcpy(&first_centre, message.frames[0].data.data(), sizeof(double));
    QCOMPARE(first_centre, 0.05);
  }

  void float32FramesAreAccepted() {
    // A Python client sending numpy float32 arrays.
    const RadialProfile original = sample_profile();
    Message message = make_profile_message(original);
    message.frames = {float32_frame(original.centres), float32_frame(original.latest),
                      float32_frame(original.average)};
    const RadialProfile profile = profile_from_message(through_the_wire(message));
    QCOMPARE(profile.centres.size(), std::size_t(10));
    QCOMPARE(profile.centres[3], double(float(original.centres[3])));
    QCOMPARE(profile.average[9], double(float(original.average[9])));
    QVERIFY(std::isnan(profile.latest[4]));
  }

  void everyUnitHasItsPyFaiName() {
    QCOMPARE(all_radial_units().size(), std::size_t(4));
    QCOMPARE(to_string(RadialUnit::TwoThetaDeg), std::string_view("2th_deg"));
    QCOMPARE(to_string(RadialUnit::QInverseNm), std::string_view("q_nm^-1"));
    QCOMPARE(to_string(RadialUnit::QInverseAngstrom), std::string_view("q_A^-1"));
    QCOMPARE(to_string(RadialUnit::RadiusMm), std::string_view("r_mm"));
    for (const RadialUnit unit : all_radial_units()) {
      QCOMPARE(radial_unit_from_string(to_string(unit)), unit);
      RadialProfile profile = sample_profile();
      profile.unit = unit;
      QCOMPARE(profile_from_message(through_the_wire(make_profile_message(profile))).unit, unit);
    }
    QVERIFY_THROWS_EXCEPTION(ProtocolError, radial_unit_from_string("q_furlong^-1"));
  }

  void malformedProfilesAreRefusedWithTheFieldNamed() {
    const std::vector<BadCase> cases = {
        {"payload not an object",
         [](Message& m) {
           m.payload = json::array({1, 2});
         },
         "the payload must be a JSON object"},
        {"unit missing", [](Message& m) { m.payload.erase("unit"); }, "field 'unit' is missing"},
        {"unit unknown", [](Message& m) { m.payload["unit"] = "chi_deg"; },
         "field 'unit' must be one of \"2th_deg\", \"q_nm^-1\", \"q_A^-1\", \"r_mm\", got "
         "string 'chi_deg'"},
        {"unit not a string", [](Message& m) { m.payload["unit"] = 2; },
         "field 'unit' must be a string"},
        {"bins missing", [](Message& m) { m.payload.erase("bins"); }, "field 'bins' is missing"},
        {"bins zero", [](Message& m) { m.payload["bins"] = 0; },
         "field 'bins' must be in 1..65536"},
        {"bins negative", [](Message& m) { m.payload["bins"] = -10; },
         "field 'bins' must not be negative"},
        {"bins not an integer", [](Message& m) { m.payload["bins"] = 10.5; },
         "field 'bins' must be a non-negative integer"},
        {"bins beyond the limit", [](Message& m) { m.payload["bins"] = 1'000'000; },
         "field 'bins' must be in 1..65536, got 1000000"},
        {"bins disagree with the frames", [](Message& m) { m.payload["bins"] = 11; },
         "frame 0 (centres) must have shape [11] (payload 'bins'), got [10]"},
        {"average_window missing", [](Message& m) { m.payload.erase("average_window"); },
         "field 'average_window' is missing"},
        {"average_window zero", [](Message& m) { m.payload["average_window"] = 0; },
         "average_window must be at least 1"},
        {"average_events missing", [](Message& m) { m.payload.erase("average_events"); },
         "field 'average_events' is missing"},
        {"average_events zero", [](Message& m) { m.payload["average_events"] = 0; },
         "average_events must be in 1..average_window (100), got 0"},
        {"average_events above the window", [](Message& m) { m.payload["average_events"] = 101; },
         "average_events must be in 1..average_window (100), got 101"},
        {"a frame missing", [](Message& m) { m.frames.pop_back(); },
         "needs 3 frames (centres, latest, average), got 2"},
        {"a frame too many", [](Message& m) { m.frames.push_back(m.frames[0]); },
         "needs 3 frames (centres, latest, average), got 4"},
        {"latest shorter than the bins",
         [](Message& m) {
           m.frames[1].shape = {9};
           m.frames[1].data.resize(9 * sizeof(double));
         },
         "frame 1 (latest) must have shape [10] (payload 'bins'), got [9]"},
        {"average two-dimensional",
         [](Message& m) {
           m.frames[2].shape = {2, 5};
         },
         "frame 2 (average) must have shape [10] (payload 'bins'), got [2, 5]"},
        {"centres as integers",
         [](Message& m) {
           m.frames[0].dtype = DType::Int64;  // same byte size, wrong meaning
         },
         "frame 0 (centres) must be float64 or float32, got int64"},
        {"a centre not a number", [](Message& m) { set_double(m.frames[0], 3, kNaN); },
         "centres[3] is not a finite number"},
        {"a centre infinite",
         [](Message& m) { set_double(m.frames[0], 9, std::numeric_limits<double>::infinity()); },
         "centres[9] is not a finite number"},
        {"centres not increasing", [](Message& m) { set_double(m.frames[0], 6, 0.1); },
         "centres[6] = 0.100000 does not increase on 0.550000"},
        {"centres repeated", [](Message& m) { set_double(m.frames[0], 1, 0.05); },
         "centres[1] = 0.050000 does not increase"},
        {"an intensity infinite",
         [](Message& m) { set_double(m.frames[2], 2, -std::numeric_limits<double>::infinity()); },
         "average[2] is infinite"},
        {"another topic", [](Message& m) { m.topic = "stats"; }, "topic is 'stats', not 'profile'"},
    };
    for (const BadCase& bad : cases) {
      Message message = make_profile_message(sample_profile());
      bad.spoil(message);
      try {
        profile_from_message(message);
        QFAIL(qPrintable(QStringLiteral("accepted: %1").arg(bad.name)));
      } catch (const ProtocolError& error) {
        const QString text = QString::fromUtf8(error.what());
        QVERIFY2(text.contains(QString::fromUtf8(bad.expected)),
                 qPrintable(QStringLiteral("%1: got \"%2\"").arg(bad.name, text)));
        QVERIFY2(text.startsWith(QStringLiteral("profile ")), qPrintable(text));
      }
    }
  }

  void aFrameWhoseBytesDoNotMatchItsShapeIsRefusedOnTheWire() {
    std::vector<std::string> parts = encode(make_profile_message(sample_profile()));
    parts[3].resize(parts[3].size() - 8);  // latest loses its last value
    try {
      decode(std::vector<std::string_view>(parts.begin(), parts.end()));
      QFAIL("decode accepted a short frame");
    } catch (const ProtocolError& error) {
      QVERIFY2(QString::fromUtf8(error.what()).contains(QStringLiteral("part 3")), error.what());
    }
  }

  void theEncoderRefusesWhatTheDecoderWould() {
    RadialProfile empty;
    QVERIFY_THROWS_EXCEPTION(ProtocolError, make_profile_message(empty));
    RadialProfile short_average = sample_profile();
    short_average.average.pop_back();
    try {
      make_profile_message(short_average);
      QFAIL("encoded a profile whose arrays differ in length");
    } catch (const ProtocolError& error) {
      QVERIFY2(QString::fromUtf8(error.what())
                   .contains(QStringLiteral("average has 9 values for 10 bins")),
               error.what());
    }
    RadialProfile window = sample_profile();
    window.average_events = 101;
    QVERIFY_THROWS_EXCEPTION(ProtocolError, make_profile_message(window));
  }

  void randomPayloadsNeverCrashTheDecoder() {
    // Any field of the payload replaced by a value of another kind: an error, never a crash.
    std::mt19937 random(7);
    const std::vector<json> odd_values = {
        nullptr, true, -1, 0, 3, 1e300, "x", json::array(), json::object(), json::array({1, 2, 3})};
    const std::vector<std::string> fields = {"unit", "bins", "average_window", "average_events"};
    int refused = 0;
    for (int round = 0; round < 400; ++round) {
      Message message = make_profile_message(sample_profile());
      message.payload[fields[random() % fields.size()]] = odd_values[random() % odd_values.size()];
      try {
        profile_from_message(through_the_wire(message));
      } catch (const ProtocolError&) {
        ++refused;
      }
    }
    QVERIFY(refused > 300);  // a few replacements are valid values (e.g. average_window 3)
  }
};

QTEST_MAIN(ProtocolProfileTest)
#include "test_protocol_profile.moc"
