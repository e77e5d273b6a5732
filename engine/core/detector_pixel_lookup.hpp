#pragma once
// Which detector pixel an assembled image pixel shows: the inverse of the engine's assembly
// (core/image_assembly.hpp), for a viewer's read-out ("segment 5, ss 12, fs 300") of a hot pixel
// or a dead module. Pure and cheap (a few segments' worth of arithmetic a call), so a widget can
// ask on every mouse move.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/assembly_layout.hpp"

namespace livedrp {

struct DetectorPixel {
  int segment = 0;
  int ss = 0;  // slow-scan row in the segment's own raw frame
  int fs = 0;  // fast-scan column in it
  // Index in the event's pixels (the engine's order: segment, then ss, then fs).
  std::uint64_t index = 0;

  bool operator==(const DetectorPixel&) const = default;
};

// The detector pixel whose value image pixel (row, column) holds, exactly as the assembly wrote
// it: every detector pixel goes to the image pixel holding its centre, a large pixel to each of
// the 2 or 4 image pixels its parts' centres fall in (each maps back to it), and where pixels of
// overlapping segments land on one image pixel the assembly's last write wins here too (a large
// pixel's share over a normal pixel, else the later pixel in event order). nullopt for a gap
// (no detector pixel lands there) and for a pixel outside the image.
std::optional<DetectorPixel> detector_pixel_at(const AssemblyLayout& layout, std::size_t row,
                                               std::size_t column);

}  // namespace livedrp
