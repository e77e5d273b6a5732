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
    QCOMPARE(d.large_pixel_factor, 2);
    // PSI's 4M (jungfrau_utils JF06T08V01) and the LCLS Jungfrau 4M drawing: modules repeat
    // every 1039 pixels along their long side (1030 + 9) and 550 across it (514 + 36).
    for (int segment = 0; segment < 8; ++segment) {
      QCOMPARE(d.placement[std::size_t(segment)].x_px, segment % 2 == 0 ? 0.0 : 1039.0);
      QCOMPARE(d.placement[std::size_t(segment)].y_px, 550.0 * (segment / 2));
    }
    const AssembledBounds bounds = assembled_bounds(d);
    QCOMPARE(bounds.max_x, 1039.0 + 1030.0);
    QCOMPARE(bounds.max_y, 1650.0 + 514.0);
    QCOMPARE(to_json(d)["large_pixels"], json({{"factor", 2}}));
  }

  // A Jungfrau module: the last row / column of an ASIC and the first of the next are twice as
  // wide; all others, and those at the module's border, are normal.
  void jungfrau_pixels_at_asic_edges_are_double() {
    const SegmentGrid grid = find_detector("jungfrau4m").grid();
    QCOMPARE(grid.row_size(0), 1);
    QCOMPARE(grid.row_size(254), 1);
    QCOMPARE(grid.row_size(255), 2);
    QCOMPARE(grid.row_size(256), 2);
    QCOMPARE(grid.row_size(257), 1);
    QCOMPARE(grid.row_size(511), 1);
    for (const int col : {255, 256, 511, 512, 767, 768}) QCOMPARE(grid.col_size(col), 2);
    for (const int col : {0, 254, 257, 510, 513, 766, 769, 1023}) QCOMPARE(grid.col_size(col), 1);
  }

  // Pixel centres (+0.5) of segment 3 (corner at x 1039, y 550) on both sides of ASIC edges and at
  // a 4-ASIC corner, worked out by hand: normal pixels up to raw 254 keep their index; raw 255
  // spans [255, 257), raw 256 [257, 259), raw 257 starts at 259; every further ASIC edge adds 2.
  void assembled_point_places_double_and_quadruple_pixels() {
    const DetectorDescription d = find_detector("jungfrau4m");
    const SegmentGrid grid = d.grid();
    const SegmentPlacement& module = d.placement[3];
    const auto centre = [&](int row, int col) {
      return assembled_point(module, grid, row + 0.5, col + 0.5);
    };
    const auto check = [](AssembledPoint point, double x, double y) {
      QCOMPARE(point.x, x);
      QCOMPARE(point.y, y);
    };
    check(centre(0, 254), 1039 + 254.5, 550 + 0.5);
    check(centre(0, 255), 1039 + 256.0, 550 + 0.5);  // double, left of the edge
    check(centre(0, 256), 1039 + 258.0, 550 + 0.5);  // double, right of the edge
    check(centre(0, 257), 1039 + 259.5, 550 + 0.5);  // normal, shifted by the 2 gap pixels
    check(centre(0, 511), 1039 + 514.0, 550 + 0.5);  // double before the second edge
    check(centre(0, 512), 1039 + 516.0, 550 + 0.5);
    check(centre(0, 1023), 1039 + 1029.5, 550 + 0.5);
    check(centre(254, 0), 1039 + 0.5, 550 + 254.5);
    check(centre(255, 0), 1039 + 0.5, 550 + 256.0);
    check(centre(256, 0), 1039 + 0.5, 550 + 258.0);
    check(centre(257, 0), 1039 + 0.5, 550 + 259.5);
    check(centre(511, 1023), 1039 + 1029.5, 550 + 513.5);
    // The quadruple pixels where ASICs 0, 1, 4 and 5 meet: 2 x 2 normal pixels each.
    check(centre(255, 255), 1039 + 256.0, 550 + 256.0);
    check(centre(256, 256), 1039 + 258.0, 550 + 258.0);
    check(assembled_point(module, grid, 255, 255), 1039 + 255.0, 550 + 255.0);
    check(assembled_point(module, grid, 256, 256), 1039 + 257.0, 550 + 257.0);
    check(assembled_point(module, grid, 257, 257), 1039 + 259.0, 550 + 259.0);
    // A quarter turn: the fast axis along +y, the slow axis along -x.
    check(assembled_point({100, 0, 90}, grid, 255.5, 256.5), 100 - 256.0, 258.0);
    // Normal pixels: raw coordinates as they are.
    check(assembled_point(module, SegmentGrid{512, 1024, 256, 256, 1}, 255.5, 256.5), 1039 + 256.5,
          550 + 255.5);
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
    for (const json& bad : {json(2), json::object(), json({{"factor", 0}}), json({{"factor", 1.5}}),
                            json({{"factor", 17}}), json({{"factor", "2"}})}) {
      d = valid_description();
      d["large_pixels"] = bad;
      QVERIFY2(error_of(d).contains("large_pixels"), qPrintable(error_of(d)));
    }
    d = valid_description();
    d["asic_shape"] = {1, 256};
    QVERIFY2(error_of(d).contains("large_pixels") && error_of(d).contains("asic_shape [1, 256]"),
             qPrintable(error_of(d)));
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
