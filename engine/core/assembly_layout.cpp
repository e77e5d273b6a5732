#include "core/assembly_layout.hpp"

#include <cmath>

namespace livedrp {

namespace {

// The image pixel along one axis that contains `coordinate` (from the image's corner).
std::size_t image_index(double coordinate, std::size_t side) {
  const double cell = std::floor(coordinate);
  // Centres lie inside the rounded-out bounds by construction; the clamp only guards against
  // the last ulp of a rotation's arithmetic.
  if (cell < 0) return 0;
  if (cell >= double(side)) return side - 1;
  return std::size_t(cell);
}

}  // namespace

std::size_t image_pixel_of(const AssemblyLayout& layout, int segment, int row, int col, int sub_row,
                           int sub_col) {
  const SegmentGrid& grid = layout.grid;
  // The expansion is linear inside a pixel, so part a of a pixel of size n has its centre at raw
  // coordinate (a + 0.5) / n inside it; a normal pixel's centre is at + 0.5.
  const double raw_row = row + (sub_row + 0.5) / grid.row_size(row);
  const double raw_col = col + (sub_col + 0.5) / grid.col_size(col);
  const AssembledPoint centre =
      assembled_point(layout.placement[std::size_t(segment)], grid, raw_row, raw_col);
  const std::size_t column = image_index(centre.x - layout.origin_x, layout.width);
  const std::size_t image_row = image_index(centre.y - layout.origin_y, layout.height);
  return image_row * layout.width + column;
}

}  // namespace livedrp
