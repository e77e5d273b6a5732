#include "widgets/image_raster_data.hpp"

#include <cmath>
#include <limits>
#include <utility>

namespace livedrp::widgets {

ImageRasterData::ImageRasterData() = default;

void ImageRasterData::setFrame(ImageFramePtr frame) {
  frame_ = std::move(frame);
}

double ImageRasterData::pixel(std::ptrdiff_t column, std::ptrdiff_t row) const {
  if (!frame_ || column < 0 || row < 0 || std::size_t(column) >= width() ||
      std::size_t(row) >= height())
    return std::numeric_limits<double>::quiet_NaN();
  return frame_->pixels[std::size_t(row) * width() + std::size_t(column)];
}

QwtInterval ImageRasterData::interval(Qt::Axis axis) const {
  switch (axis) {
    case Qt::XAxis:
      return width() > 0 ? QwtInterval(-0.5, double(width()) - 0.5) : QwtInterval();
    case Qt::YAxis:
      return height() > 0 ? QwtInterval(-0.5, double(height()) - 0.5) : QwtInterval();
    case Qt::ZAxis:
      return range_;
  }
  return QwtInterval();
}

double ImageRasterData::value(double x, double y) const {
  // floor(x + 0.5): the pixel whose centre is nearest, the lower one on a boundary.
  if (!std::isfinite(x) || !std::isfinite(y)) return std::numeric_limits<double>::quiet_NaN();
  return pixel(std::ptrdiff_t(std::floor(x + 0.5)), std::ptrdiff_t(std::floor(y + 0.5)));
}

}  // namespace livedrp::widgets
