// pyFAI PONI files and per-pixel geometry (2theta, chi, q, r) against pyFAI 0.21.3: references
// written by tests/reference/pyfai/make_geometry_refs.py, and every kind of malformed PONI file
// answered with an InputError that names the problem.
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "integrate/geometry.hpp"
#include "integrate/poni.hpp"
#include "io/npy.hpp"
#include "test_data.hpp"

using namespace livedrp;
using namespace livedrp::integrate;

namespace {

std::filesystem::path reference_dir() {
  return livedrp::testing::test_reference_dir() / "pyfai";
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

std::string parse_error(const std::string& text) {
  return error_of([&] { parse_poni(text, "bad.poni"); });
}

// Largest |ours - ref| / |ref| over all pixels (a NaN counts as infinitely wrong; a reference of
// exactly 0, e.g. chi on the axis, is compared absolutely at 1e-15), refs read as float64 of
// shape rows x columns.
double max_relative_error(const std::vector<double>& ours, const std::string& file, int rows,
                          int columns) {
  const io::Array ref = io::read_npy(reference_dir() / file);
  if (ref.type != io::ElementType::Float64 || ref.shape.size() != 2 ||
      ref.shape[0] != std::uint64_t(rows) || ref.shape[1] != std::uint64_t(columns) ||
      ours.size() != ref.elements())
    return std::numeric_limits<double>::infinity();
  double worst = 0.0;
  for (std::size_t k = 0; k < ours.size(); ++k) {
    const double r = ref.as<double>()[k];
    const double e = std::fabs(ours[k] - r) / std::max(std::fabs(r), 1e-15);
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

// A valid version-2 file; each malformed case changes one line of it.
const std::string kGoodV2 =
    "# comment\n"
    "poni_version: 2\n"
    "Detector: Detector\n"
    "Detector_config: {\"pixel1\": 7.5e-05, \"pixel2\": 0.0001, \"max_shape\": [30, 40]}\n"
    "Distance: 0.08\n"
    "Poni1: 0.0019\n"
    "Poni2: 0.0035\n"
    "Rot1: 0.12\n"
    "Rot2: -0.07\n"
    "Rot3: 0.3\n"
    "Wavelength: 7.293e-11\n";

std::string replace_line(const std::string& text, const std::string& starts_with,
                         const std::string& with) {
  const auto at = text.find(starts_with);
  const auto end = text.find('\n', at);
  return text.substr(0, at) + with + text.substr(end);
}

}  // namespace

class TestPoniGeometry : public QObject {
  Q_OBJECT

 private slots:
  // Reference data are found without the path the suite was compiled at (a suite packed for the
  // GPU machine runs elsewhere): LIVEDRP_TEST_DATA names the folder holding reference/.
  void referenceDataFoundThroughTheEnvironment() {
    QTemporaryDir dir;
    const QByteArray before = qgetenv("LIVEDRP_TEST_DATA");
    qputenv("LIVEDRP_TEST_DATA", dir.path().toUtf8());
    const std::filesystem::path found = livedrp::testing::test_reference_dir();
    if (before.isEmpty())
      qunsetenv("LIVEDRP_TEST_DATA");
    else
      qputenv("LIVEDRP_TEST_DATA", before);
    QCOMPARE(QString::fromStdString(found.string()), dir.path() + "/reference");
    QVERIFY(std::filesystem::exists(reference_dir() / "untilted.poni"));
  }

  void parses_what_pyfai_writes() {
    const PoniGeometry g = read_poni(reference_dir() / "tilted.poni");
    QCOMPARE(g.version, 2);
    QCOMPARE(g.detector, std::string("Detector"));
    QCOMPARE(g.pixel1, 7.5e-05);
    QCOMPARE(g.pixel2, 0.0001);
    QVERIFY(g.max_shape.has_value());
    QCOMPARE((*g.max_shape)[0], 30);
    QCOMPARE((*g.max_shape)[1], 40);
    QCOMPARE(g.distance, 0.08);
    QCOMPARE(g.poni1, 0.0019);
    QCOMPARE(g.poni2, 0.0035);
    QCOMPARE(g.rot1, 0.12);
    QCOMPARE(g.rot2, -0.07);
    QCOMPARE(g.rot3, 0.3);
    QVERIFY(g.wavelength.has_value());
    QCOMPARE(*g.wavelength, 7.293e-11);
    QCOMPARE(g.orientation, 3);
  }

  void versions_1_and_2_1_give_the_same_geometry() {
    const PoniGeometry v2 = read_poni(reference_dir() / "tilted.poni");
    const PoniGeometry v1 = read_poni(reference_dir() / "tilted_v1.poni");
    const PoniGeometry v21 = read_poni(reference_dir() / "tilted_v21.poni");
    QCOMPARE(v1.version, 1);
    QCOMPARE(v21.version, 21);
    QVERIFY(!v1.max_shape.has_value());
    QCOMPARE(v21.orientation, 3);
    for (const PoniGeometry* g : {&v1, &v21}) {
      QCOMPARE(g->pixel1, v2.pixel1);
      QCOMPARE(g->pixel2, v2.pixel2);
      QCOMPARE(g->distance, v2.distance);
      QCOMPARE(g->poni1, v2.poni1);
      QCOMPARE(g->poni2, v2.poni2);
      QCOMPARE(g->rot1, v2.rot1);
      QCOMPARE(g->rot2, v2.rot2);
      QCOMPARE(g->rot3, v2.rot3);
      QCOMPARE(*g->wavelength, *v2.wavelength);
    }
    // Version 1 carries no shape: the caller gives it.
    const GeometryArrays a = compute_geometry_arrays(v1, 30, 40);
    QVERIFY(max_relative_error(a.two_theta, "tilted_tth.npy", 30, 40) < 1e-9);
    QVERIFY(!error_of([&] { compute_geometry_arrays(v1); }).empty());
  }

  void keys_are_case_insensitive_and_wavelength_optional() {
    const PoniGeometry g = parse_poni(
        "pixelsize1: 1e-4\nPIXELSIZE2: 2e-4\nDist: 0.1\nponi1: 0\nponi2: 0\nrot1: 0\n"
        "rot2: 0\nrot3: 0\n",
        "lower.poni");
    QCOMPARE(g.pixel2, 2e-4);
    QCOMPARE(g.distance, 0.1);
    QVERIFY(!g.wavelength.has_value());
    const GeometryArrays a = compute_geometry_arrays(g, 2, 3);
    QVERIFY(a.q_nm.empty());
    QCOMPARE(a.two_theta.size(), std::size_t(6));
  }

  void agrees_with_pyfai_data() {
    QTest::addColumn<QString>("name");
    for (const char* name : {"untilted", "tilted", "offdet"}) QTest::newRow(name) << name;
  }
  // pyFAI's tth/chi/qFunction/rFunction in float64 (see make_geometry_refs.py): the same formula,
  // so only the last bits differ.
  void agrees_with_pyfai() {
    QFETCH(QString, name);
    const std::string n = name.toStdString();
    const PoniGeometry poni = read_poni(reference_dir() / (n + ".poni"));
    const GeometryArrays a = compute_geometry_arrays(poni);
    const int rows = a.rows, columns = a.columns;
    const double tth = max_relative_error(a.two_theta, n + "_tth.npy", rows, columns);
    const double chi = max_relative_error(a.chi, n + "_chi.npy", rows, columns);
    const double q = max_relative_error(a.q_nm, n + "_q.npy", rows, columns);
    const double r = max_relative_error(a.r_mm, n + "_r.npy", rows, columns);
    qInfo("%s: max relative error tth %.2e chi %.2e q %.2e r %.2e", n.c_str(), tth, chi, q, r);
    QVERIFY(tth < 1e-9);
    QVERIFY(chi < 1e-9);
    QVERIFY(q < 1e-9);
    QVERIFY(r < 1e-9);
  }

  // pyFAI's twoThetaArray() builds its pixel indices as float32, so the pixel positions it feeds
  // the (double) geometry are rounded to float32 first: about 1e-7 relative apart from the exact
  // centres livedrp uses, hence the looser bound here.
  void agrees_with_pyfai_two_theta_array() {
    const PoniGeometry poni = read_poni(reference_dir() / "tilted.poni");
    const GeometryArrays a = compute_geometry_arrays(poni);
    const double tth = max_relative_error(a.two_theta, "tilted_tth_array.npy", a.rows, a.columns);
    qInfo("twoThetaArray: max relative error %.2e", tth);
    QVERIFY(tth < 1e-6);
  }

  void device_functions_follow_pyfai_conventions() {
    // Untilted, 1 m: a pixel straight "down" the rows (axis 1) from the PONI has chi = +90 deg,
    // one along the columns (axis 2) chi = 0, as in pyFAI.
    PoniGeometry p;
    p.distance = 1.0;
    p.pixel1 = p.pixel2 = 1e-3;
    p.poni1 = p.poni2 = 0.5e-3;  // the centre of pixel (0, 0)
    p.wavelength = 1e-10;
    const GeometryParams g = make_geometry_params(p);
    QCOMPARE(two_theta(pixel_lab_position(g, 0, 0)), 0.0);
    const LabPosition down = pixel_lab_position(g, 10, 0);
    QVERIFY(std::fabs(chi(down) - kPi / 2) < 1e-15);
    QVERIFY(std::fabs(chi(pixel_lab_position(g, 0, 10))) < 1e-15);
    QVERIFY(std::fabs(two_theta(down) - std::atan(0.01)) < 1e-15);
    QVERIFY(std::fabs(r_mm(down) - 10.0) < 1e-12);
    QVERIFY(std::fabs(q_nm(two_theta(down), 1e-10) -
                      4 * kPi / 0.1 * std::sin(std::atan(0.01) / 2)) < 1e-12);
  }

  void malformed_files_name_the_problem() {
    QVERIFY(parse_error(kGoodV2).empty());
    struct Case {
      std::string text;
      std::string expect;
    };
    const std::vector<Case> cases = {
        {replace_line(kGoodV2, "Rot2:", ""), "missing key 'Rot2'"},
        {replace_line(kGoodV2, "Distance:", ""), "missing key 'Distance'"},
        {replace_line(kGoodV2, "Detector:", ""), "missing key 'Detector'"},
        {replace_line(kGoodV2, "Detector_config:", ""), "missing key 'Detector_config'"},
        {replace_line(kGoodV2, "Poni1:", "Poni1: 0.0019x"),
         "line 6: value of 'Poni1' is '0.0019x'"},
        {replace_line(kGoodV2, "Rot3:", "Rot3:"), "value of 'Rot3' is '', not a finite number"},
        {replace_line(kGoodV2, "Rot1:", "Rot1: nan"), "value of 'Rot1' is 'nan'"},
        {replace_line(kGoodV2, "Distance:", "Distance: -1"), "'Distance' must be positive"},
        {replace_line(kGoodV2, "Wavelength:", "Wavelength: 0"), "'Wavelength' must be positive"},
        {replace_line(kGoodV2, "poni_version:", "poni_version: 3"), "unknown poni_version '3'"},
        {replace_line(kGoodV2, "Detector_config:", "Detector_config: {\"pixel1\": 1e-4,"),
         "line 4: Detector_config is not valid JSON"},
        {replace_line(kGoodV2, "Detector_config:", "Detector_config: [1, 2]"),
         "Detector_config must be a JSON object"},
        {replace_line(kGoodV2, "Detector_config:", "Detector_config: {\"pixel1\": 1e-4}"),
         "Detector_config has no 'pixel2'"},
        {replace_line(kGoodV2, "Detector_config:",
                      "Detector_config: {\"pixel1\": 1e-4, \"pixel2\": \"big\"}"),
         "'pixel2' must be a positive number"},
        {replace_line(kGoodV2, "Detector_config:",
                      "Detector_config: {\"pixel1\": 1e-4, \"pixel2\": 1e-4, \"max_shape\": [3]}"),
         "'max_shape' must be [rows, columns]"},
        {replace_line(kGoodV2, "Detector_config:",
                      "Detector_config: {\"pixel1\": 1e-4, \"pixel2\": 1e-4, \"orientation\": 3}"),
         "only poni_version 2.1 defines"},
        {replace_line(replace_line(kGoodV2, "poni_version:", "poni_version: 2.1"),
                      "Detector_config:",
                      "Detector_config: {\"pixel1\": 1e-4, \"pixel2\": 1e-4, \"orientation\": 5}"),
         "'orientation' must be an integer from 1 to 4 (pyFAI's TopLeft, TopRight, BottomRight, "
         "BottomLeft), not 5"},
        {replace_line(replace_line(kGoodV2, "poni_version:", "poni_version: 2.1"),
                      "Detector_config:",
                      "Detector_config: {\"pixel1\": 1e-4, \"pixel2\": 1e-4, \"orientation\": 7}"),
         "'orientation' must be an integer from 1 to 4"},
        {replace_line(kGoodV2, "Detector_config:",
                      "Detector_config: {\"pixel1\": 1e-4, \"pixel2\": 1e-4, \"splineFile\": "
                      "\"a.spline\"}"),
         "spline file"},
        {replace_line(kGoodV2, "Rot3:", "Rot3 0.3"), "line 10: expected 'key: value'"},
        {kGoodV2 + "Rot1: 0.5\n", "line 12: 'Rot1' given again (first on line 8)"},
        {"PixelSize1: 1e-4\nDistance: 1\nPoni1: 0\nPoni2: 0\nRot1: 0\nRot2: 0\nRot3: 0\n",
         "missing key 'PixelSize2'"},
    };
    for (const Case& c : cases) {
      const std::string error = parse_error(c.text);
      if (error.find(c.expect) == std::string::npos || error.find("bad.poni") == std::string::npos)
        QFAIL(("expected an error naming bad.poni and \"" + c.expect + "\", got \"" + error +
               "\" for:\n" + c.text)
                  .c_str());
    }
  }

  void unreadable_file_is_named() {
    const std::string error = error_of([] { read_poni("/nonexistent/x.poni"); });
    QVERIFY(error.find("/nonexistent/x.poni") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestPoniGeometry)
#include "test_poni_geometry.moc"
