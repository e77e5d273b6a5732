// The geometries shipped for the simulated detectors (resources/geometry/NAME.poni, compiled in
// and named "builtin:NAME"): each parses as the PONI file it is, is the file in resources/
// byte for byte, and places the beam where the simulator centres its powder rings: for every
// pixel, the radius the PONI gives it (distance * tan(2theta), in pixels) is the simulator's own
// distance from its beam to the pixel's centre. An unknown built-in name is refused, naming the
// shipped ones.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "integrate/integrator.hpp"
#include "integrate/layout.hpp"
#include "integrate/shipped_geometry.hpp"
#include "sim/simulator.hpp"

using namespace livedrp;
using namespace livedrp::integrate;

namespace {

// h c in keV Angstrom (CODATA 2018), to turn the simulator's photon energy into a wavelength.
constexpr double kHcKevAngstrom = 12.398419843320026;
// Radii agree to far below a pixel: the PONI's numbers are the beam's exact pixel coordinates,
// and the integrator keeps pixel corners in float32 as pyFAI does (a 0.16 m detector: ~1e-8 m,
// 1e-4 of a 100 um pixel).
constexpr double kRadiusTolerancePx = 1e-3;
// Every this many pixels is compared (a few hundred thousand per detector).
constexpr std::size_t kPixelStride = 7;

std::string source_file_text(const std::string& name) {
  const std::filesystem::path path = std::filesystem::path(QT_TESTCASE_SOURCEDIR) / ".." /
                                     "resources" / "geometry" / (name + ".poni");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

class TestShippedGeometry : public QObject {
  Q_OBJECT

 private slots:
  void every_built_in_detector_with_a_simulator_ships_epix10ka2m_and_jungfrau4m_at_least() {
    for (const char* name : {"epix10ka2m", "jungfrau4m"}) {
      const auto reference = shipped_poni_reference(name);
      QVERIFY2(reference, name);
      QCOMPARE(*reference, std::string("builtin:") + name);
    }
    QVERIFY(!shipped_poni_reference("no_such_detector"));
    for (const ShippedGeometry& geometry : shipped_geometries())
      QVERIFY2(find_detector(geometry.name).name == geometry.name,  // a built-in detector's
               std::string(geometry.name).c_str());
  }

  void the_compiled_in_text_is_the_file_in_resources() {
    for (const ShippedGeometry& geometry : shipped_geometries()) {
      const std::string file = source_file_text(std::string(geometry.name));
      QVERIFY2(!file.empty(), std::string(geometry.name).c_str());
      QCOMPARE(std::string(geometry.poni), file);
    }
  }

  void each_parses_untilted_at_the_simulators_wavelength_with_the_detectors_pixels() {
    const double wavelength_m = kHcKevAngstrom * 1e-10 / SimulatorConfig{}.photon_energy_kev;
    for (const ShippedGeometry& geometry : shipped_geometries()) {
      const std::string name(geometry.name);
      const PoniGeometry poni = load_poni("builtin:" + name);
      const DetectorDescription detector = find_detector(name);
      QCOMPARE(poni.version, 2);
      QVERIFY(poni.distance > 0);
      QCOMPARE(poni.rot1, 0.0);
      QCOMPARE(poni.rot2, 0.0);
      QCOMPARE(poni.rot3, 0.0);
      QVERIFY(poni.wavelength);
      QVERIFY2(std::abs(*poni.wavelength - wavelength_m) <= 1e-12 * wavelength_m, name.c_str());
      QCOMPARE(poni.pixel1, detector.pixel_size_um * 1e-6);
      QCOMPARE(poni.pixel2, detector.pixel_size_um * 1e-6);
      const FrameExtent extent = assembled_extent(layout_from_detector(detector));
      QVERIFY(poni.max_shape);
      QCOMPARE((*poni.max_shape)[0], extent.rows);
      QCOMPARE((*poni.max_shape)[1], extent.cols);
    }
  }

  void each_places_the_beam_where_the_simulator_centres_its_rings() {
    ThreadPool pool(2);
    for (const ShippedGeometry& geometry : shipped_geometries()) {
      const std::string name(geometry.name);
      const DetectorDescription detector = find_detector(name);
      const DetectorSimulator simulator(detector, SimulatorConfig{}, &pool);
      const PowderGeometry& powder = simulator.powder_geometry();
      const PoniGeometry poni = load_poni("builtin:" + name);
      IntegrationConfig config;
      config.unit = RadialUnit::TwoThetaDeg;
      Integrator integrator(poni, layout_from_detector(detector), config);
      const std::span<const double> two_theta = integrator.pixel_two_theta();
      QCOMPARE(two_theta.size(), detector.pixels());

      const SegmentGrid grid = detector.grid();
      double worst = 0;
      std::size_t compared = 0;
      for (std::size_t p = 0; p < detector.pixels(); p += kPixelStride) {
        const int segment = int(p / detector.pixels_per_segment());
        const int row = int(p % detector.pixels_per_segment()) / detector.cols;
        const int col = int(p % std::size_t(detector.cols));
        // The simulator's own distance of the pixel's centre from its beam (sim/simulator.cpp).
        const AssembledPoint point =
            assembled_point(detector.placement[std::size_t(segment)], grid, row + 0.5, col + 0.5);
        const double simulated = std::hypot(point.x - powder.beam_x_px, point.y - powder.beam_y_px);
        const double from_poni =
            poni.distance * std::tan(two_theta[p]) / (detector.pixel_size_um * 1e-6);
        worst = std::max(worst, std::abs(from_poni - simulated));
        ++compared;
      }
      qInfo("%s: %zu pixels, worst radius difference %.3g px", name.c_str(), compared, worst);
      QVERIFY2(worst <= kRadiusTolerancePx,
               qPrintable(QString("%1: %2 px").arg(QString::fromStdString(name)).arg(worst)));
    }
  }

  void an_unknown_built_in_name_is_refused_naming_the_shipped_ones() {
    try {
      load_poni("builtin:epix100");
      QFAIL("expected InputError");
    } catch (const InputError& e) {
      const QString text = e.what();
      QVERIFY2(text.contains("builtin:epix100") && text.contains("builtin:epix10ka2m") &&
                   text.contains("builtin:jungfrau4m"),
               e.what());
    }
    // Anything else is a file's path, with the file's own error.
    try {
      load_poni("/no/such/dir/geometry.poni");
      QFAIL("expected InputError");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("/no/such/dir/geometry.poni"), e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestShippedGeometry)
#include "test_shipped_geometry.moc"
