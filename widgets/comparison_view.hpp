#pragma once
// The comparison's picture: the runs' event rate, input throughput and latency (p50 solid, p99
// dashed) overlaid against run time, one colour per run, labelled in the legends; below, the table
// of their figures. Draws the ComparisonModel through a RefreshCoalescer.
#include <vector>

#include <QColor>
#include <QPointer>
#include <QString>
#include <QWidget>

class QTabWidget;
class QTableWidget;
class QwtPlot;
class QwtPlotCurve;

namespace livedrp::widgets {

class ComparisonModel;
class RefreshCoalescer;

class ComparisonView : public QWidget {
  Q_OBJECT

 public:
  enum class Plot { Rate, Throughput, Latency };
  // The latency plot switches from µs to ms at this many µs (as the engine view does).
  static constexpr double kMillisecondAxisFromUs = 5000;

  explicit ComparisonView(ComparisonModel* model, QWidget* parent = nullptr);

  QwtPlot* plot(Plot which) const;
  // The curves on a plot, in run order (the latency plot has two per run: p50, then p99).
  std::vector<const QwtPlotCurve*> curves(Plot which) const;
  QTableWidget* table() const { return table_; }
  QTabWidget* tabs() const { return tabs_; }
  RefreshCoalescer* coalescer() const { return coalescer_; }
  static QColor runColor(int index);
  bool latencyInMilliseconds() const { return latency_in_ms_; }
  static QString latencyTitle(bool in_ms);

 private:
  void refreshNow();

  QPointer<ComparisonModel> model_;
  RefreshCoalescer* coalescer_;
  QTabWidget* tabs_;
  QwtPlot* plots_[3] = {};
  std::vector<QwtPlotCurve*> curves_[3];
  QTableWidget* table_;
  bool latency_in_ms_ = false;
};

}  // namespace livedrp::widgets
