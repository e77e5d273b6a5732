#include "widgets/image_zoomer.hpp"

#include <cmath>

#include <QColor>
#include <QMouseEvent>
#include <QPen>
#include <QStack>

#include <qwt_plot.h>
#include <qwt_scale_div.h>
#include <qwt_scale_map.h>
#include <qwt_text.h>

#include "widgets/detector_pixel_text.hpp"
#include "widgets/image_raster_data.hpp"

namespace livedrp::widgets {

QRectF squarePixelRect(const QRectF& wanted, const QSizeF& canvas) {
  if (canvas.width() <= 0 || canvas.height() <= 0 || !(wanted.width() > 0) ||
      !(wanted.height() > 0))
    return wanted;
  // Image pixels per canvas pixel on each axis; the larger one binds.
  const double scale = std::max(wanted.width() / canvas.width(), wanted.height() / canvas.height());
  const QSizeF size(scale * canvas.width(), scale * canvas.height());
  QRectF rect(QPointF(), size);
  rect.moveCenter(wanted.center());
  return rect;
}

ImageZoomer::ImageZoomer(QwtPlot* plot, const ImageRasterData* raster)
    : QwtPlotZoomer(QwtAxis::XBottom, QwtAxis::YLeft, plot->canvas(), false), raster_(raster) {
  setObjectName(QStringLiteral("imageZoomer"));
  setTrackerMode(QwtPicker::AlwaysOn);
  setRubberBandPen(QPen(QColor(0xff, 0xff, 0xff), 1.0, Qt::DashLine));
  setTrackerPen(QPen(Qt::black));
  setMaxStackDepth(20);
  // Right click opens the plot's menu (export, whole image; app/plot_export_actions): it no longer
  // zooms out as well, which would lose the view the user is about to export.
  setMousePattern(QwtEventPattern::MouseSelect2, Qt::NoButton);
}

QString ImageZoomer::readoutAt(const QPointF& position) const {
  if (!raster_ || raster_->width() == 0) return {};
  const auto column = std::ptrdiff_t(std::floor(position.x() + 0.5));
  const auto row = std::ptrdiff_t(std::floor(position.y() + 0.5));
  if (column < 0 || row < 0 || std::size_t(column) >= raster_->width() ||
      std::size_t(row) >= raster_->height())
    return {};
  const double value = raster_->pixel(column, row);
  const QString where = tr("column %1, row %2").arg(column).arg(row);
  const QString gap = where + tr(": gap (no detector pixel)");
  const QString value_text = std::isnan(value)
                                 ? tr("no value")
                                 : QString::number(value, 'g', 5) +
                                       (unit_.isEmpty() ? QString() : QStringLiteral(" ") + unit_);
  const ImageFramePtr& frame = raster_->frame();
  if (!frame->assembly) {
    // An image without its assembly: NaN still marks a gap (docs/protocol.md), but which
    // segment a value comes from cannot be known.
    if (std::isnan(value)) return gap;
    return where + QStringLiteral(": ") + value_text + QStringLiteral(" · ") + unknownSegmentText();
  }
  const std::optional<DetectorPixel> pixel =
      detector_pixel_at(*frame->assembly, std::size_t(row), std::size_t(column));
  if (!pixel) return gap;
  return where + QStringLiteral(": ") + value_text + QStringLiteral(" · ") +
         detectorPixelText(*pixel);
}

QwtText ImageZoomer::trackerTextF(const QPointF& position) const {
  QwtText text(readoutAt(position));
  text.setBackgroundBrush(QColor(255, 255, 255, 220));  // readable over any colour
  return text;
}

void ImageZoomer::widgetMouseMoveEvent(QMouseEvent* event) {
  QwtPlotZoomer::widgetMouseMoveEvent(event);
  emit readoutChanged(readoutAt(invTransform(event->position().toPoint())));
}

void ImageZoomer::widgetLeaveEvent(QEvent* event) {
  QwtPlotZoomer::widgetLeaveEvent(event);
  emit readoutChanged(QString());
}

void ImageZoomer::centreOn(const QPointF& point) {
  const QRectF current = zoomRect();
  if (zoomRectIndex() == 0) {
    QRectF target(QPointF(), QSizeF(kCentreSpan, kCentreSpan));
    target.moveCenter(point);
    zoom(target);
    return;
  }
  QRectF moved = current;
  moved.moveCenter(point);
  moveTo(moved.topLeft());
}

void ImageZoomer::setImageRect(const QRectF& rect) {
  QStack<QRectF> stack;
  stack.push(rect);
  setZoomStack(stack, 0);
  rescale();
}

void ImageZoomer::rescale() {
  QwtPlot* plot = this->plot();
  if (!plot) return;
  // The canvas maps' own extents: the canvas less the layout's margins, what a unit spans.
  const QSizeF canvas(plot->canvasMap(xAxis()).pDist(), plot->canvasMap(yAxis()).pDist());
  const QRectF rect = squarePixelRect(zoomRect(), canvas);
  if (!rect.isValid()) return;
  const bool auto_replot = plot->autoReplot();
  plot->setAutoReplot(false);
  plot->setAxisScale(xAxis(), rect.left(), rect.right());
  // Row 0 at the top, as detector images are shown.
  plot->setAxisScale(yAxis(), rect.bottom(), rect.top());
  plot->setAutoReplot(auto_replot);
  plot->replot();
}

}  // namespace livedrp::widgets
