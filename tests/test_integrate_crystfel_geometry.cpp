// Azimuthal integration of a slab placed by a CrystFEL geometry (`livedrp-engine integrate
// --geometry FILE.geom`, integrate::layout_from_geometry):
// - against pyFAI 0.21.3 given the same pixels' corners (tests/reference/pyfai/make_geom_refs.py:
//   a panel turned by 90 degrees, one by 30, one flipped with 75 um pixels, gaps, bad regions, a
//   no_index panel, a tilted PONI) at 1e-4 relative per bin, 1e-3 with bbox splitting;
// - every pixel's 2theta and chi for an untilted PONI (poni1 = poni2 = 0, dist = D) against
//   float64 values worked out here from the .geom numbers: 2theta = atan(hypot(x, y) / res / D),
//   chi = atan2(y, -x) (the convention: dim1 = +y / res, dim2 = -x / res);
// - the geometry's bad pixels masked together with the user's mask;
// - the geometry's warnings on stderr;
// - bad input (both --geometry and --detector, a wrong input or mask shape, res missing or not
//   positive) refused with exit status 2 and the problem named.
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"
#include "core/crystfel_geometry.hpp"
#include "core/error.hpp"
#include "integrate/integrator.hpp"
#include "integrate/layout.hpp"
#include "integrate_csv_support.hpp"
#include "io/array.hpp"
#include "io/npy.hpp"

using namespace livedrp;

namespace {

using integrate_cli_testing::CsvRow;
using integrate_cli_testing::reference_dir;
using integrate_cli_testing::relative;

QString reference_file(const std::string& name) {
  return QString::fromStdString((reference_dir() / name).string());
}

nlohmann::json find_case(const std::string& name) {
  return integrate_cli_testing::find_case("geom_cases.json", name);
}

// The CSV's rows, none unless the header is the command's.
std::vector<CsvRow> read_csv(const QString& path) {
  QString header;
  std::vector<CsvRow> rows = integrate_cli_testing::read_csv(path, &header);
  if (header != "frame,radial,intensity,sigma") return {};
  return rows;
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

// The untilted case's own geometry: numbers written here, placed by the .geom text made from
// them and checked against values computed from them. A slab of 17 x 20: row 8 and, below it,
// columns 10..19 belong to no panel.
struct TestPanel {
  const char* name;
  int min_fs, max_fs, min_ss, max_ss;
  double fs_x, fs_y, ss_x, ss_y, corner_x, corner_y, res;
};
const TestPanel kPanels[] = {
    {"a", 0, 9, 0, 7, 1.0, 0.0, 0.0, 1.0, -12.5, 3.0, 10000.0},
    // Turned by 90 degrees.
    {"b", 10, 19, 0, 7, 0.0, 1.0, -1.0, 0.0, 11.0, -9.0, 10000.0},
    // Turned by about -53 degrees, 75 um pixels.
    {"c", 0, 9, 9, 16, 0.6, -0.8, 0.8, 0.6, -4.0, -20.0, 40000.0 / 3.0},
};
constexpr int kSlabHeight = 17, kSlabWidth = 20;
constexpr double kDistance = 0.08;  // m, the PONI's and the geometry's clen

std::string test_geometry_text(const std::string& extra = {}) {
  std::string text = "clen = 0.08\nphoton_energy = 9000\n";
  char line[512];  // ample for six lines of numbers in %.17g
  for (const TestPanel& p : kPanels) {
    std::snprintf(line, sizeof line,
                  "%s/min_fs = %d\n%s/max_fs = %d\n%s/min_ss = %d\n%s/max_ss = %d\n"
                  "%s/fs = %+.17gx %+.17gy\n%s/ss = %+.17gx %+.17gy\n",
                  p.name, p.min_fs, p.name, p.max_fs, p.name, p.min_ss, p.name, p.max_ss, p.name,
                  p.fs_x, p.fs_y, p.name, p.ss_x, p.ss_y);
    text += line;
    std::snprintf(line, sizeof line, "%s/corner_x = %.17g\n%s/corner_y = %.17g\n%s/res = %.17g\n",
                  p.name, p.corner_x, p.name, p.corner_y, p.name, p.res);
    text += line;
  }
  return text + extra;
}

const TestPanel* panel_at(int fs, int ss) {
  for (const TestPanel& p : kPanels)
    if (fs >= p.min_fs && fs <= p.max_fs && ss >= p.min_ss && ss <= p.max_ss) return &p;
  return nullptr;
}

integrate::PoniGeometry untilted_poni() {
  integrate::PoniGeometry poni;
  poni.distance = kDistance;
  poni.pixel1 = poni.pixel2 = 100e-6;  // the PONI's pixel size; the geometry's res places pixels
  poni.wavelength = 1.0e-10;
  return poni;
}

}  // namespace

class TestIntegrateCrystfelGeometry : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  QString temp(const std::string& name) const {
    return dir_.path() + "/" + QString::fromStdString(name);
  }

  QString write_temp(const std::string& name, const std::string& text) const {
    std::ofstream(temp(name).toStdString()) << text;
    return temp(name);
  }

  static CliResult run(const QStringList& arguments) {
    return run_cli("LIVEDRP_ENGINE_EXE", arguments);
  }

  // `integrate --geometry` with the case's PONI, input, mask and `options`, every bin compared
  // with pyFAI's.
  void expect_matches_pyfai(const std::string& case_name, const QStringList& options) {
    const nlohmann::json c = find_case(case_name);
    QVERIFY2(!c.is_null(), case_name.c_str());
    const QString out = temp(case_name + ".csv");
    const auto field = [&c](const char* key) { return c[key].get<std::string>(); };
    const CliResult r =
        run(QStringList{"integrate", "--poni", reference_file(field("poni")), "--geometry",
                        reference_file(field("geometry")), "--input",
                        reference_file(field("input")), "--mask", reference_file(field("mask")),
                        "--npt", QString::number(c["npt"].get<int>()), "--unit",
                        QString::fromStdString(field("unit")), "--output", out}
            << options);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const io::Array reference = io::read_npy(reference_dir() / c["reference"].get<std::string>());
    const int bins = c["npt"].get<int>();
    const int frames = reference.shape.size() == 3 ? int(reference.shape[0]) : 1;
    const std::vector<CsvRow> rows = read_csv(out);
    QCOMPARE(int(rows.size()), frames * bins);
    double worst = 0.0;
    int with_pixels = 0;
    for (int k = 0; k < frames * bins; ++k) {
      const double* row = reference.as<double>() + 7 * k;
      QCOMPARE(rows[std::size_t(k)].frame, k / bins);
      worst = std::max({worst, relative(rows[std::size_t(k)].radial, row[0]),
                        relative(rows[std::size_t(k)].intensity, row[1]),
                        relative(rows[std::size_t(k)].sigma, row[2])});
      with_pixels += row[6] > 0.0;
    }
    // Most bins hold pixels, or the comparison would say little.
    QVERIFY2(with_pixels > frames * bins * 3 / 4, qPrintable(QString::number(with_pixels)));
    qInfo("%s: max relative error %.3g", case_name.c_str(), worst);
    const double tolerance = c.value("method", "no") == "bbox" ? 1e-3 : 1e-4;
    QVERIFY2(worst <= tolerance, qPrintable(QString("max relative error %1").arg(worst)));
  }

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(qEnvironmentVariable("LIVEDRP_ENGINE_EXE")),
             "set LIVEDRP_ENGINE_EXE to the livedrp-engine executable (CTest does)");
    QVERIFY(dir_.isValid());
  }

  void tilted_stack_without_splitting_matches_pyfai() {
    expect_matches_pyfai("tilted_q", {"--polarization", "0.95"});
  }

  void untilted_radius_without_splitting_matches_pyfai() {
    expect_matches_pyfai("untilted_r", {"--no-solid-angle"});
  }

  void tilted_bbox_splitting_in_an_azimuth_range_matches_pyfai() {
    expect_matches_pyfai("tilted_tth_bbox", {"--method", "bbox", "--polarization", "0.9",
                                             "--azimuth-range", "-60", "150"});
  }

  void untilted_two_theta_and_chi_are_the_geometry_own() {
    const crystfel::Geometry g = crystfel::parse_geometry(test_geometry_text(), "test.geom");
    integrate::IntegrationConfig config;
    config.unit = integrate::RadialUnit::TwoThetaDeg;
    integrate::Integrator in(untilted_poni(), integrate::layout_from_geometry(g), config);
    QCOMPARE(in.pixels(), std::size_t(kSlabHeight * kSlabWidth));
    const std::span<const double> tth = in.pixel_two_theta(), chi = in.pixel_chi();
    int checked = 0;
    for (int ss = 0; ss < kSlabHeight; ++ss)
      for (int fs = 0; fs < kSlabWidth; ++fs) {
        const std::size_t k = std::size_t(ss * kSlabWidth + fs);
        const TestPanel* p = panel_at(fs, ss);
        if (!p) {
          QVERIFY(std::isnan(tth[k]) && std::isnan(chi[k]));
          continue;
        }
        const double i = fs - p->min_fs + 0.5, j = ss - p->min_ss + 0.5;
        const double x = p->corner_x + i * p->fs_x + j * p->ss_x;
        const double y = p->corner_y + i * p->fs_y + j * p->ss_y;
        const double expected_tth = std::atan(std::hypot(x, y) / p->res / kDistance);
        // pyFAI keeps a corner-given detector's positions in float32 (about 6e-8 relative),
        // and livedrp with it.
        QVERIFY2(relative(tth[k], expected_tth) < 1e-6,
                 qPrintable(QString("fs %1 ss %2: 2theta %3, expected %4")
                                .arg(fs)
                                .arg(ss)
                                .arg(tth[k], 0, 'g', 17)
                                .arg(expected_tth, 0, 'g', 17)));
        double d = std::fabs(chi[k] - std::atan2(y, -x));
        d = std::min(d, 2.0 * integrate::kPi - d);
        QVERIFY2(d < 1e-6,
                 qPrintable(QString("fs %1 ss %2: chi off by %3").arg(fs).arg(ss).arg(d)));
        ++checked;
      }
    QCOMPARE(checked, 3 * 80);
  }

  void geometry_bad_pixels_stay_masked_with_the_users_mask() {
    // A bad region in fs/ss on panel a, one in x/y (outer pixel corners, ends included) over
    // panel b's pixels with corner x in [7, 9] and y in [-9, -8], and panel c not indexed.
    const crystfel::Geometry g = crystfel::parse_geometry(
        test_geometry_text("c/no_index = 1\nbadA/min_fs = 2\nbadA/max_fs = 3\nbadA/min_ss = "
                           "4\nbadA/max_ss = 4\nbadA/panel = a\nbadB/min_x = 7\nbadB/max_x = "
                           "9\nbadB/min_y = -9\nbadB/max_y = -8\n"),
        "test.geom");
    integrate::Integrator in(untilted_poni(), integrate::layout_from_geometry(g), {});
    std::vector<std::uint8_t> user(std::size_t(kSlabHeight * kSlabWidth), 0);
    user[5] = 1;  // panel a, fs 5 ss 0
    in.set_mask(user);
    const std::span<const float> norm = in.normalization();
    int good = 0;
    for (int ss = 0; ss < kSlabHeight; ++ss)
      for (int fs = 0; fs < kSlabWidth; ++fs) {
        const std::size_t k = std::size_t(ss * kSlabWidth + fs);
        const TestPanel* p = panel_at(fs, ss);
        bool bad = !p || p->name == std::string("c") || user[k] != 0 ||
                   (p->name == std::string("a") && fs >= 2 && fs <= 3 && ss == 4);
        if (p && p->name == std::string("b")) {
          // Panel b: x = 11 - (ss - 0), y = -9 + (fs - 10) at the outer corner.
          const double x = 11.0 - ss, y = -9.0 + (fs - 10);
          bad = bad || (x >= 7.0 && x <= 9.0 && y >= -9.0 && y <= -8.0);
        }
        QVERIFY2((norm[k] == 0.0f) == bad, qPrintable(QString("fs %1 ss %2").arg(fs).arg(ss)));
        good += !bad;
      }
    QCOMPARE(good, 160 - 1 - 2 - 6);
    // No mask from the user: the geometry's stays.
    in.set_mask({});
    QCOMPARE(in.normalization()[std::size_t(4 * kSlabWidth + 2)], 0.0f);
    QVERIFY(in.normalization()[5] > 0.0f);
  }

  void layout_refuses_a_panel_without_a_positive_res() {
    crystfel::Geometry g = crystfel::parse_geometry(test_geometry_text(), "test.geom");
    for (const double res : {0.0, -10000.0, std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity()}) {
      g.panels[1].res = res;
      const std::string e = error_of([&] { integrate::layout_from_geometry(g); });
      QVERIFY2(e.find("test.geom") != std::string::npos &&
                   e.find("panel 'b'") != std::string::npos &&
                   e.find("res (pixels per metre)") != std::string::npos,
               e.c_str());
    }
  }

  void geometry_warnings_reach_stderr() {
    const QString geom =
        write_temp("warn.geom", test_geometry_text("b/coffset = 0.001\nfoo = 1\n"));
    io::Array slab;
    slab.type = io::ElementType::Float32;
    slab.shape = {kSlabHeight, kSlabWidth};
    slab.bytes.assign(kSlabHeight * kSlabWidth * sizeof(float), 0);
    io::write_npy(temp("slab.npy").toStdString(), slab);
    const CliResult r = run({"integrate", "--poni", reference_file("geom_untilted.poni"),
                             "--geometry", geom, "--input", temp("slab.npy"), "--npt", "10",
                             "--unit", "2th_deg", "--output", temp("warn.csv")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("warning:") && r.err.contains("unknown key 'foo'"), qPrintable(r.err));
    QVERIFY2(r.err.contains("panel 'b' has coffset"), qPrintable(r.err));
  }

  void geometry_and_detector_together_are_refused() {
    EXPECT_BAD_INPUT(run({"integrate", "--poni", reference_file("geom_tilted.poni"), "--geometry",
                          reference_file("geom_panels.geom"), "--detector", "epix10ka2m", "--input",
                          reference_file("geom_tilted_tth_bbox_input.npy"), "--npt", "10",
                          "--output", temp("bad.csv")}),
                     "--detector and --geometry are mutually exclusive");
  }

  void input_or_mask_not_of_the_slab_shape_is_refused() {
    const QStringList base{"integrate",
                           "--poni",
                           reference_file("geom_tilted.poni"),
                           "--geometry",
                           reference_file("geom_panels.geom"),
                           "--npt",
                           "10",
                           "--output",
                           temp("bad.csv")};
    // A 48 x 64 image; the slab is 25 x 36.
    const QString other = reference_file("int_untilted_q_input.npy");
    EXPECT_BAD_INPUT(run(QStringList(base) << "--input" << other), "needs its slab [25, 36]");
    EXPECT_BAD_INPUT(
        run(QStringList(base) << "--input" << reference_file("geom_tilted_tth_bbox_input.npy")
                              << "--mask" << other),
        "mask");
  }

  void missing_geometry_file_is_named() {
    EXPECT_BAD_INPUT(
        run({"integrate", "--poni", reference_file("geom_tilted.poni"), "--geometry",
             temp("missing.geom"), "--input", reference_file("geom_tilted_tth_bbox_input.npy"),
             "--npt", "10", "--output", temp("bad.csv")}),
        "--geometry file");
  }

  void panel_res_missing_or_not_positive_is_refused() {
    const std::string text = test_geometry_text(), b_res = "b/res = 10000\n";
    const std::size_t at = text.find(b_res);
    QVERIFY(at != std::string::npos);
    const auto with_b_res = [&](const std::string& name, const std::string& line) {
      return write_temp(name, std::string(text).replace(at, b_res.size(), line));
    };
    const auto run_with = [&](const QString& geometry) {
      return run({"integrate", "--poni", reference_file("geom_untilted.poni"), "--geometry",
                  geometry, "--input", reference_file("geom_tilted_tth_bbox_input.npy"), "--npt",
                  "10", "--output", temp("bad.csv")});
    };
    EXPECT_BAD_INPUT(run_with(with_b_res("res0.geom", "b/res = 0\n")),
                     "res (pixels per metre) must be positive");
    EXPECT_BAD_INPUT(run_with(with_b_res("res_negative.geom", "b/res = -5000\n")),
                     "res (pixels per metre) must be positive");
    EXPECT_BAD_INPUT(run_with(with_b_res("nores.geom", "")), "panel 'b' has no res");
  }
};

QTEST_GUILESS_MAIN(TestIntegrateCrystfelGeometry)
#include "test_integrate_crystfel_geometry.moc"
