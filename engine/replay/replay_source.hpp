#pragma once
// The replay source: events of one HDF5 file or a list of them (a run), in order, read ahead by
// several reader threads so that the engine's producer finds the next event in memory. Readers
// take the next event index in turn and fill their own slot; events are handed out in index
// order whichever reader finishes first. Slot buffers come from a caller's allocator (the
// backend's pinned memory in the engine), so a filled buffer can be handed to the ring as it is
// (exchange_acquired_buffer) instead of being copied. Seek and loop are positions of this
// reader; pacing, pause and step belong to the engine's producer.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/detector.hpp"
#include "replay/hdf5_event_file.hpp"

namespace livedrp::replay {

// "replay:PATH[:/dataset]": PATH is a file, a directory (its *.h5 files in name order, as the
// recorder writes a run) or a comma-separated list of files. Throws InputError when malformed.
struct ReplaySpec {
  std::vector<std::filesystem::path> files;
  std::string dataset;  // empty: found in the file (replay/dataset_discovery.hpp)
};
ReplaySpec parse_replay_source(const std::string& source);

struct ReplayOptions {
  std::vector<std::filesystem::path> files;
  // Empty: found in each file (replay/dataset_discovery.hpp); a master file contributes each of
  // its linked data datasets in turn.
  std::string dataset;
  std::string detector;             // a name or description path; empty: from the first file
  std::size_t prefetch_events = 8;  // slots; at least `readers`
  // Reader threads; 0: default_replay_readers(). HDF5 calls are serialised, so more readers pay
  // off through parallel pread() and inflate (EventReadPath), not through the library.
  std::size_t readers = 0;
  bool loop = false;
  bool through_library = false;  // H5Dread only (a benchmark's baseline), not EventReadPath
  // Slot buffers (event bytes each). Default: 64-byte aligned host memory. The engine passes its
  // backend's allocate_host/free_host so that slots and ring slots can be exchanged.
  std::function<void*(std::size_t)> allocate;
  std::function<void(void*)> free;
};

// min(8, cores): on the H200 machine 8 readers read a page-cached file at 45 GB/s, 4 at 28.
std::size_t default_replay_readers();

// One event handed out by acquire(): valid until release().
struct ReplayEvent {
  std::uint64_t index = 0;  // over the whole list of files
  std::uint64_t pulse_id = 0;
  std::int64_t timestamp_ns = 0;
  const std::byte* data = nullptr;  // null when the event could not be read (see error)
  std::string error;                // names the file, dataset and event
};

class ReplaySource {
 public:
  // Opens every file and checks it against the detector (the requested one, or the first file's);
  // throws InputError naming the file and the dataset.
  // Reader threads start at the first acquire().
  explicit ReplaySource(ReplayOptions options);
  ~ReplaySource();  // stops the reader threads
  ReplaySource(const ReplaySource&) = delete;
  ReplaySource& operator=(const ReplaySource&) = delete;

  const DetectorDescription& detector() const { return detector_; }
  // As named, or as found in the first file.
  const std::string& dataset() const { return options_.dataset; }
  std::uint64_t total_events() const { return total_; }
  bool has_timestamps() const { return has_timestamps_; }
  // The files replayed (a master file's linked parts each).
  const std::vector<EventFileInfo>& files() const { return infos_; }
  // Files of the list left out because they cannot be read, one error text each (naming the file
  // and the dataset); empty for a single file (which is refused instead).
  const std::vector<std::string>& skipped_files() const { return skipped_files_; }

  // Blocks until the next event is read (or the end, or stop()). Returns false at the end of the
  // list without loop, or when stopped. The time spent blocked is counted as disk wait.
  bool acquire(ReplayEvent& event);
  void release();  // gives the acquired event's buffer back to the readers
  // Replaces options.allocate/free; only before the first acquire() (the engine knows its
  // backend's allocator after it has opened the files). Throws RuntimeFault after.
  void set_buffer_allocator(std::function<void*(std::size_t)> allocate,
                            std::function<void(void*)> free);
  // Takes the acquired event's buffer (the caller owns it now, to free with options.free) and
  // puts `replacement` (event bytes, from options.allocate) in its slot; release() as usual.
  void* exchange_acquired_buffer(void* replacement);
  // The next acquire() returns event `index` (clamped to the last); prefetched events are dropped.
  void seek(std::uint64_t index);
  void stop();

  std::uint64_t loops() const { return loops_; }  // completed passes over the list (loop mode)
  double disk_wait_s() const;                     // total time acquire() waited
  std::uint64_t bytes_read() const { return bytes_read_; }
  // Wall time during which at least one reader was reading: bytes_read() / read_s() is the rate
  // the readers together sustain (not a sum of per-thread rates).
  double read_s() const;
  std::size_t readers() const { return options_.readers; }
  // How events are read (of the first file): see EventReadPath.
  EventReadPath read_path() const { return file_readers_.front()->read_path(); }

 private:
  struct Slot {
    std::byte* data = nullptr;
    ReplayEvent event;
    bool ready = false;  // read finished (or failed) for the current dispatch
    bool stale = false;  // dropped by a seek while a reader still fills it
    bool wraps = false;  // the first event of another pass (loop)
  };
  void start_readers();
  void read_events();  // one reader thread
  // File and local index of global event `index`.
  std::pair<std::size_t, std::uint64_t> locate(std::uint64_t index) const;

  ReplayOptions options_;
  DetectorDescription detector_;
  std::vector<EventFileInfo> infos_;
  std::vector<std::string> skipped_files_;
  std::vector<std::unique_ptr<Hdf5EventReader>>
      file_readers_;                        // one per file, shared by the threads
  std::vector<std::uint64_t> first_index_;  // of each file
  std::uint64_t total_ = 0;
  bool has_timestamps_ = false;

  std::vector<Slot> slots_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  // free_: slots to read into; pending_: slots handed to readers, in event order (ready or not).
  std::deque<std::size_t> free_, pending_;
  std::size_t acquired_ = SIZE_MAX;
  std::uint64_t read_position_ = 0;  // next event a reader takes
  bool wrapped_ = false;             // read_position_ went back to 0 (loop)
  bool at_end_ = false, stopped_ = false, started_ = false;
  int reading_ = 0;                                   // readers busy now
  std::chrono::steady_clock::time_point busy_since_;  // when reading_ went from 0 to 1
  std::atomic<std::uint64_t> loops_{0}, bytes_read_{0};
  std::atomic<std::int64_t> disk_wait_ns_{0}, read_ns_{0};
  std::vector<std::thread> threads_;
};

}  // namespace livedrp::replay
