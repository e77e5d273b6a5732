// `livedrp-engine integrate` on the command line: a stack from .npy and from HDF5, bbox splitting,
// sigma clipping and a segmented detector (--detector), each compared with pyFAI 0.21.3's
// references (make_integrate_refs.py) at 1e-4 relative per bin (bbox within 1e-3); every kind of
// bad input gives exit status 2 and names the problem.
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"
#include "exec/backend.hpp"
#include "integrate_csv_support.hpp"
#include "io/array.hpp"
#include "io/hdf5_array.hpp"
#include "io/npy.hpp"

using namespace livedrp;

namespace {

using integrate_cli_testing::CsvRow;
using integrate_cli_testing::read_csv;
using integrate_cli_testing::reference_dir;
using integrate_cli_testing::relative;

QString ref(const char* name) {
  return QString::fromStdString((reference_dir() / name).string());
}

nlohmann::json find_case(const std::string& name) {
  return integrate_cli_testing::find_case("integrate_cases.json", name);
}

}  // namespace

class TestIntegrateCli : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  static CliResult run(const QStringList& arguments) {
    return run_cli("LIVEDRP_ENGINE_EXE", arguments);
  }

  QString temp(const char* name) const { return dir_.path() + "/" + name; }

  // Runs `arguments` (plus --output), compares every row with the reference of `case_name`.
  void expect_matches(const QStringList& arguments, const std::string& case_name) {
    const QString out = temp((case_name + ".csv").c_str());
    const CliResult r = run(QStringList(arguments) << "--output" << out);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const nlohmann::json c = find_case(case_name);
    const io::Array reference = io::read_npy(reference_dir() / c["reference"].get<std::string>());
    const int bins = c["npt"].get<int>();
    const int frames = reference.shape.size() == 3 ? int(reference.shape[0]) : 1;
    QString header;
    const std::vector<CsvRow> rows = read_csv(out, &header);
    QCOMPARE(header, QString("frame,radial,intensity,sigma"));
    QCOMPARE(int(rows.size()), frames * bins);
    double worst = 0.0;
    for (int k = 0; k < frames * bins; ++k) {
      const double* row = reference.as<double>() + 7 * k;
      QCOMPARE(rows[std::size_t(k)].frame, k / bins);
      worst = std::max({worst, relative(rows[std::size_t(k)].radial, row[0]),
                        relative(rows[std::size_t(k)].intensity, row[1]),
                        relative(rows[std::size_t(k)].sigma, row[2])});
    }
    qInfo("%s: max relative error %.3g", case_name.c_str(), worst);
    const double tolerance = c.value("method", "no") == "bbox" ? 1e-3 : 1e-4;
    QVERIFY2(worst <= tolerance, qPrintable(QString("max relative error %1").arg(worst)));
    if (frames > 1) QVERIFY2(r.err.contains("integrated 3 / 3 frames"), qPrintable(r.err));
    // The integration's own rate, after the first frame (which may finish a backend's set-up).
    QVERIFY2(r.err.contains("livedrp-engine: integration on cpu: first frame "), qPrintable(r.err));
    if (frames > 1) {
      static const QRegularExpression rate(
          R"(then ([0-9.e+]+) frames/s over 2 frames \(\d+ threads\))");
      const QRegularExpressionMatch m = rate.match(r.err);
      QVERIFY2(m.hasMatch() && m.captured(1).toDouble() > 0.0, qPrintable(r.err));
    }
  }

  void expect_bad(const QStringList& arguments, const QString& text) {
    EXPECT_BAD_INPUT(run(arguments), text);
  }

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(qEnvironmentVariable("LIVEDRP_ENGINE_EXE")),
             "set LIVEDRP_ENGINE_EXE to the livedrp-engine executable (CTest does)");
    QVERIFY(dir_.isValid());
  }

  void stack_from_npy_matches_pyfai() {
    expect_matches({"integrate", "--poni", ref("untilted.poni"), "--input",
                    ref("int_stack_q_input.npy"), "--mask", ref("int_stack_q_mask.npy"), "--npt",
                    "20", "--unit", "q_nm^-1", "--polarization", "0.9"},
                   "stack_q");
  }

  void stack_from_hdf5_matches_pyfai() {
    const std::string h5 = temp("stack.h5").toStdString();
    io::write_hdf5_dataset(h5, "/entry/data",
                           io::read_npy(reference_dir() / "int_stack_q_input.npy"));
    io::write_hdf5_dataset(h5, "/entry/mask",
                           io::read_npy(reference_dir() / "int_stack_q_mask.npy"));
    const QString file = QString::fromStdString(h5);
    expect_matches({"integrate", "--poni", ref("untilted.poni"), "--input", file + ":/entry/data",
                    "--mask", file + ":/entry/mask", "--npt", "20", "--polarization", "0.9"},
                   "stack_q");
  }

  void all_corrections_match_pyfai() {
    expect_matches({"integrate",
                    "--poni",
                    ref("untilted.poni"),
                    "--input",
                    ref("int_untilted_full_input.npy"),
                    "--mask",
                    ref("int_untilted_full_mask.npy"),
                    "--dark",
                    ref("int_untilted_full_dark.npy"),
                    "--flat",
                    ref("int_untilted_full_flat.npy"),
                    "--npt",
                    "30",
                    "--unit",
                    "2th_deg",
                    "--radial-range",
                    "0.4",
                    "2.6",
                    "--azimuth-range",
                    "-120",
                    "60",
                    "--polarization",
                    "0.95",
                    "--dummy",
                    "-1"},
                   "untilted_full");
    expect_matches(
        {"integrate", "--poni", ref("tilted.poni"), "--input", ref("int_tilted_qa_azim_input.npy"),
         "--mask", ref("int_tilted_qa_azim_mask.npy"), "--npt", "20", "--unit", "q_A^-1",
         "--radial-range", "0.8", "1.2", "--error-model", "azimuthal"},
        "tilted_qa_azim");
    expect_matches({"integrate", "--poni", ref("tilted.poni"), "--input",
                    ref("int_tilted_r_input.npy"), "--mask", ref("int_tilted_r_mask.npy"), "--npt",
                    "25", "--unit", "r_mm", "--no-solid-angle", "--polarization", "-0.5"},
                   "tilted_r");
  }

  void sigma_clipping_matches_pyfai() {
    expect_matches(
        {"integrate", "--poni", ref("untilted.poni"), "--input", ref("int_clip_poisson_input.npy"),
         "--mask", ref("int_clip_poisson_mask.npy"), "--npt", "30", "--radial-range", "0.3", "2.4",
         "--polarization", "0.95", "--sigma-clip", "3", "--clip-iterations", "5"},
        "clip_poisson");
  }

  void bbox_splitting_matches_pyfai() {
    expect_matches({"integrate",
                    "--poni",
                    ref("tilted.poni"),
                    "--input",
                    ref("int_tilted_tth_bbox_input.npy"),
                    "--dark",
                    ref("int_tilted_tth_bbox_dark.npy"),
                    "--flat",
                    ref("int_tilted_tth_bbox_flat.npy"),
                    "--npt",
                    "25",
                    "--unit",
                    "2th_deg",
                    "--method",
                    "bbox",
                    "--azimuth-range",
                    "8",
                    "20",
                    "--polarization",
                    "0.9"},
                   "tilted_tth_bbox");
  }

  // The segment stack of a 2x2 detector with gaps, placed by a detector description.
  void segmented_detector_matches_pyfai() {
    const nlohmann::json c = find_case("seg4");
    const auto& seg = c["segments"];
    nlohmann::json placement = nlohmann::json::array();
    for (const auto& p : seg["placement"])
      placement.push_back({{"x_px", p["x_px"]}, {"y_px", p["y_px"]}, {"rotation_deg", 0}});
    const nlohmann::json description = {
        {"schema_version", 1},
        {"name", "seg4"},
        {"raw_encoding", "float32"},
        {"segments", seg["count"]},
        {"segment_shape", {seg["rows"], seg["cols"]}},
        {"pixel_size_um", 100.0},
        {"asic_shape", {seg["rows"], seg["cols"]}},
        {"bank_columns", 0},
        {"gain_modes", {{{"name", "calibrated"}, {"nominal_adu_per_kev", 1.0}}}},
        {"placement", placement}};
    const QString json_path = temp("seg4.json");
    std::ofstream(json_path.toStdString()) << description.dump();
    expect_matches({"integrate", "--poni", ref("seg4.poni"), "--detector", json_path, "--input",
                    ref("int_seg4_input.npy"), "--mask", ref("int_seg4_mask.npy"), "--npt", "24",
                    "--polarization", "0.99"},
                   "seg4");
    expect_matches({"integrate", "--poni", ref("seg4.poni"), "--detector", json_path, "--input",
                    ref("int_seg4_bbox_input.npy"), "--mask", ref("int_seg4_bbox_mask.npy"),
                    "--npt", "24", "--polarization", "0.99", "--method", "bbox"},
                   "seg4_bbox");
  }

  void bad_input_is_named() {
    const QString poni = ref("untilted.poni"), image = ref("int_untilted_q_input.npy");
    const QString out = temp("bad.csv");
    const QStringList base{"integrate", "--poni", poni, "--input", image, "--output", out};
    expect_bad(QStringList(base) << "--npt"
                                 << "10"
                                 << "--sigma-clip"
                                 << "-1",
               "cutoff");
    expect_bad(QStringList(base) << "--npt"
                                 << "10"
                                 << "--sigma-clip"
                                 << "3"
                                 << "--clip-iterations"
                                 << "-2",
               "max_iter");
    expect_bad(QStringList(base) << "--npt"
                                 << "0",
               "bins");
    expect_bad(QStringList(base) << "--npt"
                                 << "10"
                                 << "--unit"
                                 << "q_pm^-1",
               "--unit");
    expect_bad(QStringList(base) << "--npt"
                                 << "10"
                                 << "--radial-range"
                                 << "1"
                                 << "1",
               "radial range");
    expect_bad(QStringList(base) << "--npt"
                                 << "10"
                                 << "--radial-range"
                                 << "5"
                                 << "1",
               "radial range");
    expect_bad(QStringList(base) << "--npt"
                                 << "10"
                                 << "--azimuth-range"
                                 << "90"
                                 << "-90",
               "azimuth range");
    // A folder where the CSV should go is the user's to fix: exit 2, the path named.
    expect_bad({"integrate", "--poni", poni, "--input", image, "--output",
                QFileInfo(out).absolutePath(), "--npt", "10"},
               "cannot write output file");
    expect_bad(QStringList(base) << "--npt"
                                 << "10"
                                 << "--polarization"
                                 << "2",
               "polarization");
    expect_bad(QStringList(base) << "--npt"
                                 << "10"
                                 << "--error-model"
                                 << "gauss",
               "--error-model");
    // With a device, --backend cuda works (tests/test_gpu_integrate compares it with the CPU);
    // without one, or in a build without CUDA, it is refused with the reason.
    if (cuda_unavailable_reason())
      expect_bad(QStringList(base) << "--npt"
                                   << "10"
                                   << "--backend"
                                   << "cuda",
                 "--backend cuda");
    expect_bad(QStringList(base) << "--npt"
                                 << "10"
                                 << "--backend"
                                 << "opencl",
               "--backend must be cpu or cuda");
    expect_bad(QStringList(base) << "--npt"
                                 << "10"
                                 << "--method"
                                 << "full",
               "--method");
    expect_bad(QStringList(base) << "--npt"
                                 << "10"
                                 << "--mask" << ref("int_tilted_r_mask.npy"),
               "mask");
    expect_bad(QStringList(base) << "--npt"
                                 << "10"
                                 << "--detector"
                                 << "epix10ka2m",
               "epix10ka2m needs");
    expect_bad({"integrate", "--poni", poni, "--input", temp("missing.npy"), "--output", out,
                "--npt", "10"},
               "does not exist");
    expect_bad({"integrate", "--poni", temp("missing.poni"), "--input", image, "--output", out,
                "--npt", "10"},
               "missing.poni");
    expect_bad({"integrate", "--poni", poni, "--input", poni, "--output", out, "--npt", "10"},
               "neither a NumPy .npy file nor HDF5");
    expect_bad({"integrate", "--poni", poni, "--input", ref("int_untilted_q_ref.npy"), "--output",
                out, "--npt", "10", "--dark", ref("untilted_tth.npy")},
               "dark");
    expect_bad({"integrate", "--poni", poni, "--input", image, "--output", out}, "--npt");
    // A 1-D input is not an image.
    io::Array line;
    line.type = io::ElementType::Float32;
    line.shape = {5};
    line.bytes.assign(20, 0);
    io::write_npy(temp("line.npy").toStdString(), line);
    expect_bad(
        {"integrate", "--poni", poni, "--input", temp("line.npy"), "--output", out, "--npt", "10"},
        "expected one image");
  }
};

QTEST_GUILESS_MAIN(TestIntegrateCli)
#include "test_integrate_cli.moc"
