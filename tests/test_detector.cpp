// Detector descriptions: the built-in ones say what the detectors are, and bad descriptions are
// rejected with a message naming the field.
#include <QtTest>

#include <string_view>
#include <tuple>

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

  // Dectris Eiger2 X 4M as its stream delivers it: 4 x 2 modules of 512 x 1028 with 38-row and
  // 12-column gaps in one 2162 x 2068 frame of uint32 counts.
  void eiger2x4m_is_one_uint32_frame_with_module_gaps() {
    const auto d = find_detector("eiger2x4m");
    QCOMPARE(d.encoding, RawEncoding::Uint32);
    QCOMPARE(d.segments, 1);
    QCOMPARE(d.rows, 4 * 512 + 3 * 38);
    QCOMPARE(d.cols, 2 * 1028 + 12);
    QCOMPARE(d.raw_bytes_per_pixel(), std::size_t(4));
    QCOMPARE(d.modes(), 1);
    QCOMPARE(d.bank_columns, 0);
    QCOMPARE(d.pixel_size_um, 75.0);
    // Module row k spans rows [550 k, 550 k + 512), module column j cols [1040 j, 1040 j + 1028).
    std::size_t gap_pixels = 0;
    for (int row = 0; row < d.rows; ++row)
      for (int col = 0; col < d.cols; ++col) {
        const bool in_module = row % 550 < 512 && col % 1040 < 1028;
        QCOMPARE(d.in_gap(row, col), !in_module);
        gap_pixels += in_module ? 0 : 1;
      }
    QCOMPARE(gap_pixels, d.pixels() - std::size_t(8) * 512 * 1028);
  }

  void integer_encodings_parse_with_their_names_and_word_sizes() {
    for (const auto& [name, encoding, bytes] : {std::tuple{"uint16", RawEncoding::Uint16, 2},
                                                std::tuple{"uint32", RawEncoding::Uint32, 4},
                                                std::tuple{"int32", RawEncoding::Int32, 4}}) {
      json description = to_json(find_detector("generic_f32"));
      description["raw_encoding"] = name;
      const auto d = parse_detector_description(description, "test.json");
      QCOMPARE(d.encoding, encoding);
      QCOMPARE(to_string(d.encoding), std::string_view(name));
      QCOMPARE(d.raw_bytes_per_pixel(), std::size_t(bytes));
      QCOMPARE(d.raw_event_bytes(), std::size_t(1024) * 1024 * std::size_t(bytes));
      QCOMPARE(to_json(d)["raw_encoding"], json(name));
    }
  }

  // Integer images have no ADC baseline (no common-mode banks); gaps are for detectors whose
  // images mark them; a gap range must lie within the segment.
  void integer_image_fields_are_checked() {
    const json eiger = to_json(find_detector("eiger2x4m"));
    json d = eiger;
    d["bank_columns"] = 8;
    QVERIFY2(error_of(d).contains("bank_columns must be 0 for raw_encoding uint32"),
             qPrintable(error_of(d)));
    d = eiger;
    d["gaps"]["rows"] = {{2160, 3}};
    QVERIFY2(error_of(d).contains("gaps.rows") && error_of(d).contains("2162"),
             qPrintable(error_of(d)));
    d = eiger;
    d["gaps"]["cols"] = {{5}};
    QVERIFY(error_of(d).contains("gaps.cols"));
    d = to_json(find_detector("generic_f32"));
    d["gaps"] = {{"rows", {{0, 1}}}};
    QVERIFY2(error_of(d).contains("'gaps' is for integer images"), qPrintable(error_of(d)));
    d = eiger;
    d["raw_encoding"] = "uint64";
    QVERIFY(error_of(d).contains("uint16, uint32, int32"));
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
