#pragma once
// A Qwt curve's view of one quantity of the StatsModel's time series, from a start time on. It reads
// the model's buffer in place: no per-replot copy of the samples. Whenever the model changed (its
// revision), the index range and bounding rectangle are recomputed on first use, so a repaint at
// any moment (resize, expose) sees a consistent range.
#include <cstddef>
#include <cstdint>

#include <QPointer>
#include <QPointF>
#include <QRectF>

#include <qwt_series_data.h>

#include "widgets/stats_model.hpp"

namespace livedrp::widgets {

class RateSeriesData : public QwtSeriesData<QPointF> {
 public:
  enum class Quantity { EventRateHz, InputGbps };

  RateSeriesData(const StatsModel* model, Quantity quantity);

  // Samples before `time_s` are left out (the chart's scrolling window).
  void setWindowStart(double time_s);
  double windowStart() const { return window_start_; }
  Quantity quantity() const { return quantity_; }

  size_t size() const override;
  QPointF sample(size_t index) const override;
  QRectF boundingRect() const override;

  // Largest value in the window (0 when empty), for the axis range.
  double maxValue() const;

 private:
  void sync() const;
  double value(const RateSample& sample) const;

  QPointer<const StatsModel> model_;
  Quantity quantity_;
  double window_start_ = 0;
  mutable bool synced_ = false;
  mutable std::uint64_t synced_revision_ = 0;
  mutable std::size_t first_ = 0;
  mutable std::size_t count_ = 0;
  mutable QRectF bounds_;
  mutable double max_value_ = 0;
};

}  // namespace livedrp::widgets
