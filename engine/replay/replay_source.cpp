#include "replay/replay_source.hpp"

#include <algorithm>
#include <chrono>

#include "core/error.hpp"

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

ReplaySource::ReplaySource(ReplayOptions options) : options_(std::move(options)) {
  if (options_.files.empty()) throw InputError("replay: no file given");
  if (options_.dataset.empty()) options_.dataset = kDefaultDataset;
  if (options_.prefetch_events < 1) options_.prefetch_events = 1;
  // The detector comes from the first file (or the request); every file must hold its events.
  const EventFileInfo first = Hdf5EventReader::inspect(options_.files[0], options_.dataset);
  detector_ = detector_for_file(first, options_.detector);
  has_timestamps_ = true;
  for (const auto& path : options_.files) {
    auto reader = std::make_unique<Hdf5EventReader>(path, options_.dataset, detector_);
    const EventFileInfo& info = reader->info();
    if (!info.detector_name.empty() && info.detector_name != detector_.name)
      throw InputError("HDF5 file " + path.string() + ", dataset " + options_.dataset +
                       ": recorded from detector " + info.detector_name + ", but the run is of " +
                       detector_.name + " (from " + options_.files[0].string() + ")");
    has_timestamps_ = has_timestamps_ && info.has_timestamps;
    first_index_.push_back(total_);
    total_ += info.events;
    infos_.push_back(info);
    readers_.push_back(std::move(reader));
  }
  if (total_ == 0)
    throw InputError("replay: the files hold no events (dataset " + options_.dataset + ")");
  slots_.resize(options_.prefetch_events);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].data.resize(detector_.raw_event_bytes());
    free_.push_back(i);
  }
  thread_ = std::thread([this] { prefetch(); });
}

ReplaySource::~ReplaySource() {
  stop();
  if (thread_.joinable()) thread_.join();
}

std::pair<std::size_t, std::uint64_t> ReplaySource::locate(std::uint64_t index) const {
  const auto it = std::upper_bound(first_index_.begin(), first_index_.end(), index);
  const std::size_t file = std::size_t(it - first_index_.begin()) - 1;
  return {file, index - first_index_[file]};
}

void ReplaySource::prefetch() {
  std::unique_lock lock(mutex_);
  bool wrapped = false;
  while (!stopped_) {
    changed_.wait(lock, [this] { return stopped_ || (!at_end_ && !free_.empty()); });
    if (stopped_) break;
    const std::size_t slot = free_.front();
    free_.pop_front();
    const std::uint64_t index = read_position_;
    const std::uint64_t generation = generation_;
    lock.unlock();
    // Read without the lock: acquire() and seek() go on meanwhile.
    Slot& s = slots_[slot];
    s.event = ReplayEvent{};
    s.event.index = index;
    const auto [file, local] = locate(index);
    const auto start = Clock::now();
    try {
      readers_[file]->read(local, s.data.data(), s.event.pulse_id, s.event.timestamp_ns);
      s.event.data = s.data.data();
      bytes_read_ += s.data.size();
    } catch (const std::exception& e) {
      // A damaged chunk costs this event only; the engine counts it as dropped.
      s.event.error = e.what();
    }
    read_ns_ += since_ns(start);
    lock.lock();
    if (generation != generation_) {  // a seek came in: this read is stale
      free_.push_back(slot);
      wrapped = false;
      continue;
    }
    if (wrapped) ++loops_;
    wrapped = false;
    filled_.push_back(slot);
    if (++read_position_ >= total_) {
      if (options_.loop) {
        read_position_ = 0;
        wrapped = true;  // counted when event 0 of the next pass is ready
      } else {
        at_end_ = true;
      }
    }
    changed_.notify_all();
  }
}

bool ReplaySource::acquire(ReplayEvent& event) {
  std::unique_lock lock(mutex_);
  if (acquired_ != SIZE_MAX) {  // a missing release(): give it back rather than leak the slot
    free_.push_back(acquired_);
    acquired_ = SIZE_MAX;
  }
  const auto start = Clock::now();
  changed_.wait(lock, [this] { return stopped_ || !filled_.empty() || at_end_; });
  disk_wait_ns_ += since_ns(start);
  if (stopped_ || filled_.empty()) return false;
  acquired_ = filled_.front();
  filled_.pop_front();
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

void ReplaySource::seek(std::uint64_t index) {
  std::lock_guard lock(mutex_);
  ++generation_;
  for (std::size_t slot : filled_) free_.push_back(slot);
  filled_.clear();
  read_position_ = std::min(index, total_ - 1);
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
  return double(read_ns_.load()) * 1e-9;
}

}  // namespace livedrp::replay
