#include "widgets/profile_waterfall.hpp"

#include <algorithm>

#include <QColor>

#include <qwt_color_map.h>
#include <qwt_plot_canvas.h>
#include <qwt_plot_spectrogram.h>
#include <qwt_scale_widget.h>

#include "widgets/profile_raster_data.hpp"
#include "widgets/radial_unit_text.hpp"

namespace livedrp::widgets {
namespace {

// Dark blue through green to yellow (viridis-like): ordered in lightness, so it also reads in
// grey, and no colour is confused with the white of "no data".
QwtLinearColorMap* makeColorMap() {
  auto* map = new QwtLinearColorMap(QColor(0x44, 0x01, 0x54), QColor(0xfd, 0xe7, 0x25));
  map->addColorStop(0.25, QColor(0x3b, 0x52, 0x8b));
  map->addColorStop(0.5, QColor(0x21, 0x91, 0x8c));
  map->addColorStop(0.75, QColor(0x5e, 0xc9, 0x62));
  return map;
}

// The colour bar before any data: an empty scale would draw nothing at all.
QwtInterval usableRange(const QwtInterval& range) {
  return range.isValid() ? range : QwtInterval(0.0, 1.0);
}

}  // namespace

ProfileWaterfall::ProfileWaterfall(QWidget* parent, std::size_t capacity) : QwtPlot(parent) {
  setObjectName(QStringLiteral("profileWaterfall"));
  setWindowTitle(tr("history"));  // its name in the export menus, beside the profile plot
  // Expanding, not QwtPlot's MinimumExpanding: its size hint (room for every tick label) would be
  // the smallest the dock could get, and the dashboard shows this beside three others.
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  setAutoReplot(false);
  setCanvasBackground(Qt::white);
  if (auto* canvas = qobject_cast<QwtPlotCanvas*>(this->canvas())) {
    canvas->setFrameStyle(QFrame::Box | QFrame::Plain);
    canvas->setLineWidth(1);
  }
  raster_ = capacity > 0 ? new ProfileRasterData(capacity) : new ProfileRasterData();
  spectrogram_ = new QwtPlotSpectrogram(tr("profile history"));
  spectrogram_->setRenderThreadCount(1);  // the image is small; no thread pool per replot
  spectrogram_->setColorMap(makeColorMap());
  spectrogram_->setData(raster_);
  spectrogram_->attach(this);

  setAxisVisible(QwtAxis::YRight, true);
  QwtScaleWidget* bar = axisWidget(QwtAxis::YRight);
  bar->setColorBarEnabled(true);
  bar->setColorBarWidth(14);
  setAxisTitle(QwtAxis::YLeft, tr("updates ago"));
  setAxisTitle(QwtAxis::XBottom, tr("radial"));
  updateScales();
}

void ProfileWaterfall::appendProfile(const protocol::RadialProfile& profile) {
  unit_ = profile.unit;
  has_unit_ = true;
  raster_->appendRow(profile.centres, profile.latest);
  updateScales();
}

void ProfileWaterfall::clear() {
  raster_->clear();
  has_unit_ = false;
  updateScales();
}

void ProfileWaterfall::setLogIntensity(bool on) {
  raster_->setLogIntensity(on);
  updateScales();
}

bool ProfileWaterfall::logIntensity() const {
  return raster_->logIntensity();
}

void ProfileWaterfall::updateScales() {
  const QwtInterval x = raster_->interval(Qt::XAxis);
  if (x.isValid())
    setAxisScale(QwtAxis::XBottom, x.minValue(), x.maxValue());
  else
    setAxisScale(QwtAxis::XBottom, 0, 1);
  setAxisScale(QwtAxis::YLeft, 0, std::max<double>(1.0, double(raster_->rowCount())));
  setAxisTitle(QwtAxis::XBottom, has_unit_ ? radialAxisTitle(unit_) : tr("radial"));

  const QwtInterval z = usableRange(raster_->interval(Qt::ZAxis));
  axisWidget(QwtAxis::YRight)->setColorMap(z, makeColorMap());
  setAxisScale(QwtAxis::YRight, z.minValue(), z.maxValue());
  setAxisTitle(QwtAxis::YRight, raster_->logIntensity() ? tr("log₁₀ intensity (latest event)")
                                                        : tr("intensity (latest event)"));
  // The raster changed under the item: drop any cached image.
  spectrogram_->invalidateCache();
  spectrogram_->itemChanged();
}

}  // namespace livedrp::widgets
