#include "widgets/rate_series_data.hpp"

#include <algorithm>

namespace livedrp::widgets {

RateSeriesData::RateSeriesData(const StatsModel* model, Quantity quantity)
    : model_(model), quantity_(quantity) {}

void RateSeriesData::setWindowStart(double time_s) {
  if (time_s == window_start_) return;
  window_start_ = time_s;
  synced_ = false;
}

size_t RateSeriesData::size() const {
  sync();
  return count_;
}

QPointF RateSeriesData::sample(size_t index) const {
  sync();
  if (index >= count_) return {};
  const RateSample& sample = model_->sample(first_ + index);
  return {sample.time_s, value(sample)};
}

QRectF RateSeriesData::boundingRect() const {
  sync();
  return bounds_;
}

double RateSeriesData::maxValue() const {
  sync();
  return max_value_;
}

double RateSeriesData::value(const RateSample& sample) const {
  return quantity_ == Quantity::EventRateHz ? sample.event_rate_hz : sample.input_gbps;
}

void RateSeriesData::sync() const {
  if (model_.isNull()) {
    first_ = count_ = 0;
    bounds_ = QRectF(1.0, 1.0, -2.0, -2.0);  // Qwt's "invalid" rectangle
    max_value_ = 0;
    return;
  }
  if (synced_ && synced_revision_ == model_->revision()) return;
  first_ = model_->firstSampleAtOrAfter(window_start_);
  count_ = model_->sampleCount() - first_;
  if (count_ == 0) {
    bounds_ = QRectF(1.0, 1.0, -2.0, -2.0);
    max_value_ = 0;
  } else {
    double low = value(model_->sample(first_)), high = low;
    for (std::size_t i = first_ + 1; i < first_ + count_; ++i) {
      const double v = value(model_->sample(i));
      low = std::min(low, v);
      high = std::max(high, v);
    }
    const double t0 = model_->sample(first_).time_s;
    const double t1 = model_->sample(first_ + count_ - 1).time_s;
    bounds_ = QRectF(t0, low, t1 - t0, high - low);
    max_value_ = std::max(0.0, high);
  }
  synced_revision_ = model_->revision();
  synced_ = true;
}

}  // namespace livedrp::widgets
