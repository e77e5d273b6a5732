#include "core/segment_geometry.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace livedrp {

namespace {

// Size of raw pixel `index` of an axis across that axis, in normal pixels.
int pixel_size_along(int index, int extent, int asic, int edge_factor) {
  if (edge_factor == 1 || asic <= 0 || index < 0 || index >= extent) return 1;
  const bool last_before_edge = (index + 1) % asic == 0 && index + 1 < extent;
  const bool first_after_edge = index % asic == 0 && index > 0;
  return last_before_edge || first_after_edge ? edge_factor : 1;
}

}  // namespace

int SegmentGrid::row_size(int row) const {
  return pixel_size_along(row, rows, asic_rows, edge_factor);
}

int SegmentGrid::col_size(int col) const {
  return pixel_size_along(col, cols, asic_cols, edge_factor);
}

double expanded_coordinate(double raw, int extent, int asic, int edge_factor) {
  if (edge_factor == 1 || asic <= 0) return raw;
  // Each wide pixel [w, w + 1) adds (edge_factor - 1) normal pixels over its own width: the part
  // of it below `raw` counts, so the map is continuous and linear inside every pixel.
  double widened = 0.0;
  for (int edge = asic; edge < extent; edge += asic)
    widened +=
        std::clamp(raw - double(edge - 1), 0.0, 1.0) + std::clamp(raw - double(edge), 0.0, 1.0);
  return raw + double(edge_factor - 1) * widened;
}

double SegmentGrid::expanded_rows() const {
  return expanded_coordinate(rows, rows, asic_rows, edge_factor);
}

double SegmentGrid::expanded_cols() const {
  return expanded_coordinate(cols, cols, asic_cols, edge_factor);
}

QuarterTurn quarter_turn(const SegmentPlacement& placement) {
  const double angle = placement.rotation_deg * std::numbers::pi / 180.0;
  // Rotations are multiples of 90 degrees: round so that cos and sin are exactly 0 or +-1.
  return {std::round(std::cos(angle)), std::round(std::sin(angle))};
}

AssembledPoint placed_point(const SegmentPlacement& placement, double row, double col) {
  const auto [c, s] = quarter_turn(placement);
  return {placement.x_px + c * col - s * row, placement.y_px + s * col + c * row};
}

AssembledPoint assembled_point(const SegmentPlacement& placement, const SegmentGrid& grid,
                               double raw_row, double raw_col) {
  const double row = expanded_coordinate(raw_row, grid.rows, grid.asic_rows, grid.edge_factor);
  const double col = expanded_coordinate(raw_col, grid.cols, grid.asic_cols, grid.edge_factor);
  return placed_point(placement, row, col);
}

}  // namespace livedrp
