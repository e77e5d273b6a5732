#include "replay/recorder.hpp"

#include <cstdio>
#include <cstring>
#include <system_error>

#include "core/error.hpp"
#include "io/segment_names.hpp"
#include "replay/hdf5_lock.hpp"

namespace livedrp::replay {

Recorder::Recorder(RecordOptions options, DetectorDescription detector,
                   std::string pipeline_config_json)
    : options_(std::move(options)),
      detector_(std::move(detector)),
      config_json_(std::move(pipeline_config_json)) {
  if (options_.directory.empty()) throw InputError("record: no directory given");
  if (!options_.layout.chunked)
    throw InputError("record: the layout must be chunked (recorded files grow event by event)");
  if (options_.queue_events < 1)
    throw InputError("record: the queue must hold at least 1 event, got " +
                     std::to_string(options_.queue_events));
  std::error_code error;
  std::filesystem::create_directories(options_.directory, error);
  if (error || !std::filesystem::is_directory(options_.directory))
    throw InputError("record: cannot create directory " + options_.directory.string() + ": " +
                     error.message());
  {
    std::lock_guard hdf5(hdf5_mutex());
    open_next();
  }
  // queue_events waiting, plus the one the writer is writing. Each buffer's memory is taken
  // when it is first used: a deep queue costs memory only when the disk falls behind.
  buffers_.resize(options_.queue_events + 1);
  for (std::size_t i = 0; i < buffers_.size(); ++i) free_.push_back(i);
  thread_ = std::thread([this] { write_events(); });
}

Recorder::~Recorder() {
  try {
    close();
  } catch (...) {
    // close() explicitly to see the error
  }
}

void Recorder::open_next() {
  char name[96];
  std::size_t index;
  {
    std::lock_guard lock(mutex_);
    index = files_.size();
  }
  std::snprintf(name, sizeof name, "run%04lld%s-%03zu.h5", static_cast<long long>(options_.run),
                io::rank_name_part(options_.rank).c_str(), index);
  const auto path = options_.directory / name;
  // A recording is never written over: an earlier run's file of the same run number stays.
  if (std::filesystem::exists(path))
    throw InputError("record: " + path.string() +
                     " exists, and recordings are not overwritten; choose another run number "
                     "(`run`) or record.directory");
  writer_ = std::make_unique<Hdf5EventWriter>(path, detector_, options_.layout, config_json_);
  std::lock_guard lock(mutex_);
  files_.push_back(path);
}

bool Recorder::record(const EventHeader& header, const void* raw) {
  std::unique_lock lock(mutex_);
  if (closing_) throw RuntimeFault("record: the recorder is closed");
  if (free_.empty() && options_.when_full == RecordWhenFull::Wait)
    changed_.wait(lock, [this] { return !free_.empty() || !error_.empty(); });
  if (!error_.empty()) {
    failed_.fetch_add(1);
    return false;
  }
  if (free_.empty()) {
    dropped_.fetch_add(1);
    return false;
  }
  const std::size_t buffer = free_.front();
  free_.pop_front();
  lock.unlock();
  // The copy outside the lock: the writer goes on with the events queued before.
  buffers_[buffer].header = header;
  if (buffers_[buffer].data.empty()) buffers_[buffer].data.resize(detector_.raw_event_bytes());
  std::memcpy(buffers_[buffer].data.data(), raw, buffers_[buffer].data.size());
  lock.lock();
  if (!error_.empty()) {
    // The writer failed while this event was copied: it has stopped and takes no more.
    free_.push_back(buffer);
    failed_.fetch_add(1);
    return false;
  }
  queue_.push_back(buffer);
  changed_.notify_all();
  return true;
}

void Recorder::write_events() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) break;  // closing, and everything queued is written
    const std::size_t buffer = queue_.front();
    queue_.pop_front();
    lock.unlock();
    std::string failure;
    try {
      if (options_.before_write) options_.before_write(events_.load());
      std::lock_guard hdf5(hdf5_mutex());
      // Roll over before the event that would pass the limit; a file holds at least one event.
      if (writer_->events() > 0 &&
          writer_->file_bytes() + detector_.raw_event_bytes() > options_.max_file_bytes) {
        writer_->close();
        open_next();
      }
      writer_->append(buffers_[buffer].header, buffers_[buffer].data.data());
      ++events_;
    } catch (const std::exception& e) {
      failure = e.what();
    }
    lock.lock();
    free_.push_back(buffer);
    if (!failure.empty()) {
      // The failed event and everything still queued are not recorded: counted, and the error
      // is the recorder's from now on (error(), close()).
      error_ = failure;
      failed_.fetch_add(1 + queue_.size());
      for (std::size_t left : queue_) free_.push_back(left);
      queue_.clear();
      changed_.notify_all();
      break;
    }
    changed_.notify_all();
  }
}

void Recorder::close() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::string failure;
  {
    std::lock_guard lock(mutex_);
    failure = error_;
  }
  if (writer_) {
    std::lock_guard hdf5(hdf5_mutex());
    auto writer = std::move(writer_);
    try {
      writer->close();
    } catch (const std::exception& e) {
      if (failure.empty()) failure = e.what();
    }
  }
  if (!failure.empty()) throw RuntimeFault(failure);
}

std::string Recorder::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

std::size_t Recorder::queued() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

std::vector<std::filesystem::path> Recorder::files() const {
  std::lock_guard lock(mutex_);
  return files_;
}

}  // namespace livedrp::replay
