#pragma once
// The detector image as Qwt raster data. It holds the decoded `image` frame by shared pointer and
// value() indexes its float pixels in place: a 2-Mpixel frame arriving twice a second is never
// copied (no QVector<double> per frame). Coordinates are the assembled image's pixels with pixel
// centres at integers (the protocol's x = column, y = row): pixel (c, r) covers
// [c - 0.5, c + 0.5) x [r - 0.5, r + 0.5). Gaps (NaN) and points off the image are NaN, which the
// colour map draws transparent.
#include <cstddef>
#include <memory>

#include <qwt_interval.h>
#include <qwt_raster_data.h>

#include "protocol/peaks_topic.hpp"

namespace livedrp::widgets {

using ImageFramePtr = std::shared_ptr<const protocol::ImageFrame>;

class ImageRasterData : public QwtRasterData {
 public:
  ImageRasterData();

  void setFrame(ImageFramePtr frame);
  const ImageFramePtr& frame() const { return frame_; }
  // The colour range (z interval) the spectrogram maps; the view sets it from the colour scale.
  void setColourRange(const QwtInterval& range) { range_ = range; }

  std::size_t width() const { return frame_ ? std::size_t(frame_->width) : 0; }
  std::size_t height() const { return frame_ ? std::size_t(frame_->height) : 0; }
  // The pixel at column, row; NaN off the image.
  double pixel(std::ptrdiff_t column, std::ptrdiff_t row) const;

  QwtInterval interval(Qt::Axis axis) const override;
  double value(double x, double y) const override;

 private:
  ImageFramePtr frame_;
  QwtInterval range_;
};

}  // namespace livedrp::widgets
