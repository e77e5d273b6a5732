#include "widgets/comparison_view.hpp"

#include <algorithm>
#include <cmath>

#include <QHeaderView>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <qwt_axis.h>
#include <qwt_legend.h>
#include <qwt_plot.h>
#include <qwt_plot_canvas.h>
#include <qwt_plot_curve.h>
#include <qwt_plot_grid.h>
#include <qwt_text.h>

#include "widgets/comparison_model.hpp"
#include "widgets/refresh_coalescer.hpp"

namespace livedrp::widgets {
namespace {
QwtPlot* makePlot(const QString& name, const QString& y_title, QWidget* parent) {
  auto* plot = new QwtPlot(parent);
  plot->setObjectName(name);
  plot->setAutoReplot(false);
  plot->setCanvasBackground(Qt::white);
  if (auto* canvas = qobject_cast<QwtPlotCanvas*>(plot->canvas())) {
    canvas->setFrameStyle(QFrame::Box | QFrame::Plain);
    canvas->setLineWidth(1);
  }
  QwtText x(QObject::tr("run time (s)"));
  x.setFont(parent->font());
  plot->setAxisTitle(QwtAxis::XBottom, x);
  QwtText y(y_title);
  y.setFont(parent->font());
  plot->setAxisTitle(QwtAxis::YLeft, y);
  auto* grid = new QwtPlotGrid;
  grid->setMajorPen(QColor(0xdd, 0xdd, 0xdd), 1.0, Qt::DotLine);
  grid->attach(plot);
  plot->insertLegend(new QwtLegend, QwtPlot::BottomLegend);
  return plot;
}
}  // namespace

QString ComparisonView::latencyTitle(bool in_ms) {
  return in_ms ? tr("latency, p50 solid, p99 dashed (ms)")
               : tr("latency, p50 solid, p99 dashed (µs)");
}

QColor ComparisonView::runColor(int index) {
  // Tableau 10: distinct on white and for most colour-vision deficiencies.
  static const QColor colors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e),
                                  QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
                                  QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                  QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f),
                                  QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf)};
  return colors[std::size_t(index) % std::size(colors)];
}

ComparisonView::ComparisonView(ComparisonModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      coalescer_(new RefreshCoalescer(this)),
      tabs_(new QTabWidget(this)),
      table_(new QTableWidget(this)) {
  setObjectName(QStringLiteral("comparisonView"));
  plots_[0] = makePlot(QStringLiteral("comparisonRatePlot"), tr("event rate (Hz)"), this);
  plots_[1] = makePlot(QStringLiteral("comparisonThroughputPlot"), tr("input (GB/s)"), this);
  plots_[2] = makePlot(QStringLiteral("comparisonLatencyPlot"), latencyTitle(false), this);
  tabs_->addTab(plots_[0], tr("Rate"));
  tabs_->addTab(plots_[1], tr("Throughput"));
  tabs_->addTab(plots_[2], tr("Latency"));

  table_->setObjectName(QStringLiteral("comparisonTable"));
  table_->setColumnCount(int(ComparisonModel::columns().size()));
  table_->setHorizontalHeaderLabels(ComparisonModel::columns());
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setWordWrap(false);

  auto* splitter = new QSplitter(Qt::Vertical, this);
  splitter->addWidget(tabs_);
  splitter->addWidget(table_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(splitter);

  if (model) connect(model, &ComparisonModel::changed, coalescer_, &RefreshCoalescer::request);
  connect(coalescer_, &RefreshCoalescer::refresh, this, &ComparisonView::refreshNow);
  refreshNow();
}

QwtPlot* ComparisonView::plot(Plot which) const { return plots_[int(which)]; }

std::vector<const QwtPlotCurve*> ComparisonView::curves(Plot which) const {
  return {curves_[int(which)].begin(), curves_[int(which)].end()};
}

void ComparisonView::refreshNow() {
  const int runs = model_ ? model_->runCount() : 0;
  // Curves: rebuilt from the model (a few hundred points per run; the comparison is not a stream).
  for (auto& list : curves_) {
    for (QwtPlotCurve* curve : list) {
      curve->detach();
      delete curve;
    }
    list.clear();
  }
  // Latencies of milliseconds (the CPU backend) are drawn in milliseconds.
  double max_latency_us = 0;
  for (int i = 0; i < runs; ++i) {
    for (const ComparisonSample& s : model_->run(i).samples) {
      if (std::isfinite(s.latency_p99_us)) max_latency_us = std::max(max_latency_us, s.latency_p99_us);
      if (std::isfinite(s.latency_p50_us)) max_latency_us = std::max(max_latency_us, s.latency_p50_us);
    }
  }
  latency_in_ms_ = max_latency_us >= kMillisecondAxisFromUs;
  const double divisor = latency_in_ms_ ? 1000.0 : 1.0;
  QwtText latency_title(latencyTitle(latency_in_ms_));
  latency_title.setFont(font());
  plots_[2]->setAxisTitle(QwtAxis::YLeft, latency_title);
  for (int i = 0; i < runs; ++i) {
    const ComparisonRun& run = model_->run(i);
    QVector<QPointF> rate, gbps, p50, p99;
    for (const ComparisonSample& s : run.samples) {
      rate.append({s.time_s, s.event_rate_hz});
      gbps.append({s.time_s, s.input_gbps});
      if (std::isfinite(s.latency_p50_us)) p50.append({s.time_s, s.latency_p50_us / divisor});
      if (std::isfinite(s.latency_p99_us)) p99.append({s.time_s, s.latency_p99_us / divisor});
    }
    const QColor color = runColor(i);
    auto add = [&](Plot which, const QString& title, const QVector<QPointF>& points,
                   Qt::PenStyle style) {
      auto* curve = new QwtPlotCurve(title);
      curve->setPen(color, 2.0, style);
      curve->setRenderHint(QwtPlotItem::RenderAntialiased, true);
      curve->setLegendAttribute(QwtPlotCurve::LegendShowLine, true);  // dashed p99 shows as such
      curve->setSamples(points);
      curve->attach(plots_[int(which)]);
      curves_[int(which)].push_back(curve);
    };
    add(Plot::Rate, run.label(), rate, Qt::SolidLine);
    add(Plot::Throughput, run.label(), gbps, Qt::SolidLine);
    add(Plot::Latency, run.label() + tr(" p50"), p50, Qt::SolidLine);
    add(Plot::Latency, run.label() + tr(" p99"), p99, Qt::DashLine);
  }
  for (QwtPlot* plot : plots_) {
    plot->setAxisAutoScale(QwtAxis::XBottom);
    plot->setAxisAutoScale(QwtAxis::YLeft);
    plot->replot();
  }

  table_->setRowCount(runs);
  for (int i = 0; i < runs; ++i) {
    const QStringList texts = model_->rowTexts(i);
    const ComparisonRun& run = model_->run(i);
    for (int column = 0; column < texts.size(); ++column) {
      QTableWidgetItem* item = table_->item(i, column);
      if (!item) {
        item = new QTableWidgetItem;
        table_->setItem(i, column, item);
      }
      if (item->text() != texts[column]) item->setText(texts[column]);
      if (column >= 2) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      if (column == 0) item->setForeground(runColor(i));
      if (column == 1) {
        item->setToolTip(run.error);
        item->setForeground(run.state == ComparisonRun::State::Failed ? QColor(0xc6, 0x28, 0x28)
                                                                      : palette().color(QPalette::Text));
      }
    }
  }
}

}  // namespace livedrp::widgets
