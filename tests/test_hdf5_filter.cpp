// The livedrp codec as an HDF5 filter plugin (engine/hdf5_filter, filter id 386), loaded the way
// h5dump and h5py load it: from HDF5_PLUGIN_PATH (CTest points it at build/hdf5-plugins). Codec
// streams written as chunks with H5Dwrite_chunk (what a recorder holding the live compression's
// output does) read back through H5Dread bit for bit (lossless) or within the bound (lossy);
// H5Dwrite encodes through the plugin into streams the codec itself decodes; a damaged chunk
// fails the read with an error, never a crash; a type the codec cannot take is refused when the
// dataset is created.
#include <hdf5.h>
#include <QProcess>
#include <QStandardPaths>
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec/codec.hpp"
#include "hdf5_filter/livedrp_filter.hpp"

using namespace livedrp;
namespace filter = livedrp::hdf5_filter;

namespace {

constexpr hsize_t kFrames = 4, kRows = 64, kCols = 96;

// Detector-like uint16 frames: a pedestal around 1000 with Poisson-ish noise and a few photons.
std::vector<std::uint16_t> uint16_frames() {
  std::mt19937 random(36);
  std::normal_distribution<double> noise(0.0, 3.0);
  std::uniform_int_distribution<int> photon(0, 199);
  std::vector<std::uint16_t> v(kFrames * kRows * kCols);
  for (auto& x : v)
    x = std::uint16_t(1000 + std::lround(noise(random)) + (photon(random) ? 0 : 500));
  return v;
}

// Calibrated float32 frames: mostly near 0 keV, some photons of 9.5 keV.
std::vector<float> float_frames() {
  std::mt19937 random(37);
  std::normal_distribution<float> noise(0.0f, 0.2f);
  std::uniform_int_distribution<int> photon(0, 99);
  std::vector<float> v(kFrames * kRows * kCols);
  for (auto& x : v) x = noise(random) + (photon(random) ? 0.0f : 9.5f);
  return v;
}

// A chunked [frames, rows, cols] dataset with the livedrp filter, one frame per chunk.
hid_t create_filtered(hid_t file, const char* name, hid_t type,
                      const std::vector<unsigned>& parameters) {
  const hsize_t dims[3] = {kFrames, kRows, kCols}, chunk[3] = {1, kRows, kCols};
  const hid_t space = H5Screate_simple(3, dims, nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, chunk);
  H5Pset_filter(dcpl, filter::kFilterId, H5Z_FLAG_MANDATORY, parameters.size(), parameters.data());
  const hid_t d = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5Pclose(dcpl);
  H5Sclose(space);
  return d;
}

// Each frame compressed by the codec and written as its chunk, bypassing the filter pipeline.
template <typename T>
bool write_frames_as_chunks(hid_t dataset, const std::vector<T>& frames, codec::DType dtype,
                            const codec::CodecParams& params) {
  for (hsize_t f = 0; f < kFrames; ++f) {
    const std::vector<std::uint8_t> stream =
        codec::compress_cpu(frames.data() + f * kRows * kCols, dtype, {kRows, kCols}, params);
    const hsize_t offset[3] = {f, 0, 0};
    if (H5Dwrite_chunk(dataset, H5P_DEFAULT, 0, offset, stream.size(), stream.data()) < 0)
      return false;
  }
  return true;
}

// Silences HDF5's error printing where a failure is what the test expects.
struct QuietErrors {
  H5E_auto2_t function = nullptr;
  void* data = nullptr;
  QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &function, &data);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, function, data); }
};

}  // namespace

class TestHdf5Filter : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  std::string path(const char* name) const { return (dir_.path() + "/" + name).toStdString(); }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(!qEnvironmentVariable("HDF5_PLUGIN_PATH").isEmpty(),
             "set HDF5_PLUGIN_PATH to the folder of liblivedrp_h5filter.so (CTest does)");
  }

  void the_plugin_is_found_on_the_plugin_path_with_both_directions() {
    // HDF5 loads a dynamic filter when it is first asked for it.
    QVERIFY(H5Zfilter_avail(filter::kFilterId) > 0);
    unsigned config = 0;
    QVERIFY(H5Zget_filter_info(filter::kFilterId, &config) >= 0);
    QVERIFY(config & H5Z_FILTER_CONFIG_DECODE_ENABLED);
    QVERIFY(config & H5Z_FILTER_CONFIG_ENCODE_ENABLED);
  }

  void lossless_chunks_written_directly_read_back_bit_exact() {
    const std::vector<std::uint16_t> frames = uint16_frames();
    const hid_t file =
        H5Fcreate(path("lossless.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t d = create_filtered(file, "data", H5T_STD_U16LE, filter::filter_parameters(false));
    QVERIFY(d >= 0);
    QVERIFY(write_frames_as_chunks(d, frames, codec::DType::UInt16, {}));
    H5Dclose(d);
    H5Fclose(file);

    const hid_t again = H5Fopen(path("lossless.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t read = H5Dopen2(again, "data", H5P_DEFAULT);
    std::vector<std::uint16_t> decoded(frames.size(), 0);
    QVERIFY(H5Dread(read, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, decoded.data()) >= 0);
    QVERIFY(decoded == frames);
    // One frame alone (a hyperslab) decodes its chunk only.
    const hsize_t start[3] = {2, 0, 0}, count[3] = {1, kRows, kCols};
    const hid_t file_space = H5Dget_space(read);
    H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, count, nullptr);
    const hid_t memory_space = H5Screate_simple(3, count, nullptr);
    std::vector<std::uint16_t> third(kRows * kCols, 0);
    QVERIFY(H5Dread(read, H5T_NATIVE_UINT16, memory_space, file_space, H5P_DEFAULT, third.data()) >=
            0);
    QVERIFY(std::equal(third.begin(), third.end(), frames.begin() + 2 * kRows * kCols));
    // The file holds the codec's streams: smaller than the raw frames.
    QVERIFY(H5Dget_storage_size(read) < frames.size() * sizeof(std::uint16_t));
    H5Sclose(memory_space);
    H5Sclose(file_space);
    H5Dclose(read);
    H5Fclose(again);
  }

  void lossy_chunks_decode_within_the_bound() {
    const std::vector<float> frames = float_frames();
    const double bound = 0.05;
    const hid_t file = H5Fcreate(path("lossy.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t d =
        create_filtered(file, "data", H5T_IEEE_F32LE, filter::filter_parameters(true, bound));
    QVERIFY(d >= 0);
    codec::CodecParams params;
    params.codec = codec::Codec::Lossy;
    params.error_bound = bound;
    QVERIFY(write_frames_as_chunks(d, frames, codec::DType::Float32, params));
    std::vector<float> decoded(frames.size(), 0.0f);
    QVERIFY(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, decoded.data()) >= 0);
    double worst = 0.0;
    for (std::size_t k = 0; k < frames.size(); ++k)
      worst = std::max(worst, std::fabs(double(decoded[k]) - double(frames[k])));
    qInfo("largest error %.4g, bound %.4g", worst, bound);
    QVERIFY(worst <= bound);
    QVERIFY(worst > 0.0);  // lossy indeed: the bound is what holds, not equality
    H5Dclose(d);
    H5Fclose(file);
  }

  void h5dwrite_encodes_through_the_plugin_into_codec_streams() {
    const std::vector<std::uint16_t> frames = uint16_frames();
    const hid_t file =
        H5Fcreate(path("encoded.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t d = create_filtered(file, "data", H5T_STD_U16LE, filter::filter_parameters(false));
    QVERIFY(d >= 0);
    QVERIFY(H5Dwrite(d, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, frames.data()) >= 0);
    H5Dflush(d);
    // A stored chunk is a stream the codec reads alone.
    for (hsize_t f = 0; f < kFrames; ++f) {
      const hsize_t offset[3] = {f, 0, 0};
      hsize_t stored = 0;
      QVERIFY(H5Dget_chunk_storage_size(d, offset, &stored) >= 0);
      std::vector<std::uint8_t> chunk(stored);
      std::uint32_t mask = 0;
      QVERIFY(H5Dread_chunk(d, H5P_DEFAULT, offset, &mask, chunk.data()) >= 0);
      const codec::DecodedArray a = codec::decompress_cpu(chunk.data(), chunk.size());
      QCOMPARE(a.info.codec, codec::Codec::Lossless);
      QCOMPARE(a.info.dtype, codec::DType::UInt16);
      QCOMPARE(a.bytes.size(), std::size_t(kRows * kCols * 2));
      QVERIFY(std::memcmp(a.bytes.data(), frames.data() + f * kRows * kCols, a.bytes.size()) == 0);
    }
    std::vector<std::uint16_t> decoded(frames.size(), 0);
    QVERIFY(H5Dread(d, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, decoded.data()) >= 0);
    QVERIFY(decoded == frames);
    H5Dclose(d);
    H5Fclose(file);
  }

  void damaged_chunk_fails_the_read() {
    const std::vector<std::uint16_t> frames = uint16_frames();
    const hid_t file =
        H5Fcreate(path("damaged.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t d = create_filtered(file, "data", H5T_STD_U16LE, filter::filter_parameters(false));
    std::vector<std::uint8_t> stream =
        codec::compress_cpu(frames.data(), codec::DType::UInt16, {kRows, kCols}, {});
    stream[stream.size() / 2] ^= 0x40;  // a flipped bit in the payload: its checksum fails
    const hsize_t offset[3] = {0, 0, 0};
    QVERIFY(H5Dwrite_chunk(d, H5P_DEFAULT, 0, offset, stream.size(), stream.data()) >= 0);
    // A stream of another chunk shape (half a frame) does not pass for this chunk either.
    const std::vector<std::uint8_t> half =
        codec::compress_cpu(frames.data(), codec::DType::UInt16, {kRows / 2, kCols}, {});
    const hsize_t second[3] = {1, 0, 0};
    QVERIFY(H5Dwrite_chunk(d, H5P_DEFAULT, 0, second, half.size(), half.data()) >= 0);
    std::vector<std::uint16_t> one(kRows * kCols);
    const hsize_t count[3] = {1, kRows, kCols};
    const hid_t memory_space = H5Screate_simple(3, count, nullptr);
    for (const hsize_t* start : {offset, second}) {
      const hid_t file_space = H5Dget_space(d);
      H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, count, nullptr);
      QuietErrors quiet;
      QVERIFY(H5Dread(d, H5T_NATIVE_UINT16, memory_space, file_space, H5P_DEFAULT, one.data()) < 0);
      H5Sclose(file_space);
    }
    H5Sclose(memory_space);
    H5Dclose(d);
    H5Fclose(file);
  }

  void h5dump_prints_the_decoded_values() {
    const QString h5dump = QStandardPaths::findExecutable("h5dump");
    if (h5dump.isEmpty()) QSKIP("h5dump is not installed (Debian's hdf5-tools)");
    const std::vector<std::uint16_t> frames = uint16_frames();
    const hid_t file = H5Fcreate(path("dump.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t d = create_filtered(file, "data", H5T_STD_U16LE, filter::filter_parameters(false));
    QVERIFY(write_frames_as_chunks(d, frames, codec::DType::UInt16, {}));
    H5Dclose(d);
    H5Fclose(file);
    // Frame 1, row 0, its first 6 values; h5dump inherits HDF5_PLUGIN_PATH.
    QProcess dump;
    dump.start(h5dump, {"-d", "/data", "-s", "1,0,0", "-c", "1,1,6", "-y", "-w", "0",
                        QString::fromStdString(path("dump.h5"))});
    QVERIFY(dump.waitForFinished(60000));
    const QString out = QString::fromUtf8(dump.readAllStandardOutput());
    QCOMPARE(dump.exitCode(), 0);
    QStringList expected;
    for (int k = 0; k < 6; ++k) expected << QString::number(frames[kRows * kCols + k]);
    QVERIFY2(out.simplified().contains(expected.join(", ")),
             qPrintable(expected.join(", ") + " not in: " + out));
  }

  // Not needed by the suite: where a Python with h5py is installed (Debian's python3-h5py), h5py
  // writes through the plugin and reads back what this process wrote.
  void h5py_round_trips_through_the_plugin_where_installed() {
    QString python = "/usr/bin/python3";
    if (!QFile::exists(python)) python = QStandardPaths::findExecutable("python3");
    if (python.isEmpty()) QSKIP("no python3");
    const std::vector<std::uint16_t> frames = uint16_frames();
    const hid_t file = H5Fcreate(path("py.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t d = create_filtered(file, "data", H5T_STD_U16LE, filter::filter_parameters(false));
    QVERIFY(write_frames_as_chunks(d, frames, codec::DType::UInt16, {}));
    H5Dclose(d);
    H5Fclose(file);
    // The sum of what this process wrote, for h5py to match; then h5py writes a float32 dataset
    // with compression=386 and reads it back.
    std::uint64_t sum = 0;
    for (std::uint16_t v : frames) sum += v;
    const QString script = QString(R"(
import sys
try:
    import h5py, numpy
except ImportError:
    print("NO_H5PY"); sys.exit(0)
with h5py.File(sys.argv[1], "r+") as f:
    d = f["data"]
    assert d.id.get_create_plist().get_filter(0)[0] == 386
    assert int(d[...].astype(numpy.uint64).sum()) == int(sys.argv[2]), "sum"
    a = numpy.linspace(-3, 3, 4096, dtype=numpy.float32).reshape(64, 64)
    f.create_dataset("written_by_h5py", data=a, chunks=(16, 64), compression=386,
                     compression_opts=(1, 1))
with h5py.File(sys.argv[1], "r") as f:
    assert numpy.array_equal(f["written_by_h5py"][...], a), "h5py round trip"
print("H5PY_OK")
)");
    QProcess py;
    py.start(python, {"-c", script, QString::fromStdString(path("py.h5")), QString::number(sum)});
    QVERIFY(py.waitForFinished(120000));
    const QString out = QString::fromUtf8(py.readAllStandardOutput());
    if (out.contains("NO_H5PY")) QSKIP("python3 has no h5py");
    QVERIFY2(py.exitCode() == 0 && out.contains("H5PY_OK"),
             qPrintable(out + QString::fromUtf8(py.readAllStandardError())));
    // And the dataset h5py wrote holds codec streams this process decodes through HDF5.
    const hid_t again = H5Fopen(path("py.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t written = H5Dopen2(again, "written_by_h5py", H5P_DEFAULT);
    std::vector<float> values(4096);
    QVERIFY(H5Dread(written, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
    QCOMPARE(values.front(), -3.0f);
    QCOMPARE(values.back(), 3.0f);
    H5Dclose(written);
    H5Fclose(again);
  }

  void a_type_the_codec_cannot_take_is_refused_at_creation() {
    const hid_t file = H5Fcreate(path("int32.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    QuietErrors quiet;
    const hid_t d = create_filtered(file, "data", H5T_STD_I32LE, filter::filter_parameters(false));
    QVERIFY(d < 0);
    H5Fclose(file);
  }
};

QTEST_GUILESS_MAIN(TestHdf5Filter)
#include "test_hdf5_filter.moc"
