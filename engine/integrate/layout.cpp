#include "integrate/layout.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace livedrp::integrate {

PixelLayout plain_layout(int rows, int cols) {
  if (rows < 1 || cols < 1)
    throw InputError("image shape " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " must be positive");
  PixelLayout l;
  l.rows = rows;
  l.cols = cols;
  return l;
}

PixelLayout layout_from_detector(const DetectorDescription& detector) {
  if (detector.segments < 1 || detector.rows < 1 || detector.cols < 1)
    throw InputError("detector '" + detector.name + "' has no segment shape");
  if (detector.placement.size() != std::size_t(detector.segments))
    throw InputError("detector '" + detector.name + "' places " +
                     std::to_string(detector.placement.size()) + " segments, it has " +
                     std::to_string(detector.segments));
  PixelLayout l;
  l.segments = detector.segments;
  l.rows = detector.rows;
  l.cols = detector.cols;
  l.placement = detector.placement;
  return l;
}

PixelCentre pixel_centre(const PixelLayout& layout, int segment, int row, int col) {
  if (layout.placement.empty()) return {row + 0.5, col + 0.5};
  // The one placement convention of core/detector.hpp (the simulator and the peak finder's
  // radius use it too).
  const AssembledPoint centre =
      assembled_point(layout.placement[std::size_t(segment)], row + 0.5, col + 0.5);
  return {centre.y, centre.x};
}

FrameExtent assembled_extent(const PixelLayout& layout) {
  if (layout.placement.empty()) return {layout.rows, layout.cols};
  double max1 = 0.0, max2 = 0.0;
  for (int s = 0; s < layout.segments; ++s) {
    // The far corner of the segment's last pixel, whatever the rotation.
    for (const auto& [r, c] :
         {std::pair{0, 0}, std::pair{layout.rows - 1, 0}, std::pair{0, layout.cols - 1},
          std::pair{layout.rows - 1, layout.cols - 1}}) {
      const PixelCentre centre = pixel_centre(layout, s, r, c);
      max1 = std::max(max1, centre.c1 + 0.5);
      max2 = std::max(max2, centre.c2 + 0.5);
    }
  }
  return {int(std::ceil(max1)), int(std::ceil(max2))};
}

}  // namespace livedrp::integrate
