#include "widgets/radial_profile_plot.hpp"

#include <algorithm>
#include <cmath>

#include <QPen>
#include <QVector>

#include <qwt_legend.h>
#include <qwt_plot_canvas.h>
#include <qwt_plot_curve.h>
#include <qwt_plot_grid.h>
#include <qwt_scale_engine.h>

#include "widgets/radial_profile_picker.hpp"
#include "widgets/radial_unit_text.hpp"

namespace livedrp::widgets {
namespace {

QColor latestColor() {
  return QColor(0x1f, 0x77, 0xb4);  // blue
}
QColor averageColor() {
  return QColor(0xff, 0x7f, 0x0e);  // orange
}

QVector<QPointF> pointsOf(const std::vector<double>& centres, const std::vector<double>& values,
                          bool positive_only) {
  QVector<QPointF> points;
  points.reserve(int(values.size()));
  for (std::size_t bin = 0; bin < values.size() && bin < centres.size(); ++bin) {
    const double value = values[bin];
    if (!std::isfinite(value) || (positive_only && value <= 0)) continue;
    points.append(QPointF(centres[bin], value));
  }
  return points;
}

QString intensityText(double value) {
  return std::isfinite(value) ? QString::number(value, 'g', 4) : QStringLiteral("no pixels");
}

}  // namespace

RadialProfilePlot::RadialProfilePlot(QWidget* parent) : QwtPlot(parent) {
  setObjectName(QStringLiteral("radialProfilePlot"));
  setWindowTitle(tr("profile"));  // its name in the export menus, beside the waterfall
  // Expanding, not QwtPlot's MinimumExpanding: its size hint (room for every tick label) would be
  // the smallest the dock could get, and the dashboard shows this beside three others.
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  setAutoReplot(false);
  setCanvasBackground(Qt::white);
  if (auto* canvas = qobject_cast<QwtPlotCanvas*>(this->canvas())) {
    canvas->setFrameStyle(QFrame::Box | QFrame::Plain);
    canvas->setLineWidth(1);
  }
  auto* grid = new QwtPlotGrid;
  grid->setMajorPen(QColor(0xdd, 0xdd, 0xdd), 1.0, Qt::DotLine);
  grid->attach(this);

  // The average under the latest, so single-event noise stays visible on top of it.
  average_ = new QwtPlotCurve(tr("average"));
  average_->setPen(averageColor(), 2.5);
  average_->setRenderHint(QwtPlotItem::RenderAntialiased, true);
  average_->attach(this);
  latest_ = new QwtPlotCurve(tr("latest event"));
  latest_->setPen(latestColor(), 1.5);
  latest_->setRenderHint(QwtPlotItem::RenderAntialiased, true);
  latest_->attach(this);
  insertLegend(new QwtLegend, QwtPlot::TopLegend);

  setAxisTitle(QwtAxis::YLeft, tr("mean intensity per pixel"));
  setAxisTitle(QwtAxis::XBottom, tr("radial"));
  setAxisAutoScale(QwtAxis::YLeft, true);

  picker_ = new RadialProfilePicker(this);
  // The tracker machine reports the first position as appended(), the following ones as moved().
  const auto report = [this](const QPointF& position) { emit readoutChanged(readoutAt(position)); };
  connect(picker_, qOverload<const QPointF&>(&QwtPlotPicker::appended), this, report);
  connect(picker_, qOverload<const QPointF&>(&QwtPlotPicker::moved), this, report);
}

void RadialProfilePlot::setProfile(const protocol::RadialProfile& profile) {
  profile_ = profile;
  has_profile_ = true;
  picker_->setUnit(profile.unit);
  setAxisTitle(QwtAxis::XBottom, radialAxisTitle(profile.unit));
  latest_->setTitle(tr("latest event (#%1)").arg(profile.sequence));
  average_->setTitle(profile.average_events == profile.average_window
                         ? tr("average of %1 events").arg(profile.average_events)
                         : tr("average of %1 events (filling to %2)")
                               .arg(profile.average_events)
                               .arg(profile.average_window));
  if (!profile.centres.empty()) {
    setAxisScale(QwtAxis::XBottom, profile.centres.front(),
                 profile.centres.size() > 1 ? profile.centres.back() : profile.centres.front() + 1);
  }
  rebuildCurves();
}

void RadialProfilePlot::clear() {
  profile_ = protocol::RadialProfile();
  has_profile_ = false;
  latest_->setTitle(tr("latest event"));
  average_->setTitle(tr("average"));
  setAxisTitle(QwtAxis::XBottom, tr("radial"));
  rebuildCurves();
}

void RadialProfilePlot::setLogY(bool on) {
  if (on == log_y_) return;
  log_y_ = on;
  if (on)
    setAxisScaleEngine(QwtAxis::YLeft, new QwtLogScaleEngine);
  else
    setAxisScaleEngine(QwtAxis::YLeft, new QwtLinearScaleEngine);
  setAxisAutoScale(QwtAxis::YLeft, true);
  rebuildCurves();
}

void RadialProfilePlot::rebuildCurves() {
  latest_->setSamples(pointsOf(profile_.centres, profile_.latest, log_y_));
  average_->setSamples(pointsOf(profile_.centres, profile_.average, log_y_));
}

QString RadialProfilePlot::readoutAt(const QPointF& position) const {
  QString text = picker_->textAt(position);
  if (!has_profile_ || profile_.centres.empty()) return text;
  // The bin nearest to the cursor's radial coordinate.
  const auto& centres = profile_.centres;
  const auto upper = std::lower_bound(centres.begin(), centres.end(), position.x());
  std::size_t bin = std::size_t(upper - centres.begin());
  if (bin == centres.size() ||
      (bin > 0 && position.x() - centres[bin - 1] < centres[bin] - position.x()))
    bin = bin == 0 ? 0 : bin - 1;
  text += tr(" · bin at %1: latest %2, average %3")
              .arg(QString::number(centres[bin], 'g', 5), intensityText(profile_.latest[bin]),
                   intensityText(profile_.average[bin]));
  return text;
}

}  // namespace livedrp::widgets
