// `livedrp-engine geometry` (io/crystfel_geometry_writer.hpp): the .geom it writes for the hit
// files names their slab and peak lists, and places every pixel where the detector's placement
// and its PONI put it: read back with the engine's .geom reader and integrated with an untilted
// PONI at the beam (distance = clen), every pixel's 2theta and chi equal (to 1e-6 rad) those of the
// detector layout with the PONI given (the ePix10ka 2M's 64 ASICs; a detector of four segments
// turned by 0, 90, 180 and 270 degrees). What it cannot write is refused, naming why.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <numbers>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"
#include "core/crystfel_geometry.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "integrate/integrator.hpp"
#include "integrate/layout.hpp"
#include "integrate/poni.hpp"
#include "integrate/shipped_geometry.hpp"
#include "io/crystfel_geometry_writer.hpp"

using namespace livedrp;

namespace {

// The untilted PONI at CrystFEL's origin (the beam) that a .geom's pixels are integrated with.
integrate::PoniGeometry poni_at_beam(const crystfel::Geometry& geometry,
                                     const integrate::PoniGeometry& original) {
  integrate::PoniGeometry p;
  p.version = 2;
  p.distance = original.distance;
  p.wavelength = original.wavelength;
  p.pixel1 = p.pixel2 = 1.0 / geometry.panels.at(0).res;
  return p;
}

// Both integrators keep pixel positions in float32 as pyFAI does, one relative to the detector's
// corner and one to the beam, so they round differently (a few 1e-8 rad here); a misplaced pixel
// is off by a pixel's angle (100 um at 0.12 m: 8e-4 rad) or half of it.
constexpr double kAngleTolerance = 1e-6;

// Empty when every pixel has the same 2theta and chi under both (kAngleTolerance, chi scaled to a
// distance); else the first pixel that differs.
QString compare_pixels(integrate::Integrator& a, integrate::Integrator& b) {
  const auto tth_a = a.pixel_two_theta(), tth_b = b.pixel_two_theta();
  const auto chi_a = a.pixel_chi(), chi_b = b.pixel_chi();
  if (tth_a.size() != tth_b.size()) return "pixel counts differ";
  for (std::size_t k = 0; k < tth_a.size(); ++k) {
    const double dchi = std::remainder(chi_a[k] - chi_b[k], 2 * std::numbers::pi);
    // chi's error as a distance on the detector over the sample distance (tan 2theta x dchi),
    // so that pixels near the beam, where chi turns fast, are held to the same distance.
    if (!(std::fabs(tth_a[k] - tth_b[k]) <= kAngleTolerance) ||
        !(std::fabs(std::tan(tth_b[k]) * dchi) <= kAngleTolerance))
      return QString("pixel %1: 2theta %2 / %3, chi %4 / %5")
          .arg(k)
          .arg(tth_a[k], 0, 'g', 12)
          .arg(tth_b[k], 0, 'g', 12)
          .arg(chi_a[k], 0, 'g', 12)
          .arg(chi_b[k], 0, 'g', 12);
  }
  return {};
}

QString check_equivalent(const DetectorDescription& detector, const integrate::PoniGeometry& poni,
                         const std::string& text) {
  const crystfel::Geometry geometry = crystfel::parse_geometry(text, "written.geom");
  integrate::Integrator via_geometry(poni_at_beam(geometry, poni),
                                     integrate::layout_from_geometry(geometry), {});
  integrate::Integrator via_detector(poni, integrate::layout_from_detector(detector), {});
  return compare_pixels(via_geometry, via_detector);
}

// Four segments of 64 x 96 pixels (2 x 2 ASICs), each turned by another multiple of 90 degrees.
DetectorDescription turned_detector() {
  nlohmann::json d = {{"schema_version", 1},
                      {"name", "turned"},
                      {"description", "four turned segments"},
                      {"raw_encoding", "float32"},
                      {"segments", 4},
                      {"segment_shape", {64, 96}},
                      {"pixel_size_um", 75.0},
                      {"asic_shape", {32, 48}},
                      {"bank_columns", 0},
                      {"gain_modes", {{{"name", "calibrated"}, {"nominal_adu_per_kev", 1.0}}}},
                      {"placement",
                       {{{"x_px", 0}, {"y_px", 0}, {"rotation_deg", 0}},
                        {{"x_px", 300}, {"y_px", 10}, {"rotation_deg", 90}},
                        {{"x_px", 400}, {"y_px", 300}, {"rotation_deg", 180}},
                        {{"x_px", 20}, {"y_px", 400}, {"rotation_deg", 270}}}}};
  return parse_detector_description(d, "turned.json");
}

integrate::PoniGeometry poni_for(double pixel, double beam_y_px, double beam_x_px) {
  integrate::PoniGeometry p;
  p.version = 2;
  p.distance = 0.1;
  p.poni1 = beam_y_px * pixel;
  p.poni2 = beam_x_px * pixel;
  p.pixel1 = p.pixel2 = pixel;
  p.wavelength = 1e-10;
  return p;
}

}  // namespace

class TestCrystfelGeometryExport : public QObject {
  Q_OBJECT
 private slots:
  void the_epix10ka2m_geometry_places_every_pixel_as_its_poni() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    const integrate::PoniGeometry poni = integrate::load_poni("builtin:epix10ka2m");
    const std::string text = io::crystfel_geometry_text(detector, poni, "builtin:epix10ka2m");
    const crystfel::Geometry geometry = crystfel::parse_geometry(text, "written.geom");
    QCOMPARE(geometry.panels.size(), std::size_t(64));
    QCOMPARE(geometry.panels.at(0).data, std::string("/entry_1/data_1/data"));
    QCOMPARE(geometry.panels.at(0).dims, (std::vector<std::string>{"%", "ss", "fs"}));
    QCOMPARE(geometry.panels.at(5).name, std::string("p1a1"));
    QCOMPARE(geometry.panels.at(5).min_ss, 352);
    QCOMPARE(geometry.panels.at(5).min_fs, 192);
    QCOMPARE(geometry.panels.at(5).clen, std::string("0.12"));
    for (const char* line : {"peak_list = /entry_1/result_1\n", "peak_list_type = cxi\n",
                             "photon_energy = 9500\n", "adu_per_eV = 0.001\n"})
      QVERIFY2(text.find(line) != std::string::npos, line);
    const QString difference = check_equivalent(detector, poni, text);
    QVERIFY2(difference.isEmpty(), qPrintable(difference));
  }

  void turned_segments_keep_their_pixels_in_place() {
    const DetectorDescription detector = turned_detector();
    const integrate::PoniGeometry poni = poni_for(75e-6, 210.5, 190.25);
    const QString difference =
        check_equivalent(detector, poni, io::crystfel_geometry_text(detector, poni, "test"));
    QVERIFY2(difference.isEmpty(), qPrintable(difference));
  }

  void the_command_writes_the_file_and_refuses_what_it_cannot_place() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString out = dir.filePath("epix.geom");
    const CliResult written =
        run_cli("LIVEDRP_ENGINE_EXE", {"geometry", "--detector", "epix10ka2m", "--output", out});
    QVERIFY2(written.exit_code == 0, qPrintable(written.err));
    std::ifstream in(out.toStdString());
    std::stringstream text;
    text << in.rdbuf();
    QCOMPARE(text.str(), io::crystfel_geometry_text(find_detector("epix10ka2m"),
                                                    integrate::load_poni("builtin:epix10ka2m"),
                                                    "builtin:epix10ka2m"));
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE", {"geometry", "--detector", "jungfrau4m", "--output", out}),
        "its ASIC edges have large pixels");
    const QString tilted = dir.filePath("tilted.poni");
    std::ofstream(tilted.toStdString())
        << "poni_version: 2\nDetector: Detector\nDetector_config: {\"pixel1\": 0.0001, "
           "\"pixel2\": 0.0001}\nDistance: 0.1\nPoni1: 0.07\nPoni2: 0.07\nRot1: 0.01\nRot2: "
           "0\nRot3: 0\nWavelength: 1e-10\n";
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE", {"geometry", "--detector", "epix10ka2m",
                                                    "--poni", tilted, "--output", out}),
                     "is tilted");
  }
};

QTEST_GUILESS_MAIN(TestCrystfelGeometryExport)
#include "test_crystfel_geometry_export.moc"
