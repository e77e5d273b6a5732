#include "widgets/peak_overlay.hpp"

#include <algorithm>
#include <cmath>

#include <QPainter>
#include <QPen>

#include <qwt_scale_map.h>

namespace livedrp::widgets {

PeakOverlay::PeakOverlay() {
  setZ(20);  // above the spectrogram (z 8 by default)
  setItemAttribute(QwtPlotItem::AutoScale, false);
  setItemAttribute(QwtPlotItem::Legend, false);
}

double PeakOverlay::radiusFor(const protocol::PeakRow& peak) {
  return std::max(kMinRadius, std::sqrt(double(std::max(peak.num_pixels, 0))));
}

void PeakOverlay::setPeaks(const std::vector<protocol::PeakRow>& peaks) {
  circles_.clear();
  circles_.reserve(peaks.size());
  for (const protocol::PeakRow& peak : peaks)
    circles_.push_back({QPointF(peak.x, peak.y), radiusFor(peak)});
  highlighted_.reset();
  itemChanged();
}

void PeakOverlay::clear() {
  circles_.clear();
  highlighted_.reset();
  itemChanged();
}

void PeakOverlay::setHighlighted(std::optional<std::size_t> index) {
  if (index && *index >= circles_.size()) index.reset();
  highlighted_ = index;
  itemChanged();
}

void PeakOverlay::draw(QPainter* painter, const QwtScaleMap& x_map, const QwtScaleMap& y_map,
                       const QRectF& canvas_rect) const {
  if (circles_.empty()) return;
  painter->save();
  painter->setRenderHint(QPainter::Antialiasing, true);
  painter->setBrush(Qt::NoBrush);
  const auto ellipse = [&](const Circle& circle) {
    const double cx = x_map.transform(circle.centre.x());
    const double cy = y_map.transform(circle.centre.y());
    // The radius in image pixels, as canvas pixels on each axis (square pixels make them equal).
    const double rx = std::abs(x_map.transform(circle.centre.x() + circle.radius) - cx);
    const double ry = std::abs(y_map.transform(circle.centre.y() + circle.radius) - cy);
    return QRectF(cx - rx, cy - ry, 2 * rx, 2 * ry);
  };
  const QRectF visible = canvas_rect.adjusted(-50, -50, 50, 50);
  QPen pen(circleColor(), 1.5);
  pen.setCosmetic(true);
  painter->setPen(pen);
  for (std::size_t i = 0; i < circles_.size(); ++i) {
    if (highlighted_ && *highlighted_ == i) continue;
    const QRectF box = ellipse(circles_[i]);
    if (visible.intersects(box)) painter->drawEllipse(box);
  }
  if (highlighted_) {
    QPen highlight(highlightColor(), 3.0);
    highlight.setCosmetic(true);
    painter->setPen(highlight);
    painter->drawEllipse(ellipse(circles_[*highlighted_]));
  }
  painter->restore();
}

}  // namespace livedrp::widgets
