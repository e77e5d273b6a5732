#pragma once
// The assembled image's placement of pixels as data: the segment grid, every segment's placement
// and where the image starts. It is the same for every event of a detector, and small, so it
// travels with each `image` message (docs/protocol.md, `assembly`) and a viewer on another host
// can tell which detector pixel an image pixel shows. The engine (core/image_assembly.hpp) and
// the viewer's inverse (core/detector_pixel_lookup.hpp) both place pixels with image_pixel_of, so
// the inverse cannot drift from the assembly.
#include <cstddef>
#include <vector>

#include "core/segment_geometry.hpp"

namespace livedrp {

struct AssemblyLayout {
  SegmentGrid grid;                         // every segment's
  std::vector<SegmentPlacement> placement;  // one per segment, in the event's segment order
  // Assembled coordinates of the image's (0, 0) corner: image pixel (row, column) covers
  // [origin_x + column, origin_x + column + 1) x [origin_y + row, origin_y + row + 1).
  double origin_x = 0, origin_y = 0;
  std::size_t height = 0, width = 0;  // image rows and columns

  bool operator==(const AssemblyLayout&) const = default;
};

// The image pixel (row * width + column) that holds the centre of part (sub_row, sub_col) of raw
// pixel (row, col) of `segment`. A normal pixel has one part, (0, 0); a large pixel at an ASIC
// edge covers row_size x col_size normal pixels (SegmentGrid) and has a part for each. A centre
// goes to the image pixel containing it; a centre on an image pixel's edge to the pixel to its
// right or below.
std::size_t image_pixel_of(const AssemblyLayout& layout, int segment, int row, int col,
                           int sub_row = 0, int sub_col = 0);

}  // namespace livedrp
