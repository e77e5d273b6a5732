#include "core/image_assembly.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/error.hpp"

namespace livedrp {

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
  layout_.grid = detector.grid();
  layout_.placement = detector.placement;
  layout_.origin_x = std::floor(bounds.min_x);
  layout_.origin_y = std::floor(bounds.min_y);
  const double width = std::ceil(bounds.max_x) - layout_.origin_x;
  const double height = std::ceil(bounds.max_y) - layout_.origin_y;
  if (width > double(max_side) || height > double(max_side))
    throw InputError("image assembly: " + name + " assembles to " +
                     std::to_string(std::int64_t(width)) + " x " +
                     std::to_string(std::int64_t(height)) + " pixels (width x height), more than " +
                     std::to_string(max_side) + " on a side");
  layout_.width = std::size_t(width);
  layout_.height = std::size_t(height);
  if (layout_.width * layout_.height > std::size_t(std::numeric_limits<std::uint32_t>::max()))
    throw InputError("image assembly: " + name + " image of " + std::to_string(layout_.width) +
                     " x " + std::to_string(layout_.height) +
                     " pixels does not fit 32-bit pixel indices");

  const SegmentGrid& grid = layout_.grid;
  target_.resize(detector.pixels());
  std::size_t pixel = 0;
  for (int segment = 0; segment < detector.segments; ++segment) {
    for (int row = 0; row < detector.rows; ++row) {
      const int row_size = grid.row_size(row);
      for (int col = 0; col < detector.cols; ++col, ++pixel) {
        const int col_size = grid.col_size(col);
        if (row_size == 1 && col_size == 1) {
          target_[pixel] = std::uint32_t(image_pixel_of(layout_, segment, row, col));
          continue;
        }
        // A large pixel: each normal pixel's worth of it goes where its own centre lies.
        const float fraction = 1.0f / float(row_size * col_size);
        for (int a = 0; a < row_size; ++a)
          for (int b = 0; b < col_size; ++b) {
            const auto image_pixel =
                std::uint32_t(image_pixel_of(layout_, segment, row, col, a, b));
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
  x = point.x - layout_.origin_x - 0.5;
  y = point.y - layout_.origin_y - 0.5;
}

void ImageAssembly::assemble(const float* pixels, float* out) const {
  std::fill(out, out + layout_.width * layout_.height, std::numeric_limits<float>::quiet_NaN());
  for (std::size_t pixel = 0; pixel < target_.size(); ++pixel) out[target_[pixel]] = pixels[pixel];
  // Large pixels overwrite their first image pixel too: each covered pixel gets its share.
  for (const Share& share : shares_) out[share.image_pixel] = pixels[share.pixel] * share.fraction;
}

}  // namespace livedrp
