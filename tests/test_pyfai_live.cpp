// pyFAI itself as a test tool (Debian's python3-pyfai, which installer/bootstrap installs; 0.21.3
// in Debian 12), run through tests/reference/pyfai/live_pyfai.py:
// - pyFAI writes a tilted PONI for one of its named detectors (Eiger2_4M, Pilatus1M,
//   PilatusCdTe1M) and the same geometry for a generic Detector of the same pixels and shape;
//   livedrp integrates pyFAI's synthetic image with both: its gap mask is pyFAI's, the two profiles
//   are identical, and both agree with pyFAI's integrate1d (no splitting) within 1e-4 relative per
//   bin, pixel counts exactly. The raw Jungfrau PONI pyFAI writes is refused on a plain image.
// - `livedrp-engine integrate --output FILE.xy|.dat`: pyFAI's side reads the file back with
//   numpy.loadtxt, integrates the same image with the same PONI in the unit the file names, and
//   the radial, intensity and sigma columns agree within 1e-4 relative; the header's geometry is
//   pyFAI's.
// - Orientation: pyFAI 0.21.3 has none (PONI 2.1 came with pyFAI 2023.12). Orientation K re-indexes
//   the detector's pixels (pyFAI's detectors/orientation.py) and 2theta and q do not see the sign
//   it gives chi, so a pyFAI that knows K integrates an image as 0.21.3 integrates the image
//   flipped: livedrp's profiles of orientations 1, 2 and 4 (tilted, full azimuth) are checked
//   against pyFAI's of the flipped image; test_poni_pyfai_detectors checks chi too.
// The suite fails, not skips, without python3 or pyFAI: the installer installs both.
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"
#include "core/error.hpp"
#include "integrate/array_values.hpp"
#include "integrate/integrator.hpp"
#include "integrate/poni.hpp"
#include "integrate/units.hpp"
#include "io/npy.hpp"
#include "test_data.hpp"

using namespace livedrp;
using namespace livedrp::integrate;

namespace {

constexpr double kTolerance = 1e-4;  // relative, per bin

// Debian's interpreter, where the installer puts numpy and pyFAI (a python3 earlier in PATH, e.g.
// pyenv's, may lack them).
QString python() {
  return QFile::exists("/usr/bin/python3") ? QStringLiteral("/usr/bin/python3")
                                           : QStringLiteral("python3");
}

QString script() {
  return QString::fromStdString(
      (livedrp::testing::test_reference_dir() / "pyfai" / "live_pyfai.py").string());
}

struct Run {
  bool ok = false;
  QString output;  // stdout and stderr
};

Run run_python(const QStringList& arguments) {
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(python(), arguments);
  Run r;
  r.ok = p.waitForFinished(-1) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
  r.output = QString::fromUtf8(p.readAll());
  return r;
}

nlohmann::json read_json(const QString& path) {
  std::ifstream in(path.toStdString());
  return nlohmann::json::parse(in);
}

// |ours - theirs| / |theirs|; where pyFAI has 0 (an empty bin), |ours|.
double relative(double ours, double theirs) {
  if (std::isnan(ours) || std::isnan(theirs))
    return std::isnan(ours) == std::isnan(theirs) ? 0 : INFINITY;
  return theirs == 0.0 ? std::fabs(ours) : std::fabs(ours - theirs) / std::fabs(theirs);
}

// Worst relative difference of intensity, sigma and the three sums against pyFAI's (npt, 7) table;
// +inf (said why) when a count or a bin position differs.
double worst_against_pyfai(const Profile& p, const io::Array& table, const QString& what) {
  const std::size_t bins = table.shape.at(0);
  if (table.shape.size() != 2 || table.shape[1] != 7 || p.intensity.size() != bins) {
    qWarning("%s: %zu bins, pyFAI's table %zu", qPrintable(what), p.intensity.size(), bins);
    return INFINITY;
  }
  double worst = 0.0;
  for (std::size_t b = 0; b < bins; ++b) {
    const double* row = table.as<double>() + 7 * b;
    if (p.count[b] != row[6] || relative(p.radial[b], row[0]) > 1e-12) {
      qWarning("%s bin %zu: radial %.17g count %g, pyFAI %.17g count %g", qPrintable(what), b,
               p.radial[b], p.count[b], row[0], row[6]);
      return INFINITY;
    }
    const double ours[] = {p.intensity[b], p.sigma[b], p.signal[b], p.variance[b],
                           p.normalization[b]};
    for (int k = 0; k < 5; ++k) worst = std::max(worst, relative(ours[k], row[k + 1]));
  }
  return worst;
}

bool identical(const Profile& a, const Profile& b) {
  return a.radial == b.radial && a.intensity == b.intensity && a.sigma == b.sigma &&
         a.signal == b.signal && a.variance == b.variance && a.normalization == b.normalization &&
         a.count == b.count;
}

IntegrationConfig config_of(const nlohmann::json& profile) {
  IntegrationConfig config;
  config.unit = *radial_unit_from_name(profile.at("unit").get<std::string>());
  config.bins = profile.at("npt").get<int>();
  if (profile.contains("azimuth_range"))
    config.azimuth_range = std::pair{profile["azimuth_range"][0].get<double>(),
                                     profile["azimuth_range"][1].get<double>()};
  return config;  // no splitting, solid angle on, Poisson errors: as live_pyfai.py asks pyFAI
}

}  // namespace

class TestPyfaiLive : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::map<QString, QString> cases_;  // detector -> folder live_pyfai.py wrote its case into

  // pyFAI's case for `detector` (live_pyfai.py case), written once; empty on failure (said why).
  QString case_dir(const QString& detector) {
    if (cases_.count(detector)) return cases_[detector];
    const QString dir = dir_.filePath(detector);
    QDir().mkpath(dir);
    const Run r = run_python({script(), "case", detector, dir});
    if (!r.ok) {
      qWarning("live_pyfai.py case %s failed: %s", qPrintable(detector), qPrintable(r.output));
      return {};
    }
    return cases_[detector] = dir;
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const Run r = run_python({"-c", "import numpy, pyFAI; print('pyFAI', pyFAI.version)"});
    QVERIFY2(r.ok, qPrintable(python() + " cannot import numpy and pyFAI: install Debian's " +
                              "python3-pyfai (installer/bootstrap does: apt-get install " +
                              "--no-install-recommends python3-pyfai): " + r.output));
    qInfo("%s", qPrintable(r.output.trimmed().split('\n').last()));
  }

  void named_detector_poni_data() {
    QTest::addColumn<QString>("detector");
    QTest::addColumn<int>("gap_pixels");  // pyFAI's Detector.calc_mask, counted independently
    // Eiger2 4M: 4 x 2 modules of 512 x 1028, gaps of 38 rows and 12 columns.
    QTest::newRow("Eiger2_4M") << "Eiger2_4M" << (2162 * 2068 - 8 * 512 * 1028);
    // Pilatus 1M: 5 x 2 modules of 195 x 487, gaps of 17 rows and 7 columns.
    QTest::newRow("Pilatus1M") << "Pilatus1M" << (1043 * 981 - 10 * 195 * 487);
    // Pilatus CdTe 1M: the same, plus 3 dead columns in the middle of each module.
    QTest::newRow("PilatusCdTe1M") << "PilatusCdTe1M" << (1043 * 981 - 10 * 195 * (487 - 3));
  }

  void named_detector_poni() {
    QFETCH(QString, detector);
    QFETCH(int, gap_pixels);
    const QString dir = case_dir(detector);
    QVERIFY(!dir.isEmpty());
    const std::filesystem::path d = dir.toStdString();
    const nlohmann::json about = read_json(dir + "/about.json");
    QCOMPARE(about.at("detector").get<std::string>(), detector.toStdString());
    QCOMPARE(about.at("gap_pixels").get<int>(), gap_pixels);

    // The PONI pyFAI wrote names the detector only; the generic one gives pixels and shape.
    const PoniGeometry named = read_poni(d / "named.poni");
    const PoniGeometry generic = read_poni(d / "generic.poni");
    QCOMPARE(QString::fromStdString(named.detector), detector);
    QVERIFY(named.named != nullptr);
    QCOMPARE(generic.detector, std::string("Detector"));
    QCOMPARE(named.pixel1, generic.pixel1);
    QCOMPARE(named.pixel2, generic.pixel2);
    QVERIFY(generic.max_shape.has_value());
    const int rows = (*generic.max_shape)[0], cols = (*generic.max_shape)[1];
    QCOMPARE(rows, about["shape"][0].get<int>());
    QCOMPARE(cols, about["shape"][1].get<int>());
    QCOMPARE(named.orientation, 3);  // pyFAI 0.21.3 writes none: the default

    // livedrp's gap mask for the named detector is pyFAI's, pixel for pixel.
    const std::vector<std::uint8_t> pyfai_mask = mask_values(io::read_npy(d / "mask.npy"));
    const std::vector<std::uint8_t> gaps = poni_detector_mask(named, rows, cols);
    QCOMPARE(gaps.size(), pyfai_mask.size());
    std::size_t differ = 0, masked = 0;
    for (std::size_t k = 0; k < gaps.size(); ++k) {
      differ += (gaps[k] != 0) != (pyfai_mask[k] != 0);
      masked += gaps[k] != 0;
    }
    QCOMPARE(differ, std::size_t(0));
    QCOMPARE(masked, std::size_t(gap_pixels));

    const std::vector<float> image = float_values(io::read_npy(d / "image.npy"));
    QCOMPARE(image.size(), std::size_t(rows) * std::size_t(cols));
    for (const auto& [key, profile] : about.at("profiles").items()) {
      const QString what = detector + " " + QString::fromStdString(key);
      Integrator by_name(named, plain_layout(rows, cols), config_of(profile));
      Integrator plain(generic, plain_layout(rows, cols), config_of(profile));
      plain.set_mask(pyfai_mask);  // the generic detector has no gaps of its own
      const Profile a = by_name.integrate(image);
      const Profile b = plain.integrate(image);
      QVERIFY2(identical(a, b), qPrintable(what + ": named and generic PONIs differ"));
      const io::Array pyfai = io::read_npy(d / (key + ".npy"));
      const double worst = worst_against_pyfai(a, pyfai, what);
      qInfo("%s: %d bins, max relative difference from pyFAI %.3g", qPrintable(what),
            profile["npt"].get<int>(), worst);
      QVERIFY2(worst <= kTolerance, qPrintable(what + QString(": %1").arg(worst)));
    }
  }

  // pyFAI writes its raw Jungfrau module (chip-border pixels twice as wide) with the module's
  // shape and pixel size; livedrp refuses to place it on a plain image, naming it.
  void raw_jungfrau_poni_refused_on_a_plain_image() {
    const QString poni = dir_.filePath("jungfrau.poni");
    const Run r =
        run_python({"-c",
                    "import sys, pyFAI\nfrom pyFAI.azimuthalIntegrator import AzimuthalIntegrator\n"
                    "AzimuthalIntegrator(dist=0.1, detector=pyFAI.detector_factory('Jungfrau'))"
                    ".write(sys.argv[1])\n",
                    poni});
    QVERIFY2(r.ok, qPrintable(r.output));
    const PoniGeometry g = read_poni(poni.toStdString());
    QCOMPARE(g.detector, std::string("Jungfrau"));
    std::string error;
    try {
      Integrator(g, plain_layout(512, 1024), IntegrationConfig{});
    } catch (const InputError& e) {
      error = e.what();
    }
    QVERIFY2(error.find("'Jungfrau'") != std::string::npos, error.c_str());
  }

  void text_output_read_back_by_pyfai_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("unit");
    QTest::addColumn<int>("npt");
    QTest::newRow("xy q_nm^-1") << "profile_q.xy"
                                << "q_nm^-1" << 400;
    QTest::newRow("dat 2th_deg") << "profile_2th.dat"
                                 << "2th_deg" << 300;
    QTest::newRow("xy q_A^-1") << "profile_qa.xy"
                               << "q_A^-1" << 250;
    QTest::newRow("dat r_mm") << "profile_r.dat"
                              << "r_mm" << 350;
  }

  void text_output_read_back_by_pyfai() {
    QFETCH(QString, file);
    QFETCH(QString, unit);
    QFETCH(int, npt);
    const QString dir = case_dir("Pilatus1M");
    QVERIFY(!dir.isEmpty());
    const QString out = dir + "/" + file, image = dir + "/image.npy", poni = dir + "/named.poni";
    const CliResult cli = run_cli("LIVEDRP_ENGINE_EXE",
                                  {"integrate", "--poni", poni, "--input", image, "--npt",
                                   QString::number(npt), "--unit", unit, "--output", out},
                                  -1);
    QVERIFY2(cli.exit_code == 0, qPrintable(cli.err));
    const Run r = run_python({script(), "text", out, image, poni, QString::number(npt)});
    QVERIFY2(r.ok, qPrintable(r.output));
    const nlohmann::json j = read_json(out + ".json");
    QCOMPARE(QString::fromStdString(j.at("unit").get<std::string>()), unit);
    QCOMPARE(j.at("columns"), nlohmann::json({unit.toStdString(), "I", "sigma"}));
    QCOMPARE(j.at("rows").get<int>(), npt);
    QCOMPARE(j.at("pyfai_rows").get<int>(), npt);
    const double radial = j.at("radial"), intensity = j.at("intensity"), sigma = j.at("sigma");
    qInfo("%s: max relative difference from pyFAI: radial %.3g, intensity %.3g, sigma %.3g",
          qPrintable(file), radial, intensity, sigma);
    QVERIFY2(radial <= kTolerance, qPrintable(QString::number(radial)));
    QVERIFY2(intensity <= kTolerance, qPrintable(QString::number(intensity)));
    QVERIFY2(sigma <= kTolerance, qPrintable(QString::number(sigma)));
    // The header's geometry, as pyFAI read it from the PONI (PONI in %.3e, rotations in %.6f).
    QCOMPARE(j.at("distance"), nlohmann::json::array({j.at("pyfai_distance")}));
    QCOMPARE(j.at("wavelength"), nlohmann::json::array({j.at("pyfai_wavelength")}));
    for (int k = 0; k < 2; ++k) QVERIFY(relative(j["poni"][k], j["pyfai_poni"][k]) <= 5e-4);
    for (int k = 0; k < 3; ++k)
      QVERIFY(std::fabs(j["rotations"][k].get<double>() - j["pyfai_rotations"][k].get<double>()) <=
              5e-7);
    // What the header says of the mask, as pyFAI's own file of the same integration says it
    // ("from detector": the Pilatus1M's module gaps, no mask file).
    QCOMPARE(j.at("mask"), j.at("pyfai_mask"));
    QCOMPARE(j.at("mask").get<std::string>(), std::string("from detector"));
  }

  // Every orientation, tilted: livedrp integrates the image as stored with a PONI of orientation
  // K; pyFAI (orientation 3) integrates it re-indexed as K re-indexes pixels (live_pyfai.py
  // flipped). Full azimuth only: chi turns with K, and pyFAI 0.21.3 has no way to say so.
  void every_orientation_agrees_with_pyfai_on_the_flipped_image_data() {
    QTest::addColumn<int>("orientation");
    QTest::addColumn<QString>("profile");
    for (int orientation : {1, 2, 4})
      for (const char* profile : {"q", "2th"})
        QTest::newRow(qPrintable(QString("orientation %1 %2").arg(orientation).arg(profile)))
            << orientation << QString(profile);
  }
  void every_orientation_agrees_with_pyfai_on_the_flipped_image() {
    QFETCH(int, orientation);
    QFETCH(QString, profile);
    const QString dir = case_dir("Pilatus1M");
    QVERIFY(!dir.isEmpty());
    if (!QFile::exists(dir + "/orientation1_q.npy")) {
      const Run r = run_python({script(), "flipped", dir});
      QVERIFY2(r.ok, qPrintable(r.output));
    }
    const std::filesystem::path d = dir.toStdString();
    const nlohmann::json about = read_json(dir + "/about.json");
    PoniGeometry generic = read_poni(d / "generic.poni");
    QCOMPARE(generic.orientation, 3);
    generic.orientation = orientation;
    const int rows = (*generic.max_shape)[0], cols = (*generic.max_shape)[1];
    const std::vector<float> image = float_values(io::read_npy(d / "image.npy"));
    Integrator oriented(generic, plain_layout(rows, cols),
                        config_of(about.at("profiles").at(profile.toStdString())));
    const Profile ours = oriented.integrate(image);
    const io::Array pyfai = io::read_npy(
        d / QString("orientation%1_%2.npy").arg(orientation).arg(profile).toStdString());
    const QString what = QString("orientation %1 %2").arg(orientation).arg(profile);
    const double worst = worst_against_pyfai(ours, pyfai, what);
    qInfo("%s: max relative difference from pyFAI %.3g", qPrintable(what), worst);
    QVERIFY2(worst <= kTolerance, qPrintable(what + QString(": %1").arg(worst)));
    // Not the same profile as orientation 3's: the flip moved the tilted image's rings.
    generic.orientation = 3;
    Integrator native(generic, plain_layout(rows, cols),
                      config_of(about.at("profiles").at(profile.toStdString())));
    QVERIFY(!identical(native.integrate(image), ours));
  }

  // Debian 12's pyFAI predates PONI 2.1's orientation: it cannot compute orientations 1, 2 and 4,
  // so the live checks above are of orientation 3 (every PONI before 2.1). Should a later pyFAI
  // know orientations, this says so, for the suite to grow a live check of them.
  void orientation_is_the_default_one() {
    const QString dir = case_dir("Pilatus1M");
    QVERIFY(!dir.isEmpty());
    const nlohmann::json about = read_json(dir + "/about.json");
    const std::string version = about.at("pyfai_version");
    if (about.at("orientation").get<bool>())
      qWarning("pyFAI %s knows detector orientations: only orientation 3 is checked live here",
               version.c_str());
    else
      qInfo(
          "pyFAI %s has no detector orientation: orientation 3 checked live, 1, 2 and 4 live "
          "on the flipped image (every_orientation_agrees_with_pyfai_on_the_flipped_image)",
          version.c_str());
    const PoniGeometry named = read_poni((dir + "/named.poni").toStdString());
    QCOMPARE(named.orientation, 3);
  }
};

QTEST_GUILESS_MAIN(TestPyfaiLive)
#include "test_pyfai_live.moc"
