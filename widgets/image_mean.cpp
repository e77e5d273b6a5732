#include "widgets/image_mean.hpp"

#include <cmath>
#include <limits>

namespace livedrp::widgets {

void ImageMean::fold(const ImageFramePtr& image, std::int64_t run) {
  if (!image) return;
  const std::size_t pixels = image->pixels.size();
  if (images_ == 0 || run != run_ || image->width != width_ || image->height != height_) {
    sums_.assign(pixels, 0.0);
    counts_.assign(pixels, 0);
    width_ = image->width;
    height_ = image->height;
    run_ = run;
    images_ = 0;
    first_sequence_ = image->sequence;
    first_pulse_id_ = image->pulse_id;
  }
  for (std::size_t p = 0; p < pixels; ++p) {
    const float value = image->pixels[p];
    if (!std::isfinite(value)) continue;
    sums_[p] += double(value);
    ++counts_[p];
  }
  ++images_;
  last_sequence_ = image->sequence;
  last_pulse_id_ = image->pulse_id;
  newest_ = image;
}

ImageFramePtr ImageMean::computeMean() const {
  if (images_ == 0 || !newest_) return nullptr;
  const std::size_t pixels = sums_.size();
  auto mean = std::make_shared<protocol::ImageFrame>();
  mean->sequence = newest_->sequence;
  mean->pulse_id = newest_->pulse_id;
  mean->width = width_;
  mean->height = height_;
  mean->unit = newest_->unit;
  // Images of one size and run come from one detector: the newest's assembly names the pixels.
  mean->assembly = newest_->assembly;
  mean->pixels.resize(pixels);
  for (std::size_t p = 0; p < pixels; ++p)
    mean->pixels[p] = counts_[p] > 0 ? float(sums_[p] / double(counts_[p]))
                                     : std::numeric_limits<float>::quiet_NaN();
  return mean;
}

ImageFramePtr ImageMean::add(const ImageFramePtr& image, std::int64_t run) {
  if (!image) return mean_;
  fold(image, run);
  mean_ = computeMean();
  return mean_;
}

void ImageMean::reset() {
  sums_.clear();
  counts_.clear();
  mean_.reset();
  newest_.reset();
  images_ = 0;
  first_sequence_ = last_sequence_ = 0;
  first_pulse_id_ = last_pulse_id_ = 0;
}

}  // namespace livedrp::widgets
