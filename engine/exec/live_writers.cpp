#include "exec/live_writers.hpp"

#include <mutex>

#include "core/error.hpp"
#include "core/raw_encoding.hpp"
#include "peaks/peakfinder8.hpp"
#include "replay/hdf5_lock.hpp"
#include "stages/integrate/integrate_stage.hpp"
#include "stages/peaks/peak_stage.hpp"

namespace livedrp {
namespace {

// Guards the hit writer's file list, which its thread grows while status() reads it.
std::mutex& files_mutex() {
  static std::mutex mutex;
  return mutex;
}

// The calibrated image's unit as the `image` topic names it (exec/live_image.cpp): keV for
// detectors calibrated here, counts for integer images, none for float32 data calibrated upstream.
std::string image_unit(const DetectorDescription& detector) {
  if (detector.encoding == RawEncoding::Float32) return "";
  return is_integer_image(detector.encoding) ? "counts" : "keV";
}

}  // namespace

LiveWriters::LiveWriters(const EngineConfig& config, const DetectorDescription& detector,
                         const stages::StageList& stages, bool wait_when_full)
    : pixels_(detector.pixels()) {
  const WriteConfig& w = config.write;
  std::shared_ptr<stages::PeakStage> peak;
  std::shared_ptr<stages::IntegrateStage> integrate;
  for (std::size_t k = 0; k < stages.size(); ++k) {
    if (auto p = std::dynamic_pointer_cast<stages::PeakStage>(stages[k])) {
      peak = p;
      peak_index_ = k;
    }
    if (auto i = std::dynamic_pointer_cast<stages::IntegrateStage>(stages[k])) {
      integrate = i;
      integrate_index_ = k;
    }
  }
  const std::size_t queue = std::size_t(w.queue_events);
  const std::string config_json = config.to_json().dump();
  if (!w.hits_directory.empty()) {
    if (!peak)
      throw InputError(
          "--write-hits (write.hits_directory) needs live peak finding: its hits are "
          "peakfinder8's; set peak_finding.enabled in the configuration");
    io::CxiHitOptions options;
    options.directory = w.hits_directory;
    options.run = config.run;
    options.hits_per_file = w.hits_per_file;
    const peaks::SlabLayout slab = peaks::slab_layout(detector);
    options.slab_height = slab.height;
    options.slab_width = slab.width;
    options.max_peaks = peak->params().first().max_num_peaks;
    options.image_unit = image_unit(detector);
    options.detector_name = detector.name;
    options.pipeline_config_json = config_json;
    {
      std::lock_guard hdf5(replay::hdf5_mutex());
      hit_files_ = std::make_unique<io::CxiHitWriter>(options);
    }
    hits_ =
        std::make_unique<io::WriterQueue<HitItem>>(queue, wait_when_full, [this](HitItem& item) {
          std::scoped_lock lock(replay::hdf5_mutex(), files_mutex());
          peaks_left_out_ += hit_files_->append({item.header, item.image.data(), &item.peaks});
        });
  }
  if (!w.profiles.empty()) {
    if (!integrate)
      throw InputError(
          "--write-profiles (write.profiles) needs live integration: set integration.enabled "
          "and integration.poni in the configuration");
    io::ProfileSeriesOptions options;
    options.path = w.profiles;
    options.radial = integrate->book_settings().centres;
    options.unit = integrate->integrator().config().unit;
    options.pipeline_config_json = config_json;
    {
      std::lock_guard hdf5(replay::hdf5_mutex());
      profile_file_ = std::make_unique<io::ProfileSeriesWriter>(options);
    }
    profiles_ = std::make_unique<io::WriterQueue<ProfileItem>>(
        queue, wait_when_full, [this](ProfileItem& item) {
          std::lock_guard hdf5(replay::hdf5_mutex());
          profile_file_->append(item.header, item.intensity);
        });
  }
}

LiveWriters::~LiveWriters() {
  try {
    close();
  } catch (...) {
    // close() explicitly to see the error
  }
}

bool LiveWriters::is_hit(const CompletedEvent& done) const {
  if (!hits_ || !peak_index_ || *peak_index_ >= done.stage_outputs.size()) return false;
  return std::any_cast<const stages::PeakResult&>(done.stage_outputs[*peak_index_].result)
      .peaks.hit;
}

void LiveWriters::keep_held(const CompletedEvent& done, const ReadImage& read) {
  if (!is_hit(done)) return;
  std::vector<float> image;
  if (!spare_.empty()) {
    image = std::move(spare_.back());
    spare_.pop_back();
  }
  image.resize(pixels_);
  read(done, image.data());
  held_[done.admission] = std::move(image);
}

void LiveWriters::add(const CompletedEvent& done, bool readable, const ReadImage& read) {
  if (is_hit(done)) add_hit(done, readable, read);
  if (profiles_) add_profile(done);
}

void LiveWriters::add_hit(const CompletedEvent& done, bool readable, const ReadImage& read) {
  std::optional<std::vector<float>> kept;
  if (auto it = held_.find(done.admission); it != held_.end()) {
    kept = std::move(it->second);
    held_.erase(it);
  }
  HitItem* item = hits_->acquire();
  if (item) {
    item->header = done.header;
    item->peaks = std::any_cast<const stages::PeakResult&>(done.stage_outputs[*peak_index_].result)
                      .peaks.peaks;
    if (kept) {
      std::swap(item->image, *kept);
    } else if (readable) {
      item->image.resize(pixels_);
      read(done, item->image.data());
    } else {
      // Neither kept nor readable: a path that retires events without keep_held. Counted as
      // dropped.
      hits_->abandon(item);
      item = nullptr;
    }
    if (item) hits_->commit(item);
  }
  if (kept) spare_.push_back(std::move(*kept));
}

void LiveWriters::add_profile(const CompletedEvent& done) {
  if (!integrate_index_ || *integrate_index_ >= done.stage_outputs.size()) return;
  ProfileItem* item = profiles_->acquire();
  if (!item) return;
  item->header = done.header;
  item->intensity =
      std::any_cast<const stages::ProfileResult&>(done.stage_outputs[*integrate_index_].result);
  profiles_->commit(item);
}

void LiveWriters::close() {
  std::string failure;
  auto note = [&failure](const std::exception& e) {
    if (failure.empty()) failure = e.what();
  };
  if (hits_) {
    try {
      hits_->close();
    } catch (const std::exception& e) {
      note(e);
    }
    try {
      std::scoped_lock lock(replay::hdf5_mutex(), files_mutex());
      hit_files_->close();
    } catch (const std::exception& e) {
      note(e);
    }
  }
  if (profiles_) {
    try {
      profiles_->close();
    } catch (const std::exception& e) {
      note(e);
    }
    try {
      std::lock_guard hdf5(replay::hdf5_mutex());
      profile_file_->close();
    } catch (const std::exception& e) {
      note(e);
    }
  }
  if (!failure.empty()) {
    {
      std::lock_guard lock(files_mutex());
      close_error_ = failure;
    }
    throw RuntimeFault(failure);
  }
}

WriteStatus LiveWriters::status() const {
  WriteStatus status;
  std::lock_guard lock(files_mutex());
  if (hits_) {
    WriterStatus& s = status.hits;
    s.active = true;
    s.written = hits_->written();
    // An image that could no longer be read counts as dropped (abandon counts it there too).
    s.dropped = hits_->dropped();
    s.failed = hits_->failed();
    s.error = hits_->error();
    s.peaks_left_out = peaks_left_out_;
    if (s.error.empty()) s.error = close_error_;
    for (const auto& path : hit_files_->files()) s.files.push_back(path.string());
  }
  if (profiles_) {
    WriterStatus& s = status.profiles;
    s.active = true;
    s.written = profiles_->written();
    s.dropped = profiles_->dropped();
    s.failed = profiles_->failed();
    s.error = profiles_->error();
    if (s.error.empty()) s.error = close_error_;
    s.files.push_back(profile_file_->path());
  }
  return status;
}

}  // namespace livedrp
