// Replay reads the files detectors write (docs/formats.md, "Detector files"): datasets compressed
// with bitshuffle-LZ4 (HDF5 filter 32008) and LZ4 (32004), decoded by replay's own reader threads,
// whose HDF5 plugins come from Debian's bitshuffle and hdf5-filter-plugin packages, and Eiger /
// Jungfraujoch master files whose /entry/data/data_NNNNNN external links lead to the frames in
// separate data files. Every event is read back bit-identical to what was written; a master file
// whose data file is missing is refused naming the link and the file it needs. Photon-counting
// frames (uint32 as Eiger writes them, int32 as Jungfraujoch does) replay as the detector of that
// encoding, and a file whose element type is not the detector's is refused naming both.
#include <QtTest>

#include <sys/resource.h>

#include <hdf5.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "integrate_csv_support.hpp"
#include "io/npy.hpp"
#include "replay/chunk_decoder.hpp"
#include "replay/dataset_discovery.hpp"
#include "replay/hdf5_event_file.hpp"
#include "replay/replay_source.hpp"
#include "sim/simulator.hpp"
#include "simulated_events.hpp"

using namespace livedrp;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kEvents = 3;
constexpr H5Z_filter_t kBitshuffle = 32008;
constexpr H5Z_filter_t kLz4 = 32004;

const test::SimulatedEvents& events() {
  static const test::SimulatedEvents cached(kEvents);
  return cached;
}

// /entry/data/data of [events, segments, rows, cols] uint16, one event per chunk, through `filter`
// with `values` (the way a detector's writer stores its frames, without livedrp's attributes).
bool write_filtered(const fs::path& path, H5Z_filter_t filter, std::vector<unsigned> values) {
  const DetectorDescription& d = events().detector;
  const hsize_t dims[4] = {kEvents, hsize_t(d.segments), hsize_t(d.rows), hsize_t(d.cols)};
  const hsize_t chunk[4] = {1, dims[1], dims[2], dims[3]};
  const hid_t file = H5Fcreate(path.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(4, dims, nullptr);
  const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(create, 4, chunk);
  bool ok = H5Pset_filter(create, filter, H5Z_FLAG_MANDATORY, values.size(), values.data()) >= 0;
  const hid_t links = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(links, 1);
  const hid_t set =
      H5Dcreate2(file, "/entry/data/data", H5T_STD_U16LE, space, links, create, H5P_DEFAULT);
  ok = ok && set >= 0;
  std::vector<std::byte> all;
  for (const auto& event : events().raw) all.insert(all.end(), event.begin(), event.end());
  ok = ok && H5Dwrite(set, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()) >= 0;
  H5Dclose(set);
  H5Pclose(links);
  H5Pclose(create);
  H5Sclose(space);
  H5Fclose(file);
  return ok;
}

// /entry/data/data of `events` frames of `frame_dims` elements of `file_type` (read from memory as
// `memory_type`), as a detector's writer stores them: one frame per chunk through `filter` (0:
// none, contiguous), no livedrp attributes.
bool write_frames(const fs::path& path, const std::vector<hsize_t>& frame_dims, hid_t file_type,
                  hid_t memory_type, const std::vector<std::vector<std::byte>>& frames,
                  H5Z_filter_t filter, std::vector<unsigned> values) {
  std::vector<hsize_t> dims{hsize_t(frames.size())};
  dims.insert(dims.end(), frame_dims.begin(), frame_dims.end());
  std::vector<hsize_t> chunk = dims;
  chunk[0] = 1;
  const hid_t file = H5Fcreate(path.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
  bool ok = true;
  if (filter != 0) {
    H5Pset_chunk(create, int(chunk.size()), chunk.data());
    ok = H5Pset_filter(create, filter, H5Z_FLAG_MANDATORY, values.size(), values.data()) >= 0;
  }
  const hid_t links = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(links, 1);
  const hid_t set =
      H5Dcreate2(file, "/entry/data/data", file_type, space, links, create, H5P_DEFAULT);
  ok = ok && set >= 0;
  std::vector<std::byte> all;
  for (const auto& frame : frames) all.insert(all.end(), frame.begin(), frame.end());
  ok = ok && H5Dwrite(set, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()) >= 0;
  H5Dclose(set);
  H5Pclose(links);
  H5Pclose(create);
  H5Sclose(space);
  H5Fclose(file);
  return ok;
}

// Every event of `path` through the replay source (the detector named, or found from the file),
// compared byte for byte with `frames`; the detector it replayed as.
std::string replay_frames(const fs::path& path, const std::string& detector,
                          const std::vector<std::vector<std::byte>>& frames) {
  replay::ReplayOptions options;
  options.files = {path};
  options.detector = detector;
  options.readers = 2;
  options.prefetch_events = 2;
  replay::ReplaySource source(options);
  replay::ReplayEvent event;
  std::uint64_t seen = 0;
  while (source.acquire(event)) {
    if (!event.data || seen >= frames.size() ||
        !std::equal(frames[seen].begin(), frames[seen].end(), event.data))
      QTest::qFail(qPrintable(QString("event %1 differs or is missing: %2")
                                  .arg(seen)
                                  .arg(QString::fromStdString(event.error))),
                   __FILE__, __LINE__);
    source.release();
    ++seen;
  }
  if (seen != frames.size()) QTest::qFail("not every event was replayed", __FILE__, __LINE__);
  return source.detector().name;
}

// The filters the file's dataset stores its chunks through.
std::vector<H5Z_filter_t> stored_filters(const fs::path& path, const std::string& dataset) {
  std::vector<H5Z_filter_t> filters;
  const hid_t file = H5Fopen(path.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t set = H5Dopen2(file, dataset.c_str(), H5P_DEFAULT);
  const hid_t create = H5Dget_create_plist(set);
  for (int i = 0; i < H5Pget_nfilters(create); ++i) {
    unsigned flags = 0;
    std::size_t count = 0;
    filters.push_back(
        H5Pget_filter2(create, unsigned(i), &flags, &count, nullptr, 0, nullptr, nullptr));
  }
  H5Pclose(create);
  H5Dclose(set);
  H5Fclose(file);
  return filters;
}

// Every event of the run, through the replay source as the engine reads it.
void verify_replay(const fs::path& path, std::uint64_t first_event = 0) {
  replay::ReplayOptions options;
  options.files = {path};
  options.readers = 2;
  options.prefetch_events = 2;
  replay::ReplaySource source(options);
  QCOMPARE(source.detector().name, events().detector.name);
  replay::ReplayEvent event;
  std::uint64_t seen = 0;
  while (source.acquire(event)) {
    QVERIFY2(event.data != nullptr, event.error.c_str());
    const auto& truth = events().raw[first_event + seen];
    QVERIFY(std::equal(truth.begin(), truth.end(), event.data));
    QCOMPARE(event.pulse_id, seen);  // the files record none: the place in the run
    source.release();
    ++seen;
  }
  QCOMPARE(seen, kEvents - first_event);
}

// A data file as Eiger writes it: frames [first, last) at /entry/data/data, no livedrp attributes.
void write_data_file(const fs::path& path, std::uint64_t first, std::uint64_t last) {
  replay::WriteLayout layout;  // uncompressed chunks: replay preads them from the data file
  replay::Hdf5EventWriter writer(path, events().detector, layout, "{}");
  for (std::uint64_t i = first; i < last; ++i)
    writer.append(events().headers[i], events().raw[i].data());
  writer.close();
  // Eiger's data files hold no pulse ids; the master file links only the frames.
  const hid_t file = H5Fopen(path.string().c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(file, "/entry/data/pulse_id", H5P_DEFAULT);
  H5Ldelete(file, "/entry/data/timestamp", H5P_DEFAULT);
  H5Adelete(file, "detector");
  H5Adelete(file, "detector_description");
  H5Fclose(file);
}

// A master file whose /entry/data/data_00000K links to data file K's /entry/data/data (names
// relative: HDF5 looks beside the master file).
void write_master_file(const fs::path& path, const std::vector<std::string>& data_files) {
  const hid_t file = H5Fcreate(path.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t links = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(links, 1);
  // Listed out of order: the parts are read in number order, not in creation order.
  for (std::size_t k = data_files.size(); k-- > 0;) {
    char name[32];
    std::snprintf(name, sizeof name, "/entry/data/data_%06zu", k + 1);
    H5Lcreate_external(data_files[k].c_str(), "/entry/data/data", file, name, links, H5P_DEFAULT);
  }
  H5Pclose(links);
  H5Fclose(file);
}

// `data` as one chunk of a 1-D dataset of `type` written through `filter` (`values` its
// settings), as the HDF5 plugin stored it; empty when HDF5 could not write it.
std::vector<std::byte> plugin_encoded_chunk(const fs::path& path, hid_t type, H5Z_filter_t filter,
                                            std::vector<unsigned> values,
                                            const std::vector<std::byte>& data) {
  const hsize_t elements = data.size() / H5Tget_size(type);
  const hid_t f = H5Fcreate(path.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(1, &elements, nullptr);
  const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(create, 1, &elements);
  bool ok = H5Pset_filter(create, filter, H5Z_FLAG_MANDATORY, values.size(), values.data()) >= 0;
  const hid_t set = H5Dcreate2(f, "/d", type, space, H5P_DEFAULT, create, H5P_DEFAULT);
  ok = ok && set >= 0 && H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0;
  const hsize_t origin = 0;
  hsize_t stored_size = 0;
  ok = ok && H5Dget_chunk_storage_size(set, &origin, &stored_size) >= 0;
  std::vector<std::byte> stored(ok ? stored_size : 0);
  std::uint32_t mask = 0;
  ok = ok && H5Dread_chunk(set, H5P_DEFAULT, &origin, &mask, stored.data()) >= 0;
  H5Dclose(set);
  H5Pclose(create);
  H5Sclose(space);
  H5Fclose(f);
  if (!ok) stored.clear();
  return stored;
}

}  // namespace

class TestReplayDetectorFiles : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  fs::path file(const char* name) const { return fs::path(dir_.path().toStdString()) / name; }

 private slots:
  void bitshuffle_lz4_frames_replay_bit_identical() {
    const fs::path path = file("bslz4.h5");
    // As h5py and the detectors' writers ask for it: block size 0 (the filter picks), compression
    // 2 = LZ4; the filter stores its version and the element size before these two.
    QVERIFY2(write_filtered(path, kBitshuffle, {0, 2}),
             "bitshuffle filter plugin (Debian package bitshuffle) not found by HDF5");
    QCOMPARE(stored_filters(path, "/entry/data/data"), std::vector<H5Z_filter_t>{kBitshuffle});
    {
      // Decoded in the reader threads (replay/chunk_decoder), and equal to what the HDF5 plugin
      // decodes for the same chunks.
      replay::Hdf5EventReader reader(path, "/entry/data/data", events().detector);
      QCOMPARE(reader.read_path(), replay::EventReadPath::Chunks);
      replay::Hdf5EventReader library(path, "/entry/data/data", events().detector);
      library.use_library_path();
      std::vector<std::byte> ours(events().detector.raw_event_bytes()), plugin(ours.size());
      for (std::uint64_t i = 0; i < kEvents; ++i) {
        std::uint64_t pulse_id = 0;
        std::int64_t timestamp = 0;
        reader.read(i, ours.data(), pulse_id, timestamp);
        library.read(i, plugin.data(), pulse_id, timestamp);
        QVERIFY(plugin == events().raw[i]);
        QVERIFY(ours == events().raw[i]);
      }
    }
    verify_replay(path);
  }

  // The decoder against the plugin's encoder on chunks with a short last block and a tail of
  // fewer than 8 elements, for 1-, 2- and 4-byte elements and a chosen block size.
  void bitshuffle_decoder_matches_the_plugin_on_partial_blocks() {
    std::mt19937 random(7);
    ThreadPool pool(3);
    for (const auto& [type, size] :
         {std::pair{H5T_STD_U8LE, 1}, std::pair{H5T_STD_U16LE, 2}, std::pair{H5T_STD_U32LE, 4}})
      for (unsigned block : {0u, 64u})
        for (hsize_t elements : {hsize_t(5), hsize_t(1003), hsize_t(20000)}) {
          std::vector<std::byte> data(elements * size);
          // Small values (as detector frames): most bit rows are zero, some are not.
          for (std::size_t i = 0; i < data.size(); ++i)
            data[i] = std::byte(i % size == 0 ? random() % 200 : (random() % 17 == 0));
          std::vector<std::byte> stored =
              plugin_encoded_chunk(file("partial.h5"), type, replay::kBitshuffleFilter,
                                   {block, replay::kBitshuffleLz4}, data);
          QVERIFY(!stored.empty());
          // One thread, and the blocks spread over a pool's threads: the same bytes.
          for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool}) {
            std::vector<std::byte> decoded(data.size());
            const std::string error =
                replay::bitshuffle_lz4_decode_chunk(stored, decoded, size, threads);
            QVERIFY2(error.empty(), error.c_str());
            QVERIFY2(decoded == data,
                     qPrintable(QString("element size %1, block %2, %3 elements, pool %4")
                                    .arg(size)
                                    .arg(block)
                                    .arg(elements)
                                    .arg(threads != nullptr)));
          }
          // A damaged chunk is refused, not decoded into garbage.
          stored.resize(stored.size() - 3);
          std::vector<std::byte> decoded(data.size());
          QVERIFY(!replay::bitshuffle_lz4_decode_chunk(stored, decoded, size).empty());
          QVERIFY(!replay::bitshuffle_lz4_decode_chunk(stored, decoded, size, &pool).empty());
        }
  }

  // A chunk whose header declares a block size far larger than the chunk (here 4 GiB for 16
  // elements, as a damaged file or a hostile Dectris message may) decodes with memory for what its
  // blocks fill: the decoder once sized its scratch rows by the declared block size (found by
  // fuzz_dectris_message).
  void a_declared_block_size_does_not_size_the_decoders_memory() {
    const std::vector<std::byte> data(16 * 2, std::byte{3});
    std::vector<std::byte> stored =
        plugin_encoded_chunk(file("huge_block.h5"), H5T_STD_U16LE, replay::kBitshuffleFilter,
                             {0u, replay::kBitshuffleLz4}, data);
    QVERIFY(stored.size() >= 12);
    // Bytes 8..11: the block size, big-endian; 0xFFFFFFF0 bytes is a whole number of 8 elements.
    for (int i = 8; i < 12; ++i) stored[i] = std::byte{0xFF};
    stored[11] = std::byte{0xF0};
    rusage before{};
    getrusage(RUSAGE_SELF, &before);
    std::vector<std::byte> decoded(data.size());
    const std::string error = replay::bitshuffle_lz4_decode_chunk(stored, decoded, 2);
    rusage after{};
    getrusage(RUSAGE_SELF, &after);
    QVERIFY2(error.empty(), error.c_str());
    QVERIFY(decoded == data);
    constexpr long kMaxGrowthKiB = 256 * 1024;  // the bug took 4 GiB; nothing here needs 1 MiB
    QVERIFY2(
        after.ru_maxrss - before.ru_maxrss < kMaxGrowthKiB,
        qPrintable(QString("peak memory grew by %1 KiB").arg(after.ru_maxrss - before.ru_maxrss)));
  }

  // The LZ4 decoder against the plugin on chunks of one block, several blocks with a short last
  // one, and blocks LZ4 cannot shrink (stored as they are).
  void lz4_decoder_matches_the_plugin() {
    std::mt19937 random(11);
    ThreadPool pool(3);
    for (hsize_t bytes : {hsize_t(7), hsize_t(5000), hsize_t(3000000)})
      for (bool noise : {false, true}) {
        std::vector<std::byte> data(bytes);
        for (std::size_t i = 0; i < data.size(); ++i)
          data[i] = std::byte(noise ? random() & 0xFF : (i / 64) % 5);
        // The filter's own default is one block of up to 1 GiB: 1024 bytes gives several.
        std::vector<std::byte> stored = plugin_encoded_chunk(file("lz4_chunk.h5"), H5T_STD_U8LE,
                                                             replay::kLz4Filter, {1024}, data);
        QVERIFY(!stored.empty());
        for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool}) {
          std::vector<std::byte> decoded(data.size());
          const std::string error = replay::lz4_decode_chunk(stored, decoded, threads);
          QVERIFY2(error.empty(), error.c_str());
          QVERIFY2(decoded == data, qPrintable(QString("%1 bytes, noise %2, pool %3")
                                                   .arg(bytes)
                                                   .arg(noise)
                                                   .arg(threads != nullptr)));
        }
        stored.resize(stored.size() - 2);
        std::vector<std::byte> decoded(data.size());
        QVERIFY(!replay::lz4_decode_chunk(stored, decoded).empty());
        QVERIFY(!replay::lz4_decode_chunk(stored, decoded, &pool).empty());
      }
  }

  void lz4_frames_replay_bit_identical() {
    const fs::path path = file("lz4.h5");
    QVERIFY2(write_filtered(path, kLz4, {}),
             "LZ4 filter plugin (Debian package hdf5-filter-plugin) not found by HDF5");
    QCOMPARE(stored_filters(path, "/entry/data/data"), std::vector<H5Z_filter_t>{kLz4});
    {
      replay::Hdf5EventReader reader(path, "/entry/data/data", events().detector);
      QCOMPARE(reader.read_path(), replay::EventReadPath::Chunks);
    }
    verify_replay(path);
  }

  // Simulated Eiger2 X 4M frames (uint32 counts, all-ones gaps and dead pixels) as the detector's
  // writer stores them, bitshuffle-LZ4 with 4-byte elements: decoded by the reader threads, equal
  // to the plugin's decode, and picked as eiger2x4m from their shape and element type alone.
  void uint32_counting_frames_replay_bit_identical() {
    const DetectorDescription eiger = find_detector("eiger2x4m");
    ThreadPool pool(2);
    DetectorSimulator simulator(eiger, SimulatorConfig{}, &pool);
    std::vector<std::vector<std::byte>> frames;
    for (std::uint64_t i = 0; i < 2; ++i) {
      frames.emplace_back(eiger.raw_event_bytes());
      simulator.generate(i, frames.back().data(), nullptr, &pool);
    }
    // The first gap row is all ones in every frame: the markers survive the round trip.
    std::uint32_t gap_word = 0;
    std::memcpy(&gap_word, frames[0].data() + 4 * (512 * std::size_t(eiger.cols) + 7), 4);
    QCOMPARE(gap_word, 0xFFFFFFFFu);
    const fs::path path = file("eiger_bslz4.h5");
    QVERIFY2(write_frames(path, {hsize_t(eiger.rows), hsize_t(eiger.cols)}, H5T_STD_U32LE,
                          H5T_NATIVE_UINT32, frames, kBitshuffle, {0, 2}),
             "bitshuffle filter plugin (Debian package bitshuffle) not found by HDF5");
    {
      replay::Hdf5EventReader reader(path, "/entry/data/data", eiger);
      QCOMPARE(reader.info().element_type, io::ElementType::UInt32);
      QCOMPARE(reader.read_path(), replay::EventReadPath::Chunks);
      replay::Hdf5EventReader library(path, "/entry/data/data", eiger);
      library.use_library_path();
      std::vector<std::byte> ours(eiger.raw_event_bytes()), plugin(ours.size());
      std::uint64_t pulse_id = 0;
      std::int64_t timestamp = 0;
      for (std::uint64_t i = 0; i < frames.size(); ++i) {
        reader.read(i, ours.data(), pulse_id, timestamp);
        library.read(i, plugin.data(), pulse_id, timestamp);
        QVERIFY(plugin == frames[i]);
        QVERIFY(ours == frames[i]);
      }
    }
    QCOMPARE(replay_frames(path, "", frames), std::string("eiger2x4m"));
  }

  // Jungfraujoch-like int32 frames (negative values, INT32_MIN and INT32_MAX markers), contiguous
  // and deflated, replay bit-identical as an int32 detector; files of the other 4-byte integer
  // type are refused naming both types.
  void int32_frames_replay_bit_identical_and_mismatches_are_refused() {
    const int rows = 64, cols = 96;
    auto write_description = [&](const char* name, const char* encoding) {
      const nlohmann::json description = {
          {"schema_version", 1},
          {"name", std::string("small_") + encoding},
          {"raw_encoding", encoding},
          {"segments", 1},
          {"segment_shape", {rows, cols}},
          {"pixel_size_um", 75.0},
          {"asic_shape", {rows, cols}},
          {"bank_columns", 0},
          {"gain_modes", {{{"name", "converted"}, {"nominal_adu_per_kev", 1.0}}}},
          {"placement", {{{"x_px", 0}, {"y_px", 0}, {"rotation_deg", 0}}}}};
      const fs::path path = file(name);
      std::ofstream(path) << description.dump();
      return path.string();
    };
    const std::string int32_detector = write_description("small_int32.json", "int32");
    const std::string uint32_detector = write_description("small_uint32.json", "uint32");
    std::mt19937 random(33);
    std::vector<std::vector<std::byte>> frames;
    for (int e = 0; e < 3; ++e) {
      std::vector<std::int32_t> values(std::size_t(rows) * cols);
      for (std::size_t p = 0; p < values.size(); ++p)
        values[p] = std::int32_t(random() % 2001) - 1000;
      values[3] = std::numeric_limits<std::int32_t>::min();
      values[4] = std::numeric_limits<std::int32_t>::max();
      values[5] = -1;
      frames.emplace_back(values.size() * 4);
      std::memcpy(frames.back().data(), values.data(), values.size() * 4);
    }
    const fs::path contiguous = file("jfjoch_int32.h5"), deflated = file("jfjoch_int32_gz.h5");
    QVERIFY(write_frames(contiguous, {hsize_t(rows), hsize_t(cols)}, H5T_STD_I32LE,
                         H5T_NATIVE_INT32, frames, 0, {}));
    QVERIFY(write_frames(deflated, {hsize_t(rows), hsize_t(cols)}, H5T_STD_I32LE, H5T_NATIVE_INT32,
                         frames, H5Z_FILTER_DEFLATE, {4}));
    const DetectorDescription detector = find_detector(int32_detector);
    for (const auto& [path, read_path] : {std::pair{contiguous, replay::EventReadPath::Contiguous},
                                          std::pair{deflated, replay::EventReadPath::Chunks}}) {
      replay::Hdf5EventReader reader(path, "/entry/data/data", detector);
      QCOMPARE(reader.info().element_type, io::ElementType::Int32);
      QCOMPARE(reader.read_path(), read_path);
      QCOMPARE(replay_frames(path, int32_detector, frames), std::string("small_int32"));
    }
    // An int32 file for a uint32 detector, and the Eiger's uint32 frames for an int32 detector.
    auto refusal = [](const fs::path& path, const std::string& detector) {
      try {
        replay::ReplayOptions options;
        options.files = {path};
        options.detector = detector;
        replay::ReplaySource source(options);
      } catch (const InputError& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    const std::string wrong = refusal(contiguous, uint32_detector);
    QVERIFY2(wrong.find("element type int32") != std::string::npos &&
                 wrong.find("raw_encoding uint32") != std::string::npos,
             wrong.c_str());
    const fs::path unsigned_file = file("unsigned.h5");
    QVERIFY(write_frames(unsigned_file, {hsize_t(rows), hsize_t(cols)}, H5T_STD_U32LE,
                         H5T_NATIVE_UINT32, frames, 0, {}));
    const std::string other = refusal(unsigned_file, int32_detector);
    QVERIFY2(other.find("element type uint32") != std::string::npos &&
                 other.find("raw_encoding int32") != std::string::npos,
             other.c_str());
  }

  void a_master_file_replays_its_data_files_in_order() {
    write_data_file(file("scan_data_000001.h5"), 0, 2);
    write_data_file(file("scan_data_000002.h5"), 2, kEvents);
    const fs::path master = file("scan_master.h5");
    write_master_file(master, {"scan_data_000001.h5", "scan_data_000002.h5"});
    QCOMPARE(replay::event_dataset_parts(master),
             (std::vector<std::string>{"/entry/data/data_000001", "/entry/data/data_000002"}));
    {
      // The bytes are read from the data file the link leads to, outside the HDF5 library.
      replay::Hdf5EventReader reader(master, "/entry/data/data_000002", events().detector);
      QCOMPARE(reader.events(), std::uint64_t(1));
      QCOMPARE(reader.read_path(), replay::EventReadPath::Chunks);
    }
    verify_replay(master);
  }

  // The offline commands take the same detector files without a dataset named: an Eiger-like
  // master file whose two data files hold bitshuffle-LZ4 uint32 frames reads back as the frames
  // written, in order (and replays so), and `livedrp-engine integrate` and `peaks` give from it
  // what they give from the same frames in a .npy file.
  void offline_commands_read_a_master_file_of_bitshuffle_data_files() {
    constexpr hsize_t kRows = 48, kCols = 64;
    std::vector<std::vector<std::byte>> frames;
    io::Array stack;
    stack.type = io::ElementType::UInt32;
    stack.shape = {4, kRows, kCols};
    for (std::uint32_t i = 0; i < 4; ++i) {
      std::vector<std::uint32_t> counts(kRows * kCols);
      for (std::size_t p = 0; p < counts.size(); ++p)
        counts[p] = std::uint32_t((p * 13 + i * 7) % 50 + (p % 97 == 0 ? 70000 : 0));
      frames.emplace_back(counts.size() * 4);
      std::memcpy(frames.back().data(), counts.data(), frames.back().size());
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(counts.data());
      stack.bytes.insert(stack.bytes.end(), bytes, bytes + counts.size() * 4);
    }
    const auto part = [&](std::size_t first, std::size_t last) {
      return std::vector<std::vector<std::byte>>(frames.begin() + long(first),
                                                 frames.begin() + long(last));
    };
    QVERIFY2(write_frames(file("offline_data_000001.h5"), {kRows, kCols}, H5T_STD_U32LE,
                          H5T_NATIVE_UINT32, part(0, 3), kBitshuffle, {0, 2}),
             "bitshuffle filter plugin (Debian package bitshuffle) not found by HDF5");
    QVERIFY(write_frames(file("offline_data_000002.h5"), {kRows, kCols}, H5T_STD_U32LE,
                         H5T_NATIVE_UINT32, part(3, 4), kBitshuffle, {0, 2}));
    const fs::path master = file("offline_master.h5");
    write_master_file(master, {"offline_data_000001.h5", "offline_data_000002.h5"});
    QCOMPARE(stored_filters(file("offline_data_000001.h5"), "/entry/data/data"),
             std::vector<H5Z_filter_t>{kBitshuffle});

    const io::Array read = replay::read_event_frames(master);
    QCOMPARE(read.type, io::ElementType::UInt32);
    QCOMPARE(read.shape, stack.shape);
    QVERIFY(read.bytes == stack.bytes);
    // Replay takes the same file as one run, the parts' chunks decoded by its reader threads.
    const fs::path counting = file("offline_counting.json");
    std::ofstream(counting) << R"({
      "schema_version": 1, "name": "offline_counting", "raw_encoding": "uint32",
      "segments": 1, "segment_shape": [48, 64], "pixel_size_um": 75.0, "asic_shape": [48, 64],
      "bank_columns": 0, "gain_modes": [{"name": "counts", "nominal_adu_per_kev": 1.0}],
      "placement": [{"x_px": 0, "y_px": 0, "rotation_deg": 0}]})";
    QCOMPARE(replay_frames(master, counting.string(), frames), std::string("offline_counting"));
    const fs::path npy = file("offline_stack.npy");
    io::write_npy(npy, stack);

    const QString poni =
        QString::fromStdString((integrate_cli_testing::reference_dir() / "untilted.poni").string());
    const auto integrated = [&](const fs::path& input, const char* output) {
      const QString out = QString::fromStdString(file(output).string());
      const CliResult r = run_cli("LIVEDRP_ENGINE_EXE", {"integrate", "--poni", poni, "--input",
                                                         QString::fromStdString(input.string()),
                                                         "--npt", "20", "--output", out});
      if (r.exit_code != 0) qWarning("%s", qPrintable(r.err));
      QFile text(out);
      return text.open(QIODevice::ReadOnly) ? text.readAll() : QByteArray();
    };
    const QByteArray from_npy = integrated(npy, "offline_npy.csv");
    QVERIFY(from_npy.count('\n') == 1 + 4 * 20);  // a header, 20 bins of each of 4 frames
    QCOMPARE(integrated(master, "offline_master.csv"), from_npy);

    // peaks: one 48 x 64 panel, every pixel at radius 10; the bright pixels are the peaks.
    const fs::path detector = file("offline_panel.json"), params = file("offline_params.json");
    std::ofstream(detector) << R"({
      "schema_version": 1, "name": "offline_panel", "raw_encoding": "float32",
      "segments": 1, "segment_shape": [48, 64], "pixel_size_um": 75.0, "asic_shape": [48, 64],
      "bank_columns": 0, "gain_modes": [{"name": "calibrated", "nominal_adu_per_kev": 1.0}],
      "placement": [{"x_px": 0, "y_px": 0, "rotation_deg": 0}]})";
    std::ofstream(params) << R"({"minimum_snr": 5, "min_pixel_count": 1, "max_pixel_count": 20,
      "local_bg_radius": 3, "adc_threshold": 0, "min_peaks_for_hit": 1})";
    io::Array radius;
    radius.type = io::ElementType::Float32;
    radius.shape = {1, kRows, kCols};
    radius.bytes.resize(kRows * kCols * sizeof(float));
    for (std::size_t i = 0; i < radius.elements(); ++i) radius.as<float>()[i] = 10.0f;
    const fs::path radius_map = file("offline_radius.npy");
    io::write_npy(radius_map, radius);
    const auto found = [&](const fs::path& input, const char* output) {
      const QString out = QString::fromStdString(file(output).string());
      const CliResult r = run_cli(
          "LIVEDRP_ENGINE_EXE", {"peaks", "--detector", QString::fromStdString(detector.string()),
                                 "--input", QString::fromStdString(input.string()), "--radius-map",
                                 QString::fromStdString(radius_map.string()), "--params",
                                 QString::fromStdString(params.string()), "--output", out});
      if (r.exit_code != 0) qWarning("%s", qPrintable(r.err));
      QFile text(out);
      return text.open(QIODevice::ReadOnly) ? text.readAll() : QByteArray();
    };
    const QByteArray peaks_from_npy = found(npy, "offline_npy_peaks.csv");
    QVERIFY2(peaks_from_npy.count('\n') > 1 + 4, peaks_from_npy.constData());  // the bright pixels
    QCOMPARE(found(master, "offline_master_peaks.csv"), peaks_from_npy);
  }

  void a_master_file_without_its_data_file_is_refused_by_name() {
    write_data_file(file("lost_data_000001.h5"), 0, 2);
    const fs::path master = file("lost_master.h5");
    write_master_file(master, {"lost_data_000001.h5", "lost_data_000002.h5"});
    std::string error;
    try {
      replay::ReplayOptions options;
      options.files = {master};
      replay::ReplaySource source(options);
    } catch (const InputError& e) {
      error = e.what();
    }
    QVERIFY2(error.find(master.string()) != std::string::npos, error.c_str());
    QVERIFY2(error.find("/entry/data/data_000002") != std::string::npos, error.c_str());
    QVERIFY2(error.find("lost_data_000002.h5") != std::string::npos, error.c_str());
  }
};

QTEST_GUILESS_MAIN(TestReplayDetectorFiles)
#include "test_replay_detector_files.moc"
