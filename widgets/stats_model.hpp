#pragma once
// The data model behind the rate chart, the counters and the status bar: the latest `stats` and
// `status` payloads and a bounded time series of event rate and input throughput. It paints nothing;
// views read it when it signals and coalesce their own repaints.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include <QObject>
#include <QString>

#include "protocol/message.hpp"
#include "protocol/topics.hpp"
#include "widgets/protocol_metatypes.hpp"

namespace livedrp::widgets {

struct RateSample {
  double time_s = 0;         // run time: StatsPayload::elapsed_s
  double event_rate_hz = 0;  // StatsPayload::event_rate_hz
  double input_gbps = 0;     // StatsPayload::input_gbps
};

// Doorbell-to-result latency of one stats interval. Intervals without a latency (no event left the
// reorder stage: NaN in the payload) add no sample, so the series holds finite values only.
struct LatencySample {
  double time_s = 0;   // run time: StatsPayload::elapsed_s
  double p50_us = 0;   // StatsPayload::latency_p50_us
  double p99_us = 0;   // StatsPayload::latency_p99_us
  double max_us = 0;   // StatsPayload::latency_max_us
};

class StatsModel : public QObject {
  Q_OBJECT

 public:
  // Ten minutes of history: what an operator scrolls back to after a hiccup. The chart shows the
  // last minute of it.
  static constexpr double kDefaultHistorySeconds = 600;
  // Hard bound whatever the publisher does: ten minutes of stats at 100 Hz (the engine sends 4 Hz).
  static constexpr std::size_t kDefaultMaxSamples = 60'000;

  explicit StatsModel(QObject* parent = nullptr);
  StatsModel(double history_s, std::size_t max_samples, QObject* parent = nullptr);

  // Takes a decoded message: `stats` and `status` update the model, other topics are ignored.
  // A payload that does not decode is rejected and counted (rejectedCount, lastRejection).
  // Emits updated() once if anything changed; returns whether it did.
  bool apply(const protocol::Message& message);
  // Several messages, one updated() signal.
  bool apply(const MessageBatch& batch);

  // Typed entry points (used by apply and by hosts that make payloads themselves).
  // A stats payload whose run differs, or whose elapsed time went backwards, starts a new series.
  void applyStats(const protocol::StatsPayload& stats, std::int64_t run = 0);
  // `time_ns` orders status reports that come from different places (the wire and the embedded
  // engine's host): a report older than the one shown is stale and ignored. 0 = always newest.
  void applyStatus(const protocol::StatusPayload& status, std::int64_t time_ns = 0);
  void clear();

  // Time series, oldest first.
  std::size_t sampleCount() const { return samples_.size(); }
  const RateSample& sample(std::size_t index) const { return samples_[index]; }
  // Index of the first sample with time_s >= time (sampleCount() when none).
  std::size_t firstSampleAtOrAfter(double time_s) const;
  // Latency series (same history bound as the rate series), oldest first.
  std::size_t latencySampleCount() const { return latency_.size(); }
  const LatencySample& latencySample(std::size_t index) const { return latency_[index]; }
  std::size_t firstLatencySampleAtOrAfter(double time_s) const;
  // The execution lanes of the latest stats (empty before the first, or from an older engine).
  const std::vector<protocol::StreamStats>& latestStreams() const { return stats_.streams; }
  double historySeconds() const { return history_s_; }
  std::size_t maxSamples() const { return max_samples_; }

  bool hasStats() const { return has_stats_; }
  const protocol::StatsPayload& latestStats() const { return stats_; }
  std::int64_t run() const { return run_; }
  std::uint64_t statsCount() const { return stats_count_; }  // stats payloads taken so far
  bool hasStatus() const { return has_status_; }
  const protocol::StatusPayload& latestStatus() const { return status_; }

  // Grows by one with every change; views compare it to skip work when nothing changed.
  std::uint64_t revision() const { return revision_; }
  std::uint64_t rejectedCount() const { return rejected_; }
  QString lastRejection() const { return last_rejection_; }

 signals:
  void updated();

 private:
  bool applyQuietly(const protocol::Message& message);
  void storeStats(const protocol::StatsPayload& stats, std::int64_t run);
  bool storeStatus(const protocol::StatusPayload& status, std::int64_t time_ns);

  double history_s_;
  std::size_t max_samples_;
  std::deque<RateSample> samples_;
  std::deque<LatencySample> latency_;
  protocol::StatsPayload stats_;
  protocol::StatusPayload status_;
  bool has_stats_ = false;
  bool has_status_ = false;
  std::int64_t run_ = 0;
  std::int64_t status_time_ns_ = 0;
  std::uint64_t stats_count_ = 0;
  std::uint64_t revision_ = 0;
  std::uint64_t rejected_ = 0;
  QString last_rejection_;
};

}  // namespace livedrp::widgets
