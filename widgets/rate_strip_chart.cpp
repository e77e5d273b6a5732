#include "widgets/rate_strip_chart.hpp"

#include <algorithm>
#include <cmath>

#include <QFont>
#include <QPalette>
#include <QPen>

#include <qwt_axis.h>
#include <qwt_legend.h>
#include <qwt_plot_canvas.h>
#include <qwt_plot_curve.h>
#include <qwt_plot_grid.h>
#include <qwt_plot_textlabel.h>
#include <qwt_text.h>

#include "widgets/number_format.hpp"
#include "widgets/rate_series_data.hpp"
#include "widgets/refresh_coalescer.hpp"
#include "widgets/stats_model.hpp"

namespace livedrp::widgets {
namespace {
// Axis titles in the widget's font (Qwt otherwise picks its own, larger bold one for some axes)
// and, for the value axes, in their curve's colour: the colour says which axis a curve uses.
QwtText axisTitleText(const QString& text, const QColor& color, const QFont& font) {
  QwtText title(text);
  title.setColor(color);
  title.setFont(font);
  return title;
}
}  // namespace

QColor RateStripChart::rateColor() { return QColor(0x1f, 0x77, 0xb4); }        // blue
QColor RateStripChart::throughputColor() { return QColor(0xff, 0x7f, 0x0e); }  // orange

RateStripChart::RateStripChart(StatsModel* model, QWidget* parent)
    : QwtPlot(parent), model_(model), coalescer_(new RefreshCoalescer(this)) {
  setObjectName(QStringLiteral("rateStripChart"));
  setAutoReplot(false);
  setCanvasBackground(Qt::white);
  if (auto* canvas = qobject_cast<QwtPlotCanvas*>(this->canvas())) {
    canvas->setFrameStyle(QFrame::Box | QFrame::Plain);
    canvas->setLineWidth(1);
  }

  setAxisVisible(QwtAxis::YRight, true);
  const QFont title_font = font();
  setAxisTitle(QwtAxis::XBottom, axisTitleText(QStringLiteral("run time (s)"),
                                               palette().color(QPalette::WindowText), title_font));
  setAxisTitle(QwtAxis::YLeft,
               axisTitleText(QStringLiteral("event rate (Hz)"), rateColor(), title_font));
  setAxisTitle(QwtAxis::YRight,
               axisTitleText(QStringLiteral("input (GB/s)"), throughputColor(), title_font));

  auto* grid = new QwtPlotGrid;
  grid->setMajorPen(QColor(0xdd, 0xdd, 0xdd), 1.0, Qt::DotLine);
  grid->attach(this);

  rate_curve_ = new QwtPlotCurve(QStringLiteral("event rate"));
  rate_curve_->setPen(rateColor(), 2.0);
  rate_curve_->setRenderHint(QwtPlotItem::RenderAntialiased, true);
  rate_curve_->setAxes(QwtAxis::XBottom, QwtAxis::YLeft);
  rate_data_ = new RateSeriesData(model, RateSeriesData::Quantity::EventRateHz);
  rate_curve_->setData(rate_data_);
  rate_curve_->attach(this);

  gbps_curve_ = new QwtPlotCurve(QStringLiteral("input GB/s"));
  gbps_curve_->setPen(throughputColor(), 2.0);
  gbps_curve_->setRenderHint(QwtPlotItem::RenderAntialiased, true);
  gbps_curve_->setAxes(QwtAxis::XBottom, QwtAxis::YRight);
  gbps_data_ = new RateSeriesData(model, RateSeriesData::Quantity::InputGbps);
  gbps_curve_->setData(gbps_data_);
  gbps_curve_->attach(this);

  value_label_ = new QwtPlotTextLabel;
  value_label_->setMargin(6);
  value_label_->attach(this);

  insertLegend(new QwtLegend, QwtPlot::TopLegend);

  if (model) connect(model, &StatsModel::updated, coalescer_, &RefreshCoalescer::request);
  connect(coalescer_, &RefreshCoalescer::refresh, this, &RateStripChart::refreshNow);
  refreshNow();
}

RateStripChart::~RateStripChart() = default;

void RateStripChart::setWindowSeconds(double seconds) {
  window_s_ = std::max(1.0, seconds);
  coalescer_->request();
}

void RateStripChart::showEvent(QShowEvent* event) {
  QwtPlot::showEvent(event);
  if (deferred_) coalescer_->request();
}

double RateStripChart::niceUpperBound(double value) {
  if (!(value > 0) || !std::isfinite(value)) return 1.0;
  const double target = value * kHeadroom;
  const double decade = std::pow(10.0, std::floor(std::log10(target)));
  // Round upper bounds that keep the curve in the upper part of the canvas.
  for (const double step : {1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}) {
    if (step * decade >= target) return step * decade;
  }
  return 10.0 * decade;
}

void RateStripChart::refreshNow() {
  // A hidden chart (its dock closed or tabbed away) costs nothing; it catches up when shown.
  if (!isVisible() && replots_ > 0) {
    deferred_ = true;
    return;
  }
  deferred_ = false;

  double latest = 0;
  if (model_ && model_->sampleCount() > 0) latest = model_->sample(model_->sampleCount() - 1).time_s;
  const double x0 = std::max(0.0, latest - window_s_);
  const double x1 = std::max(window_s_, latest);
  rate_data_->setWindowStart(x0);
  gbps_data_->setWindowStart(x0);
  setAxisScale(QwtAxis::XBottom, x0, x1);
  setAxisScale(QwtAxis::YLeft, 0, niceUpperBound(rate_data_->maxValue()));
  setAxisScale(QwtAxis::YRight, 0, niceUpperBound(gbps_data_->maxValue()));

  QwtText label;
  if (model_ && model_->hasStats()) {
    const auto& stats = model_->latestStats();
    current_text_ = formatRateHz(stats.event_rate_hz) + QStringLiteral(" · ") +
                    formatGbps(stats.input_gbps);
    label.setText(QStringLiteral("<span style='color:%1'>%2</span>&nbsp;&nbsp;"
                                 "<span style='color:%3'>%4</span>")
                      .arg(rateColor().name(), formatRateHz(stats.event_rate_hz),
                           throughputColor().name(), formatGbps(stats.input_gbps)),
                  QwtText::RichText);
  } else {
    current_text_ = QStringLiteral("waiting for stats");
    label.setText(current_text_, QwtText::PlainText);
    label.setColor(Qt::gray);
  }
  QFont font = this->font();
  if (font.pointSizeF() > 0) font.setPointSizeF(font.pointSizeF() * 1.3);
  font.setBold(true);
  label.setFont(font);
  label.setRenderFlags(Qt::AlignRight | Qt::AlignTop);
  value_label_->setText(label);

  replot();
  ++replots_;
}

}  // namespace livedrp::widgets
