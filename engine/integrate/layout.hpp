#pragma once
// Where the input pixels of an event sit on the detector plane: one plain image, or the segments
// of a multi-segment detector (core/detector.hpp placement) read as a stack, without assembling
// them. pyFAI integrates the assembled image; integrating the stack with each pixel at its
// assembled position gives the same numbers (gaps simply have no pixels).
#include <cstddef>
#include <vector>

#include "core/detector.hpp"

namespace livedrp::integrate {

struct PixelLayout {
  int segments = 1;
  int rows = 0;  // per segment
  int cols = 0;
  std::vector<SegmentPlacement> placement;  // one per segment; empty for a plain image

  std::size_t pixels() const {
    return std::size_t(segments) * std::size_t(rows) * std::size_t(cols);
  }
};

PixelLayout plain_layout(int rows, int cols);
// Throws InputError when the description has no usable layout.
PixelLayout layout_from_detector(const DetectorDescription& detector);

// Centre of input pixel (segment, row, col) in assembled pixel coordinates (slow c1 = y, fast
// c2 = x): core/detector.hpp's assembled_point of (row + 0.5, col + 0.5), the segment's pixel
// (0, 0) corner at (y_px, x_px) and its fast axis along (cos, sin) of rotation_deg in (x, y).
struct PixelCentre {
  double c1, c2;
};
PixelCentre pixel_centre(const PixelLayout& layout, int segment, int row, int col);

// The assembled image's extent (rows, columns) from (0, 0): what pyFAI would be given.
struct FrameExtent {
  int rows = 0, cols = 0;
};
FrameExtent assembled_extent(const PixelLayout& layout);

}  // namespace livedrp::integrate
