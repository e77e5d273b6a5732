#pragma once
// Zoom and pixel read-out of the detector image. Left-drag zooms into a rectangle, middle click
// goes one step back, zoom(0) (the view's "Whole image" button and the right-click menu's entry)
// to the whole image. Every zoom keeps pixels square: the rectangle asked for grows along one
// axis until image pixels are as wide as they are tall on the canvas. The tracker follows the
// mouse and reads out the pixel under it: its value and the detector pixel it shows.
#include <QPointF>
#include <QRectF>
#include <QSizeF>
#include <QString>

#include <qwt_plot_zoomer.h>

class QwtPlot;

namespace livedrp::widgets {

class ImageRasterData;

// `wanted` grown about its centre so that its aspect ratio equals the canvas's: the smallest
// rectangle holding `wanted` with square pixels. Empty canvas or rectangle: `wanted`.
QRectF squarePixelRect(const QRectF& wanted, const QSizeF& canvas);

class ImageZoomer : public QwtPlotZoomer {
  Q_OBJECT

 public:
  ImageZoomer(QwtPlot* plot, const ImageRasterData* raster);

  // "column 12, row 34: 5.67 keV · segment 5, ss 12, fs 300 (raw pixel 818988)" (the image's
  // assembly names the detector pixel; without it the segment is unknown); "column 12, row 34:
  // gap (no detector pixel)" where none lands; empty off the image. `unit` follows the value.
  QString readoutAt(const QPointF& position) const;
  void setUnit(const QString& unit) { unit_ = unit; }
  // Centres the view on a point: zooms into a kCentreSpan-pixel square around it from the whole
  // image, else keeps the current zoom size and moves.
  void centreOn(const QPointF& point);
  static constexpr double kCentreSpan = 64;
  // A new image extent: the zoom stack starts over at the whole image (`rect`).
  void setImageRect(const QRectF& rect);
  // Applies the current zoom rectangle with square pixels (after a resize, too).
  void rescale() override;

 signals:
  void readoutChanged(QString text);

 protected:
  QwtText trackerTextF(const QPointF& position) const override;
  void widgetMouseMoveEvent(QMouseEvent* event) override;
  void widgetLeaveEvent(QEvent* event) override;

 private:
  const ImageRasterData* raster_;
  QString unit_;
};

}  // namespace livedrp::widgets
