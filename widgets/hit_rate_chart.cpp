#include "widgets/hit_rate_chart.hpp"

#include <algorithm>
#include <cmath>

#include <qwt_legend.h>
#include <qwt_plot_canvas.h>
#include <qwt_plot_curve.h>
#include <qwt_plot_grid.h>
#include <qwt_plot_textlabel.h>
#include <qwt_series_data.h>
#include <qwt_text.h>

#include "widgets/hit_rate_model.hpp"
#include "widgets/number_format.hpp"
#include "widgets/refresh_coalescer.hpp"

namespace livedrp::widgets {
namespace {

// One quantity of the model's samples from a start time on, read in place (no copy per replot).
class HitRateSeriesData : public QwtSeriesData<QPointF> {
 public:
  enum class Quantity { HitRatePct, PeaksPerEvent };
  HitRateSeriesData(const HitRateModel* model, Quantity quantity)
      : model_(model), quantity_(quantity) {}

  void setWindowStart(double time_s) { window_start_ = time_s; }
  size_t size() const override { return first() < count() ? count() - first() : 0; }
  QPointF sample(size_t index) const override {
    const HitRateSample& s = model_->sample(first() + index);
    return {s.time_s, value(s)};
  }
  QRectF boundingRect() const override {
    if (size() == 0) return QRectF(1.0, 1.0, -2.0, -2.0);  // Qwt's "invalid"
    double low = value(model_->sample(first())), high = low;
    for (size_t i = first(); i < count(); ++i) {
      low = std::min(low, value(model_->sample(i)));
      high = std::max(high, value(model_->sample(i)));
    }
    const double t0 = model_->sample(first()).time_s, t1 = model_->sample(count() - 1).time_s;
    return QRectF(t0, low, t1 - t0, high - low);
  }
  double maxValue() const {
    double high = 0;
    for (size_t i = first(); i < count(); ++i) high = std::max(high, value(model_->sample(i)));
    return high;
  }

 private:
  size_t first() const { return model_ ? model_->firstSampleAtOrAfter(window_start_) : 0; }
  size_t count() const { return model_ ? model_->sampleCount() : 0; }
  double value(const HitRateSample& s) const {
    return quantity_ == Quantity::HitRatePct ? s.hit_rate_pct : s.peaks_per_event;
  }
  const HitRateModel* model_;
  Quantity quantity_;
  double window_start_ = 0;
};

double niceUpperBound(double value) {
  if (!(value > 0) || !std::isfinite(value)) return 1.0;
  const double target = value * 1.15;  // head room above the largest value in view
  const double decade = std::pow(10.0, std::floor(std::log10(target)));
  for (const double step : {1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
    if (step * decade >= target) return step * decade;
  return 10.0 * decade;
}

QwtText coloredTitle(const QString& text, const QColor& color, const QFont& font) {
  QwtText title(text);
  title.setColor(color);
  title.setFont(font);
  return title;
}

}  // namespace

QString HitRateChart::offText() {
  return tr("peak finding is off in this run (peak_finding.enabled)");
}

HitRateChart::HitRateChart(HitRateModel* model, QWidget* parent)
    : QwtPlot(parent), model_(model), coalescer_(new RefreshCoalescer(this)) {
  setObjectName(QStringLiteral("hitRateChart"));
  setAutoReplot(false);
  setCanvasBackground(Qt::white);
  if (auto* canvas = qobject_cast<QwtPlotCanvas*>(this->canvas())) {
    canvas->setFrameStyle(QFrame::Box | QFrame::Plain);
    canvas->setLineWidth(1);
  }
  setAxisVisible(QwtAxis::YRight, true);
  setAxisTitle(QwtAxis::XBottom,
               coloredTitle(tr("run time (s)"), palette().color(QPalette::WindowText), font()));
  setAxisTitle(QwtAxis::YLeft, coloredTitle(tr("hit rate (%)"), hitRateColor(), font()));
  setAxisTitle(QwtAxis::YRight, coloredTitle(tr("peaks per event"), peaksColor(), font()));

  auto* grid = new QwtPlotGrid;
  grid->setMajorPen(QColor(0xdd, 0xdd, 0xdd), 1.0, Qt::DotLine);
  grid->attach(this);

  hit_curve_ = new QwtPlotCurve(tr("hit rate"));
  hit_curve_->setPen(hitRateColor(), 2.0);
  hit_curve_->setRenderHint(QwtPlotItem::RenderAntialiased, true);
  hit_curve_->setAxes(QwtAxis::XBottom, QwtAxis::YLeft);
  hit_curve_->setData(new HitRateSeriesData(model, HitRateSeriesData::Quantity::HitRatePct));
  hit_curve_->attach(this);

  peaks_curve_ = new QwtPlotCurve(tr("peaks per event"));
  peaks_curve_->setPen(peaksColor(), 1.5, Qt::DashLine);
  peaks_curve_->setRenderHint(QwtPlotItem::RenderAntialiased, true);
  peaks_curve_->setAxes(QwtAxis::XBottom, QwtAxis::YRight);
  peaks_curve_->setData(new HitRateSeriesData(model, HitRateSeriesData::Quantity::PeaksPerEvent));
  peaks_curve_->attach(this);

  value_label_ = new QwtPlotTextLabel;
  value_label_->setMargin(6);
  value_label_->attach(this);
  insertLegend(new QwtLegend, QwtPlot::TopLegend);

  if (model) connect(model, &HitRateModel::updated, coalescer_, &RefreshCoalescer::request);
  connect(coalescer_, &RefreshCoalescer::refresh, this, &HitRateChart::refreshNow);
  refreshNow();
}

HitRateChart::~HitRateChart() = default;

void HitRateChart::setWindowSeconds(double seconds) {
  window_s_ = std::max(1.0, seconds);
  coalescer_->request();
}

void HitRateChart::showEvent(QShowEvent* event) {
  QwtPlot::showEvent(event);
  if (deferred_) coalescer_->request();
}

void HitRateChart::refreshNow() {
  if (!isVisible() && replots_ > 0) {
    deferred_ = true;
    return;
  }
  deferred_ = false;
  const double latest = model_ ? model_->latestTime() : 0.0;
  const double x0 = std::max(0.0, latest - window_s_);
  const double x1 = std::max(window_s_, latest);
  auto* hits = static_cast<HitRateSeriesData*>(hit_curve_->data());
  auto* peaks = static_cast<HitRateSeriesData*>(peaks_curve_->data());
  hits->setWindowStart(x0);
  peaks->setWindowStart(x0);
  setAxisScale(QwtAxis::XBottom, x0, x1);
  // A hit rate reads best on a fixed 0-100 % axis once it is large; small rates get zoomed in.
  setAxisScale(QwtAxis::YLeft, 0, std::min(100.0, niceUpperBound(hits->maxValue())));
  setAxisScale(QwtAxis::YRight, 0, niceUpperBound(peaks->maxValue()));

  QwtText label;
  const auto& stats = model_ ? model_->latest() : std::optional<protocol::PeakFindingStats>();
  if (!model_ || !model_->hasStats()) {
    current_text_ = tr("waiting for stats");
  } else if (!stats) {
    current_text_ = offText();
  } else if (stats->interval_events == 0) {
    current_text_ = tr("no event searched in the last interval · %1 hits of %2 events · "
                       "parameters v%3")
                        .arg(formatCount(stats->total_hits), formatCount(stats->total_events))
                        .arg(stats->params_version);
  } else {
    current_text_ =
        tr("hit rate %1 % · %2 peaks/event · %3 hits of %4 events · parameters v%5")
            .arg(100.0 * stats->interval_hit_rate, 0, 'f', 1)
            .arg(double(stats->interval_peaks) / double(stats->interval_events), 0, 'f', 1)
            .arg(formatCount(stats->total_hits), formatCount(stats->total_events))
            .arg(stats->params_version);
  }
  label.setText(current_text_, QwtText::PlainText);
  if (!stats) label.setColor(Qt::gray);
  QFont font = this->font();
  font.setBold(true);
  label.setFont(font);
  label.setRenderFlags(Qt::AlignRight | Qt::AlignTop);
  value_label_->setText(label);
  replot();
  ++replots_;
}

}  // namespace livedrp::widgets
