#pragma once
// Per-pulse latency: one horizontal bar per newest event of the latest `stats` (its
// `recent_events`), split into the time each stage took for it on its lane (calibrate first),
// the time it waited (queues, reorder, launches: its doorbell-to-result latency less the stage
// times) and the time from its result to this window (the stats message's arrival here less the
// event's source time stamp less its latency: publishing, the network and this window's queue;
// it assumes the engine's host and this one share a clock, as they do on one machine).
#include <cstdint>
#include <string>
#include <vector>

#include <QColor>
#include <QPointer>
#include <QWidget>

#include "protocol/topics.hpp"

namespace livedrp::widgets {

class StatsModel;

struct LatencySegment {
  QString name;   // a stage's name, "wait" or "to this window"
  double us = 0;  // >= 0
  QColor colour;
};

struct LatencyRow {
  std::uint64_t sequence = 0;
  std::vector<LatencySegment> segments;
  double total_us() const;
};

// The rows for `events` received at `arrival_ns` (Unix epoch). Negative remainders (clock
// steps, rounding) are drawn as 0. Colours are fixed per stage name.
std::vector<LatencyRow> latencyRows(const std::vector<protocol::RecentEvent>& events,
                                    std::int64_t arrival_ns);
QColor latencySegmentColour(const QString& name);

class LatencyBars : public QWidget {
  Q_OBJECT

 public:
  explicit LatencyBars(StatsModel* model, QWidget* parent = nullptr);

  // Replaces the rows (the model calls it with the time a stats message came).
  void setEvents(const std::vector<protocol::RecentEvent>& events, std::int64_t arrival_ns);
  const std::vector<LatencyRow>& rows() const { return rows_; }
  double scaleUs() const { return scale_us_; }  // the bars' full width
  // Where segment `k` of row `r` is drawn (for tests; empty when not drawn).
  QRect segmentRect(int row, int segment) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QRect barArea() const;

  QPointer<StatsModel> model_;
  std::vector<LatencyRow> rows_;
  double scale_us_ = 0;
  std::uint64_t newest_sequence_ = 0;
};

}  // namespace livedrp::widgets
