#pragma once
// Records the events a source produces to HDF5 files that the replay source reads back
// bit-identically (docs/formats.md, "Recorded events"). Files roll over at a size limit:
// DIR/run0001-000.h5, DIR/run0001-001.h5, ...
//
// record() copies the event into a bounded queue and returns; a writer thread of its own drains
// the queue to disk, so a slow disk never stalls the source directly. When the queue is full,
// the policy decides: drop the event and count it (a live detector cannot wait), or wait for the
// writer (back-pressure). Every event given to record() is written or counted as dropped.
#include <atomic>
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
#include "core/event.hpp"
#include "replay/hdf5_event_file.hpp"

namespace livedrp::replay {

enum class RecordWhenFull { Drop, Wait };

struct RecordOptions {
  std::filesystem::path directory;
  std::uint64_t max_file_bytes = 4ull << 30;  // a file closes before it would pass this
  WriteLayout layout;                         // must be chunked (files grow event by event)
  std::int64_t run = 1;
  // An MPI run's processing rank records to names of its own (io/segment_names.hpp); -1: the
  // plain names.
  int rank = -1;
  // Events waiting for the writer, besides the one it is writing (each one event's bytes).
  // 16 epix10ka2M events are 69 MB: about 10 ms of a 1.5 kHz source, enough to ride out a file
  // rollover or a flush.
  std::size_t queue_events = 16;
  RecordWhenFull when_full = RecordWhenFull::Drop;
  // Test hook: called on the writer thread before each event is written (a slow disk, made
  // deterministic).
  std::function<void(std::uint64_t event)> before_write;
};

class Recorder {
 public:
  // Creates the directory if needed and starts the writer thread. Throws InputError for bad
  // options, RuntimeFault when the first file cannot be created.
  Recorder(RecordOptions options, DetectorDescription detector, std::string pipeline_config_json);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Queues one event (detector.raw_event_bytes() at `raw`, copied). Returns false when the
  // queue was full under RecordWhenFull::Drop (counted in dropped()) or the writer has failed
  // (disk full, ...; counted in failed(), the reason in error()): recording stops there, and
  // the source goes on.
  bool record(const EventHeader& header, const void* raw);
  // Writes what is queued, then flushes and closes the current file; idempotent. Throws the
  // writer's error, if any.
  void close();

  std::uint64_t events() const { return events_; }    // written
  std::uint64_t dropped() const { return dropped_; }  // not recorded: the queue was full
  std::uint64_t failed() const { return failed_; }    // not recorded: the writer had failed
  std::string error() const;                          // the writer's failure; empty if none
  std::size_t queued() const;
  std::vector<std::filesystem::path> files() const;  // a copy: the writer may add one

 private:
  struct Queued {
    EventHeader header;
    std::vector<std::byte> data;
  };
  void open_next();     // writer thread (or constructor), HDF5 lock held by the caller
  void write_events();  // the writer thread

  RecordOptions options_;
  DetectorDescription detector_;
  std::string config_json_;
  std::unique_ptr<Hdf5EventWriter> writer_;  // the writer thread's once started

  mutable std::mutex mutex_;  // guards the fields below
  std::condition_variable changed_;
  std::vector<Queued> buffers_;  // queue_events + 1 (the one being written); data on first use
  std::deque<std::size_t> free_, queue_;  // buffer indices
  std::vector<std::filesystem::path> files_;
  std::string error_;  // the writer's failure, named
  bool closing_ = false;

  std::atomic<std::uint64_t> events_{0}, dropped_{0}, failed_{0};
  std::thread thread_;
};

}  // namespace livedrp::replay
