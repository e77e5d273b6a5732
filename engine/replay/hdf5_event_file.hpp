#pragma once
// Detector events in one HDF5 file (layout in docs/formats.md, "Recorded events"): a dataset of N
// events, [N, segments, rows, cols] or [N, segments * rows, cols], of the detector's raw words
// (uint16, uint32, int32, or float32 calibrated values), chunked (with HDF5's built-in deflate
// filter or not) or contiguous; pulse ids and timestamps in the sibling datasets `pulse_id` and
// `timestamp` of the same group.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codec/codec.hpp"
#include "core/detector.hpp"
#include "core/event.hpp"
#include "io/array.hpp"

namespace livedrp::replay {

inline constexpr const char* kDefaultDataset = "/entry/data/data";
inline constexpr const char* kFormatName = "livedrp-events";
inline constexpr int kFormatVersion = 1;

// The element type of a detector's events in a file: uint16 for the ePix10ka, the Jungfrau and
// uint16 images, uint32, int32, float32 for the others.
io::ElementType element_type_of(RawEncoding encoding);

struct WriteLayout {
  std::string dataset = kDefaultDataset;
  bool stacked = false;  // [N, segments * rows, cols] instead of [N, segments, rows, cols]
  bool chunked = true;   // one event per chunk, extendible; false: contiguous, fixed size
  int deflate = 0;       // 0: no filter; 1..9: gzip level (chunked only), with byte shuffle
  // The livedrp codec instead (chunked only, not with deflate): each event compressed on the
  // writer's thread and stored as its chunk through H5Dwrite_chunk with the livedrp HDF5 filter
  // (id 386, docs/formats.md), which h5dump and h5py apply with HDF5_PLUGIN_PATH. Lossless for
  // uint16 or float32 events, lossy (error_bound) for float32.
  std::optional<codec::CodecParams> codec;
};

// Writes events one at a time. Throws RuntimeFault naming the file when HDF5 cannot write.
class Hdf5EventWriter {
 public:
  // `contiguous_events`: for a contiguous layout, the number of events the file will hold (HDF5
  // cannot extend a contiguous dataset); ignored when chunked. `pipeline_config` is stored as a
  // JSON attribute.
  Hdf5EventWriter(const std::filesystem::path& path, const DetectorDescription& detector,
                  const WriteLayout& layout, const std::string& pipeline_config_json,
                  std::uint64_t contiguous_events = 0);
  ~Hdf5EventWriter();
  Hdf5EventWriter(const Hdf5EventWriter&) = delete;
  Hdf5EventWriter& operator=(const Hdf5EventWriter&) = delete;

  // `raw` is detector.raw_event_bytes() bytes.
  void append(const EventHeader& header, const void* raw);
  std::uint64_t events() const { return events_; }
  std::uint64_t file_bytes() const;  // as HDF5 has allocated it so far
  void close();                      // flushes; idempotent
  const std::filesystem::path& path() const { return path_; }

 private:
  struct Handles;
  std::filesystem::path path_;
  DetectorDescription detector_;
  WriteLayout layout_;
  std::uint64_t capacity_ = 0;
  std::uint64_t events_ = 0;
  Handles* h_ = nullptr;
};

// What a file holds, checked against a detector.
struct EventFileInfo {
  std::filesystem::path path;
  std::string dataset;
  std::uint64_t events = 0;
  std::vector<std::uint64_t> shape;                        // as stored
  io::ElementType element_type = io::ElementType::UInt16;  // uint16, uint32, int32 or float32
  bool has_pulse_ids = false, has_timestamps = false;
  std::string detector_name;         // attribute "detector"; empty when absent
  std::string detector_description;  // attribute "detector_description" (JSON); may be empty
  std::string pipeline_config;       // attribute "pipeline_config" (JSON); may be empty
};

// How Hdf5EventReader::read gets an event's bytes. HDF5 serialises its calls
// (replay/hdf5_lock.hpp), so where the layout allows, the reader asks HDF5 only where the bytes are
// and reads them itself with pread(), decompressing outside the library: several threads then read
// in parallel.
enum class EventReadPath {
  Contiguous,  // uncompressed contiguous dataset: pread at the dataset's offset, no HDF5 call
  Chunks,      // chunks of whole rows of one event, no filter or shuffle/deflate, bitshuffle-LZ4,
               // LZ4 or the livedrp codec: chunk address from HDF5 (locked), pread and decode
               // outside the lock
  Library,     // anything else (other filters, byte order, user block): H5Dread, locked
};
const char* to_string(EventReadPath path);

// Reads events of one file. Opening checks the dataset's existence, element type and shape
// against the detector; every error is an InputError naming the file and the dataset.
// read() may be called from several threads at once.
class Hdf5EventReader {
 public:
  // Opens and describes a file without a detector to check against (to pick the detector).
  static EventFileInfo inspect(const std::filesystem::path& path, const std::string& dataset);

  Hdf5EventReader(const std::filesystem::path& path, const std::string& dataset,
                  const DetectorDescription& detector);
  ~Hdf5EventReader();
  Hdf5EventReader(const Hdf5EventReader&) = delete;
  Hdf5EventReader& operator=(const Hdf5EventReader&) = delete;

  const EventFileInfo& info() const { return info_; }
  std::uint64_t events() const { return info_.events; }
  // Event `index` into `raw` (detector.raw_event_bytes()); pulse id and timestamp from the
  // sibling datasets when present (else pulse id = index, timestamp = 0). Throws InputError
  // naming the file, dataset and event when the data cannot be read (damaged chunk).
  void read(std::uint64_t index, void* raw, std::uint64_t& pulse_id, std::int64_t& timestamp_ns);
  EventReadPath read_path() const { return path_; }
  // Reads through H5Dread from now on (the benchmark's baseline for the pread paths).
  void use_library_path() { path_ = EventReadPath::Library; }

 private:
  struct Handles;
  struct ChunkPlan;
  void choose_read_path();
  void read_with_library(std::uint64_t index, void* raw, const std::string& where);
  void read_contiguous(std::uint64_t index, void* raw, const std::string& where);
  // false when a chunk of the event is not allocated (never written): the library fills those
  bool read_chunks(std::uint64_t index, void* raw, const std::string& where);

  EventFileInfo info_;
  std::size_t event_bytes_ = 0;
  Handles* h_ = nullptr;
  EventReadPath path_ = EventReadPath::Library;
  int fd_ = -1;  // for pread (Contiguous, Chunks)
  std::uint64_t contiguous_offset_ = 0;
  std::unique_ptr<ChunkPlan> chunks_;
};

// The detector a file's events belong to: `requested` (a name or description path) when not
// empty, else the description stored in the file, else the built-in detector whose shape and
// element type match. Throws InputError naming the file when none fits or they disagree.
DetectorDescription detector_for_file(const EventFileInfo& info, const std::string& requested);

}  // namespace livedrp::replay
