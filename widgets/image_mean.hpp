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
  // Folds `image` in without making the mean (for a mean that is asked for now and then, such as
  // the run's average the window exports).
  void fold(const ImageFramePtr& image, std::int64_t run);
  // The mean of the images folded so far, made now: a frame with the newest image's sequence,
  // pulse id, unit and assembly. Null before any image.
  ImageFramePtr computeMean() const;
  void reset();

  ImageFramePtr mean() const { return mean_; }  // as of the last add()
  std::uint64_t images() const { return images_; }
  std::int64_t run() const { return run_; }
  std::uint64_t first_sequence() const { return first_sequence_; }
  std::uint64_t last_sequence() const { return last_sequence_; }
  std::uint64_t first_pulse_id() const { return first_pulse_id_; }
  std::uint64_t last_pulse_id() const { return last_pulse_id_; }

 private:
  std::vector<double> sums_;
  std::vector<std::uint32_t> counts_;
  ImageFramePtr mean_;
  ImageFramePtr newest_;
  std::uint64_t width_ = 0, height_ = 0;
  std::int64_t run_ = 0;
  std::uint64_t images_ = 0, first_sequence_ = 0, last_sequence_ = 0;
  std::uint64_t first_pulse_id_ = 0, last_pulse_id_ = 0;
};

}  // namespace livedrp::widgets
