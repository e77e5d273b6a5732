// Detector descriptions: the built-in ones say what the detectors are, and bad descriptions are
// rejected with a message naming the field.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "core/detector.hpp"
#include "core/error.hpp"

using namespace livedrp;
using nlohmann::json;

class TestDetector : public QObject {
  Q_OBJECT

  static json valid_description() { return to_json(find_detector("jungfrau4m")); }

  static QString error_of(const json& description) {
    try {
      parse_detector_description(description, "test.json");
    } catch (const InputError& e) {
      return QString::fromStdString(e.what());
    }
    return {};
  }

 private slots:
  void epix10ka2m_has_16_segments_of_352_by_384_with_7_modes() {
    const auto d = find_detector("epix10ka2m");
    QCOMPARE(d.segments, 16);
    QCOMPARE(d.rows, 352);
    QCOMPARE(d.cols, 384);
    QCOMPARE(d.modes(), 7);
    QCOMPARE(d.encoding, RawEncoding::Epix10ka);
    QCOMPARE(d.pixels(), std::size_t(16) * 352 * 384);
    QCOMPARE(d.raw_event_bytes(), std::size_t(16) * 352 * 384 * 2);
    QCOMPARE(d.asic_rows, 176);
    QCOMPARE(d.asic_cols, 192);
    QCOMPARE(int(d.placement.size()), 16);
    QCOMPARE(d.bank_rows(), d.pixels() / std::size_t(d.bank_columns));
  }

  void jungfrau4m_has_8_modules_of_512_by_1024_with_3_stages() {
    const auto d = find_detector("jungfrau4m");
    QCOMPARE(d.segments, 8);
    QCOMPARE(d.rows, 512);
    QCOMPARE(d.cols, 1024);
    QCOMPARE(d.modes(), 3);
    QCOMPARE(d.encoding, RawEncoding::Jungfrau);
    QCOMPARE(d.bank_columns, 64);
  }

  void generic_detector_is_float32_without_common_mode() {
    const auto d = find_detector("generic_f32");
    QCOMPARE(d.encoding, RawEncoding::Float32);
    QCOMPARE(d.raw_bytes_per_pixel(), std::size_t(4));
    QCOMPARE(d.bank_columns, 0);
    QCOMPARE(d.bank_rows(), std::size_t(0));
  }

  void description_survives_a_json_round_trip() {
    for (const auto& name : builtin_detector_names()) {
      const auto d = find_detector(name);
      const auto again = parse_detector_description(to_json(d), "round trip");
      QCOMPARE(to_json(again), to_json(d));
    }
  }

  void unknown_detector_lists_the_known_ones() {
    try {
      find_detector("pilatus");
      QFAIL("no error");
    } catch (const InputError& e) {
      const QString text = e.what();
      QVERIFY(text.contains("pilatus"));
      QVERIFY(text.contains("epix10ka2m"));
      QVERIFY(text.contains("jungfrau4m"));
    }
  }

  void bad_descriptions_name_the_field() {
    json d = valid_description();
    d.erase("segments");
    QVERIFY(error_of(d).contains("missing field 'segments'"));
    d = valid_description();
    d["segment_shape"] = {512};
    QVERIFY(error_of(d).contains("segment_shape"));
    d = valid_description();
    d["raw_encoding"] = "jpeg";
    QVERIFY(error_of(d).contains("raw_encoding"));
    d = valid_description();
    d["gain_modes"].erase(0);
    QVERIFY(error_of(d).contains("gain_modes"));
    d = valid_description();
    d["asic_shape"] = {300, 256};
    QVERIFY(error_of(d).contains("does not tile"));
    d = valid_description();
    d["bank_columns"] = 100;
    QVERIFY(error_of(d).contains("bank_columns"));
    d = valid_description();
    d["placement"].erase(0);
    QVERIFY(error_of(d).contains("placement"));
    d = valid_description();
    d["schema_version"] = 7;
    QVERIFY(error_of(d).contains("schema_version"));
    QVERIFY(error_of(json::array()).contains("JSON object"));
  }

  void unreadable_or_malformed_file_is_named() {
    try {
      load_detector_description("/nonexistent/detector.json");
      QFAIL("no error");
    } catch (const InputError& e) {
      QVERIFY(QString(e.what()).contains("/nonexistent/detector.json"));
    }
    QTemporaryFile file("XXXXXX.json");
    QVERIFY(file.open());
    file.write("{ not json");
    file.close();
    try {
      find_detector(file.fileName().toStdString());
      QFAIL("no error");
    } catch (const InputError& e) {
      QVERIFY(QString(e.what()).contains("not valid JSON"));
    }
  }
};

QTEST_GUILESS_MAIN(TestDetector)
#include "test_detector.moc"
