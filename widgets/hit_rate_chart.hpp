#pragma once
// Scrolling strip chart of the hit rate (% of events searched, left axis) and the peaks found per
// event (right axis) against run time, from a HitRateModel, in the style of the rate chart: it
// reads the model's samples in place and replots through a RefreshCoalescer, none while hidden.
// The top-right corner shows the latest interval, or says that the run does not find peaks.
#include <cstdint>

#include <QColor>
#include <QPointer>
#include <QString>

#include <qwt_plot.h>

class QwtPlotCurve;
class QwtPlotTextLabel;

namespace livedrp::widgets {

class HitRateModel;
class RefreshCoalescer;

class HitRateChart : public QwtPlot {
  Q_OBJECT

 public:
  static constexpr double kDefaultWindowSeconds = 60;

  explicit HitRateChart(HitRateModel* model, QWidget* parent = nullptr);
  ~HitRateChart() override;

  void setWindowSeconds(double seconds);
  double windowSeconds() const { return window_s_; }

  const QwtPlotCurve* hitRateCurve() const { return hit_curve_; }
  const QwtPlotCurve* peaksCurve() const { return peaks_curve_; }
  static QColor hitRateColor() { return QColor(0xd6, 0x27, 0x28); }  // red
  static QColor peaksColor() { return QColor(0x2c, 0xa0, 0x2c); }    // green
  QString currentValueText() const { return current_text_; }
  RefreshCoalescer* coalescer() const { return coalescer_; }
  std::uint64_t replotCount() const { return replots_; }

  static QString offText();

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void refreshNow();

  QPointer<HitRateModel> model_;
  RefreshCoalescer* coalescer_ = nullptr;
  QwtPlotCurve* hit_curve_ = nullptr;
  QwtPlotCurve* peaks_curve_ = nullptr;
  QwtPlotTextLabel* value_label_ = nullptr;
  double window_s_ = kDefaultWindowSeconds;
  bool deferred_ = false;
  std::uint64_t replots_ = 0;
  QString current_text_;
};

}  // namespace livedrp::widgets
