#include "widgets/engine_view.hpp"

#include <algorithm>
#include <cmath>

#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QProgressBar>
#include <QStringList>
#include <QVBoxLayout>

#include <qwt_axis.h>
#include <qwt_legend.h>
#include <qwt_plot.h>
#include <qwt_plot_canvas.h>
#include <qwt_plot_curve.h>
#include <qwt_plot_grid.h>
#include <qwt_series_data.h>
#include <qwt_text.h>

#include "widgets/latency_bars.hpp"
#include "widgets/number_format.hpp"
#include "widgets/ranks_view.hpp"
#include "widgets/refresh_coalescer.hpp"
#include "widgets/stats_model.hpp"

namespace livedrp::widgets {

// One latency quantile of the model's latency series, from a start time on, read in place.
class LatencySeriesData : public QwtSeriesData<QPointF> {
 public:
  enum class Quantile { P50, P99 };
  LatencySeriesData(const StatsModel* model, Quantile quantile)
      : model_(model), quantile_(quantile) {}

  void setWindowStart(double time_s) {
    window_start_ = time_s;
    sync();
  }
  // Values are divided by this (1 = µs, 1000 = ms): the chart's unit follows the latencies.
  void setDivisor(double divisor) {
    divisor_ = divisor;
    sync();
  }
  // Recomputes the range and bounds; called before every replot (the model only changes on the
  // GUI thread, between replots).
  void sync() {
    first_ = count_ = 0;
    bounds_ = QRectF(1.0, 1.0, -2.0, -2.0);
    max_value_ = 0;
    if (model_.isNull()) return;
    first_ = model_->firstLatencySampleAtOrAfter(window_start_);
    count_ = model_->latencySampleCount() - first_;
    if (count_ == 0) return;
    double low = value(first_), high = low;
    for (std::size_t i = first_ + 1; i < first_ + count_; ++i) {
      low = std::min(low, value(i));
      high = std::max(high, value(i));
    }
    const double t0 = model_->latencySample(first_).time_s;
    const double t1 = model_->latencySample(first_ + count_ - 1).time_s;
    bounds_ = QRectF(t0, low, t1 - t0, high - low);
    max_value_ = std::max(0.0, high);
  }
  double maxValue() const { return max_value_; }

  size_t size() const override { return model_.isNull() ? 0 : count_; }
  QPointF sample(size_t index) const override {
    if (model_.isNull() || index >= count_ || first_ + index >= model_->latencySampleCount())
      return {};
    return {model_->latencySample(first_ + index).time_s, value(first_ + index)};
  }
  QRectF boundingRect() const override { return bounds_; }

 private:
  double value(std::size_t index) const {
    const LatencySample& s = model_->latencySample(index);
    return (quantile_ == Quantile::P50 ? s.p50_us : s.p99_us) / divisor_;
  }
  QPointer<const StatsModel> model_;
  Quantile quantile_;
  double window_start_ = 0;
  double divisor_ = 1;
  std::size_t first_ = 0;
  std::size_t count_ = 0;
  QRectF bounds_{1.0, 1.0, -2.0, -2.0};
  double max_value_ = 0;
};

namespace {
QLabel* makeLabel(const QString& name, QWidget* parent) {
  auto* label = new QLabel(QStringLiteral("-"), parent);
  label->setObjectName(name);
  label->setTextFormat(Qt::PlainText);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return label;
}

void setTextIfChanged(QLabel* label, const QString& text) {
  if (label->text() != text) label->setText(text);
}

void setStyleSheetIfChanged(QWidget* widget, const QString& sheet) {
  if (widget->styleSheet() != sheet) widget->setStyleSheet(sheet);
}

void setBar(QProgressBar* bar, std::uint64_t value, std::uint64_t maximum) {
  // A lane reports its capacity; 0 (unknown) still draws an empty bar rather than a busy one.
  const int max = int(std::min<std::uint64_t>(std::max<std::uint64_t>(maximum, 1), 1u << 30));
  const int val = int(std::min<std::uint64_t>(value, std::uint64_t(max)));
  if (bar->maximum() != max) bar->setMaximum(max);
  if (bar->value() != val) bar->setValue(val);
  const QString format = QStringLiteral("%1 / %2").arg(formatCount(value), formatCount(maximum));
  if (bar->format() != format) bar->setFormat(format);
}

double niceUpperBound(double value) {
  if (!(value > 0) || !std::isfinite(value)) return 1.0;
  const double target = value * 1.15;
  const double decade = std::pow(10.0, std::floor(std::log10(target)));
  for (const double step : {1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}) {
    if (step * decade >= target) return step * decade;
  }
  return 10.0 * decade;
}
}  // namespace

QString formatMicroseconds(double us) {
  if (!std::isfinite(us)) return QStringLiteral("-");
  if (us >= 1000) return QString::number(us / 1000, 'f', 1) + QStringLiteral(" ms");
  return QString::number(us, 'f', 1) + QString::fromUtf8(" µs");
}

QString formatRateBound(const std::optional<protocol::RateBound>& bound) {
  if (!bound) return QStringLiteral("-");
  const QString by = QString::fromStdString(bound->by);
  QString text = by;
  if (std::isfinite(bound->busy_fraction) && bound->by != protocol::kRateBoundIdle) {
    const QString busy = QString::number(std::lround(bound->busy_fraction * 100));
    // For these two the fraction is the pipeline's headroom, not the named element's.
    const bool pipeline_fraction =
        bound->by == protocol::kRateBoundPacing || bound->by == protocol::kRateBoundSource;
    text += pipeline_fraction ? EngineView::tr(" (pipeline %1% busy)").arg(busy)
                              : EngineView::tr(" (%1% busy)").arg(busy);
  }
  if (!bound->why.empty()) text += QStringLiteral(": ") + QString::fromStdString(bound->why);
  return text;
}

QColor EngineView::orderErrorColor() {
  return QColor(0xc6, 0x28, 0x28);
}  // red
QColor EngineView::p50Color() {
  return QColor(0x2c, 0xa0, 0x2c);
}  // green
QColor EngineView::p99Color() {
  return QColor(0x94, 0x67, 0xbd);
}  // purple

EngineView::EngineView(StatsModel* model, QWidget* parent)
    : QWidget(parent), model_(model), coalescer_(new RefreshCoalescer(this)) {
  setObjectName(QStringLiteral("engineView"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);

  auto* lanes_box =
      new QGroupBox(tr("Lanes (launches in flight / capacity, events completed)"), this);
  lanes_layout_ = new QGridLayout(lanes_box);
  lanes_layout_->setColumnStretch(1, 1);
  no_lanes_ = new QLabel(tr("no lane figures yet"), lanes_box);
  no_lanes_->setObjectName(QStringLiteral("noLanesLabel"));
  lanes_layout_->addWidget(no_lanes_, 0, 0, 1, 3);
  layout->addWidget(lanes_box);

  auto* queues = new QGroupBox(tr("Queues, stages, accounting"), this);
  auto* form = new QFormLayout(queues);
  ring_ = new QProgressBar(queues);
  ring_->setObjectName(QStringLiteral("ringBar"));
  ring_->setTextVisible(true);
  setBar(ring_, 0, 0);
  reorder_ = makeLabel(QStringLiteral("reorderLabel"), queues);
  in_flight_ = makeLabel(QStringLiteral("inFlightLabel"), queues);
  order_errors_ = makeLabel(QStringLiteral("orderErrorsLabel"), queues);
  order_errors_->setAutoFillBackground(true);
  order_errors_->setMargin(2);
  drops_ = makeLabel(QStringLiteral("dropsLabel"), queues);
  drops_->setWordWrap(true);
  stages_ = makeLabel(QStringLiteral("stagesLabel"), queues);
  stages_->setWordWrap(true);
  rate_bound_ = makeLabel(QStringLiteral("rateBoundLabel"), queues);
  rate_bound_->setWordWrap(true);
  latency_ = makeLabel(QStringLiteral("latencyLabel"), queues);
  form->addRow(tr("ring occupancy"), ring_);
  form->addRow(tr("reorder depth"), reorder_);
  form->addRow(tr("events in flight"), in_flight_);
  form->addRow(tr("order errors"), order_errors_);
  form->addRow(tr("drops"), drops_);
  form->addRow(tr("time per stage"), stages_);
  form->addRow(tr("rate bound by"), rate_bound_);
  form->addRow(tr("latency"), latency_);
  layout->addWidget(queues);

  plot_ = new QwtPlot(this);
  plot_->setObjectName(QStringLiteral("latencyPlot"));
  plot_->setAutoReplot(false);
  plot_->setCanvasBackground(Qt::white);
  plot_->setMinimumHeight(150);
  if (auto* canvas = qobject_cast<QwtPlotCanvas*>(plot_->canvas())) {
    canvas->setFrameStyle(QFrame::Box | QFrame::Plain);
    canvas->setLineWidth(1);
  }
  QwtText x_title(tr("run time (s)"));
  x_title.setFont(font());
  plot_->setAxisTitle(QwtAxis::XBottom, x_title);
  auto* grid = new QwtPlotGrid;
  grid->setMajorPen(QColor(0xdd, 0xdd, 0xdd), 1.0, Qt::DotLine);
  grid->attach(plot_);
  p50_curve_ = new QwtPlotCurve(tr("latency p50"));
  p50_curve_->setPen(p50Color(), 2.0);
  p50_curve_->setRenderHint(QwtPlotItem::RenderAntialiased, true);
  p50_data_ = new LatencySeriesData(model, LatencySeriesData::Quantile::P50);
  p50_curve_->setData(p50_data_);
  p50_curve_->attach(plot_);
  p99_curve_ = new QwtPlotCurve(tr("latency p99"));
  p99_curve_->setPen(p99Color(), 2.0);
  p99_curve_->setRenderHint(QwtPlotItem::RenderAntialiased, true);
  p99_data_ = new LatencySeriesData(model, LatencySeriesData::Quantile::P99);
  p99_curve_->setData(p99_data_);
  p99_curve_->attach(plot_);
  plot_->insertLegend(new QwtLegend, QwtPlot::TopLegend);
  layout->addWidget(plot_, 1);
  latency_bars_ = new LatencyBars(model);
  layout->addWidget(latency_bars_);
  ranks_view_ = new RanksView(model);
  layout->insertWidget(0, ranks_view_);  // an MPI run's ranks first: is every engine there?

  if (model) connect(model, &StatsModel::updated, coalescer_, &RefreshCoalescer::request);
  connect(coalescer_, &RefreshCoalescer::refresh, this, &EngineView::refreshNow);
  refreshNow();
}

EngineView::~EngineView() = default;

QString EngineView::latencyAxisTitle() const {
  return plot_->axisTitle(QwtAxis::YLeft).text();
}

void EngineView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (deferred_) coalescer_->request();
}

void EngineView::setLaneCount(int count) {
  while (laneCount() > count) {
    Lane lane = lanes_.back();
    lanes_.pop_back();
    delete lane.name;
    delete lane.bar;
    delete lane.completed;
  }
  while (laneCount() < count) {
    const int index = laneCount();
    Lane lane;
    QWidget* parent = lanes_layout_->parentWidget();
    lane.name = makeLabel(QStringLiteral("laneLabel%1").arg(index), parent);
    lane.name->setText(tr("stream %1").arg(index));
    lane.bar = new QProgressBar(parent);
    lane.bar->setObjectName(QStringLiteral("laneBar%1").arg(index));
    lane.bar->setTextVisible(true);
    lane.completed = makeLabel(QStringLiteral("laneCompleted%1").arg(index), parent);
    lane.completed->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    lanes_layout_->addWidget(lane.name, index + 1, 0);
    lanes_layout_->addWidget(lane.bar, index + 1, 1);
    lanes_layout_->addWidget(lane.completed, index + 1, 2);
    lanes_.push_back(lane);
  }
  no_lanes_->setVisible(count == 0);
}

void EngineView::refreshNow() {
  const protocol::StatsPayload empty;
  const bool has_stats = model_ && model_->hasStats();
  const protocol::StatsPayload& stats = has_stats ? model_->latestStats() : empty;

  // The labels and bars are cheap and always current (tests and tooltips read them); the plot is
  // what a hidden view skips.
  setLaneCount(int(stats.streams.size()));
  for (std::size_t i = 0; i < stats.streams.size(); ++i) {
    const protocol::StreamStats& stream = stats.streams[i];
    const Lane& lane = lanes_[i];
    setTextIfChanged(lane.name, tr("stream %1").arg(stream.index));
    setBar(lane.bar, stream.in_flight, stream.capacity);
    setTextIfChanged(lane.completed, tr("%1 done").arg(formatCount(stream.completed)));
  }

  setBar(ring_, stats.ring_occupancy, stats.ring_slots);
  setTextIfChanged(reorder_, has_stats ? formatCount(stats.reorder_depth) : QStringLiteral("-"));
  setTextIfChanged(in_flight_,
                   has_stats ? formatCount(stats.events_in_flight) : QStringLiteral("-"));
  setTextIfChanged(order_errors_,
                   has_stats ? formatCount(stats.order_errors) : QStringLiteral("-"));
  setStyleSheetIfChanged(order_errors_,
                         stats.order_errors > 0
                             ? QStringLiteral("QLabel { background-color: %1; color: white; "
                                              "font-weight: bold; }")
                                   .arg(orderErrorColor().name())
                             : QString());

  QStringList drops;
  for (const auto& [reason, count] : stats.drops_by_reason) {
    drops << QStringLiteral("%1 %2").arg(QString::fromStdString(reason), formatCount(count));
  }
  setTextIfChanged(drops_, !has_stats        ? QStringLiteral("-")
                           : drops.isEmpty() ? tr("none")
                                             : drops.join(QStringLiteral(" · ")));

  QStringList stages;
  for (const auto& stage : stats.stages) {
    stages << tr("%1 %2 mean, %3 max, %4")
                  .arg(QString::fromStdString(stage.name), formatMicroseconds(stage.mean_us),
                       formatMicroseconds(stage.max_us), formatGbps(stage.gbps));
  }
  setTextIfChanged(stages_,
                   stages.isEmpty() ? QStringLiteral("-") : stages.join(QLatin1Char('\n')));
  setTextIfChanged(rate_bound_, formatRateBound(stats.rate_bound));
  setTextIfChanged(latency_, has_stats && std::isfinite(stats.latency_p50_us)
                                 ? tr("p50 %1 · p99 %2 · max %3")
                                       .arg(formatMicroseconds(stats.latency_p50_us),
                                            formatMicroseconds(stats.latency_p99_us),
                                            formatMicroseconds(stats.latency_max_us))
                                 : QStringLiteral("-"));

  if (!isVisible() && refreshes_ > 0) {
    deferred_ = true;
    return;
  }
  deferred_ = false;
  double latest = 0;
  if (model_ && model_->latencySampleCount() > 0) {
    latest = model_->latencySample(model_->latencySampleCount() - 1).time_s;
  }
  const double x0 = std::max(0.0, latest - kLatencyWindowSeconds);
  p50_data_->setDivisor(1);
  p99_data_->setDivisor(1);
  p50_data_->setWindowStart(x0);
  p99_data_->setWindowStart(x0);
  // Milliseconds once the latencies in view pass a few of them (the CPU backend on a 2-Mpixel
  // detector): "1,400,000 µs" is no way to read a chart.
  const bool in_ms =
      std::max(p50_data_->maxValue(), p99_data_->maxValue()) >= kMillisecondAxisFromUs;
  const double divisor = in_ms ? 1000.0 : 1.0;
  p50_data_->setDivisor(divisor);
  p99_data_->setDivisor(divisor);
  const QString unit = in_ms ? tr("latency (ms)") : QString::fromUtf8("latency (µs)");
  if (plot_->axisTitle(QwtAxis::YLeft).text() != unit) {
    QwtText title(unit);
    title.setFont(font());
    plot_->setAxisTitle(QwtAxis::YLeft, title);
  }
  plot_->setAxisScale(QwtAxis::XBottom, x0, std::max(kLatencyWindowSeconds, latest));
  plot_->setAxisScale(QwtAxis::YLeft, 0,
                      niceUpperBound(std::max(p50_data_->maxValue(), p99_data_->maxValue())));
  plot_->replot();
  ++refreshes_;
}

}  // namespace livedrp::widgets
