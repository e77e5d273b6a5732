#pragma once
// The assembled detector image: every pixel of a multi-segment event placed where the detector's
// segment placement puts it, on one 2-D image a viewer can show as is (the `image` topic). Built
// once per detector; per event one gather, cheap enough to run a few times a second on the host.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/assembly_layout.hpp"
#include "core/detector.hpp"

namespace livedrp {

class ImageAssembly {
 public:
  // Each pixel centre goes to the image pixel containing it (no interpolation); the image spans
  // assembled_bounds(detector) rounded outwards. A large pixel at an ASIC edge
  // (DetectorDescription::large_pixel_factor) covers F x 1, 1 x F or F x F normal pixels: each of
  // those image pixels (the one holding its centre) gets an equal share of its value, as PSI's
  // Jungfrau software assembles its 514 x 1030 modules. Throws InputError when the detector has no
  // placement or the image would exceed `max_side` pixels on a side.
  explicit ImageAssembly(const DetectorDescription& detector, std::size_t max_side = 16384);

  std::size_t height() const { return layout_.height; }
  std::size_t width() const { return layout_.width; }
  // What places the pixels: the `image` message carries it, for viewers that name the detector
  // pixel under the mouse (core/detector_pixel_lookup.hpp).
  const AssemblyLayout& layout() const { return layout_; }
  // Image pixel (row * width + column) of each event pixel, in the engine's pixel order; for a
  // large pixel the first of the image pixels it covers (large_pixel_shares() lists them all).
  const std::vector<std::uint32_t>& target() const { return target_; }
  // Image pixel coordinates (x = column, y = row; pixel centres at integers) of a point of the
  // event given in slab coordinates (fs, ss as the peak finder reports them: the event stacked as
  // (segments * rows) x cols, pixel centres at integers).
  void slab_to_image(double fs, double ss, double& x, double& y) const;

  // One image pixel a large event pixel covers, and the fraction of its value it gets.
  struct Share {
    std::uint32_t pixel = 0;        // event pixel, engine order
    std::uint32_t image_pixel = 0;  // row * width + column
    float fraction = 1.0f;          // 1 / (number of image pixels it covers)
  };
  // Every large pixel's shares, in event pixel order; empty for a detector of normal pixels.
  const std::vector<Share>& large_pixel_shares() const { return shares_; }

  // pixels: detector.pixels() calibrated values; out: height * width values, NaN where no event
  // pixel lands (gaps). When two event pixels land on one image pixel the later one wins. A large
  // pixel's value is divided among the image pixels it covers, so the image's sum is the event's.
  void assemble(const float* pixels, float* out) const;

 private:
  DetectorDescription detector_;
  AssemblyLayout layout_;
  std::vector<std::uint32_t> target_;
  std::vector<Share> shares_;
};

}  // namespace livedrp
