#pragma once
// Found peaks drawn over the detector image as circles: one plot item for the whole list (a
// thousand QwtPlotShapeItems would each be laid out and painted separately). A circle's centre is
// the peak's x, y (assembled-image column, row); its radius grows with the peak's size, so large
// peaks are not hidden under a small ring. One peak can be highlighted (the peak table's
// selection).
#include <cstddef>
#include <optional>
#include <vector>

#include <QColor>
#include <QPointF>

#include <qwt_plot_item.h>

#include "protocol/peaks_topic.hpp"

namespace livedrp::widgets {

class PeakOverlay : public QwtPlotItem {
 public:
  // Smallest radius drawn (image pixels): a ring around a one-pixel peak stays visible.
  static constexpr double kMinRadius = 3.0;
  struct Circle {
    QPointF centre;  // image pixels (column, row)
    double radius = kMinRadius;
  };

  PeakOverlay();

  // max(kMinRadius, sqrt(num_pixels)): about the peak's extent, never too small to see.
  static double radiusFor(const protocol::PeakRow& peak);

  void setPeaks(const std::vector<protocol::PeakRow>& peaks);
  void clear();
  std::size_t circleCount() const { return circles_.size(); }
  const Circle& circle(std::size_t index) const { return circles_[index]; }
  // The highlighted peak (index into the list), drawn thicker in another colour; none by default.
  void setHighlighted(std::optional<std::size_t> index);
  std::optional<std::size_t> highlighted() const { return highlighted_; }

  static QColor circleColor() { return QColor(0x00, 0xff, 0x66); }     // green on any palette
  static QColor highlightColor() { return QColor(0xff, 0x20, 0xff); }  // magenta

  int rtti() const override { return QwtPlotItem::Rtti_PlotUserItem + 61; }
  void draw(QPainter* painter, const QwtScaleMap& x_map, const QwtScaleMap& y_map,
            const QRectF& canvas_rect) const override;

 private:
  std::vector<Circle> circles_;
  std::optional<std::size_t> highlighted_;
};

}  // namespace livedrp::widgets
