#pragma once
// Where the pixels of one segment land in the assembled image: the segment's grid (large pixels
// at internal ASIC edges), its placement, and the map from a point of the segment to assembled
// coordinates. Kept apart from the detector description so that the protocol library (and the
// widgets through it) can place pixels with the very arithmetic the engine assembles with.

namespace livedrp {

// Where a segment lands in the assembled image: its pixel (row 0, col 0) corner, in assembled
// pixels, and a rotation by a multiple of 90 degrees about that corner.
struct SegmentPlacement {
  double x_px = 0;
  double y_px = 0;
  int rotation_deg = 0;

  bool operator==(const SegmentPlacement&) const = default;
};

// The pixel grid of one segment as the sensor has it. Its ASICs tile it in asic_rows x asic_cols
// pixels; where two ASICs meet inside the segment, the sensor pixels on both sides of the edge
// are edge_factor normal pixels wide (Jungfrau: 2, "double pixels"), and a pixel on two such
// edges, where four ASICs meet, is edge_factor x edge_factor normal pixels ("quadruple pixels").
// The segment's outer border has normal pixels. Positions along each axis are counted in normal
// pixels from the segment's corner: a Jungfrau module of 512 x 1024 raw pixels spans 514 x 1030.
struct SegmentGrid {
  int rows = 0, cols = 0;            // raw pixels per segment
  int asic_rows = 0, asic_cols = 0;  // 0: one ASIC covers the segment
  int edge_factor = 1;               // 1: every pixel has the normal size

  // Size of raw row `row` (column `col`) across the slow (fast) axis, in normal pixels.
  int row_size(int row) const;
  int col_size(int col) const;
  // The segment's extent across the slow (fast) axis, in normal pixels: 514 and 1030 for a
  // Jungfrau module.
  double expanded_rows() const;
  double expanded_cols() const;

  bool operator==(const SegmentGrid&) const = default;
};

// Along one axis of `extent` raw pixels tiled by ASICs of `asic` pixels: where raw coordinate
// `raw` (pixel i spans [i, i + 1)) lies, in normal pixels from the segment's edge. Linear inside
// every pixel, so a wide pixel's [i, i + 1) stretches over edge_factor normal pixels; beyond
// the segment it continues with normal pixels.
double expanded_coordinate(double raw, int extent, int asic, int edge_factor);

// A point (row, col) of a segment, in raw pixels from its pixel (0, 0) corner (a pixel's centre is
// at +0.5, +0.5), in the assembled image. The grid first widens the pixels at internal ASIC edges
// (expanded_coordinate along each axis: the centre of Jungfrau's raw column 255 lies at 256, of
// column 256 at 258, of column 257 at 259.5); then the segment's corner sits at (x_px, y_px) and
// the segment is rotated about it, so the fast-scan (col) axis points along (cos, sin) of
// rotation_deg in the (x, y) frame and the slow-scan (row) axis along (-sin, cos). A grid of
// normal pixels (edge_factor 1) places raw coordinates as they are.
struct AssembledPoint {
  double x = 0, y = 0;
};
AssembledPoint assembled_point(const SegmentPlacement& placement, const SegmentGrid& grid,
                               double row, double col);
// The same for a point already in normal pixels from the segment's corner (expanded_row,
// expanded_col): the rotation and the shift alone.
AssembledPoint placed_point(const SegmentPlacement& placement, double expanded_row,
                            double expanded_col);

// cos and sin of a placement's rotation, exactly 0 or +-1 (rotations are multiples of 90 degrees).
struct QuarterTurn {
  double cos = 1, sin = 0;
};
QuarterTurn quarter_turn(const SegmentPlacement& placement);

}  // namespace livedrp
