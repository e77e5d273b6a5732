#pragma once
// The assembled detector image: every pixel of a multi-segment event placed where the detector's
// segment placement puts it, on one 2-D image a viewer can show as is (the `image` topic). Built
// once per detector; per event one gather, cheap enough to run a few times a second on the host.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/detector.hpp"

namespace livedrp {

class ImageAssembly {
 public:
  // Each pixel centre goes to the image pixel containing it (no interpolation); the image spans
  // assembled_bounds(detector) rounded outwards. Throws InputError when the detector has no
  // placement or the image would exceed `max_side` pixels on a side.
  explicit ImageAssembly(const DetectorDescription& detector, std::size_t max_side = 16384);

  std::size_t height() const { return height_; }
  std::size_t width() const { return width_; }
  // Image pixel (row * width + column) of each event pixel, in the engine's pixel order.
  const std::vector<std::uint32_t>& target() const { return target_; }
  // Image pixel coordinates (x = column, y = row; pixel centres at integers) of a point of the
  // event given in slab coordinates (fs, ss as the peak finder reports them: the event stacked as
  // (segments * rows) x cols, pixel centres at integers).
  void slab_to_image(double fs, double ss, double& x, double& y) const;

  // pixels: detector.pixels() calibrated values; out: height * width values, NaN where no event
  // pixel lands (gaps). When two event pixels land on one image pixel the later one wins.
  void assemble(const float* pixels, float* out) const;

 private:
  DetectorDescription detector_;
  std::size_t height_ = 0, width_ = 0;
  double origin_x_ = 0, origin_y_ = 0;  // assembled coordinates of the image's (0, 0) corner
  std::vector<std::uint32_t> target_;
};

}  // namespace livedrp
