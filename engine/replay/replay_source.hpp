#pragma once
// The replay source: events of one HDF5 file or a list of them (a run), in order, read ahead by
// a prefetch thread so that the engine's producer finds the next event in memory. Seek and loop
// are positions of this reader; pacing, pause and step belong to the engine's producer.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
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
  std::string dataset;  // empty: kDefaultDataset
};
ReplaySpec parse_replay_source(const std::string& source);

struct ReplayOptions {
  std::vector<std::filesystem::path> files;
  std::string dataset = kDefaultDataset;
  std::string detector;  // a name or description path; empty: from the first file
  std::size_t prefetch_events = 8;
  bool loop = false;
};

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
  explicit ReplaySource(ReplayOptions options);
  ~ReplaySource();  // stops the prefetch thread
  ReplaySource(const ReplaySource&) = delete;
  ReplaySource& operator=(const ReplaySource&) = delete;

  const DetectorDescription& detector() const { return detector_; }
  std::uint64_t total_events() const { return total_; }
  bool has_timestamps() const { return has_timestamps_; }
  const std::vector<EventFileInfo>& files() const { return infos_; }

  // Blocks until the next event is read (or the end, or stop()). Returns false at the end of the
  // list without loop, or when stopped. The time spent blocked is counted as disk wait.
  bool acquire(ReplayEvent& event);
  void release();  // gives the acquired event's buffer back to the prefetch thread
  // The next acquire() returns event `index` (clamped to the last); prefetched events are dropped.
  void seek(std::uint64_t index);
  void stop();

  std::uint64_t loops() const { return loops_; }  // completed passes over the list (loop mode)
  double disk_wait_s() const;                     // total time acquire() waited
  std::uint64_t bytes_read() const { return bytes_read_; }
  double read_s() const;  // total time spent reading (prefetch thread)

 private:
  struct Slot {
    std::vector<std::byte> data;
    ReplayEvent event;
  };
  void prefetch();
  // File and local index of global event `index`.
  std::pair<std::size_t, std::uint64_t> locate(std::uint64_t index) const;

  ReplayOptions options_;
  DetectorDescription detector_;
  std::vector<EventFileInfo> infos_;
  std::vector<std::unique_ptr<Hdf5EventReader>> readers_;  // the prefetch thread's alone
  std::vector<std::uint64_t> first_index_;                 // of each file
  std::uint64_t total_ = 0;
  bool has_timestamps_ = false;

  std::vector<Slot> slots_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::size_t> free_, filled_;  // slot indices
  std::size_t acquired_ = SIZE_MAX;
  std::uint64_t read_position_ = 0;  // next event the prefetch thread reads
  std::uint64_t generation_ = 0;     // bumped by seek: reads in progress are discarded
  bool at_end_ = false, stopped_ = false;
  std::atomic<std::uint64_t> loops_{0}, bytes_read_{0};
  std::atomic<std::int64_t> disk_wait_ns_{0}, read_ns_{0};
  std::thread thread_;
};

}  // namespace livedrp::replay
