#pragma once
// Records the events a source produces to HDF5 files that the replay source reads back
// bit-identically (docs/formats.md, "Recorded events"). Files roll over at a size limit:
// DIR/run0001-000.h5, DIR/run0001-001.h5, ...
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/detector.hpp"
#include "core/event.hpp"
#include "replay/hdf5_event_file.hpp"

namespace livedrp::replay {

struct RecordOptions {
  std::filesystem::path directory;
  std::uint64_t max_file_bytes = 4ull << 30;  // a file closes before it would pass this
  WriteLayout layout;                         // must be chunked (files grow event by event)
  std::int64_t run = 1;
};

class Recorder {
 public:
  // Creates the directory if needed. Throws InputError for bad options, RuntimeFault when the
  // first file cannot be created.
  Recorder(RecordOptions options, DetectorDescription detector, std::string pipeline_config_json);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Appends one event (detector.raw_event_bytes() at `raw`); throws RuntimeFault on write errors.
  void record(const EventHeader& header, const void* raw);
  void close();  // flushes and closes the current file; idempotent

  std::uint64_t events() const { return events_; }
  const std::vector<std::filesystem::path>& files() const { return files_; }

 private:
  void open_next();

  RecordOptions options_;
  DetectorDescription detector_;
  std::string config_json_;
  std::unique_ptr<Hdf5EventWriter> writer_;
  std::vector<std::filesystem::path> files_;
  std::atomic<std::uint64_t> events_{0};  // read by other threads for progress
};

}  // namespace livedrp::replay
