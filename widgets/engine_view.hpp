#pragma once
// The engine seen from its `stats`: one bar per execution lane (launches in flight out of the
// lane's capacity, events completed on it), the reorder depth, the doorbell ring's occupancy,
// events in flight, time per stage, what bounds the rate now (the engine's `rate_bound` verdict, as
// sent), drops by reason, order errors (red when any), and a strip chart of the doorbell-to-result
// latency (p50 and p99) against run time, and the newest events' latency split by stage
// (latency_bars.hpp). It reads the StatsModel and redraws through a
// RefreshCoalescer (at most ~30 Hz; nothing while hidden).
#include <cstdint>
#include <optional>
#include <vector>

#include <QColor>
#include <QPointer>
#include <QString>
#include <QWidget>

#include "protocol/topics.hpp"

class QGridLayout;
class QLabel;
class QProgressBar;
class QwtPlot;
class QwtPlotCurve;

namespace livedrp::widgets {

class LatencyBars;
class RanksView;
class LatencySeriesData;
class RefreshCoalescer;
class StatsModel;

class EngineView : public QWidget {
  Q_OBJECT

 public:
  // The latency chart shows the last minute, like the rate chart.
  static constexpr double kLatencyWindowSeconds = 60;
  // The latency axis switches from µs to ms at this many µs.
  static constexpr double kMillisecondAxisFromUs = 5000;

  explicit EngineView(StatsModel* model, QWidget* parent = nullptr);
  ~EngineView() override;

  // One row per lane of the latest stats.
  int laneCount() const { return int(lanes_.size()); }
  QLabel* laneLabel(int index) const { return lanes_.at(std::size_t(index)).name; }
  QProgressBar* laneBar(int index) const { return lanes_.at(std::size_t(index)).bar; }
  QLabel* laneCompletedLabel(int index) const { return lanes_.at(std::size_t(index)).completed; }

  QLabel* reorderLabel() const { return reorder_; }
  QProgressBar* ringBar() const { return ring_; }
  QLabel* inFlightLabel() const { return in_flight_; }
  QLabel* orderErrorsLabel() const { return order_errors_; }
  QLabel* dropsLabel() const { return drops_; }
  QLabel* stagesLabel() const { return stages_; }
  QLabel* rateBoundLabel() const { return rate_bound_; }
  QLabel* latencyLabel() const { return latency_; }
  QwtPlot* latencyPlot() const { return plot_; }
  LatencyBars* latencyBars() const { return latency_bars_; }
  RanksView* ranksView() const { return ranks_view_; }
  QString latencyAxisTitle() const;  // "latency (µs)" or "latency (ms)"

  const QwtPlotCurve* p50Curve() const { return p50_curve_; }
  const QwtPlotCurve* p99Curve() const { return p99_curve_; }
  RefreshCoalescer* coalescer() const { return coalescer_; }

  static QColor orderErrorColor();  // background of the order-error count when it is not zero
  static QColor p50Color();
  static QColor p99Color();

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  struct Lane {
    QLabel* name = nullptr;
    QProgressBar* bar = nullptr;
    QLabel* completed = nullptr;
  };
  void refreshNow();
  void setLaneCount(int count);

  QPointer<StatsModel> model_;
  RefreshCoalescer* coalescer_;
  QGridLayout* lanes_layout_ = nullptr;
  QLabel* no_lanes_ = nullptr;
  std::vector<Lane> lanes_;
  QLabel* reorder_ = nullptr;
  QProgressBar* ring_ = nullptr;
  QLabel* in_flight_ = nullptr;
  QLabel* order_errors_ = nullptr;
  QLabel* drops_ = nullptr;
  QLabel* stages_ = nullptr;
  QLabel* rate_bound_ = nullptr;
  QLabel* latency_ = nullptr;
  QwtPlot* plot_ = nullptr;
  QwtPlotCurve* p50_curve_ = nullptr;
  QwtPlotCurve* p99_curve_ = nullptr;
  LatencySeriesData* p50_data_ = nullptr;  // owned by p50_curve_
  LatencySeriesData* p99_data_ = nullptr;  // owned by p99_curve_
  bool deferred_ = false;
  std::uint64_t refreshes_ = 0;
  LatencyBars* latency_bars_ = nullptr;
  RanksView* ranks_view_ = nullptr;
};

// Formats a time in microseconds: "812.4 µs" below a millisecond, "1.5 ms" above; "-" for NaN.
QString formatMicroseconds(double us);

// Formats the engine's rate-bound verdict: "peak (92% busy): <why>"; for "pacing" and "source",
// whose busy fraction is the pipeline's, "source (pipeline 40% busy): <why>"; without a busy
// fraction (NaN, or "idle") "idle: <why>"; "-" when the stats carry none.
QString formatRateBound(const std::optional<protocol::RateBound>& bound);

}  // namespace livedrp::widgets
