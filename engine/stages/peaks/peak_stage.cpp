#include "stages/peaks/peak_stage.hpp"

#include <algorithm>
#include <chrono>

#include "core/error.hpp"
#include "protocol/peaks_topic.hpp"

namespace livedrp::stages {

std::uint64_t PeakParamHistory::version() const {
  std::lock_guard lock(mutex_);
  return history_.size();
}

peaks::PeakFinderParams PeakParamHistory::current() const {
  std::lock_guard lock(mutex_);
  return history_.back();
}

std::pair<std::uint64_t, peaks::PeakFinderParams> PeakParamHistory::in_force() const {
  std::lock_guard lock(mutex_);
  return {history_.size(), history_.back()};
}

peaks::PeakFinderParams PeakParamHistory::of(std::uint64_t version) const {
  std::lock_guard lock(mutex_);
  return history_.at(version >= 1 && version <= history_.size() ? std::size_t(version - 1) : 0);
}

std::uint64_t PeakParamHistory::add(const peaks::PeakFinderParams& params) {
  std::lock_guard lock(mutex_);
  history_.push_back(params);
  return history_.size();
}

namespace {

// The engine-side part: counts every searched event and offers each hit's message to the rate
// limit of the `peaks` topic; the book itself (LivePeakBook) is shared with the stage, which
// counts re-runs' messages in it.
class PeakBookAdapter final : public StageBook {
 public:
  PeakBookAdapter(const PeakStage& stage, std::shared_ptr<LivePeakBook> book)
      : stage_(stage), book_(std::move(book)) {}

  void add(const EventHeader& header, const std::any& result) override {
    add_timed(header, result, 0);
  }
  void add_timed(const EventHeader& header, const std::any& result, double us) override {
    (void)us;  // the stage times its own search (PeakResult::search_us)
    const auto& peaks = std::any_cast<const PeakResult&>(result);
    book_->add(std::uint64_t(std::max(0, peaks.peaks.found)), peaks.peaks.hit, peaks.search_us);
    if (peaks.peaks.hit)
      book_->offer_hit(stage_.message(header, peaks.peaks, peaks.params_version, false));
  }
  std::vector<protocol::Message> publish(bool last) override {
    std::vector<protocol::Message> out;
    if (auto due = book_->take_due(LivePeakBook::Clock::now(), last))
      out.push_back(protocol::make_peaks_message(*due));
    return out;
  }
  nlohmann::json stats_block(bool) override { return nullptr; }
  // The hit's turn comes at the topic's own rate limit (LivePeakBook), so ask often: a hit waits
  // for its turn, not for the next report tick.
  double publish_hz() const override { return 200; }
  void fill_stats(protocol::StatsPayload& stats, bool whole_run) override {
    double mean_us = 0, max_us = 0;
    stats.peak_finding = whole_run ? book_->totals(mean_us) : book_->take_interval(mean_us, max_us);
  }

 private:
  const PeakStage& stage_;
  std::shared_ptr<LivePeakBook> book_;
};

}  // namespace

PeakStage::PeakStage(const LivePeakFindingConfig& config, const DetectorDescription& detector,
                     const CalibrationConstants& constants,
                     std::shared_ptr<const ImageAssembly> assembly)
    : geometry_(config, detector, constants),
      assembly_(std::move(assembly)),
      history_(std::make_shared<PeakParamHistory>(config.params)),
      book_(std::make_shared<LivePeakBook>(config.peaks_hz)),
      input_bytes_(detector.pixels() * sizeof(float)),
      recent_frames_(std::size_t(std::max(0, config.recent_frames))) {
  if (const std::string problem = peaks::validate(config.params); !problem.empty())
    throw InputError("peak_finding.params: " + problem);
  finder_.emplace(geometry_.finder(config.params));
}

PeakStage::~PeakStage() = default;

std::shared_ptr<PeakStage> make_peak_stage(const LivePeakFindingConfig& config,
                                           const DetectorDescription& detector,
                                           const CalibrationConstants& constants,
                                           std::shared_ptr<const ImageAssembly> assembly) {
  if (!config.enabled) return nullptr;
  // The parameters before the files: the cheaper mistake is named first.
  if (const std::string problem = peaks::validate(config.params); !problem.empty())
    throw InputError("peak_finding.params: " + problem);
  return std::make_shared<PeakStage>(config, detector, constants, std::move(assembly));
}

std::any PeakStage::run_cpu(const CpuEvent& event) {
  const auto start = std::chrono::steady_clock::now();
  PeakResult result;
  result.peaks = finder_->find(event.calibrated.data(), event.pool);
  result.params_version = finder_version_;
  result.search_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  keep_frame(event.header, event.calibrated);
  pool_ = event.pool;
  return result;
}

void PeakStage::keep_frame(const EventHeader& header, std::span<const float> calibrated) {
  if (recent_frames_ == 0) return;
  if (kept_.size() < recent_frames_) {
    kept_.emplace_back(header, std::vector<float>(calibrated.begin(), calibrated.end()));
    return;
  }
  // The oldest frame's memory is reused for the newest.
  auto oldest = std::move(kept_.front());
  kept_.pop_front();
  oldest.first = header;
  std::copy(calibrated.begin(), calibrated.end(), oldest.second.begin());
  kept_.push_back(std::move(oldest));
}

std::unique_ptr<StageBook> PeakStage::make_book() const {
  return std::make_unique<PeakBookAdapter>(*this, book_);
}

protocol::EventPeaks PeakStage::message(const EventHeader& header, const peaks::PeakList& list,
                                        std::uint64_t version, bool rerun) const {
  return event_peaks(header, list, history_->of(version), version, rerun, assembly_.get());
}

std::shared_ptr<PeakStage::Prepared> PeakStage::prepare_change(
    const peaks::PeakFinderParams& params, bool on_device) const {
  if (const std::string problem = peaks::validate(params); !problem.empty())
    throw InputError(problem);
  auto prepared = std::make_shared<Prepared>();
  prepared->version = history_->version() + 1;
  prepared->params = params;
  prepared->finder.emplace(geometry_.finder(params));
  if (on_device) prepare_device(*prepared);
  return prepared;
}

#ifndef LIVEDRP_HAVE_CUDA
// Without CUDA there is no CUDA part, so nothing runs on a device.
void PeakStage::prepare_device(Prepared&) const {
  throw RuntimeFault("peak stage: built without CUDA, there are no device finders");
}
void PeakStage::apply_device_change(const Prepared&) {}
std::vector<PeakRerunFrame> PeakStage::rerun_on_device(std::size_t) {
  throw RuntimeFault("peak stage: built without CUDA, there are no device frames");
}
#endif

void PeakStage::apply_change(const std::shared_ptr<Prepared>& prepared) {
  if (prepared->version != history_->version() + 1)
    throw RuntimeFault("peak stage: parameters prepared as version " +
                       std::to_string(prepared->version) + " while version " +
                       std::to_string(history_->version()) + " is in force");
  apply_device_change(*prepared);
  finder_.emplace(*prepared->finder);
  finder_version_ = prepared->version;
  history_->add(prepared->params);
  book_->set_params_version(prepared->version);
}

std::vector<PeakRerunFrame> PeakStage::rerun(std::size_t frames, bool on_device) {
  if (on_device) return rerun_on_device(frames);
  const std::size_t n = std::min(frames, kept_.size());
  std::vector<PeakRerunFrame> out;
  for (std::size_t k = kept_.size() - n; k < kept_.size(); ++k)
    out.push_back({kept_[k].first, finder_->find(kept_[k].second.data(), pool_)});
  return out;
}

}  // namespace livedrp::stages
