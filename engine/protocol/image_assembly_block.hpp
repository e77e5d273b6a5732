#pragma once
// The `image` payload's optional `assembly` block (docs/protocol.md): how the engine placed the
// detector's pixels on the image (core/assembly_layout.hpp), so that a viewer on any host can
// name the segment and pixel under its mouse. A few hundred bytes beside a megapixel image.
// Internal to the protocol library: clients get the decoded ImageFrame::assembly.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/assembly_layout.hpp"

namespace livedrp::protocol::detail {

// A placement or an origin further out than this is no detector's (a detector description's
// offsets stop at 2^20 pixels, and the image's origin lies within a segment's size of them),
// and would cost the pixel's own position its precision in double arithmetic.
inline constexpr double kMaxAssemblyOffsetPx = double(1 << 21);
// Whole normal pixels a large pixel spans (a detector description's large_pixels.factor).
inline constexpr int kMaxLargePixelFactor = 16;

nlohmann::json assembly_to_json(const AssemblyLayout& layout);

// Reads the block of an image of `height` x `width` pixels and `segments` segments, and checks
// it (check_assembly). Throws ProtocolError naming the field ("image payload: field
// 'assembly.placement[3].x_px' ...").
AssemblyLayout assembly_from_json(const nlohmann::json& block, std::uint64_t height,
                                  std::uint64_t width, std::uint64_t segments);

// What a decoder requires of a layout, and the encoder before sending it: a segment grid of 1 to
// 16384 raw pixels a side with ASICs that fit it, a large-pixel factor in 1..16, one placement per
// segment with finite offsets within kMaxAssemblyOffsetPx and a rotation of 0, 90, 180 or 270
// degrees, a finite origin, the image's own size, and every segment inside the image (so that
// every detector pixel has an image pixel). Throws ProtocolError starting "image message:
// assembly".
void check_assembly(const AssemblyLayout& layout, std::uint64_t height, std::uint64_t width,
                    std::uint64_t segments);

}  // namespace livedrp::protocol::detail
