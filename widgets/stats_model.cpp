#include "widgets/stats_model.hpp"

#include <algorithm>
#include <cmath>
#include <exception>

namespace livedrp::widgets {

void registerProtocolMetaTypes() {
  qRegisterMetaType<protocol::StatsPayload>();
  qRegisterMetaType<protocol::StatusPayload>();
  qRegisterMetaType<MessagePtr>();
  qRegisterMetaType<MessageBatch>();
}

StatsModel::StatsModel(QObject* parent)
    : StatsModel(kDefaultHistorySeconds, kDefaultMaxSamples, parent) {}

StatsModel::StatsModel(double history_s, std::size_t max_samples, QObject* parent)
    : QObject(parent), history_s_(history_s), max_samples_(std::max<std::size_t>(1, max_samples)) {}

bool StatsModel::apply(const protocol::Message& message) {
  const bool changed = applyQuietly(message);
  if (changed) emit updated();
  return changed;
}

bool StatsModel::apply(const MessageBatch& batch) {
  bool changed = false;
  for (const auto& message : batch) {
    if (message) changed = applyQuietly(*message) || changed;
  }
  if (changed) emit updated();
  return changed;
}

bool StatsModel::applyQuietly(const protocol::Message& message) {
  try {
    if (message.topic == protocol::kTopicStats) {
      storeStats(protocol::stats_from_json(message.payload), message.run);
      return true;
    }
    if (message.topic == protocol::kTopicStatus) {
      return storeStatus(protocol::status_from_json(message.payload), message.time_ns);
    }
  } catch (const std::exception& error) {
    ++rejected_;
    last_rejection_ = QStringLiteral("`%1` message of run %2, sequence %3: %4")
                          .arg(QString::fromStdString(message.topic))
                          .arg(message.run)
                          .arg(message.sequence)
                          .arg(QString::fromUtf8(error.what()));
    ++revision_;
    return true;
  }
  return false;
}

void StatsModel::applyStats(const protocol::StatsPayload& stats, std::int64_t run) {
  storeStats(stats, run);
  emit updated();
}

void StatsModel::applyStatus(const protocol::StatusPayload& status, std::int64_t time_ns) {
  if (storeStatus(status, time_ns)) emit updated();
}

void StatsModel::clear() {
  samples_.clear();
  latency_.clear();
  stats_ = {};
  status_ = {};
  has_stats_ = has_status_ = false;
  run_ = 0;
  status_time_ns_ = 0;
  stats_count_ = 0;
  ++revision_;
  emit updated();
}

std::size_t StatsModel::firstSampleAtOrAfter(double time_s) const {
  const auto it = std::lower_bound(
      samples_.begin(), samples_.end(), time_s,
      [](const RateSample& sample, double time) { return sample.time_s < time; });
  return static_cast<std::size_t>(it - samples_.begin());
}

std::size_t StatsModel::firstLatencySampleAtOrAfter(double time_s) const {
  const auto it = std::lower_bound(
      latency_.begin(), latency_.end(), time_s,
      [](const LatencySample& sample, double time) { return sample.time_s < time; });
  return static_cast<std::size_t>(it - latency_.begin());
}

void StatsModel::storeStats(const protocol::StatsPayload& stats, std::int64_t run) {
  const bool new_run = has_stats_ && (run != run_ || (!samples_.empty() &&
                                                      stats.elapsed_s < samples_.back().time_s));
  if (new_run) {
    samples_.clear();
    latency_.clear();
  }
  // A repeat of the last interval (a late joiner is re-sent the last stats) updates the counters
  // but adds no point.
  if (samples_.empty() || stats.elapsed_s > samples_.back().time_s) {
    samples_.push_back({stats.elapsed_s, stats.event_rate_hz, stats.input_gbps});
  }
  const double oldest_kept = samples_.back().time_s - history_s_;
  while (samples_.size() > max_samples_ || samples_.front().time_s < oldest_kept) {
    samples_.pop_front();
  }
  if (std::isfinite(stats.latency_p50_us) && std::isfinite(stats.latency_p99_us) &&
      (latency_.empty() || stats.elapsed_s > latency_.back().time_s)) {
    latency_.push_back({stats.elapsed_s, stats.latency_p50_us, stats.latency_p99_us,
                        std::isfinite(stats.latency_max_us) ? stats.latency_max_us
                                                            : stats.latency_p99_us});
  }
  while (!latency_.empty() &&
         (latency_.size() > max_samples_ || latency_.front().time_s < oldest_kept)) {
    latency_.pop_front();
  }
  stats_ = stats;
  run_ = run;
  has_stats_ = true;
  ++stats_count_;
  ++revision_;
}

bool StatsModel::storeStatus(const protocol::StatusPayload& status, std::int64_t time_ns) {
  if (has_status_ && time_ns != 0 && time_ns < status_time_ns_) return false;  // stale
  status_ = status;
  if (time_ns != 0) status_time_ns_ = time_ns;
  has_status_ = true;
  ++revision_;
  return true;
}

}  // namespace livedrp::widgets
