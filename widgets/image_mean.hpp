#pragma once
// The pixel-wise mean of the detector images received since a reset: each pixel's finite values
// summed in double and divided by their count (NaN where no image had a finite value, as in the
// gaps). Taken over the images the engine publishes (image.publish_hz a second), not over every
// event: `livedrp-engine run --write-average` averages every event. An image of another size, or
// of another run, starts a new mean.
#include <cstdint>
#include <memory>
#include <vector>

#include "widgets/image_raster_data.hpp"

namespace livedrp::widgets {

class ImageMean {
 public:
  // Folds `image` in and returns the mean so far (a frame of its own).
  ImageFramePtr add(const ImageFramePtr& image, std::int64_t run);
  void reset();

  ImageFramePtr mean() const { return mean_; }
  std::uint64_t images() const { return images_; }
  std::uint64_t first_sequence() const { return first_sequence_; }
  std::uint64_t last_sequence() const { return last_sequence_; }

 private:
  std::vector<double> sums_;
  std::vector<std::uint32_t> counts_;
  ImageFramePtr mean_;
  std::uint64_t width_ = 0, height_ = 0;
  std::int64_t run_ = 0;
  std::uint64_t images_ = 0, first_sequence_ = 0, last_sequence_ = 0;
};

}  // namespace livedrp::widgets
