#include "widgets/image_mean.hpp"

#include <cmath>
#include <limits>

namespace livedrp::widgets {

ImageFramePtr ImageMean::add(const ImageFramePtr& image, std::int64_t run) {
  if (!image) return mean_;
  const std::size_t pixels = image->pixels.size();
  if (images_ == 0 || run != run_ || image->width != width_ || image->height != height_) {
    sums_.assign(pixels, 0.0);
    counts_.assign(pixels, 0);
    width_ = image->width;
    height_ = image->height;
    run_ = run;
    images_ = 0;
    first_sequence_ = image->sequence;
  }
  for (std::size_t p = 0; p < pixels; ++p) {
    const float value = image->pixels[p];
    if (!std::isfinite(value)) continue;
    sums_[p] += double(value);
    ++counts_[p];
  }
  ++images_;
  last_sequence_ = image->sequence;
  auto mean = std::make_shared<protocol::ImageFrame>();
  mean->sequence = image->sequence;
  mean->pulse_id = image->pulse_id;
  mean->width = width_;
  mean->height = height_;
  mean->unit = image->unit;
  // Images of one size and run come from one detector: the newest's assembly names the pixels.
  mean->assembly = image->assembly;
  mean->pixels.resize(pixels);
  for (std::size_t p = 0; p < pixels; ++p)
    mean->pixels[p] = counts_[p] > 0 ? float(sums_[p] / double(counts_[p]))
                                     : std::numeric_limits<float>::quiet_NaN();
  mean_ = std::move(mean);
  return mean_;
}

void ImageMean::reset() {
  sums_.clear();
  counts_.clear();
  mean_.reset();
  images_ = 0;
  first_sequence_ = last_sequence_ = 0;
}

}  // namespace livedrp::widgets
