#include "widgets/compression_view.hpp"

#include <algorithm>
#include <cmath>

#include <QLabel>
#include <QPalette>
#include <QPen>
#include <QVBoxLayout>
#include <QVector>

#include <qwt_axis.h>
#include <qwt_legend.h>
#include <qwt_plot.h>
#include <qwt_plot_canvas.h>
#include <qwt_plot_curve.h>
#include <qwt_plot_grid.h>
#include <qwt_plot_histogram.h>
#include <qwt_scale_engine.h>
#include <qwt_text.h>

#include "widgets/number_format.hpp"
#include "widgets/refresh_coalescer.hpp"
#include "widgets/stats_model.hpp"

namespace livedrp::widgets {
namespace {

QColor ratioColor() {
  return QColor(0x2c, 0xa0, 0x2c);
}  // green
QColor throughputColor() {
  return QColor(0x94, 0x67, 0xbd);
}  // purple

QwtPlot* makePlot(QWidget* parent, const QString& name) {
  auto* plot = new QwtPlot(parent);
  plot->setObjectName(name);
  // Expanding, not QwtPlot's MinimumExpanding: its size hint (room for every tick label) would be
  // the smallest the dock could get, and the dashboard shows this beside three others.
  plot->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  plot->setAutoReplot(false);
  plot->setCanvasBackground(Qt::white);
  if (auto* canvas = qobject_cast<QwtPlotCanvas*>(plot->canvas())) {
    canvas->setFrameStyle(QFrame::Box | QFrame::Plain);
    canvas->setLineWidth(1);
  }
  auto* grid = new QwtPlotGrid;
  grid->setMajorPen(QColor(0xdd, 0xdd, 0xdd), 1.0, Qt::DotLine);
  grid->attach(plot);
  return plot;
}

QwtText coloredTitle(const QString& text, const QColor& color, const QFont& font) {
  QwtText title(text);
  title.setColor(color);
  title.setFont(font);
  return title;
}

// Upper bound with head room, so a constant series is not drawn on the canvas's top edge.
double upperBound(double largest) {
  return largest > 0 && std::isfinite(largest) ? largest * 1.2 : 1.0;
}

}  // namespace

CompressionView::CompressionView(StatsModel* model, QWidget* parent)
    : QWidget(parent), model_(model), coalescer_(new RefreshCoalescer(this)) {
  setObjectName(QStringLiteral("compressionView"));
  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("compressionSummary"));

  chart_ = makePlot(this, QStringLiteral("compressionChart"));
  chart_->setWindowTitle(tr("ratio and codec speed"));  // its name in the export menus
  chart_->setAxisVisible(QwtAxis::YRight, true);
  chart_->setAxisTitle(
      QwtAxis::XBottom,
      coloredTitle(tr("run time (s)"), palette().color(QPalette::WindowText), font()));
  chart_->setAxisTitle(QwtAxis::YLeft, coloredTitle(tr("ratio"), ratioColor(), font()));
  chart_->setAxisTitle(QwtAxis::YRight,
                       coloredTitle(tr("codec (GB/s)"), throughputColor(), font()));
  ratio_curve_ = new QwtPlotCurve(tr("compression ratio"));
  ratio_curve_->setPen(ratioColor(), 2.0);
  ratio_curve_->setRenderHint(QwtPlotItem::RenderAntialiased, true);
  ratio_curve_->setAxes(QwtAxis::XBottom, QwtAxis::YLeft);
  ratio_curve_->attach(chart_);
  gbps_curve_ = new QwtPlotCurve(tr("codec GB/s"));
  gbps_curve_->setPen(throughputColor(), 2.0);
  gbps_curve_->setRenderHint(QwtPlotItem::RenderAntialiased, true);
  gbps_curve_->setAxes(QwtAxis::XBottom, QwtAxis::YRight);
  gbps_curve_->attach(chart_);
  chart_->insertLegend(new QwtLegend, QwtPlot::TopLegend);

  // Log2 x axis: the protocol's bins are powers of two, so every bar has the same width.
  histogram_plot_ = makePlot(this, QStringLiteral("compressionHistogram"));
  histogram_plot_->setWindowTitle(tr("per-event ratios"));  // its name in the export menus
  histogram_plot_->setAxisScaleEngine(QwtAxis::XBottom, new QwtLogScaleEngine(2));
  histogram_plot_->setAxisScale(
      QwtAxis::XBottom, protocol::ratio_histogram_lower_edge(0),
      2 * protocol::ratio_histogram_lower_edge(protocol::kRatioHistogramBins - 1));
  const QColor text_color = palette().color(QPalette::WindowText);
  histogram_plot_->setAxisTitle(QwtAxis::XBottom,
                                coloredTitle(tr("per-event ratio"), text_color, font()));
  histogram_plot_->setAxisTitle(QwtAxis::YLeft,
                                coloredTitle(tr("events (last interval)"), text_color, font()));
  histogram_ = new QwtPlotHistogram(tr("events per ratio bin"));
  histogram_->setStyle(QwtPlotHistogram::Columns);
  histogram_->setPen(QPen(ratioColor().darker(150)));
  histogram_->setBrush(ratioColor());
  histogram_->attach(histogram_plot_);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(summary_);
  layout->addWidget(chart_, 3);
  layout->addWidget(histogram_plot_, 2);

  if (model) connect(model, &StatsModel::updated, this, &CompressionView::followModel);
  connect(coalescer_, &RefreshCoalescer::refresh, this, &CompressionView::replotIfVisible);
  redraw();
}

void CompressionView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  coalescer_->request();
}

// Replots cost the GUI thread; a hidden view (its dock tabbed away) catches up when shown.
void CompressionView::replotIfVisible() {
  if (!isVisible()) return;
  chart_->replot();
  histogram_plot_->replot();
  ++replots_;
}

void CompressionView::followModel() {
  if (!model_ || !model_->hasStats() || model_->statsCount() == model_stats_seen_) return;
  model_stats_seen_ = model_->statsCount();
  applyStats(model_->latestStats());
}

void CompressionView::clear() {
  samples_.clear();
  compression_on_ = false;
  histogram_->setSamples(QVector<QwtIntervalSample>());
  redraw();
}

void CompressionView::applyStats(const protocol::StatsPayload& stats) {
  if (!samples_.empty() && stats.elapsed_s < samples_.back().time_s) samples_.clear();
  compression_on_ = stats.compression.has_value();
  if (!compression_on_) {
    samples_.clear();
    histogram_->setSamples(QVector<QwtIntervalSample>());
    redraw();
    return;
  }
  const protocol::CompressionStats& block = *stats.compression;
  codec_ = QString::fromStdString(block.codec);
  // An interval without events has no ratio (NaN): no point, rather than a fake zero.
  if (std::isfinite(block.interval_ratio) && std::isfinite(stats.elapsed_s))
    samples_.push_back(
        {stats.elapsed_s, block.interval_ratio, std::isfinite(block.gbps) ? block.gbps : 0.0});
  while (!samples_.empty() && samples_.back().time_s - samples_.front().time_s > kHistorySeconds)
    samples_.pop_front();

  QVector<QwtIntervalSample> bars;
  for (std::size_t bin = 0; bin < protocol::kRatioHistogramBins; ++bin) {
    const double low = protocol::ratio_histogram_lower_edge(bin);
    bars.append(QwtIntervalSample(double(block.ratio_histogram[bin]), low, 2 * low));
  }
  histogram_->setSamples(bars);
  redraw();
}

QString CompressionView::summaryText() const {
  return summary_->text();
}

void CompressionView::redraw() {
  QVector<QPointF> ratio_points, gbps_points;
  double latest = 0, max_ratio = 0, max_gbps = 0;
  if (!samples_.empty()) latest = samples_.back().time_s;
  const double x0 = std::max(0.0, latest - kWindowSeconds);
  for (const Sample& sample : samples_) {
    if (sample.time_s < x0) continue;
    ratio_points.append(QPointF(sample.time_s, sample.ratio));
    gbps_points.append(QPointF(sample.time_s, sample.gbps));
    max_ratio = std::max(max_ratio, sample.ratio);
    max_gbps = std::max(max_gbps, sample.gbps);
  }
  ratio_curve_->setSamples(ratio_points);
  gbps_curve_->setSamples(gbps_points);
  chart_->setAxisScale(QwtAxis::XBottom, x0, std::max(kWindowSeconds, latest));
  chart_->setAxisScale(QwtAxis::YLeft, 0, upperBound(max_ratio));
  chart_->setAxisScale(QwtAxis::YRight, 0, upperBound(max_gbps));

  double max_count = 0;
  for (std::size_t i = 0; i < histogram_->dataSize(); ++i)
    max_count = std::max(max_count, histogram_->sample(i).value);
  histogram_plot_->setAxisScale(QwtAxis::YLeft, 0, upperBound(max_count));

  if (!compression_on_) {
    summary_->setText(tr("compression off"));
  } else if (samples_.empty()) {
    summary_->setText(tr("compression on, no event compressed yet"));
  } else {
    const Sample& last = samples_.back();
    summary_->setText(tr("%1: ratio %2 · codec %3")
                          .arg(codec_, QString::number(last.ratio, 'f', 2), formatGbps(last.gbps)));
  }
  coalescer_->request();
}

}  // namespace livedrp::widgets
