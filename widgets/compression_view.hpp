#pragma once
// Live compression: the ratio and the codec's throughput against run time (a strip chart like the
// rate chart), and the histogram of per-event ratios of the latest stats interval, in the fixed
// log2 bins of the protocol. Stats without a compression block (compression off, or an engine
// that predates it) show "compression off" and leave the plots empty. Data is taken at once;
// replots are coalesced (RefreshCoalescer) and skipped while the view is hidden.
#include <cstdint>
#include <deque>

#include <QPointer>
#include <QString>
#include <QWidget>

#include "protocol/topics.hpp"

class QLabel;
class QwtPlot;
class QwtPlotCurve;
class QwtPlotHistogram;

namespace livedrp::widgets {

class RefreshCoalescer;
class StatsModel;

class CompressionView : public QWidget {
  Q_OBJECT

 public:
  // Ten minutes of history, as the rate chart keeps; the chart shows the last minute.
  static constexpr double kHistorySeconds = 600;
  static constexpr double kWindowSeconds = 60;

  // Follows `model` (may be null: feed applyStats directly).
  explicit CompressionView(StatsModel* model, QWidget* parent = nullptr);

  // One stats payload: adds a point to the strip chart and replaces the histogram. A payload
  // whose elapsed time went backwards is a new run and starts a new series.
  void applyStats(const protocol::StatsPayload& stats);
  void clear();

  bool compressionOn() const { return compression_on_; }
  QString summaryText() const;

  QwtPlot* chartPlot() const { return chart_; }
  QwtPlot* histogramPlot() const { return histogram_plot_; }
  const QwtPlotCurve* ratioCurve() const { return ratio_curve_; }
  const QwtPlotCurve* throughputCurve() const { return gbps_curve_; }
  const QwtPlotHistogram* ratioHistogram() const { return histogram_; }
  QLabel* summaryLabel() const { return summary_; }
  RefreshCoalescer* coalescer() const { return coalescer_; }
  std::uint64_t replotCount() const { return replots_; }

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  struct Sample {
    double time_s;
    double ratio;
    double gbps;
  };

  void followModel();
  // Sets the curves, bars, scales and summary at once; the replot follows, coalesced.
  void redraw();
  void replotIfVisible();

  QPointer<StatsModel> model_;
  RefreshCoalescer* coalescer_ = nullptr;
  std::uint64_t replots_ = 0;
  std::uint64_t model_stats_seen_ = 0;
  std::deque<Sample> samples_;
  bool compression_on_ = false;
  QString codec_;
  QLabel* summary_ = nullptr;
  QwtPlot* chart_ = nullptr;
  QwtPlot* histogram_plot_ = nullptr;
  QwtPlotCurve* ratio_curve_ = nullptr;
  QwtPlotCurve* gbps_curve_ = nullptr;
  QwtPlotHistogram* histogram_ = nullptr;
};

}  // namespace livedrp::widgets
