#include "exec/live_writers.hpp"

#include <cmath>
#include <filesystem>
#include <limits>
#include <mutex>
#include <system_error>

#include "core/error.hpp"
#include "core/raw_encoding.hpp"
#include "io/segment_names.hpp"
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

// The writers' needs that are checked before any file is created (LiveWriters::check and open).
void require_hit_stage(bool peak_finding) {
  if (!peak_finding)
    throw InputError(
        "--write-hits (write.hits_directory) needs live peak finding: its hits are "
        "peakfinder8's; set peak_finding.enabled in the configuration");
}

void require_profile_stage(bool integration) {
  if (!integration)
    throw InputError(
        "--write-profiles (write.profiles) needs live integration: set integration.enabled "
        "and integration.poni in the configuration");
}

// Image pixel (row, column) must be the assembled [row, row + 1) x [column, column + 1), the
// frame a PONI for livedrp places: an assembly that starts elsewhere is not written yet.
std::unique_ptr<ImageAssembly> average_assembly(const DetectorDescription& detector) {
  std::unique_ptr<ImageAssembly> assembly;
  try {
    assembly = std::make_unique<ImageAssembly>(detector);
  } catch (const InputError& e) {
    throw InputError(std::string("--write-average: detector ") + detector.name +
                     " cannot be assembled: " + e.what());
  }
  const AssembledBounds bounds = assembled_bounds(detector);
  if (std::floor(bounds.min_x) != 0.0 || std::floor(bounds.min_y) != 0.0)
    throw InputError("--write-average: detector " + detector.name + "'s placement starts at (" +
                     std::to_string(bounds.min_x) + ", " + std::to_string(bounds.min_y) +
                     "), not in pixel (0, 0): its image would not be in a PONI's frame; not "
                     "written yet");
  return assembly;
}

}  // namespace

void LiveWriters::check(const EngineConfig& config, const DetectorDescription& detector,
                        const stages::StageList& stages) {
  const WriteConfig& w = config.write;
  bool peak = false, integrate = false;
  for (const auto& stage : stages) {
    peak = peak || std::dynamic_pointer_cast<stages::PeakStage>(stage) != nullptr;
    integrate = integrate || std::dynamic_pointer_cast<stages::IntegrateStage>(stage) != nullptr;
  }
  if (!w.hits_directory.empty()) require_hit_stage(peak);
  if (!w.profiles.empty()) require_profile_stage(integrate);
  if (!w.average.empty()) average_assembly(detector);
}

bool LiveWriters::waits_when_full(const WriteConfig& write, bool streaming, bool replaying,
                                  double rate_hz, const std::string& replay_pace) {
  if (write.when_full != "auto") return write.when_full == "wait";
  const bool paced = rate_hz > 0 && (!replaying || replay_pace == "rate");
  return !streaming && !paced;
}

LiveWriters::LiveWriters(const EngineConfig& config, const DetectorDescription& detector,
                         const stages::StageList& stages, bool wait_when_full)
    : pixels_(detector.pixels()) {
  try {
    open(config, detector, stages, wait_when_full);
  } catch (...) {
    remove_created_files();
    throw;
  }
}

void LiveWriters::remove_created_files() {
  std::vector<std::string> created;
  averages_.reset();
  profiles_.reset();
  hits_.reset();
  {
    std::lock_guard hdf5(replay::hdf5_mutex());
    if (hit_files_)
      for (const auto& path : hit_files_->files()) created.push_back(path.string());
    if (profile_file_) created.push_back(profile_file_->path());
    if (average_file_) created.push_back(average_file_->path());
    hit_files_.reset();
    profile_file_.reset();
    average_file_.reset();
  }
  for (const std::string& path : created) {
    std::error_code ignored;  // what the caller reports is why the run was refused
    std::filesystem::remove(path, ignored);
  }
  closed_ = true;
}

void LiveWriters::open(const EngineConfig& config, const DetectorDescription& detector,
                       const stages::StageList& stages, bool wait_when_full) {
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
    require_hit_stage(peak != nullptr);
    io::CxiHitOptions options;
    options.directory = w.hits_directory;
    options.run = config.run;
    options.segment = w.segment;
    options.rank = config.mpi.rank;
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
    require_profile_stage(integrate != nullptr);
    io::ProfileSeriesOptions options;
    options.path = io::writer_file_path(w.profiles, config.mpi.rank, w.segment);
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
  if (!w.average.empty()) {
    assembly_ = average_assembly(detector);
    io::AverageImageOptions options;
    options.path = io::writer_file_path(w.average, config.mpi.rank, w.segment);
    options.unit = image_unit(detector);
    options.pipeline_config_json = config_json;
    {
      std::lock_guard hdf5(replay::hdf5_mutex());
      average_file_ = std::make_unique<io::AverageImageWriter>(options);
    }
    average_.sum.assign(pixels_, 0.0);
    average_.count.assign(pixels_, 0);
    averages_ = std::make_unique<io::WriterQueue<ImageItem>>(
        queue, wait_when_full, [this](ImageItem& item) {
          AverageSums& a = average_;
          for (std::size_t p = 0; p < item.image.size(); ++p)
            if (std::isfinite(item.image[p])) {
              a.sum[p] += double(item.image[p]);
              ++a.count[p];
            }
          if (a.events == 0) a.first_pulse_id = item.header.pulse_id;
          a.last_pulse_id = item.header.pulse_id;
          ++a.events;
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
  if (!is_hit(done) && !averages_) return;
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
  std::optional<std::vector<float>> kept;
  if (auto it = held_.find(done.admission); it != held_.end()) {
    kept = std::move(it->second);
    held_.erase(it);
  }
  if (is_hit(done)) add_hit(done, readable, read, kept);
  if (averages_) add_to_average(done, readable, read, kept);
  if (kept) spare_.push_back(std::move(*kept));
  if (profiles_) add_profile(done);
}

bool LiveWriters::fill_image(const CompletedEvent& done, bool readable, const ReadImage& read,
                             const std::optional<std::vector<float>>& kept,
                             std::vector<float>& image) {
  if (kept) {
    image.assign(kept->begin(), kept->end());
    return true;
  }
  if (!readable) return false;
  image.resize(pixels_);
  read(done, image.data());
  return true;
}

void LiveWriters::add_hit(const CompletedEvent& done, bool readable, const ReadImage& read,
                          const std::optional<std::vector<float>>& kept) {
  HitItem* item = hits_->acquire();
  if (!item) return;
  item->header = done.header;
  item->peaks =
      std::any_cast<const stages::PeakResult&>(done.stage_outputs[*peak_index_].result).peaks.peaks;
  // Neither kept nor readable: a path that retires events without keep_held. Counted as dropped.
  if (fill_image(done, readable, read, kept, item->image))
    hits_->commit(item);
  else
    hits_->abandon(item);
}

void LiveWriters::add_to_average(const CompletedEvent& done, bool readable, const ReadImage& read,
                                 const std::optional<std::vector<float>>& kept) {
  ImageItem* item = averages_->acquire();
  if (!item) return;
  item->header = done.header;
  if (fill_image(done, readable, read, kept, item->image))
    averages_->commit(item);
  else
    averages_->abandon(item);
}

void LiveWriters::write_average() {
  const AverageSums& a = average_;
  std::vector<float> mean(pixels_);
  for (std::size_t p = 0; p < pixels_; ++p)
    mean[p] = a.count[p] > 0 ? float(a.sum[p] / double(a.count[p]))
                             : std::numeric_limits<float>::quiet_NaN();
  std::vector<float> image(assembly_->height() * assembly_->width());
  assembly_->assemble(mean.data(), image.data());
  std::lock_guard hdf5(replay::hdf5_mutex());
  average_file_->write(image, assembly_->height(), assembly_->width(), a.events, a.first_pulse_id,
                       a.last_pulse_id);
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
  if (closed_) return;
  closed_ = true;
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
  if (averages_) {
    try {
      averages_->close();
      write_average();
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
  if (averages_) {
    WriterStatus& s = status.average;
    s.active = true;
    s.written = averages_->written();
    s.dropped = averages_->dropped();
    s.failed = averages_->failed();
    s.error = averages_->error();
    if (s.error.empty()) s.error = close_error_;
    s.files.push_back(average_file_->path());
  }
  return status;
}

}  // namespace livedrp
