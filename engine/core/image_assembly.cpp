#include "core/image_assembly.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/error.hpp"

namespace livedrp {

namespace {

// A pixel centre lands on the image pixel containing it. Pixel centres of segments placed at
// whole pixels sit exactly half-way inside an image pixel, so rounding never decides; for
// fractional placements a centre on an image pixel edge goes to the pixel to its right / below.
std::size_t image_index(double coordinate, std::size_t side) {
  const double cell = std::floor(coordinate);
  // Centres lie inside the rounded-out bounds by construction; the clamp only guards against
  // the last ulp of a rotation's arithmetic.
  if (cell < 0) return 0;
  if (cell >= double(side)) return side - 1;
  return std::size_t(cell);
}

}  // namespace

ImageAssembly::ImageAssembly(const DetectorDescription& detector, std::size_t max_side)
    : detector_(detector) {
  const std::string name = "detector '" + detector.name + "'";
  if (detector.segments <= 0 || detector.rows <= 0 || detector.cols <= 0)
    throw InputError("image assembly: " + name + " has no pixels (" +
                     std::to_string(detector.segments) + " segments of " +
                     std::to_string(detector.rows) + " x " + std::to_string(detector.cols) + ")");
  if (detector.placement.size() != std::size_t(detector.segments))
    throw InputError("image assembly: " + name + " places " +
                     std::to_string(detector.placement.size()) + " of its " +
                     std::to_string(detector.segments) +
                     " segments; every segment needs a placement to assemble an image");
  for (std::size_t segment = 0; segment < detector.placement.size(); ++segment) {
    const SegmentPlacement& placement = detector.placement[segment];
    if (!std::isfinite(placement.x_px) || !std::isfinite(placement.y_px))
      throw InputError("image assembly: " + name + " segment " + std::to_string(segment) +
                       " has a placement that is not a finite number");
  }

  const AssembledBounds bounds = assembled_bounds(detector);
  origin_x_ = std::floor(bounds.min_x);
  origin_y_ = std::floor(bounds.min_y);
  const double width = std::ceil(bounds.max_x) - origin_x_;
  const double height = std::ceil(bounds.max_y) - origin_y_;
  if (width > double(max_side) || height > double(max_side))
    throw InputError("image assembly: " + name + " assembles to " +
                     std::to_string(std::int64_t(width)) + " x " +
                     std::to_string(std::int64_t(height)) + " pixels (width x height), more than " +
                     std::to_string(max_side) + " on a side");
  width_ = std::size_t(width);
  height_ = std::size_t(height);
  if (width_ * height_ > std::size_t(std::numeric_limits<std::uint32_t>::max()))
    throw InputError("image assembly: " + name + " image of " + std::to_string(width_) + " x " +
                     std::to_string(height_) + " pixels does not fit 32-bit pixel indices");

  const SegmentGrid grid = detector.grid();
  const auto image_pixel_at = [&](const SegmentPlacement& placement, double row, double col) {
    const AssembledPoint centre = assembled_point(placement, grid, row, col);
    const std::size_t column = image_index(centre.x - origin_x_, width_);
    const std::size_t image_row = image_index(centre.y - origin_y_, height_);
    return std::uint32_t(image_row * width_ + column);
  };
  target_.resize(detector.pixels());
  std::size_t pixel = 0;
  for (int segment = 0; segment < detector.segments; ++segment) {
    const SegmentPlacement& placement = detector.placement[std::size_t(segment)];
    for (int row = 0; row < detector.rows; ++row) {
      const int row_size = grid.row_size(row);
      for (int col = 0; col < detector.cols; ++col, ++pixel) {
        const int col_size = grid.col_size(col);
        if (row_size == 1 && col_size == 1) {
          target_[pixel] = image_pixel_at(placement, row + 0.5, col + 0.5);
          continue;
        }
        // A large pixel: the centres of the normal pixels it spans, at raw coordinates
        // (a + 0.5) / size inside it, since the expansion is linear within a pixel.
        const float fraction = 1.0f / float(row_size * col_size);
        for (int a = 0; a < row_size; ++a)
          for (int b = 0; b < col_size; ++b) {
            const std::uint32_t image_pixel =
                image_pixel_at(placement, row + (a + 0.5) / row_size, col + (b + 0.5) / col_size);
            if (a == 0 && b == 0) target_[pixel] = image_pixel;
            shares_.push_back({std::uint32_t(pixel), image_pixel, fraction});
          }
      }
    }
  }
}

void ImageAssembly::slab_to_image(double fs, double ss, double& x, double& y) const {
  const int rows = detector_.rows;
  // The slab row a point belongs to decides its segment: slab pixel rows span [ss - 0.5, ss + 0.5).
  int segment = int(std::floor((ss + 0.5) / rows));
  // A centroid sits inside its segment; keep a point a rounding error outside with its neighbour.
  segment = std::clamp(segment, 0, detector_.segments - 1);
  const double row = ss - double(segment) * rows;
  // Slab coordinates put pixel centres at integers, assembled_point at +0.5 from the corner.
  const AssembledPoint point = assembled_point(detector_.placement[std::size_t(segment)],
                                               detector_.grid(), row + 0.5, fs + 0.5);
  // Back to image pixel coordinates with pixel centres at integers.
  x = point.x - origin_x_ - 0.5;
  y = point.y - origin_y_ - 0.5;
}

void ImageAssembly::assemble(const float* pixels, float* out) const {
  std::fill(out, out + width_ * height_, std::numeric_limits<float>::quiet_NaN());
  for (std::size_t pixel = 0; pixel < target_.size(); ++pixel) out[target_[pixel]] = pixels[pixel];
  // Large pixels overwrite their first image pixel too: each covered pixel gets its share.
  for (const Share& share : shares_) out[share.image_pixel] = pixels[share.pixel] * share.fraction;
}

}  // namespace livedrp
