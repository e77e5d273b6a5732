// Recordings compressed with the livedrp codec (WriteLayout::codec): every event's stream is
// stored as its chunk with H5Dwrite_chunk under the livedrp HDF5 filter (id 386). The replay
// reader gives back the events bit for bit (lossless) or within the bound (lossy float32), on its
// own fast path and through H5Dread alike; h5dump decodes the file with HDF5_PLUGIN_PATH (CTest
// points it at build/hdf5-plugins); the file is smaller than the raw events; the recorder writes
// such files; layouts the codec cannot take are refused naming why; a damaged chunk is an error
// naming the event.
#include <hdf5.h>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/detector.hpp"
#include "core/error.hpp"
#include "replay/hdf5_event_file.hpp"
#include "replay/recorder.hpp"

using namespace livedrp;
using namespace livedrp::replay;

namespace {

constexpr int kEvents = 3;

// ePix10ka-like raw words: pedestals near 2000 ADU with noise, some photons, the gain bit (14)
// set on a few pixels.
std::vector<std::uint16_t> raw_events(const DetectorDescription& d) {
  std::mt19937 random(3636);
  std::normal_distribution<double> noise(0.0, 4.0);
  std::uniform_int_distribution<int> one_in(0, 499);
  std::vector<std::uint16_t> v(std::size_t(kEvents) * d.pixels());
  for (auto& x : v) {
    int adu = 2000 + int(std::lround(noise(random))) + (one_in(random) == 0 ? 300 : 0);
    x = std::uint16_t(adu | (one_in(random) == 0 ? 1 << 14 : 0));
  }
  return v;
}

// Calibrated float32 values in keV: noise around 0 and photons of 9.5 keV.
std::vector<float> calibrated_events(const DetectorDescription& d) {
  std::mt19937 random(3637);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::uniform_int_distribution<int> one_in(0, 99);
  std::vector<float> v(std::size_t(kEvents) * d.pixels());
  for (auto& x : v) x = noise(random) + (one_in(random) == 0 ? 9.5f : 0.0f);
  return v;
}

EventHeader header_of(int e) {
  return {std::uint64_t(e), std::uint64_t(1000 + 12 * e), 1'700'000'000'000'000'000 + e};
}

WriteLayout codec_layout(codec::Codec kind = codec::Codec::Lossless, double bound = 0.0) {
  WriteLayout layout;
  codec::CodecParams params;
  params.codec = kind;
  params.error_bound = bound;
  layout.codec = params;
  return layout;
}

template <typename T>
void write_file(const std::string& path, const DetectorDescription& d, const WriteLayout& layout,
                const std::vector<T>& events) {
  Hdf5EventWriter writer(path, d, layout, "{\"test\": true}");
  for (int e = 0; e < kEvents; ++e)
    writer.append(header_of(e), events.data() + std::size_t(e) * d.pixels());
  writer.close();
}

}  // namespace

class TestRecordCodec : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string path(const char* name) const { return (dir_.path() + "/" + name).toStdString(); }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void lossless_recording_replays_bit_exact_on_both_read_paths() {
    const DetectorDescription d = find_detector("epix10ka2m");
    const std::vector<std::uint16_t> events = raw_events(d);
    write_file(path("lossless.h5"), d, codec_layout(), events);
    // Smaller than the raw words it holds.
    QVERIFY(std::filesystem::file_size(path("lossless.h5")) < events.size() * 2);
    Hdf5EventReader reader(path("lossless.h5"), kDefaultDataset, d);
    QCOMPARE(reader.events(), std::uint64_t(kEvents));
    QCOMPARE(reader.read_path(), EventReadPath::Chunks);
    std::vector<std::uint16_t> back(d.pixels());
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) reader.use_library_path();  // H5Dread, the filter registered in-process
      for (int e = 0; e < kEvents; ++e) {
        std::uint64_t pulse = 0;
        std::int64_t time = 0;
        std::fill(back.begin(), back.end(), 0);
        reader.read(std::uint64_t(e), back.data(), pulse, time);
        QVERIFY2(std::memcmp(back.data(), events.data() + std::size_t(e) * d.pixels(),
                             d.raw_event_bytes()) == 0,
                 qPrintable(QString("event %1, pass %2").arg(e).arg(pass)));
        QCOMPARE(pulse, header_of(e).pulse_id);
        QCOMPARE(time, header_of(e).timestamp_ns);
      }
    }
  }

  void h5dump_decodes_a_recording_with_the_plugin_path() {
    const QString h5dump = QStandardPaths::findExecutable("h5dump");
    if (h5dump.isEmpty()) QSKIP("h5dump is not installed (Debian's hdf5-tools)");
    QVERIFY2(!qEnvironmentVariable("HDF5_PLUGIN_PATH").isEmpty(),
             "set HDF5_PLUGIN_PATH to the folder of liblivedrp_h5filter.so (CTest does)");
    const DetectorDescription d = find_detector("epix10ka2m");
    const std::vector<std::uint16_t> events = raw_events(d);
    write_file(path("dump.h5"), d, codec_layout(), events);
    // Event 2, segment 5, row 7: its first 6 words.
    QProcess dump;
    dump.start(h5dump, {"-d", kDefaultDataset, "-s", "2,5,7,0", "-c", "1,1,1,6", "-y", "-w", "0",
                        QString::fromStdString(path("dump.h5"))});
    QVERIFY(dump.waitForFinished(60000));
    QCOMPARE(dump.exitCode(), 0);
    const std::size_t first = 2 * d.pixels() + std::size_t(5 * d.rows + 7) * d.cols;
    QStringList expected;
    for (std::size_t k = 0; k < 6; ++k) expected << QString::number(events[first + k]);
    const QString out = QString::fromUtf8(dump.readAllStandardOutput()).simplified();
    QVERIFY2(out.contains(expected.join(", ")), qPrintable(expected.join(", ") + " in " + out));
  }

  void lossy_float_recording_replays_within_the_bound() {
    const DetectorDescription d = find_detector("generic_f32");
    const std::vector<float> events = calibrated_events(d);
    const double bound = 0.5;
    write_file(path("lossy.h5"), d, codec_layout(codec::Codec::Lossy, bound), events);
    QVERIFY(std::filesystem::file_size(path("lossy.h5")) < events.size() * sizeof(float) / 4);
    Hdf5EventReader reader(path("lossy.h5"), kDefaultDataset, d);
    QCOMPARE(reader.read_path(), EventReadPath::Chunks);
    std::vector<float> back(d.pixels());
    double worst = 0.0;
    for (int e = 0; e < kEvents; ++e) {
      std::uint64_t pulse = 0;
      std::int64_t time = 0;
      reader.read(std::uint64_t(e), back.data(), pulse, time);
      for (std::size_t k = 0; k < back.size(); ++k)
        worst = std::max(
            worst, std::fabs(double(back[k]) - double(events[std::size_t(e) * d.pixels() + k])));
    }
    qInfo("largest error %.4g keV, bound %.4g", worst, bound);
    QVERIFY(worst <= bound);
  }

  void recorder_writes_codec_recordings() {
    const DetectorDescription d = find_detector("epix10ka2m");
    const std::vector<std::uint16_t> events = raw_events(d);
    RecordOptions options;
    options.directory = path("recorded");
    options.layout = codec_layout();
    options.when_full = RecordWhenFull::Wait;
    Recorder recorder(options, d, "{}");
    for (int e = 0; e < kEvents; ++e)
      QVERIFY(recorder.record(header_of(e), events.data() + std::size_t(e) * d.pixels()));
    recorder.close();
    QCOMPARE(recorder.events(), std::uint64_t(kEvents));
    Hdf5EventReader reader(recorder.files().at(0), kDefaultDataset, d);
    std::vector<std::uint16_t> back(d.pixels());
    for (int e = 0; e < kEvents; ++e) {
      std::uint64_t pulse = 0;
      std::int64_t time = 0;
      reader.read(std::uint64_t(e), back.data(), pulse, time);
      QVERIFY(std::memcmp(back.data(), events.data() + std::size_t(e) * d.pixels(),
                          d.raw_event_bytes()) == 0);
    }
  }

  void layouts_the_codec_cannot_take_are_refused() {
    const DetectorDescription epix = find_detector("epix10ka2m");
    WriteLayout contiguous = codec_layout();
    contiguous.chunked = false;
    QVERIFY_THROWS_EXCEPTION(InputError, Hdf5EventWriter(path("c.h5"), epix, contiguous, "{}", 4));
    WriteLayout both = codec_layout();
    both.deflate = 4;
    try {
      Hdf5EventWriter(path("b.h5"), epix, both, "{}");
      QFAIL("deflate with the codec was accepted");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("not both"), e.what());
    }
    // The lossy codec is for float32 values; raw uint16 words are refused.
    QVERIFY_THROWS_EXCEPTION(
        InputError,
        Hdf5EventWriter(path("l.h5"), epix, codec_layout(codec::Codec::Lossy, 1.0), "{}"));
  }

  void damaged_chunk_is_an_error_naming_the_event() {
    const DetectorDescription d = find_detector("epix10ka2m");
    const std::vector<std::uint16_t> events = raw_events(d);
    write_file(path("damaged.h5"), d, codec_layout(), events);
    // Where event 1's chunk lies, then a flipped bit in its middle.
    haddr_t address = 0;
    hsize_t size = 0;
    {
      const hid_t file = H5Fopen(path("damaged.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      const hid_t data = H5Dopen2(file, kDefaultDataset, H5P_DEFAULT);
      const hsize_t coordinate[4] = {1, 0, 0, 0};
      unsigned mask = 0;
      QVERIFY(H5Dget_chunk_info_by_coord(data, coordinate, &mask, &address, &size) >= 0);
      H5Dclose(data);
      H5Fclose(file);
    }
    {
      std::fstream f(path("damaged.h5"), std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(std::streamoff(address + size / 2));
      char byte = 0;
      f.read(&byte, 1);
      byte = char(byte ^ 0x10);
      f.seekp(std::streamoff(address + size / 2));
      f.write(&byte, 1);
    }
    Hdf5EventReader reader(path("damaged.h5"), kDefaultDataset, d);
    std::vector<std::uint16_t> back(d.pixels());
    std::uint64_t pulse = 0;
    std::int64_t time = 0;
    reader.read(0, back.data(), pulse, time);  // its neighbour is intact
    try {
      reader.read(1, back.data(), pulse, time);
      QFAIL("a damaged chunk was read");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("event 1"), e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestRecordCodec)
#include "test_record_codec.moc"
