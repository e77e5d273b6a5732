// `livedrp-engine peaks` end to end: a two-segment detector described in JSON, a stack of frames
// with one hand-made peak of known position and values, the CSV in the input's coordinates (slab
// or segments x rows x cols), the CXI arrays read back from HDF5, the same slab described by a
// CrystFEL .geom file (four panels, radius from the geometry, bad regions), the CrystFEL stream
// read back against the CSV, and bad input named.
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

// Planted 2x2 peaks (60 50 / 40 30) of a stack of three frames, each inside one 16 x 16 ASIC of
// the four_asics detector, clear of the ASIC's border rows and columns; frame 1 has none.
struct PlantedPeak {
  int frame, segment, row, col;  // the block's top-left pixel, rows within the segment
};
constexpr PlantedPeak kPlanted[] = {{0, 0, 5, 6},  {0, 0, 22, 25}, {0, 1, 6, 20},
                                    {2, 1, 24, 5}, {2, 0, 9, 26},  {2, 1, 20, 20}};

io::Array planted_frames() {
  io::Array a;
  a.type = io::ElementType::Float32;
  a.shape = {3, kSegments, kRows, kCols};
  a.bytes.resize(3 * kSegments * kRows * kCols * sizeof(float));
  float* v = a.as<float>();
  for (int f = 0; f < 3; ++f)
    for (int s = 0; s < kSegments; ++s)
      for (int r = 0; r < kRows; ++r)
        for (int c = 0; c < kCols; ++c)
          v[((f * kSegments + s) * kRows + r) * kCols + c] = background(r, c);
  for (const PlantedPeak& p : kPlanted) {
    float* segment = v + (p.frame * kSegments + p.segment) * kRows * kCols;
    segment[p.row * kCols + p.col] = 60, segment[p.row * kCols + p.col + 1] = 50;
    segment[(p.row + 1) * kCols + p.col] = 40, segment[(p.row + 1) * kCols + p.col + 1] = 30;
  }
  return a;
}

struct StreamPeak {
  double fs = 0, ss = 0, inverse_d = 0, intensity = 0;
  QString panel;
};
struct StreamChunk {
  QString filename, event;
  int serial = 0, hit = -1, num_peaks = -1;
  QString photon_energy;
  std::vector<StreamPeak> peaks;
};
struct Stream {
  QStringList geometry;  // the lines between the geometry markers
  std::vector<StreamChunk> chunks;
};

// Reads a stream as CrystFEL's reader does, strictly: every line of a chunk must be one this
// writer is expected to write, in its place.
Stream parse_stream(const QString& text, QString& error) {
  Stream stream;
  const QStringList lines = text.split('\n');
  int i = 0;
  auto fail = [&](const QString& what) {
    error =
        QStringLiteral("line %1: %2 ('%3')").arg(i + 1).arg(what, i < lines.size() ? lines[i] : "");
    return stream;
  };
  if (lines.value(i++) != "CrystFEL stream format 2.3") return fail("no format line");
  if (!lines.value(i++).startsWith("Generated by ")) return fail("no 'Generated by' line");
  if (lines.value(i) == "----- Begin geometry file -----") {
    for (++i; i < lines.size() && lines[i] != "----- End geometry file -----"; ++i)
      stream.geometry << lines[i];
    if (i++ == lines.size()) return fail("no end of the geometry");
  }
  while (i < lines.size() && !(i == lines.size() - 1 && lines[i].isEmpty())) {
    if (lines[i++] != "----- Begin chunk -----") return fail("expected a chunk");
    StreamChunk chunk;
    for (; i < lines.size() && lines[i] != "Peaks from peak search"; ++i) {
      const QString& line = lines[i];
      if (line.startsWith("Image filename: "))
        chunk.filename = line.mid(16);
      else if (line.startsWith("Event: "))
        chunk.event = line.mid(7);
      else if (line.startsWith("Image serial number: "))
        chunk.serial = line.mid(21).toInt();
      else if (line.startsWith("hit = "))
        chunk.hit = line.mid(6).toInt();
      else if (line.startsWith("num_peaks = "))
        chunk.num_peaks = line.mid(12).toInt();
      else if (line.startsWith("photon_energy_eV = "))
        chunk.photon_energy = line.mid(19);
      else if (line != "indexed_by = none")
        return fail("unexpected chunk line");
    }
    if (lines.value(i++) != "Peaks from peak search") return fail("no peak list");
    if (lines.value(i++) != "  fs/px   ss/px (1/d)/nm^-1   Intensity  Panel")
      return fail("not the peak list's column header");
    for (; i < lines.size() && lines[i] != "End of peak list"; ++i) {
      const QStringList f = lines[i].split(' ', Qt::SkipEmptyParts);
      if (f.size() != 5) return fail("a peak line needs 5 columns");
      StreamPeak peak;
      bool ok[4] = {};
      peak.fs = f[0].toDouble(&ok[0]);
      peak.ss = f[1].toDouble(&ok[1]);
      peak.inverse_d = f[2] == "nan" ? std::nan("") : f[2].toDouble(&ok[2]);
      ok[2] = ok[2] || f[2] == "nan";
      peak.intensity = f[3].toDouble(&ok[3]);
      if (!(ok[0] && ok[1] && ok[2] && ok[3])) return fail("a peak value is not a number");
      peak.panel = f[4];
      chunk.peaks.push_back(peak);
    }
    if (lines.value(i++) != "End of peak list") return fail("no end of the peak list");
    if (lines.value(i++) != "----- End chunk -----") return fail("no end of the chunk");
    stream.chunks.push_back(chunk);
  }
  return stream;
}

struct CsvPeak {
  int event = 0, segment = 0, num_pixels = 0;
  double fs = 0, ss = 0, intensity = 0;
};
std::vector<CsvPeak> read_csv(const QString& path) {
  std::vector<CsvPeak> rows;
  const QStringList lines = read_text(path).trimmed().split('\n');
  for (int i = 1; i < lines.size(); ++i) {
    const QStringList f = lines[i].split(',');
    rows.push_back({f[0].toInt(), f[1].toInt(), f[5].toInt(), f[2].toDouble(), f[3].toDouble(),
                    f[4].toDouble()});
  }
  return rows;
}

// A stream writes positions and intensities with two decimals (as CrystFEL does).
constexpr double kStreamRounding = 0.005 + 1e-9;

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

  // The stream of a run lists the same peaks as the CSV of the same run, frame by frame, with
  // CrystFEL's +0.5 on positions and panels named p<segment>a<asic> (ASICs row by row).
  void stream_lists_the_csvs_peaks() {
    std::ofstream(file("four_asics.json")) << R"({
      "schema_version": 1, "name": "four_asics", "description": "test", "raw_encoding": "float32",
      "segments": 2, "segment_shape": [32, 32], "pixel_size_um": 100.0, "asic_shape": [16, 16],
      "bank_columns": 0, "gain_modes": [{"name": "calibrated", "nominal_adu_per_kev": 1.0}],
      "placement": [{"x_px": 0, "y_px": 0, "rotation_deg": 0},
                    {"x_px": 0, "y_px": 40, "rotation_deg": 0}]})";
    io::write_array({file("planted.npy"), ""}, io::ArrayFormat::Npy, planted_frames());
    const QStringList base = {"peaks",
                              "--detector",
                              path("four_asics.json"),
                              "--input",
                              path("planted.npy"),
                              "--radius-map",
                              path("radius.npy"),
                              "--params",
                              path("params.json")};
    const CliResult csv_run =
        run_cli("LIVEDRP_ENGINE_EXE", base + QStringList{"--output", path("planted.csv")});
    QVERIFY2(csv_run.exit_code == 0, qPrintable(csv_run.err));
    const CliResult stream_run =
        run_cli("LIVEDRP_ENGINE_EXE", base + QStringList{"--output", path("planted.stream")});
    QVERIFY2(stream_run.exit_code == 0, qPrintable(stream_run.err));
    QVERIFY2(stream_run.err.contains("3 frames, 6 peaks, 2 hits"), qPrintable(stream_run.err));
    QVERIFY2(stream_run.err.contains("(1/d)/nm^-1 column is nan"), qPrintable(stream_run.err));

    const std::vector<CsvPeak> csv = read_csv(path("planted.csv"));
    QCOMPARE(csv.size(), std::size_t(6));
    QString error;
    const Stream stream = parse_stream(read_text(path("planted.stream")), error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QVERIFY(stream.geometry.isEmpty());
    QCOMPARE(stream.chunks.size(), std::size_t(3));
    std::size_t row = 0;
    for (int frame = 0; frame < 3; ++frame) {
      const StreamChunk& chunk = stream.chunks[std::size_t(frame)];
      QCOMPARE(chunk.filename, path("planted.npy"));
      QCOMPARE(chunk.event, QStringLiteral("//%1").arg(frame));
      QCOMPARE(chunk.serial, frame + 1);
      QCOMPARE(chunk.hit, frame == 1 ? 0 : 1);
      QCOMPARE(chunk.num_peaks, frame == 1 ? 0 : 3);
      QCOMPARE(int(chunk.peaks.size()), chunk.num_peaks);
      for (const StreamPeak& peak : chunk.peaks) {
        QVERIFY(row < csv.size());
        const CsvPeak& expected = csv[row++];
        QCOMPARE(expected.event, frame);
        // The stack's CSV has ss within the segment; so has the stream (the file's coordinates).
        QVERIFY2(std::fabs(peak.fs - (expected.fs + 0.5)) <= kStreamRounding,
                 qPrintable(QString::number(peak.fs)));
        QVERIFY2(std::fabs(peak.ss - (expected.ss + 0.5)) <= kStreamRounding,
                 qPrintable(QString::number(peak.ss)));
        QVERIFY(std::fabs(peak.intensity - expected.intensity) <= kStreamRounding);
        QVERIFY(std::isnan(peak.inverse_d));
        const int asic = int(expected.ss + 0.5) / 16 * 2 + int(expected.fs + 0.5) / 16;
        QCOMPARE(peak.panel, QStringLiteral("p%1a%2").arg(expected.segment).arg(asic));
      }
    }
    QCOMPARE(row, csv.size());
    // Every planted peak is one of them, in its ASIC, near the block's centroid (the 2x2 block
    // weighs its top-left pixel most: within a pixel of its centre).
    for (const PlantedPeak& planted : kPlanted) {
      const QString panel = QStringLiteral("p%1a%2")
                                .arg(planted.segment)
                                .arg(planted.row / 16 * 2 + planted.col / 16);
      int matches = 0;
      for (const StreamPeak& peak : stream.chunks[std::size_t(planted.frame)].peaks)
        matches += peak.panel == panel && std::fabs(peak.fs - (planted.col + 1.0)) < 1.0 &&
                   std::fabs(peak.ss - (planted.row + 1.0)) < 1.0;
      QCOMPARE(matches, 1);
    }
  }

  // With a CrystFEL geometry: the file embedded, its panel names, and 1/d from clen (0.1 m),
  // photon_energy (9000 eV) and res (10000 px/m), computed here from the CSV's position.
  void stream_with_geometry_names_panels_and_gives_resolution() {
    std::ofstream(file("four.geom")) << four_panels();
    const QStringList base = {"peaks",          "--geometry", path("four.geom"),  "--input",
                              path("slab.npy"), "--params",   path("params.json")};
    const CliResult csv_run =
        run_cli("LIVEDRP_ENGINE_EXE", base + QStringList{"--output", path("geom_s.csv")});
    QVERIFY2(csv_run.exit_code == 0, qPrintable(csv_run.err));
    const CliResult stream_run =
        run_cli("LIVEDRP_ENGINE_EXE", base + QStringList{"--output", path("geom.stream")});
    QVERIFY2(stream_run.exit_code == 0, qPrintable(stream_run.err));
    QVERIFY2(!stream_run.err.contains("nan"), qPrintable(stream_run.err));

    QString error;
    const Stream stream = parse_stream(read_text(path("geom.stream")), error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(stream.geometry.join('\n') + '\n', QString::fromStdString(four_panels()));
    QCOMPARE(stream.chunks.size(), std::size_t(2));
    QCOMPARE(stream.chunks[0].photon_energy.toDouble(), 9000.0);
    QCOMPARE(stream.chunks[1].peaks.size(), std::size_t(0));
    const std::vector<CsvPeak> csv = read_csv(path("geom_s.csv"));
    QCOMPARE(csv.size(), std::size_t(1));
    QCOMPARE(stream.chunks[0].peaks.size(), std::size_t(1));
    const StreamPeak& peak = stream.chunks[0].peaks[0];
    QCOMPARE(peak.panel, QString("q2"));
    QVERIFY(std::fabs(peak.fs - (csv[0].fs + 0.5)) <= kStreamRounding);
    QVERIFY(std::fabs(peak.ss - (csv[0].ss + 0.5)) <= kStreamRounding);  // slab coordinates
    QVERIFY(std::fabs(peak.intensity - csv[0].intensity) <= kStreamRounding);
    // q2: corner (1000.25, 2), first pixel at slab (0, 32); position in metres at res 10000.
    const double x = (1000.25 + csv[0].fs + 0.5) / 1e4, y = (2 + csv[0].ss + 0.5 - 32) / 1e4;
    const double theta = 0.5 * std::atan2(std::hypot(x, y), 0.1);
    const double wavelength_nm = 12398.419843320026 / 9000.0 / 10.0;
    const double inverse_d = 2 * std::sin(theta) / wavelength_nm;
    QVERIFY2(std::fabs(peak.inverse_d - inverse_d) <= kStreamRounding,
             qPrintable(QStringLiteral("%1 vs %2").arg(peak.inverse_d).arg(inverse_d)));
    QVERIFY(inverse_d > 5.5 && inverse_d < 5.7);  // 2 theta about 45 degrees at 1.378 A

    // A camera length the data files hold: 1/d is nan, and the command says why.
    std::ofstream(file("clen_path.geom"))
        << four_panels().replace(four_panels().find("clen = 0.1 m"), 12, "clen = /LCLS/clen mm");
    const CliResult no_clen =
        run_cli("LIVEDRP_ENGINE_EXE",
                {"peaks", "--geometry", path("clen_path.geom"), "--input", path("slab.npy"),
                 "--params", path("params.json"), "--output", path("no_clen.stream")});
    QVERIFY2(no_clen.exit_code == 0, qPrintable(no_clen.err));
    QVERIFY2(no_clen.err.contains("no camera length (clen) as a number"), qPrintable(no_clen.err));
    const Stream without = parse_stream(read_text(path("no_clen.stream")), error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QVERIFY(std::isnan(without.chunks[0].peaks.at(0).inverse_d));
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
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE", base + QStringList{"--input", path("stack.npy"),
                                                                      "--output", path("o.txt")}),
                     "--output must end in .csv, .cxi or .stream");
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
