#include "replay/replay_source.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

#include "core/error.hpp"
#include "replay/dataset_discovery.hpp"

namespace livedrp::replay {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t since_ns(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

}  // namespace

ReplaySpec parse_replay_source(const std::string& source) {
  const std::string prefix = "replay:";
  if (source.rfind(prefix, 0) != 0 || source.size() <= prefix.size())
    throw InputError("source '" + source + "' is not replay:FILE.h5[:/dataset]");
  std::string rest = source.substr(prefix.size());
  ReplaySpec spec;
  // The dataset starts at the first ":/" (a path has no ':' before a '/' on the platforms
  // livedrp runs on).
  if (const auto at = rest.find(":/"); at != std::string::npos) {
    spec.dataset = rest.substr(at + 1);
    rest = rest.substr(0, at);
  }
  for (std::size_t begin = 0; begin <= rest.size();) {
    const std::size_t end = std::min(rest.find(',', begin), rest.size());
    const std::filesystem::path path = rest.substr(begin, end - begin);
    begin = end + 1;
    if (path.empty()) continue;
    if (std::filesystem::is_directory(path)) {
      std::vector<std::filesystem::path> found;
      for (const auto& entry : std::filesystem::directory_iterator(path))
        if (entry.is_regular_file() && entry.path().extension() == ".h5")
          found.push_back(entry.path());
      std::sort(found.begin(), found.end());
      if (found.empty())
        throw InputError("replay directory " + path.string() + " holds no .h5 files");
      spec.files.insert(spec.files.end(), found.begin(), found.end());
    } else {
      spec.files.push_back(path);
    }
  }
  if (spec.files.empty()) throw InputError("source '" + source + "' names no file");
  return spec;
}

std::size_t default_replay_readers() {
  return std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
}

ReplaySource::ReplaySource(ReplayOptions options) : options_(std::move(options)) {
  if (options_.files.empty()) throw InputError("replay: no file given");
  // Not named: found in each file (replay/dataset_discovery.hpp); a master file's events are
  // in several linked datasets, each read as a file of its own.
  const bool discover = options_.dataset.empty();
  if (options_.readers == 0) options_.readers = default_replay_readers();
  // A reader without a slot to fill would idle.
  options_.prefetch_events = std::max(options_.prefetch_events, options_.readers);
  if (!options_.allocate || !options_.free) {
    options_.allocate = [](std::size_t bytes) {
      return ::operator new(bytes, std::align_val_t(64));
    };
    options_.free = [](void* pointer) { ::operator delete(pointer, std::align_val_t(64)); };
  }
  // The detector comes from the first readable file (or the request); every file must hold its
  // events. In a list of several, a file that cannot be read (damaged, truncated, no dataset,
  // another detector, another shape) is left out with its error in skipped_files(), and the run
  // goes on with the others; a single file, or a list with no readable file, is refused.
  const bool several = options_.files.size() > 1;
  std::vector<std::string> errors;
  std::optional<std::filesystem::path> detector_source;
  has_timestamps_ = true;
  for (const auto& path : options_.files) {
    try {
      const std::vector<std::string> datasets =
          discover ? event_dataset_parts(path) : std::vector<std::string>{options_.dataset};
      if (options_.dataset.empty()) options_.dataset = datasets.front();
      // A file's parts are taken whole or not at all.
      std::vector<std::unique_ptr<Hdf5EventReader>> readers;
      for (const std::string& dataset : datasets) {
        if (!detector_source) {
          const EventFileInfo info = Hdf5EventReader::inspect(path, dataset);
          detector_ = detector_for_file(info, options_.detector);
          detector_source = path;
        }
        auto reader = std::make_unique<Hdf5EventReader>(path, dataset, detector_);
        if (options_.through_library) reader->use_library_path();
        const EventFileInfo& info = reader->info();
        if (!info.detector_name.empty() && info.detector_name != detector_.name)
          throw InputError("HDF5 file " + path.string() + ", dataset " + dataset +
                           ": recorded from detector " + info.detector_name +
                           ", but the run is of " + detector_.name + " (from " +
                           detector_source->string() + ")");
        readers.push_back(std::move(reader));
      }
      for (auto& reader : readers) {
        const EventFileInfo& info = reader->info();
        has_timestamps_ = has_timestamps_ && info.has_timestamps;
        first_index_.push_back(total_);
        total_ += info.events;
        infos_.push_back(info);
        file_readers_.push_back(std::move(reader));
      }
    } catch (const InputError& error) {
      if (!several) throw;
      errors.push_back(error.what());
    }
  }
  if (file_readers_.empty()) {
    std::string all;
    for (const auto& e : errors) all += "\n  " + e;
    throw InputError("replay: none of the " + std::to_string(options_.files.size()) +
                     " files can be read:" + all);
  }
  skipped_files_ = std::move(errors);
  if (total_ == 0)
    throw InputError("replay: the files hold no events (dataset " + options_.dataset + ")");
}

ReplaySource::~ReplaySource() {
  stop();
  for (auto& thread : threads_)
    if (thread.joinable()) thread.join();
  for (Slot& slot : slots_)
    if (slot.data) options_.free(slot.data);
}

void ReplaySource::start_readers() {
  // Called with mutex_ held, once.
  started_ = true;
  slots_.resize(options_.prefetch_events);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].data = static_cast<std::byte*>(options_.allocate(detector_.raw_event_bytes()));
    if (!slots_[i].data)
      throw RuntimeFault("replay: cannot allocate " + std::to_string(slots_.size()) +
                         " read-ahead buffers of " + std::to_string(detector_.raw_event_bytes()) +
                         " bytes");
    free_.push_back(i);
  }
  for (std::size_t i = 0; i < options_.readers; ++i)
    threads_.emplace_back([this] { read_events(); });
}

std::pair<std::size_t, std::uint64_t> ReplaySource::locate(std::uint64_t index) const {
  const auto it = std::upper_bound(first_index_.begin(), first_index_.end(), index);
  const std::size_t file = std::size_t(it - first_index_.begin()) - 1;
  return {file, index - first_index_[file]};
}

void ReplaySource::read_events() {
  std::unique_lock lock(mutex_);
  while (!stopped_) {
    changed_.wait(lock, [this] { return stopped_ || (!at_end_ && !free_.empty()); });
    if (stopped_) break;
    // Take the next event and its place in the hand-out order.
    const std::size_t slot = free_.front();
    free_.pop_front();
    const std::uint64_t index = read_position_;
    Slot& s = slots_[slot];
    s.event = ReplayEvent{};
    s.event.index = index;
    s.ready = false;
    s.stale = false;
    s.wraps = wrapped_;
    wrapped_ = false;
    pending_.push_back(slot);
    if (++read_position_ >= total_) {
      if (options_.loop) {
        read_position_ = 0;
        wrapped_ = true;
      } else {
        at_end_ = true;
      }
    }
    if (reading_++ == 0) busy_since_ = Clock::now();
    lock.unlock();
    // Read without the lock: the other readers, acquire() and seek() go on meanwhile.
    const auto [file, local] = locate(index);
    ReplayEvent event;
    event.index = index;
    try {
      file_readers_[file]->read(local, s.data, event.pulse_id, event.timestamp_ns);
      // Without recorded pulse ids, the place in the whole run (a file's own count restarts).
      if (!infos_[file].has_pulse_ids) event.pulse_id = index;
      event.data = s.data;
      bytes_read_ += detector_.raw_event_bytes();
    } catch (const std::exception& e) {
      // A damaged chunk costs this event only; the engine counts it as dropped.
      event.error = e.what();
    }
    lock.lock();
    if (--reading_ == 0) read_ns_ += since_ns(busy_since_);
    if (s.stale) {  // a seek dropped it while it was being read
      free_.push_back(slot);
    } else {
      s.event = std::move(event);
      s.ready = true;
    }
    changed_.notify_all();
  }
}

bool ReplaySource::acquire(ReplayEvent& event) {
  std::unique_lock lock(mutex_);
  if (!started_) start_readers();
  if (acquired_ != SIZE_MAX) {  // a missing release(): give it back rather than leak the slot
    free_.push_back(acquired_);
    acquired_ = SIZE_MAX;
    changed_.notify_all();
  }
  const auto start = Clock::now();
  changed_.wait(lock, [this] {
    return stopped_ || (!pending_.empty() && slots_[pending_.front()].ready) ||
           (at_end_ && pending_.empty());
  });
  disk_wait_ns_ += since_ns(start);
  if (stopped_ || pending_.empty()) return false;
  acquired_ = pending_.front();
  pending_.pop_front();
  if (slots_[acquired_].wraps) ++loops_;
  event = slots_[acquired_].event;
  return true;
}

void ReplaySource::release() {
  std::lock_guard lock(mutex_);
  if (acquired_ == SIZE_MAX) return;
  free_.push_back(acquired_);
  acquired_ = SIZE_MAX;
  changed_.notify_all();
}

void ReplaySource::set_buffer_allocator(std::function<void*(std::size_t)> allocate,
                                        std::function<void(void*)> free) {
  std::lock_guard lock(mutex_);
  if (started_) throw RuntimeFault("replay: the buffer allocator is set before the first read");
  if (!allocate || !free) throw RuntimeFault("replay: a buffer allocator needs both functions");
  options_.allocate = std::move(allocate);
  options_.free = std::move(free);
}

void* ReplaySource::exchange_acquired_buffer(void* replacement) {
  std::lock_guard lock(mutex_);
  if (acquired_ == SIZE_MAX) throw RuntimeFault("replay: no acquired event to exchange");
  if (!replacement) throw RuntimeFault("replay: exchange with a null buffer");
  std::byte* taken = slots_[acquired_].data;
  slots_[acquired_].data = static_cast<std::byte*>(replacement);
  return taken;
}

void ReplaySource::seek(std::uint64_t index) {
  std::lock_guard lock(mutex_);
  // Read events go back to the free list; those still being read are freed by their reader.
  for (std::size_t slot : pending_) {
    if (slots_[slot].ready)
      free_.push_back(slot);
    else
      slots_[slot].stale = true;
  }
  pending_.clear();
  read_position_ = std::min(index, total_ - 1);
  wrapped_ = false;
  at_end_ = false;
  changed_.notify_all();
}

void ReplaySource::stop() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  changed_.notify_all();
}

double ReplaySource::disk_wait_s() const {
  return double(disk_wait_ns_.load()) * 1e-9;
}
double ReplaySource::read_s() const {
  std::lock_guard lock(mutex_);
  std::int64_t ns = read_ns_.load();
  if (reading_ > 0) ns += since_ns(busy_since_);
  return double(ns) * 1e-9;
}

}  // namespace livedrp::replay
