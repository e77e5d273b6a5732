#pragma once
// Scrolling strip chart of the event rate (left axis) and input throughput (right axis) against run
// time. It draws straight from the StatsModel's buffer (RateSeriesData) and replots through a
// RefreshCoalescer: at most ~30 replots a second, none while nothing changed or while hidden.
#include <cstdint>

#include <QColor>
#include <QPointer>
#include <QString>

#include <qwt_plot.h>

class QwtPlotCurve;
class QwtPlotTextLabel;

namespace livedrp::widgets {

class RateSeriesData;
class RefreshCoalescer;
class StatsModel;

class RateStripChart : public QwtPlot {
  Q_OBJECT

 public:
  // One minute on screen: long enough to see a trend, short enough that 4 Hz stats stay readable.
  static constexpr double kDefaultWindowSeconds = 60;
  // Head room above the largest value in view, so the curve never touches the top of the canvas.
  static constexpr double kHeadroom = 1.15;

  explicit RateStripChart(StatsModel* model, QWidget* parent = nullptr);
  ~RateStripChart() override;

  void setWindowSeconds(double seconds);
  double windowSeconds() const { return window_s_; }

  const QwtPlotCurve* rateCurve() const { return rate_curve_; }
  const QwtPlotCurve* throughputCurve() const { return gbps_curve_; }
  static QColor rateColor();
  static QColor throughputColor();
  // The latest values as shown in the top-right corner, e.g. "50.0 Hz · 0.85 GB/s".
  QString currentValueText() const { return current_text_; }

  RefreshCoalescer* coalescer() const { return coalescer_; }
  std::uint64_t replotCount() const { return replots_; }

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void refreshNow();
  static double niceUpperBound(double value);

  QPointer<StatsModel> model_;
  RefreshCoalescer* coalescer_ = nullptr;
  QwtPlotCurve* rate_curve_ = nullptr;
  QwtPlotCurve* gbps_curve_ = nullptr;
  RateSeriesData* rate_data_ = nullptr;  // owned by rate_curve_
  RateSeriesData* gbps_data_ = nullptr;  // owned by gbps_curve_
  QwtPlotTextLabel* value_label_ = nullptr;
  double window_s_ = kDefaultWindowSeconds;
  bool deferred_ = false;
  std::uint64_t replots_ = 0;
  QString current_text_;
};

}  // namespace livedrp::widgets
