#pragma once
// The pixel-wise maximum of the detector images received since a reset (a "virtual powder
// pattern": rings and streaks that single frames show faintly add up). Gaps (NaN in every frame)
// stay gaps; an image of another size, or of another run, starts a new maximum.
#include <cstdint>
#include <memory>

#include "widgets/image_raster_data.hpp"

namespace livedrp::widgets {

class ImageMaxProjection {
 public:
  // Folds `image` in and returns the maximum so far (a frame of its own, not `image`).
  ImageFramePtr add(const ImageFramePtr& image, std::int64_t run);
  void reset();

  ImageFramePtr maximum() const { return maximum_; }
  std::uint64_t images() const { return images_; }
  std::uint64_t first_sequence() const { return first_sequence_; }
  std::uint64_t last_sequence() const { return last_sequence_; }

 private:
  std::shared_ptr<protocol::ImageFrame> maximum_;
  std::int64_t run_ = 0;
  std::uint64_t images_ = 0, first_sequence_ = 0, last_sequence_ = 0;
};

}  // namespace livedrp::widgets
