#include "widgets/image_max_projection.hpp"

#include <cmath>

namespace livedrp::widgets {

ImageFramePtr ImageMaxProjection::add(const ImageFramePtr& image, std::int64_t run) {
  if (!image) return maximum_;
  if (!maximum_ || run != run_ || image->width != maximum_->width ||
      image->height != maximum_->height) {
    maximum_ = std::make_shared<protocol::ImageFrame>();
    maximum_->height = image->height;
    maximum_->width = image->width;
    maximum_->unit = image->unit;
    maximum_->pixels = image->pixels;
    run_ = run;
    images_ = 1;
    first_sequence_ = image->sequence;
  } else {
    // A new frame object each time: the plot holds the previous one by shared pointer and the
    // raster reads it in place.
    auto next = std::make_shared<protocol::ImageFrame>(*maximum_);
    const std::vector<float>& incoming = image->pixels;
    for (std::size_t p = 0; p < next->pixels.size(); ++p)
      next->pixels[p] = std::fmax(next->pixels[p], incoming[p]);  // NaN only where both are
    maximum_ = std::move(next);
    ++images_;
  }
  last_sequence_ = image->sequence;
  maximum_->sequence = image->sequence;
  maximum_->pulse_id = image->pulse_id;
  // Images of one size and run come from one detector: the newest's assembly names the pixels.
  maximum_->assembly = image->assembly;
  return maximum_;
}

void ImageMaxProjection::reset() {
  maximum_.reset();
  images_ = 0;
  first_sequence_ = last_sequence_ = 0;
}

}  // namespace livedrp::widgets
