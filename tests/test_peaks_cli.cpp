// `livedrp-engine peaks` end to end: a two-segment detector described in JSON, a stack of frames
// with one hand-made peak of known position and values, the CSV in the input's coordinates (slab
// or segments x rows x cols), the CXI arrays read back from HDF5, and bad input named.
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

// The ring of local_bg_radius 3 around (10, 12), without the peak: its mean by enumeration.
double ring_mean() {
  double sum = 0;
  int count = 0;
  for (int dr = -6; dr < 6; ++dr)
    for (int dc = -6; dc < 6; ++dc) {
      const int r = 10 + dr, c = 12 + dc;
      if (dr * dr + dc * dc > 36 || ((r == 10 || r == 11) && (c == 12 || c == 13))) continue;
      sum += background(r, c), ++count;
    }
  return sum / count;
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
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE",
                             {"peaks", "--geometry", path("x.geom"), "--input", path("stack.npy"),
                              "--params", path("params.json"), "--output", path("o.csv")}),
                     "CrystFEL .geom files are not read yet");
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

 private:
  QString path(const QString& name) const { return dir_.filePath(name); }
  std::string file(const QString& name) const { return path(name).toStdString(); }
  QTemporaryDir dir_;
};

QTEST_GUILESS_MAIN(TestPeaksCli)
#include "test_peaks_cli.moc"
