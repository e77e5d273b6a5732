// PONI files that name one of pyFAI's detectors (pyFAI-calib2's `Detector: Eiger2_4M`) and PONI
// 2.1's detector orientation. Expected values are pyFAI's facts (pyFAI/detectors/_dectris.py,
// _psi.py, _others.py) written out here, and pixel positions computed independently from pyFAI's
// published definitions: the orientation re-indexes the pixels (Detector.calc_cartesian_positions:
// axis 1 flips for orientations 1 and 2, axis 2 for 1 and 4), then pyFAI's rotation matrix
// R3 R2 R1 (Geometry.rotation_matrix) takes (p1, p2, L) to the lab, where t1 changes sign for
// orientations 1 and 2 and t2 for 1 and 4 (_geometry.pyx f_t1, f_t2).
#include <QtTest>

#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "integrate/geometry.hpp"
#include "integrate/integrator.hpp"
#include "integrate/layout.hpp"
#include "integrate/poni.hpp"
#include "integrate/pyfai_detectors.hpp"

using namespace livedrp;
using namespace livedrp::integrate;

namespace {

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A PONI as pyFAI-calib2 writes it for a named detector (version 2 or 2.1).
std::string named_poni(const std::string& version, const std::string& detector,
                       const std::string& config) {
  return "# Nota: C-Order, 1 refers to the Y axis, 2 to the X axis \n"
         "poni_version: " +
         version + "\nDetector: " + detector + "\nDetector_config: " + config +
         "\nDistance: 0.1\nPoni1: 0.05\nPoni2: 0.06\nRot1: 0.0\nRot2: 0.0\nRot3: 0.0\n"
         "Wavelength: 1e-10\n";
}

// The small tilted geometry of the orientation tests: 4 x 5 pixels of 100 x 150 um.
constexpr int kRows = 4, kCols = 5;
constexpr double kPixel1 = 100e-6, kPixel2 = 150e-6;
constexpr double kDist = 0.1, kPoni1 = 1.1e-4, kPoni2 = 3.3e-4;
constexpr double kRot1 = 0.05, kRot2 = -0.03, kRot3 = 0.2;

std::string oriented_poni(const std::string& orientation) {
  return "poni_version: 2.1\nDetector: Detector\n"
         "Detector_config: {\"pixel1\": 0.0001, \"pixel2\": 0.00015, \"max_shape\": [4, 5], "
         "\"orientation\": " +
         orientation +
         "}\nDistance: 0.1\nPoni1: 0.00011\nPoni2: 0.00033\nRot1: 0.05\nRot2: -0.03\n"
         "Rot3: 0.2\nWavelength: 1e-10\n";
}

struct Expected {
  double two_theta, chi;
};

// pyFAI's definitions, evaluated plainly in float64 with explicit matrices.
Expected expected_pixel(int orientation, int row, int col) {
  const bool flip1 = orientation == 1 || orientation == 2;
  const bool flip2 = orientation == 1 || orientation == 4;
  const double d1 = flip1 ? kRows - 1 - row : row;
  const double d2 = flip2 ? kCols - 1 - col : col;
  const std::array<double, 3> p = {(d1 + 0.5) * kPixel1 - kPoni1, (d2 + 0.5) * kPixel2 - kPoni2,
                                   kDist};
  using Matrix = std::array<std::array<double, 3>, 3>;
  const double c1 = std::cos(kRot1), s1 = std::sin(kRot1);
  const double c2 = std::cos(kRot2), s2 = std::sin(kRot2);
  const double c3 = std::cos(kRot3), s3 = std::sin(kRot3);
  const Matrix r1 = {{{1, 0, 0}, {0, c1, s1}, {0, -s1, c1}}};
  const Matrix r2 = {{{c2, 0, -s2}, {0, 1, 0}, {s2, 0, c2}}};
  const Matrix r3 = {{{c3, -s3, 0}, {s3, c3, 0}, {0, 0, 1}}};
  const auto product = [](const Matrix& a, const Matrix& b) {
    Matrix m{};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 3; ++k) m[i][j] += a[i][k] * b[k][j];
    return m;
  };
  const Matrix rotation = product(r3, product(r2, r1));
  std::array<double, 3> t{};
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) t[i] += rotation[i][k] * p[k];
  const double t1 = flip1 ? -t[0] : t[0];
  const double t2 = flip2 ? -t[1] : t[1];
  return {std::atan2(std::hypot(t1, t2), t[2]), std::atan2(t1, t2)};
}

int masked_count(const std::vector<std::uint8_t>& mask) {
  int n = 0;
  for (const std::uint8_t m : mask) n += m != 0;
  return n;
}

}  // namespace

class TestPoniPyfaiDetectors : public QObject {
  Q_OBJECT

 private slots:
  void named_detectors_give_the_tables_pixel_size_and_shape() {
    struct Case {
      std::string text;
      double pixel1, pixel2;
      int rows, cols;
    };
    const std::vector<Case> cases = {
        // PONI 2.1 as pyFAI-calib2 writes it for an Eiger2 4M.
        {named_poni("2.1", "Eiger2_4M", "{\"orientation\": 3}"), 75e-6, 75e-6, 2162, 2068},
        // PONI 2: an empty Detector_config.
        {named_poni("2", "Pilatus1M", "{}"), 172e-6, 172e-6, 1043, 981},
        {named_poni("2", "Pilatus6M", "{}"), 172e-6, 172e-6, 2527, 2463},
        {named_poni("2", "Eiger4M", "{}"), 75e-6, 75e-6, 2167, 2070},
        {named_poni("2", "Jungfrau", "{}"), 75e-6, 75e-6, 512, 1024},
        {named_poni("2", "Jungfrau4M", "{}"), 75e-6, 75e-6, 2164, 2068},
        {named_poni("2", "Epix10kaQuad", "{}"), 100e-6, 100e-6, 1408, 384},
        {named_poni("2", "Mythen", "{}"), 8e-3, 50e-6, 1, 1280},
        {named_poni("2", "Pilatus4_4M", "{}"), 150e-6, 150e-6, 2180, 2073},
        // Aliases and case, as pyFAI's detector_factory matches them.
        {named_poni("2", "Eiger2 4M", "{}"), 75e-6, 75e-6, 2162, 2068},
        {named_poni("2", "pilatus 1m", "{}"), 172e-6, 172e-6, 1043, 981},
        {named_poni("2", "Pilatus 1M CdTe", "{}"), 172e-6, 172e-6, 1043, 981},
        // pyFAI hands Detector_config to the class's constructor: what it gives wins, as
        // pyFAI-calib2's own files (pixel1, pixel2, max_shape, orientation) have it.
        {named_poni("2.1", "Eiger2_4M",
                    "{\"pixel1\": 7.5e-05, \"pixel2\": 7.5e-05, \"max_shape\": [2162, 2068], "
                    "\"orientation\": 3}"),
         75e-6, 75e-6, 2162, 2068},
        {named_poni("2", "Pilatus1M", "{\"pixel1\": 3.44e-4, \"pixel2\": 3.44e-4}"), 3.44e-4,
         3.44e-4, 1043, 981},
        // A configured max_shape (a region of interest) wins over the table's.
        {named_poni("2", "Pilatus1M", "{\"max_shape\": [195, 487]}"), 172e-6, 172e-6, 195, 487},
        // A non-Dectris detector takes a configured pixel size (binning).
        {named_poni("2", "Basler", "{\"pixel1\": 7.5e-6, \"pixel2\": 7.5e-6}"), 7.5e-6, 7.5e-6, 966,
         1296},
        // Version 1: the detector named, no PixelSize lines.
        {"Detector: Pilatus2M\nDistance: 0.1\nPoni1: 0\nPoni2: 0\nRot1: 0\nRot2: 0\nRot3: 0\n",
         172e-6, 172e-6, 1679, 1475},
        // Version 1 with PixelSize lines: the file's numbers.
        {"Detector: Pilatus2M\nPixelSize1: 1.72e-4\nPixelSize2: 1.72e-4\nDistance: 0.1\n"
         "Poni1: 0\nPoni2: 0\nRot1: 0\nRot2: 0\nRot3: 0\n",
         1.72e-4, 1.72e-4, 1679, 1475},
    };
    for (const Case& c : cases) {
      const PoniGeometry g = parse_poni(c.text, "named.poni");
      QVERIFY2(g.named != nullptr, c.text.c_str());
      QCOMPARE(g.pixel1, c.pixel1);
      QCOMPARE(g.pixel2, c.pixel2);
      QVERIFY2(g.max_shape.has_value(), c.text.c_str());
      QCOMPARE((*g.max_shape)[0], c.rows);
      QCOMPARE((*g.max_shape)[1], c.cols);
    }
  }

  void generic_detector_keeps_its_configured_pixels() {
    const PoniGeometry g = parse_poni(
        named_poni("2", "Detector", "{\"pixel1\": 5e-5, \"pixel2\": 6e-5, \"max_shape\": [7, 9]}"),
        "generic.poni");
    QVERIFY(g.named == nullptr);
    QCOMPARE(g.pixel1, 5e-5);
    QCOMPARE(g.pixel2, 6e-5);
    QCOMPARE((*g.max_shape)[0], 7);
    // Without them the generic class has nothing to go by.
    const std::string error =
        error_of([] { parse_poni(named_poni("2", "Detector", "{}"), "bad.poni"); });
    QVERIFY2(contains(error, "bad.poni") && contains(error, "'pixel1'") &&
                 contains(error, "generic 'Detector'"),
             error.c_str());
  }

  void unknown_detector_is_refused_with_its_name() {
    for (const std::string& text :
         {named_poni("2", "Rayonix MX999", "{}"), named_poni("2.1", "Rayonix MX999", "{}"),
          std::string("Detector: Rayonix MX999\nDistance: 0.1\nPoni1: 0\nPoni2: 0\nRot1: 0\n"
                      "Rot2: 0\nRot3: 0\n")}) {
      const std::string error = error_of([&] { parse_poni(text, "bad.poni"); });
      QVERIFY2(contains(error, "bad.poni"), error.c_str());
      QVERIFY2(contains(error, "'Rayonix MX999'"), error.c_str());
      QVERIFY2(contains(error, "Eiger2_4M") && contains(error, "Pilatus1M"), error.c_str());
    }
  }

  void table_names_are_unique_and_sizes_positive() {
    for (const PyfaiDetector& d : pyfai_detectors()) {
      QVERIFY2(find_pyfai_detector(d.name) == &d, std::string(d.name).c_str());
      QVERIFY(d.pixel1 > 0.0 && d.pixel2 > 0.0 && d.rows > 0 && d.cols > 0);
      // Only pyFAI's raw Jungfrau module has wide pixels at its chip borders.
      QCOMPARE(d.large_pixel_chip, d.name == "Jungfrau" ? 256 : 0);
    }
    QVERIFY(find_pyfai_detector("") == nullptr);
    QVERIFY(find_pyfai_detector("Detector") == nullptr);
  }

  // pyFAI's calc_mask: a gap after every module, counted by hand from MODULE_SIZE and MODULE_GAP.
  void module_gaps_are_masked_as_pyfai_does() {
    {
      // Eiger2 4M: modules 512 x 1028, gaps 38 x 12; row gaps at 512, 1062, 1612, one column gap.
      const PyfaiDetector& d = *find_pyfai_detector("Eiger2_4M");
      const auto mask = pyfai_gap_mask(d, 2162, 2068, d.module_rows, d.module_cols);
      QCOMPARE(masked_count(mask), 3 * 38 * 2068 + 12 * 2162 - 3 * 38 * 12);
      const auto at = [&](int r, int c) { return mask[std::size_t(r) * 2068 + std::size_t(c)]; };
      QCOMPARE(int(at(511, 0)), 0);
      QCOMPARE(int(at(512, 0)), 1);
      QCOMPARE(int(at(549, 0)), 1);
      QCOMPARE(int(at(550, 0)), 0);
      QCOMPARE(int(at(0, 1027)), 0);
      QCOMPARE(int(at(0, 1028)), 1);
      QCOMPARE(int(at(0, 1039)), 1);
      QCOMPARE(int(at(0, 1040)), 0);
    }
    {
      // Pilatus 1M: modules 195 x 487, gaps 17 x 7; row gaps at 195, 407, 619, 831.
      const PyfaiDetector& d = *find_pyfai_detector("Pilatus1M");
      const auto mask = pyfai_gap_mask(d, 1043, 981, d.module_rows, d.module_cols);
      QCOMPARE(masked_count(mask), 4 * 17 * 981 + 7 * 1043 - 4 * 17 * 7);
    }
    {
      // Eiger2 CdTe 500k: one module, no gaps, but columns 513 and 514 in its middle.
      const PyfaiDetector& d = *find_pyfai_detector("Eiger2CdTe_500k");
      const auto mask = pyfai_gap_mask(d, 512, 1028, d.module_rows, d.module_cols);
      QCOMPARE(masked_count(mask), 2 * 512);
      QCOMPARE(int(mask[513]), 1);
      QCOMPARE(int(mask[514]), 1);
      QCOMPARE(int(mask[515]), 0);
    }
    QVERIFY(pyfai_gap_mask(*find_pyfai_detector("Fairchild"), 4096, 4096, 0, 0).empty());
  }

  void orientations_place_pixels_as_pyfai_defines_them() {
    for (int orientation = 1; orientation <= 4; ++orientation) {
      const PoniGeometry g =
          parse_poni(oriented_poni(std::to_string(orientation)), "oriented.poni");
      QCOMPARE(g.version, 21);
      QCOMPARE(g.orientation, orientation);
      const GeometryArrays a = compute_geometry_arrays(g);
      for (int r = 0; r < kRows; ++r)
        for (int c = 0; c < kCols; ++c) {
          const Expected e = expected_pixel(orientation, r, c);
          const std::size_t k = std::size_t(r) * kCols + std::size_t(c);
          const QString where =
              QString("orientation %1 pixel (%2, %3)").arg(orientation).arg(r).arg(c);
          QVERIFY2(std::fabs(a.two_theta[k] - e.two_theta) <= 1e-12 * e.two_theta,
                   qPrintable(where));
          QVERIFY2(std::fabs(a.chi[k] - e.chi) <= 1e-12, qPrintable(where));
        }
    }
  }

  // Orientation 2 stores the image upside down: its pixel (r, c) is orientation 3's
  // (rows - 1 - r, c), with chi mirrored (t1 negated). 2theta must follow the flip exactly.
  void flipped_orientation_reads_the_flipped_image() {
    const GeometryArrays o3 = compute_geometry_arrays(parse_poni(oriented_poni("3"), "o3.poni"));
    const GeometryArrays o2 = compute_geometry_arrays(parse_poni(oriented_poni("2"), "o2.poni"));
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kCols; ++c) {
        const std::size_t k2 = std::size_t(r) * kCols + std::size_t(c);
        const std::size_t k3 = std::size_t(kRows - 1 - r) * kCols + std::size_t(c);
        QCOMPARE(o2.two_theta[k2], o3.two_theta[k3]);
        QCOMPARE(o2.chi[k2], -o3.chi[k3]);
      }
  }

  // The integrator places the pixels the same way (its positions round through float32 as
  // pyFAI's per-pixel arrays do, hence the looser bound).
  void integrator_follows_the_orientation() {
    for (int orientation = 1; orientation <= 4; ++orientation) {
      const PoniGeometry g =
          parse_poni(oriented_poni(std::to_string(orientation)), "oriented.poni");
      IntegrationConfig config;
      config.unit = RadialUnit::TwoThetaDeg;
      config.bins = 4;
      Integrator integrator(g, plain_layout(kRows, kCols), config);
      const auto two_theta = integrator.pixel_two_theta();
      const auto chi = integrator.pixel_chi();
      for (int r = 0; r < kRows; ++r)
        for (int c = 0; c < kCols; ++c) {
          const Expected e = expected_pixel(orientation, r, c);
          const std::size_t k = std::size_t(r) * kCols + std::size_t(c);
          QVERIFY(std::fabs(two_theta[k] - e.two_theta) <= 1e-5 * e.two_theta);
          QVERIFY(std::fabs(chi[k] - e.chi) <= 1e-5);
        }
    }
  }

  void bad_orientation_is_refused_naming_the_field() {
    for (const std::string value : {"0", "5", "8", "-1", "2.5", "\"2\"", "null", "1e10"}) {
      const std::string error = error_of([&] { parse_poni(oriented_poni(value), "bad.poni"); });
      QVERIFY2(contains(error, "bad.poni") && contains(error, "'orientation'"),
               (value + ": " + error).c_str());
    }
    // Before 2.1 a PONI has no orientation at all.
    const std::string v2 = error_of(
        [] { parse_poni(named_poni("2", "Pilatus1M", "{\"orientation\": 2}"), "bad.poni"); });
    QVERIFY2(contains(v2, "'orientation'") && contains(v2, "2.1"), v2.c_str());
  }

  void integrator_masks_a_named_detectors_gaps() {
    // Eiger2 1M: two modules of 512 x 1028 one above the other, the 38 rows 512..549 between
    // them; one module wide, so no column gap.
    const PoniGeometry g = parse_poni(named_poni("2", "Eiger2_1M", "{}"), "eiger.poni");
    Integrator integrator(g, plain_layout(1062, 1028), IntegrationConfig{});
    const auto norm = integrator.normalization();
    QVERIFY(norm[std::size_t(511) * 1028] > 0.0f);
    QCOMPARE(norm[std::size_t(512) * 1028 + 100], 0.0f);
    QCOMPARE(norm[std::size_t(549) * 1028 + 1027], 0.0f);
    QVERIFY(norm[std::size_t(550) * 1028] > 0.0f);
    // A binned image is not the detector's shape: no mask (pyFAI would rebin it).
    QVERIFY(poni_detector_mask(g, 531, 514).empty());
    // A configured max_shape is the one tiled: two Pilatus modules and the 17 rows between them.
    const PoniGeometry roi =
        parse_poni(named_poni("2", "Pilatus1M", "{\"max_shape\": [407, 487]}"), "roi.poni");
    QCOMPARE(masked_count(poni_detector_mask(roi, 407, 487)), 17 * 487);
  }

  // The equivalence: a PONI naming Pilatus300k integrates as the generic PONI of the same
  // pixels with the gaps pyFAI masks (rows 195..211 and 407..423) given as a mask.
  void named_detector_profile_equals_the_generic_one_with_its_gaps_masked() {
    const int rows = 619, cols = 487;
    const std::string geometry =
        "Distance: 0.2\nPoni1: 0.05\nPoni2: 0.04\nRot1: 0.02\nRot2: -0.01\nRot3: 0.1\n"
        "Wavelength: 1e-10\n";
    const PoniGeometry named = parse_poni(
        "poni_version: 2.1\nDetector: Pilatus300k\nDetector_config: {\"orientation\": 3}\n" +
            geometry,
        "named.poni");
    const PoniGeometry generic = parse_poni(
        "poni_version: 2\nDetector: Detector\nDetector_config: {\"pixel1\": 0.000172, "
        "\"pixel2\": 0.000172, \"max_shape\": [619, 487]}\n" +
            geometry,
        "generic.poni");
    std::vector<float> frame(std::size_t(rows) * cols);
    for (std::size_t k = 0; k < frame.size(); ++k) frame[k] = float(1 + (k * 7919) % 1000);
    // Values in the gaps that would show if they were integrated.
    std::vector<std::uint8_t> gaps(frame.size(), 0);
    for (int r = 0; r < rows; ++r)
      if ((r >= 195 && r < 212) || (r >= 407 && r < 424))
        for (int c = 0; c < cols; ++c) {
          gaps[std::size_t(r) * cols + std::size_t(c)] = 1;
          frame[std::size_t(r) * cols + std::size_t(c)] = 1e6f;
        }
    IntegrationConfig config;
    config.bins = 50;
    Integrator a(named, plain_layout(rows, cols), config);
    Integrator b(generic, plain_layout(rows, cols), config);
    b.set_mask(gaps);
    const Profile pa = a.integrate(frame), pb = b.integrate(frame);
    QCOMPARE(pa.radial, pb.radial);
    QCOMPARE(pa.intensity, pb.intensity);
    QCOMPARE(pa.count, pb.count);
  }

  // An image stored upside down (orientation 2) integrates as the same image turned the right way
  // up under orientation 3: every pixel lands in the same bin (float32 positions agree exactly);
  // sums differ only in the order they are added.
  void upside_down_image_with_orientation_2_gives_the_upright_profile() {
    const int rows = 40, cols = 30;
    const std::string rest =
        "Distance: 0.05\nPoni1: 0.0012\nPoni2: 0.0017\nRot1: 0.03\nRot2: 0.02\nRot3: -0.1\n"
        "Wavelength: 1e-10\n";
    const auto poni = [&](int orientation) {
      return parse_poni(
          "poni_version: 2.1\nDetector: Detector\nDetector_config: {\"pixel1\": "
          "0.0001, \"pixel2\": 0.0001, \"orientation\": " +
              std::to_string(orientation) + "}\n" + rest,
          "o.poni");
    };
    std::vector<float> upright(std::size_t(rows) * cols), stored(upright.size());
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const float v = float(1 + (r * 37 + c * 11) % 97);
        upright[std::size_t(r) * cols + std::size_t(c)] = v;
        stored[std::size_t(rows - 1 - r) * cols + std::size_t(c)] = v;
      }
    IntegrationConfig config;
    config.bins = 20;
    Integrator o3(poni(3), plain_layout(rows, cols), config);
    Integrator o2(poni(2), plain_layout(rows, cols), config);
    const Profile p3 = o3.integrate(upright), p2 = o2.integrate(stored);
    QCOMPARE(p2.radial, p3.radial);
    QCOMPARE(p2.count, p3.count);
    for (std::size_t b = 0; b < p3.intensity.size(); ++b)
      QVERIFY(std::fabs(p2.intensity[b] - p3.intensity[b]) <= 1e-6 * std::fabs(p3.intensity[b]));
  }

  void raw_jungfrau_on_a_plain_image_is_refused() {
    const PoniGeometry g = parse_poni(named_poni("2", "Jungfrau", "{}"), "jf.poni");
    const std::string error =
        error_of([&] { Integrator(g, plain_layout(512, 1024), IntegrationConfig{}); });
    QVERIFY2(contains(error, "'Jungfrau'") && contains(error, "twice as wide"), error.c_str());
  }
};

QTEST_GUILESS_MAIN(TestPoniPyfaiDetectors)
#include "test_poni_pyfai_detectors.moc"
