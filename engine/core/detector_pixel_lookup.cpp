#include "core/detector_pixel_lookup.hpp"

#include <cmath>

namespace livedrp {

namespace {

// One axis of a segment: raw pixel `raw` and which of its normal pixels (`part`, 0 for a normal
// pixel) covers normal pixel `cell` counted from the segment's edge.
struct AxisPixel {
  int raw = 0;
  int part = 0;
};

std::optional<AxisPixel> axis_pixel(double cell, int extent, int asic, int edge_factor) {
  if (cell < 0 || cell >= expanded_coordinate(extent, extent, asic, edge_factor))
    return std::nullopt;
  if (edge_factor == 1 || asic <= 0) return AxisPixel{int(cell), 0};
  // Raw pixel i starts at expanded_coordinate(i) normal pixels, a whole number that grows with i:
  // the last start at or before `cell` is the pixel holding it.
  int low = 0, high = extent - 1;
  while (low < high) {
    const int middle = low + (high - low + 1) / 2;
    if (expanded_coordinate(middle, extent, asic, edge_factor) <= cell)
      low = middle;
    else
      high = middle - 1;
  }
  return AxisPixel{low, int(cell - expanded_coordinate(low, extent, asic, edge_factor))};
}

// A detector pixel that lands on the image pixel asked about, and where in the assembly's order
// of writes it lands there.
struct Landing {
  DetectorPixel pixel;
  bool large = false;  // written in the assembly's second pass (large pixels' shares)
  int part = 0;        // which of the large pixel's parts, in the order the shares are written
};

// Whether `next` is written after `current` (ImageAssembly::assemble: every pixel in event order,
// then the large pixels' shares in event order, part by part).
bool written_later(const Landing& next, const Landing& current) {
  if (next.large != current.large) return next.large;
  if (next.pixel.index != current.pixel.index) return next.pixel.index > current.pixel.index;
  return next.part > current.part;
}

}  // namespace

std::optional<DetectorPixel> detector_pixel_at(const AssemblyLayout& layout, std::size_t row,
                                               std::size_t column) {
  if (row >= layout.height || column >= layout.width) return std::nullopt;
  const std::size_t wanted = row * layout.width + column;
  const SegmentGrid& grid = layout.grid;
  const double extent_rows = grid.expanded_rows(), extent_cols = grid.expanded_cols();
  // The image pixel's centre in assembled coordinates.
  const double x = layout.origin_x + double(column) + 0.5;
  const double y = layout.origin_y + double(row) + 0.5;

  std::optional<Landing> last;
  for (std::size_t segment = 0; segment < layout.placement.size(); ++segment) {
    const SegmentPlacement& placement = layout.placement[segment];
    // Back into the segment's frame, in normal pixels from its corner (the transpose of
    // placed_point's rotation).
    const auto [c, s] = quarter_turn(placement);
    const double dx = x - placement.x_px, dy = y - placement.y_px;
    const double expanded_col = c * dx + s * dy;
    const double expanded_row = -s * dx + c * dy;
    if (expanded_row < -1.5 || expanded_row > extent_rows + 1.5 || expanded_col < -1.5 ||
        expanded_col > extent_cols + 1.5)
      continue;
    // A normal pixel's centre (cell + 0.5) that lands on this image pixel lies within half a pixel
    // of its centre along both axes (a quarter turn keeps the square a square): cell is
    // floor(expanded) or, on an edge, one less. One more either way absorbs rounding, and
    // image_pixel_of, the assembly's own rule, decides.
    for (double row_cell = std::floor(expanded_row) - 1; row_cell <= std::floor(expanded_row) + 1;
         ++row_cell) {
      const auto ss = axis_pixel(row_cell, grid.rows, grid.asic_rows, grid.edge_factor);
      if (!ss) continue;
      for (double col_cell = std::floor(expanded_col) - 1; col_cell <= std::floor(expanded_col) + 1;
           ++col_cell) {
        const auto fs = axis_pixel(col_cell, grid.cols, grid.asic_cols, grid.edge_factor);
        if (!fs) continue;
        if (image_pixel_of(layout, int(segment), ss->raw, fs->raw, ss->part, fs->part) != wanted)
          continue;
        Landing landing;
        landing.pixel.segment = int(segment);
        landing.pixel.ss = ss->raw;
        landing.pixel.fs = fs->raw;
        landing.pixel.index =
            (std::uint64_t(segment) * std::uint64_t(grid.rows) + std::uint64_t(ss->raw)) *
                std::uint64_t(grid.cols) +
            std::uint64_t(fs->raw);
        const int col_size = grid.col_size(fs->raw);
        landing.large = grid.row_size(ss->raw) * col_size > 1;
        landing.part = ss->part * col_size + fs->part;
        if (!last || written_later(landing, *last)) last = landing;
      }
    }
  }
  if (!last) return std::nullopt;
  return last->pixel;
}

}  // namespace livedrp
