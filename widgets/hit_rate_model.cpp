#include "widgets/hit_rate_model.hpp"

#include <algorithm>
#include <cmath>
#include <exception>

namespace livedrp::widgets {

HitRateModel::HitRateModel(QObject* parent) : QObject(parent) {}

bool HitRateModel::applyQuietly(const protocol::Message& message) {
  if (message.topic != protocol::kTopicStats) return false;
  try {
    store(protocol::stats_from_json(message.payload), message.run);
  } catch (const std::exception& error) {
    ++rejected_;  // the StatsModel reports it too; here it only adds no sample
    last_rejection_ = QString::fromUtf8(error.what());
    return false;
  }
  return true;
}

bool HitRateModel::apply(const protocol::Message& message) {
  const bool changed = applyQuietly(message);
  if (changed) emit updated();
  return changed;
}

bool HitRateModel::apply(const MessageBatch& batch) {
  bool changed = false;
  for (const MessagePtr& message : batch)
    if (message) changed = applyQuietly(*message) || changed;
  if (changed) emit updated();
  return changed;
}

void HitRateModel::applyStats(const protocol::StatsPayload& stats, std::int64_t run) {
  store(stats, run);
  emit updated();
}

void HitRateModel::store(const protocol::StatsPayload& stats, std::int64_t run) {
  if (has_stats_ && (run != run_ || stats.elapsed_s < latest_time_s_)) samples_.clear();
  has_stats_ = true;
  run_ = run;
  latest_time_s_ = stats.elapsed_s;
  latest_ = stats.peak_finding;
  ++revision_;
  if (!latest_ || latest_->interval_events == 0 || !std::isfinite(latest_->interval_hit_rate))
    return;
  samples_.push_back({stats.elapsed_s, 100.0 * latest_->interval_hit_rate,
                      double(latest_->interval_peaks) / double(latest_->interval_events)});
  while (samples_.size() > kMaxSamples ||
         (!samples_.empty() && samples_.front().time_s < stats.elapsed_s - kHistorySeconds))
    samples_.pop_front();
}

void HitRateModel::clear() {
  samples_.clear();
  latest_.reset();
  has_stats_ = false;
  run_ = 0;
  latest_time_s_ = 0;
  ++revision_;
  emit updated();
}

std::size_t HitRateModel::firstSampleAtOrAfter(double time_s) const {
  const auto it =
      std::lower_bound(samples_.begin(), samples_.end(), time_s,
                       [](const HitRateSample& sample, double t) { return sample.time_s < t; });
  return std::size_t(it - samples_.begin());
}

}  // namespace livedrp::widgets
