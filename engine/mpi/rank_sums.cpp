#include "mpi/rank_sums.hpp"

#include <cmath>

#include "stages/integrate/integrate_stage.hpp"
#include "stages/peaks/peak_stage.hpp"
#include "stages/stage.hpp"

namespace livedrp::mpi {

EventObserver RankSums::observer() {
  return
      [this](const EventHeader& header,
             const std::vector<std::shared_ptr<stages::Stage>>& stage_list,
             const std::vector<stages::StageOutput>& outputs) { add(header, stage_list, outputs); };
}

void RankSums::add_profile(const std::vector<double>& profile, double sign, std::int64_t step) {
  ProfileSums& p = *profile_;
  for (std::size_t b = 0; b < p.sum.size(); ++b)
    if (std::isfinite(profile[b])) {
      p.sum[b] += sign * profile[b];
      p.finite[b] = std::uint64_t(std::int64_t(p.finite[b]) + step);
    }
}

void RankSums::add(const EventHeader& header,
                   const std::vector<std::shared_ptr<stages::Stage>>& stage_list,
                   const std::vector<stages::StageOutput>& outputs) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < stage_list.size() && i < outputs.size(); ++i) {
    const stages::Stage* stage = stage_list[i].get();
    if (const auto* integrate = dynamic_cast<const stages::IntegrateStage*>(stage)) {
      const auto& profile = std::any_cast<const stages::ProfileResult&>(outputs[i].result);
      const stages::IntegrationBookSettings& settings = integrate->book_settings();
      if (!profile_) {
        profile_.emplace();
        profile_->unit = settings.unit;
        profile_->centres = settings.centres;
        profile_->window = settings.average_events;
        profile_->sum.assign(settings.centres.size(), 0.0);
        profile_->finite.assign(settings.centres.size(), 0);
      }
      // The book (IntegrationBook) refuses a profile of other bins before this runs.
      window_.push_back(profile);
      add_profile(window_.back(), 1.0, 1);
      if (window_.size() > profile_->window) {
        add_profile(window_.front(), -1.0, -1);
        window_.pop_front();
      }
      // Summed again from the window each time it has turned over, as the book does, so that
      // subtracting cannot build rounding up over a long run.
      if (++added_since_resum_ >= profile_->window) {
        profile_->sum.assign(profile_->sum.size(), 0.0);
        profile_->finite.assign(profile_->finite.size(), 0);
        for (const auto& p : window_) add_profile(p, 1.0, 1);
        added_since_resum_ = 0;
      }
      profile_->events = window_.size();
      profile_->latest = profile;
      profile_->latest_sequence = header.sequence;
      profile_->latest_pulse_id = header.pulse_id;
    } else if (const auto* peak = dynamic_cast<const stages::PeakStage*>(stage)) {
      const auto& result = std::any_cast<const stages::PeakResult&>(outputs[i].result);
      if (!result.peaks.hit) continue;
      // Events come in admission order, so the last hit is the newest.
      hit_ = Hit{header, result.peaks, result.params_version,
                 std::static_pointer_cast<const stages::PeakStage>(stage_list[i])};
    }
  }
}

std::optional<ProfileSums> RankSums::profile() const {
  std::lock_guard lock(mutex_);
  return profile_;
}

std::optional<protocol::EventPeaks> RankSums::newest_hit() const {
  std::optional<Hit> hit;
  {
    std::lock_guard lock(mutex_);
    hit = hit_;
  }
  if (!hit) return std::nullopt;
  return hit->stage->message(hit->header, hit->list, hit->version, false);
}

}  // namespace livedrp::mpi
