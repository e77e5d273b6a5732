#include "integrate/layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/crystfel_geometry.hpp"
#include "core/error.hpp"

namespace livedrp::integrate {
namespace {

std::string number_text(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

// Lab point (pixels) to the detector plane (m) by layout_from_geometry's convention. Divided by
// res rather than multiplied by 1 / res: one rounding, as a reference computed in numpy has.
PlanePoint to_plane(double x, double y, double res) {
  return {static_cast<float>(y / res), static_cast<float>(-x / res)};
}

}  // namespace

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
  l.grid = detector.grid();
  return l;
}

PixelLayout layout_from_geometry(const crystfel::Geometry& geometry) {
  const std::string who = "CrystFEL geometry '" + geometry.file + "'";
  if (geometry.panels.empty() || geometry.slab_height < 1 || geometry.slab_width < 1)
    throw InputError(who + " has no panels, so no pixels to integrate");
  GeometryPlacement g;
  g.source = geometry.file;
  for (const crystfel::GeomPanel& p : geometry.panels) {
    // The parser refuses these already; a geometry built in code gets the same check, as a
    // pixel size of 1 / res would otherwise be infinite or negative.
    if (!(p.res > 0.0) || !std::isfinite(p.res))
      throw InputError(who + ": panel '" + p.name + "' has res " + number_text(p.res) +
                       "; res (pixels per metre) must be a finite positive number");
    for (const double v : {p.corner_x, p.corner_y, p.fs.x, p.fs.y, p.ss.x, p.ss.y})
      if (!std::isfinite(v))
        throw InputError(who + ": panel '" + p.name + "' has a corner or direction that is not " +
                         "a finite number");
    g.panels.push_back({p.name, p.min_fs, p.min_ss, p.corner_x, p.corner_y, p.fs.x, p.fs.y, p.ss.x,
                        p.ss.y, p.res});
  }
  g.panel_of_pixel = crystfel::panel_map(geometry);
  PixelLayout l;
  l.rows = geometry.slab_height;
  l.cols = geometry.slab_width;
  l.bad = crystfel::bad_mask(geometry);
  l.geometry = std::move(g);
  return l;
}

std::optional<std::array<PlanePoint, 4>> geometry_pixel_corners(const PixelLayout& layout,
                                                                std::size_t pixel) {
  if (!layout.geometry || pixel >= layout.geometry->panel_of_pixel.size()) return std::nullopt;
  const std::int32_t n = layout.geometry->panel_of_pixel[pixel];
  if (n < 0) return std::nullopt;
  const PanelPlacement& p = layout.geometry->panels[std::size_t(n)];
  const double i = double(int(pixel % std::size_t(layout.cols)) - p.min_fs);
  const double j = double(int(pixel / std::size_t(layout.cols)) - p.min_ss);
  // Each corner straight from the panel's numbers (not stepped from a neighbour), so that every
  // pixel's corners carry the same single rounding.
  const auto at = [&p](double a, double b) {
    return to_plane(p.corner_x + a * p.fs_x + b * p.ss_x, p.corner_y + a * p.fs_y + b * p.ss_y,
                    p.res);
  };
  return std::array<PlanePoint, 4>{at(i, j), at(i, j + 1.0), at(i + 1.0, j + 1.0), at(i + 1.0, j)};
}

PlanePoint corners_centre(const std::array<PlanePoint, 4>& c) {
  // pyFAI weights each corner by (1 - 0.5) * (1 - 0.5) = 0.25 in double and adds them in order.
  const auto mean = [](double a, double b, double c_, double d) {
    return static_cast<float>(0.25 * a + 0.25 * b + 0.25 * c_ + 0.25 * d);
  };
  return {mean(c[0].p1, c[1].p1, c[2].p1, c[3].p1), mean(c[0].p2, c[1].p2, c[2].p2, c[3].p2)};
}

PixelCentre pixel_centre(const PixelLayout& layout, int segment, int row, int col) {
  if (layout.placement.empty()) return {row + 0.5, col + 0.5};
  // The one placement convention of core/detector.hpp (the simulator and the peak finder's
  // radius use it too).
  const AssembledPoint centre =
      assembled_point(layout.placement[std::size_t(segment)], layout.grid, row + 0.5, col + 0.5);
  return {centre.y, centre.x};
}

PixelSpan pixel_span(const PixelLayout& layout, int segment, int row, int col) {
  if (layout.placement.empty()) return {row + 0.0, row + 1.0, col + 0.0, col + 1.0};
  const SegmentPlacement& placement = layout.placement[std::size_t(segment)];
  // Opposite corners of the pixel; a rotation by a multiple of 90 degrees keeps the rectangle
  // axis-aligned, so they bound it whichever way round they come.
  const AssembledPoint a = assembled_point(placement, layout.grid, row, col);
  const AssembledPoint b = assembled_point(placement, layout.grid, row + 1.0, col + 1.0);
  return {std::min(a.y, b.y), std::max(a.y, b.y), std::min(a.x, b.x), std::max(a.x, b.x)};
}

int pixel_area(const PixelLayout& layout, int row, int col) {
  if (layout.placement.empty()) return 1;
  return layout.grid.row_size(row) * layout.grid.col_size(col);
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
