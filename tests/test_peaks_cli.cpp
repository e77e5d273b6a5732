// `livedrp-engine peaks` end to end: a two-segment detector described in JSON, a stack of frames
// with one hand-made peak of known position and values, the CSV in the input's coordinates (slab
// or segments x rows x cols), the CXI arrays read back from HDF5, the same slab described by a
// CrystFEL .geom file (four panels, radius from the geometry, bad regions), and bad input named.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>

#include "cli_process.hpp"
#include "io/array_file.hpp"
#include "io/hdf5_array.hpp"

using namespace livedrp;

namespace {

constexpr int kRows = 32, kCols = 32, kSegments = 2;

float background(int row, int col) {
  return (row + col) % 2 == 0 ? 9.0f : 11.0f;
}

// Frames x segments x rows x cols; frame 0 has a 2x2 peak (60 50 / 40 30) on segment 1 at rows
// 10-11, columns 12-13; frame 1 is background only.
io::Array frames(bool slab) {
  io::Array a;
  a.type = io::ElementType::Float32;
  a.shape = slab ? std::vector<std::uint64_t>{2, kSegments * kRows, kCols}
                 : std::vector<std::uint64_t>{2, kSegments, kRows, kCols};
  a.bytes.resize(2 * kSegments * kRows * kCols * sizeof(float));
  float* v = a.as<float>();
  for (int f = 0; f < 2; ++f)
    for (int s = 0; s < kSegments; ++s)
      for (int r = 0; r < kRows; ++r)
        for (int c = 0; c < kCols; ++c)
          v[((f * kSegments + s) * kRows + r) * kCols + c] = background(r, c);
  float* peak = v + (0 * kSegments + 1) * kRows * kCols;
  peak[10 * kCols + 12] = 60, peak[10 * kCols + 13] = 50;
  peak[11 * kCols + 12] = 40, peak[11 * kCols + 13] = 30;
  return a;
}

// The ring of local_bg_radius 3 around (10, 12), without the peak, within the ASIC (columns up
// to last_col): its mean by enumeration.
double ring_mean(int last_col = kCols - 1) {
  double sum = 0;
  int count = 0;
  for (int dr = -6; dr < 6; ++dr)
    for (int dc = -6; dc < 6; ++dc) {
      const int r = 10 + dr, c = 12 + dc;
      if (dr * dr + dc * dc > 36 || ((r == 10 || r == 11) && (c == 12 || c == 13))) continue;
      if (c > last_col) continue;
      sum += background(r, c), ++count;
    }
  return sum / count;
}

// The 64 x 32 slab as four 16-column panels of a CrystFEL geometry, far from the beam along +x so
// that each slab column has a radius bin of its own (x = corner_x + fs + 0.5, |y| <= 34: the
// radius exceeds x by less than 0.6 px). The peak (slab rows 42-43, columns 12-13) is on q2.
struct GeomPanel {
  const char* name;
  int min_fs, max_fs, min_ss, max_ss;
  double corner_x, corner_y;
};
constexpr GeomPanel kPanels[] = {{"q0", 0, 15, 0, 31, 1000.25, -32},
                                 {"q1", 16, 31, 0, 31, 1018.25, -32},
                                 {"q2", 0, 15, 32, 63, 1000.25, 2},
                                 {"q3", 16, 31, 32, 63, 1018.25, 2}};

std::string four_panels(const std::string& extra = {}) {
  std::string text =
      "; the test slab as four panels\nres = 10000\nclen = 0.1 m\nphoton_energy = 9000\n"
      "adu_per_photon = 1\n";
  for (const GeomPanel& p : kPanels) {
    const std::string n = p.name;
    text += n + "/min_fs = " + std::to_string(p.min_fs) + "\n" + n +
            "/max_fs = " + std::to_string(p.max_fs) + "\n" + n +
            "/min_ss = " + std::to_string(p.min_ss) + "\n" + n +
            "/max_ss = " + std::to_string(p.max_ss) + "\n" + n + "/fs = +1.0x\n" + n +
            "/ss = +1.0y\n" + n + "/corner_x = " + std::to_string(p.corner_x) + "\n" + n +
            "/corner_y = " + std::to_string(p.corner_y) + "\n";
  }
  return text + extra;
}

// The radius of every slab pixel's centre, computed here: hypot(corner + (i + 0.5, j + 0.5)).
io::Array four_panel_radius() {
  io::Array a;
  a.type = io::ElementType::Float32;
  a.shape = {kSegments * kRows, kCols};
  a.bytes.resize(kSegments * kRows * kCols * sizeof(float));
  for (const GeomPanel& p : kPanels)
    for (int ss = p.min_ss; ss <= p.max_ss; ++ss)
      for (int fs = p.min_fs; fs <= p.max_fs; ++fs)
        a.as<float>()[ss * kCols + fs] = float(
            std::hypot(p.corner_x + (fs - p.min_fs) + 0.5, p.corner_y + (ss - p.min_ss) + 0.5));
  return a;
}

QString read_text(const QString& path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()) : QString();
}

}  // namespace

class TestPeaksCli : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    std::ofstream(file("detector.json")) << R"({
      "schema_version": 1, "name": "two_panels", "description": "test", "raw_encoding": "float32",
      "segments": 2, "segment_shape": [32, 32], "pixel_size_um": 100.0, "asic_shape": [32, 32],
      "bank_columns": 0, "gain_modes": [{"name": "calibrated", "nominal_adu_per_kev": 1.0}],
      "placement": [{"x_px": 0, "y_px": 0, "rotation_deg": 0},
                    {"x_px": 0, "y_px": 40, "rotation_deg": 0}]})";
    std::ofstream(file("params.json")) << R"({"minimum_snr": 5, "min_pixel_count": 2,
      "max_pixel_count": 20, "local_bg_radius": 3, "adc_threshold": 0, "min_peaks_for_hit": 1})";
    io::write_array({file("stack.npy"), ""}, io::ArrayFormat::Npy, frames(false));
    io::write_array({file("slab.npy"), ""}, io::ArrayFormat::Npy, frames(true));
    io::Array radius;  // every pixel at radius 10: one radius bin, statistics known exactly
    radius.type = io::ElementType::Float32;
    radius.shape = {kSegments, kRows, kCols};
    radius.bytes.resize(kSegments * kRows * kCols * sizeof(float));
    for (std::size_t i = 0; i < radius.elements(); ++i) radius.as<float>()[i] = 10.0f;
    io::write_array({file("radius.npy"), ""}, io::ArrayFormat::Npy, radius);
  }

  void csv_in_the_inputs_coordinates() {
    for (const bool slab : {false, true}) {
      const CliResult r =
          run_cli("LIVEDRP_ENGINE_EXE",
                  {"peaks", "--detector", path("detector.json"), "--input",
                   path(slab ? "slab.npy" : "stack.npy"), "--radius-map", path("radius.npy"),
                   "--params", path("params.json"), "--output", path("peaks.csv")});
      QVERIFY2(r.exit_code == 0, qPrintable(r.err));
      QVERIFY(r.err.contains("2 frames, 1 peaks, 1 hits"));
      QFile file(path("peaks.csv"));
      QVERIFY(file.open(QIODevice::ReadOnly));
      const QStringList lines = QString::fromUtf8(file.readAll()).trimmed().split('\n');
      QCOMPARE(lines.size(), 2);
      QCOMPARE(lines[0], QString("event,segment,fs,ss,intensity,num_pixels,max_value,sigma,snr"));
      const QStringList f = lines[1].split(',');
      QCOMPARE(f[0], QString("0"));
      QCOMPARE(f[1], QString("1"));
      QVERIFY(std::fabs(f[2].toDouble() - 2240.0 / 180.0) < 1e-5);
      const double ss = 1870.0 / 180.0 + (slab ? kRows : 0);
      QVERIFY2(std::fabs(f[3].toDouble() - ss) < 1e-5, qPrintable(f[3]));
      QVERIFY(std::fabs(f[4].toDouble() - (180.0 - 4 * ring_mean())) < 1e-3);
      QCOMPARE(f[5], QString("4"));
      QVERIFY(std::fabs(f[6].toDouble() - (60.0 - ring_mean())) < 1e-4);
    }
  }

  void cxi_arrays_read_back() {
    const CliResult r = run_cli(
        "LIVEDRP_ENGINE_EXE",
        {"peaks", "--detector", path("detector.json"), "--input", path("stack.npy"), "--radius-map",
         path("radius.npy"), "--params", path("params.json"), "--output", path("peaks.cxi")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const io::Array counts =
        io::read_hdf5_dataset(path("peaks.cxi").toStdString(), "/entry_1/result_1/nPeaks");
    QCOMPARE(counts.shape, (std::vector<std::uint64_t>{2}));
    QCOMPARE(counts.as<std::int32_t>()[0], 1);
    QCOMPARE(counts.as<std::int32_t>()[1], 0);
    const io::Array x =
        io::read_hdf5_dataset(path("peaks.cxi").toStdString(), "/entry_1/result_1/peakXPosRaw");
    const io::Array y =
        io::read_hdf5_dataset(path("peaks.cxi").toStdString(), "/entry_1/result_1/peakYPosRaw");
    const io::Array n =
        io::read_hdf5_dataset(path("peaks.cxi").toStdString(), "/entry_1/result_1/peakNPixels");
    QCOMPARE(x.shape, (std::vector<std::uint64_t>{2, 2048}));  // max_num_peaks columns
    QVERIFY(std::fabs(x.as<float>()[0] - 2240.0f / 180.0f) < 1e-5f);
    // Raw (slab) coordinates: segment 1 starts at slab row 32.
    QVERIFY(std::fabs(y.as<float>()[0] - (32.0f + 1870.0f / 180.0f)) < 1e-4f);
    QCOMPARE(n.as<float>()[0], 4.0f);
    for (const char* name : {"peakTotalIntensity", "peakMaximumValue", "peakSNR"})
      QCOMPARE(io::read_hdf5_dataset(path("peaks.cxi").toStdString(),
                                     std::string("/entry_1/result_1/") + name)
                   .shape,
               (std::vector<std::uint64_t>{2, 2048}));
  }

  void bad_input_is_named() {
    const QStringList base = {
        "peaks",    "--detector",       path("detector.json"), "--radius-map", path("radius.npy"),
        "--params", path("params.json")};
    io::Array wrong;
    wrong.type = io::ElementType::Float32;
    wrong.shape = {3, 31, 32};
    wrong.bytes.resize(3 * 31 * 32 * 4);
    io::write_array({file("wrong.npy"), ""}, io::ArrayFormat::Npy, wrong);
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE", base + QStringList{"--input", path("wrong.npy"),
                                                                      "--output", path("o.csv")}),
                     "needs a slab [64, 32]");
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE",
                base + QStringList{"--input", path("stack.npy"), "--output", path("o.stream")}),
        "stream output is not written yet");
    std::ofstream(file("bad_params.json")) << R"({"minimum_snr": 5, "local_bg_radius": 0})";
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE",
                {"peaks", "--detector", path("detector.json"), "--input", path("stack.npy"),
                 "--params", path("bad_params.json"), "--output", path("o.csv")}),
        "local_bg_radius = 0");
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE",
                             base + QStringList{"--input", path("stack.npy"), "--mask",
                                                path("wrong.npy"), "--output", path("o.csv")}),
                     "mask");
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE",
                base + QStringList{"--input", path("missing.npy"), "--output", path("o.csv")}),
        "does not exist");
  }

  // The slab of csv_in_the_inputs_coordinates described by a CrystFEL geometry: the peak on
  // panel q2 (segment 2), ss in slab coordinates, the radius from the geometry, and the local
  // background ring cut at q2's last column (15).
  void geometry_panels_and_radius() {
    std::ofstream(file("four.geom")) << four_panels();
    const QStringList base = {"peaks",          "--geometry", path("four.geom"),  "--input",
                              path("slab.npy"), "--params",   path("params.json")};
    const CliResult r =
        run_cli("LIVEDRP_ENGINE_EXE", base + QStringList{"--output", path("geom.csv")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("2 frames, 1 peaks, 1 hits"), qPrintable(r.err));
    QVERIFY2(!r.err.contains("warning"), qPrintable(r.err));
    const QStringList lines = read_text(path("geom.csv")).trimmed().split('\n');
    QCOMPARE(lines.size(), 2);
    const QStringList f = lines[1].split(',');
    QCOMPARE(f[0], QString("0"));
    QCOMPARE(f[1], QString("2"));
    QVERIFY2(std::fabs(f[2].toDouble() - 2240.0 / 180.0) < 1e-5, qPrintable(f[2]));
    QVERIFY2(std::fabs(f[3].toDouble() - (kRows + 1870.0 / 180.0)) < 1e-4, qPrintable(f[3]));
    QVERIFY2(std::fabs(f[4].toDouble() - (180.0 - 4 * ring_mean(15))) < 1e-3, qPrintable(f[4]));
    QCOMPARE(f[5], QString("4"));
    QVERIFY2(std::fabs(f[6].toDouble() - (60.0 - ring_mean(15))) < 1e-4, qPrintable(f[6]));

    // The radius computed here, given as --radius-map, gives the same peaks: the geometry's
    // radius is the pixel centres' distance from the beam at the origin.
    io::write_array({file("radius_geom.npy"), ""}, io::ArrayFormat::Npy, four_panel_radius());
    const CliResult same =
        run_cli("LIVEDRP_ENGINE_EXE", base + QStringList{"--radius-map", path("radius_geom.npy"),
                                                         "--output", path("geom_map.csv")});
    QVERIFY2(same.exit_code == 0, qPrintable(same.err));
    QCOMPARE(read_text(path("geom_map.csv")), read_text(path("geom.csv")));
  }

  // Bad pixels from the geometry (an x/y region over the peak's pixel corners: x 1012.25 and
  // 1013.25, y 12 and 13) and from --mask are both left out.
  void geometry_bad_regions_and_mask() {
    std::ofstream(file("masked.geom")) << four_panels(
        "bad_peak/min_x = 1012\nbad_peak/max_x = 1014\nbad_peak/min_y = 11.5\n"
        "bad_peak/max_y = 13.5\n");
    const CliResult masked =
        run_cli("LIVEDRP_ENGINE_EXE",
                {"peaks", "--geometry", path("masked.geom"), "--input", path("slab.npy"),
                 "--params", path("params.json"), "--output", path("masked.csv")});
    QVERIFY2(masked.exit_code == 0, qPrintable(masked.err));
    QVERIFY2(masked.err.contains("2 frames, 0 peaks, 0 hits"), qPrintable(masked.err));

    io::Array mask;
    mask.type = io::ElementType::UInt8;
    mask.shape = {kSegments * kRows, kCols};
    mask.bytes.assign(kSegments * kRows * kCols, 0);
    for (const int ss : {42, 43})
      for (const int fs : {12, 13}) mask.bytes[std::size_t(ss * kCols + fs)] = 1;
    io::write_array({file("peak_mask.npy"), ""}, io::ArrayFormat::Npy, mask);
    std::ofstream(file("four.geom")) << four_panels();
    const CliResult given = run_cli(
        "LIVEDRP_ENGINE_EXE",
        {"peaks", "--geometry", path("four.geom"), "--input", path("slab.npy"), "--mask",
         path("peak_mask.npy"), "--params", path("params.json"), "--output", path("given.csv")});
    QVERIFY2(given.exit_code == 0, qPrintable(given.err));
    QVERIFY2(given.err.contains("2 frames, 0 peaks, 0 hits"), qPrintable(given.err));
  }

  void geometry_bad_input_is_named() {
    std::ofstream(file("four.geom")) << four_panels();
    const QStringList tail = {"--params", path("params.json"), "--output", path("o.csv")};
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE",
                             QStringList{"peaks", "--detector", path("detector.json"), "--geometry",
                                         path("four.geom"), "--input", path("slab.npy")} +
                                 tail),
                     "mutually exclusive");
    // Only the slab: a geometry's panels are arbitrary rectangles of it.
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE", QStringList{"peaks", "--geometry", path("four.geom"),
                                                  "--input", path("stack.npy")} +
                                          tail),
        "needs a slab [64, 32]");
    std::ofstream(file("broken.geom")) << "res = 10000\nq0/min_fs = 0\nq0/fs = +1.0x +1.0q\n";
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE", QStringList{"peaks", "--geometry", path("broken.geom"),
                                                  "--input", path("slab.npy")} +
                                          tail),
        "broken.geom:3: fs must be a direction");
    std::ofstream(file("overlap.geom")) << four_panels(
        "q4/min_fs = 15\nq4/max_fs = 16\n"
        "q4/min_ss = 0\nq4/max_ss = 1\nq4/fs = +1.0x\nq4/ss = +1.0y\n"
        "q4/corner_x = 0\nq4/corner_y = 0\n");
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE", QStringList{"peaks", "--geometry", path("overlap.geom"),
                                                  "--input", path("slab.npy")} +
                                          tail),
        "overlaps panel 'q0'");
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE",
                QStringList{"peaks", "--geometry", path("none.geom"), "--input", path("slab.npy")} +
                    tail),
        "does not exist");
  }

 private:
  QString path(const QString& name) const { return dir_.filePath(name); }
  std::string file(const QString& name) const { return path(name).toStdString(); }
  QTemporaryDir dir_;
};

QTEST_GUILESS_MAIN(TestPeaksCli)
#include "test_peaks_cli.moc"
