#pragma once
// The hit rate over time, from the `stats` messages' `peak_finding` block: per stats interval the
// hit rate (% of the events searched that were hits) and the peaks found per event searched.
// Intervals in which no event was searched (the hit rate is null) add no sample. It paints
// nothing; the chart reads its samples in place.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include <QObject>
#include <QString>

#include "protocol/message.hpp"
#include "protocol/topics.hpp"
#include "widgets/protocol_metatypes.hpp"

namespace livedrp::widgets {

struct HitRateSample {
  double time_s = 0;           // run time (StatsPayload::elapsed_s)
  double hit_rate_pct = 0;     // 100 * interval_hit_rate
  double peaks_per_event = 0;  // interval_peaks / interval_events
};

class HitRateModel : public QObject {
  Q_OBJECT

 public:
  // As the rate chart's model: ten minutes of history, hard-bounded whatever the publisher does.
  static constexpr double kHistorySeconds = 600;
  static constexpr std::size_t kMaxSamples = 60'000;

  explicit HitRateModel(QObject* parent = nullptr);

  // `stats` messages are read; other topics ignored. Emits updated() once per call that changed
  // anything.
  bool apply(const protocol::Message& message);
  bool apply(const MessageBatch& batch);
  // A payload of another run, or whose time went backwards, starts a new series.
  void applyStats(const protocol::StatsPayload& stats, std::int64_t run = 0);
  void clear();

  std::size_t sampleCount() const { return samples_.size(); }
  const HitRateSample& sample(std::size_t index) const { return samples_[index]; }
  std::size_t firstSampleAtOrAfter(double time_s) const;
  // The latest block; nullopt before the first stats or when the run does not find peaks.
  const std::optional<protocol::PeakFindingStats>& latest() const { return latest_; }
  bool hasStats() const { return has_stats_; }
  double latestTime() const { return latest_time_s_; }
  std::uint64_t revision() const { return revision_; }
  std::uint64_t rejectedCount() const { return rejected_; }
  QString lastRejection() const { return last_rejection_; }

 signals:
  void updated();

 private:
  bool applyQuietly(const protocol::Message& message);
  void store(const protocol::StatsPayload& stats, std::int64_t run);

  std::deque<HitRateSample> samples_;
  std::optional<protocol::PeakFindingStats> latest_;
  bool has_stats_ = false;
  std::int64_t run_ = 0;
  double latest_time_s_ = 0;
  std::uint64_t revision_ = 0;
  std::uint64_t rejected_ = 0;
  QString last_rejection_;
};

}  // namespace livedrp::widgets
