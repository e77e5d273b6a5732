#include "protocol/image_assembly_block.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "protocol/payload_reader.hpp"
#include "protocol/peaks_topic.hpp"

namespace livedrp::protocol::detail {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& what) {
  throw ProtocolError(std::string(kTopicImage) + " message: assembly " + what);
}

std::string number_text(double value) {
  // Placements are mostly whole pixels: no trailing zeros, but every digit a fraction has.
  json number = value;
  return number.dump();
}

// Two integers [first, second], each in 0..kMaxImageSide; check_assembly judges them further.
std::array<int, 2> pair_of_sizes(const PayloadReader& reader, const std::string& name) {
  const json& value = reader.field(name);
  if (!value.is_array() || value.size() != 2)
    reader.fail(name, "must be an array of two integers, got " + describe(value));
  std::array<int, 2> sizes{};
  for (std::size_t axis = 0; axis < 2; ++axis) {
    const std::string element = name + "[" + std::to_string(axis) + "]";
    const std::uint64_t size = reader.count_value(value[axis], element);
    if (size > kMaxImageSide)
      reader.fail(element, "must be at most " + std::to_string(kMaxImageSide) + ", got " +
                               std::to_string(size));
    sizes[axis] = int(size);
  }
  return sizes;
}

double finite_number(const PayloadReader& reader, const json& value, const std::string& name) {
  if (!value.is_number() || !std::isfinite(value.get<double>()))
    reader.fail(name, "must be a finite number, got " + describe(value));
  return value.get<double>();
}

}  // namespace

json assembly_to_json(const AssemblyLayout& layout) {
  json placement = json::array();
  for (const SegmentPlacement& segment : layout.placement)
    placement.push_back(
        {{"x_px", segment.x_px}, {"y_px", segment.y_px}, {"rotation_deg", segment.rotation_deg}});
  const SegmentGrid& grid = layout.grid;
  return {{"segment_shape", {grid.rows, grid.cols}},
          {"asic_shape", {grid.asic_rows, grid.asic_cols}},
          {"large_pixel_factor", grid.edge_factor},
          {"origin", {{"x_px", layout.origin_x}, {"y_px", layout.origin_y}}},
          {"placement", std::move(placement)}};
}

AssemblyLayout assembly_from_json(const json& block, std::uint64_t height, std::uint64_t width,
                                  std::uint64_t segments) {
  const PayloadReader reader(block, std::string(kTopicImage), "assembly.");
  if (!block.is_object())
    throw ProtocolError(std::string(kTopicImage) +
                        " payload: field 'assembly' must be an object, got " + describe(block));
  AssemblyLayout layout;
  layout.height = std::size_t(height);
  layout.width = std::size_t(width);
  const auto [rows, cols] = pair_of_sizes(reader, "segment_shape");
  const auto [asic_rows, asic_cols] = pair_of_sizes(reader, "asic_shape");
  layout.grid = {rows, cols, asic_rows, asic_cols, 1};
  const std::uint64_t factor = reader.count("large_pixel_factor");
  if (factor < 1 || factor > std::uint64_t(kMaxLargePixelFactor))
    reader.fail("large_pixel_factor", "must be in 1.." + std::to_string(kMaxLargePixelFactor) +
                                          ", got " + std::to_string(factor));
  layout.grid.edge_factor = int(factor);

  const json& origin = reader.field("origin");
  if (!origin.is_object())
    reader.fail("origin", "must be an object {\"x_px\": X, \"y_px\": Y}, got " + describe(origin));
  const PayloadReader origin_reader(origin, std::string(kTopicImage), "assembly.origin.");
  layout.origin_x = finite_number(origin_reader, origin_reader.field("x_px"), "x_px");
  layout.origin_y = finite_number(origin_reader, origin_reader.field("y_px"), "y_px");

  const json& placement = reader.field("placement");
  if (!placement.is_array())
    reader.fail("placement",
                "must be an array of one object per segment, got " + describe(placement));
  if (placement.size() != segments)
    reader.fail("placement", "has " + std::to_string(placement.size()) + " entries for " +
                                 std::to_string(segments) + " segments");
  for (std::size_t segment = 0; segment < placement.size(); ++segment) {
    const std::string name = "placement[" + std::to_string(segment) + "]";
    const json& entry = placement[segment];
    if (!entry.is_object())
      reader.fail(
          name, "must be an object {\"x_px\", \"y_px\", \"rotation_deg\"}, got " + describe(entry));
    const PayloadReader entry_reader(entry, std::string(kTopicImage), "assembly." + name + ".");
    SegmentPlacement place;
    place.x_px = finite_number(entry_reader, entry_reader.field("x_px"), "x_px");
    place.y_px = finite_number(entry_reader, entry_reader.field("y_px"), "y_px");
    const json& rotation = entry_reader.field("rotation_deg");
    if (!rotation.is_number_integer() ||
        (rotation.get<std::int64_t>() != 0 && rotation.get<std::int64_t>() != 90 &&
         rotation.get<std::int64_t>() != 180 && rotation.get<std::int64_t>() != 270))
      entry_reader.fail("rotation_deg", "must be 0, 90, 180 or 270, got " + describe(rotation));
    place.rotation_deg = rotation.get<int>();
    layout.placement.push_back(place);
  }
  check_assembly(layout, height, width, segments);
  return layout;
}

void check_assembly(const AssemblyLayout& layout, std::uint64_t height, std::uint64_t width,
                    std::uint64_t segments) {
  if (layout.height != height || layout.width != width)
    fail("describes an image of " + std::to_string(layout.width) + " x " +
         std::to_string(layout.height) + " pixels, the image has " + std::to_string(width) + " x " +
         std::to_string(height) + " (width x height)");
  const SegmentGrid& grid = layout.grid;
  if (grid.rows < 1 || grid.cols < 1 || std::uint64_t(grid.rows) > kMaxImageSide ||
      std::uint64_t(grid.cols) > kMaxImageSide)
    fail("segment_shape must be 1.." + std::to_string(kMaxImageSide) + " raw pixels a side, got [" +
         std::to_string(grid.rows) + ", " + std::to_string(grid.cols) + "]");
  if (grid.asic_rows < 0 || grid.asic_cols < 0 || grid.asic_rows > grid.rows ||
      grid.asic_cols > grid.cols)
    fail("asic_shape [" + std::to_string(grid.asic_rows) + ", " + std::to_string(grid.asic_cols) +
         "] does not fit segment_shape [" + std::to_string(grid.rows) + ", " +
         std::to_string(grid.cols) + "] (0: one ASIC)");
  if (grid.edge_factor < 1 || grid.edge_factor > kMaxLargePixelFactor)
    fail("large_pixel_factor must be in 1.." + std::to_string(kMaxLargePixelFactor) + ", got " +
         std::to_string(grid.edge_factor));
  if (layout.placement.size() != segments)
    fail("places " + std::to_string(layout.placement.size()) + " segments of the image's " +
         std::to_string(segments));
  const auto offset_ok = [](double value) {
    return std::isfinite(value) && std::fabs(value) <= kMaxAssemblyOffsetPx;
  };
  if (!offset_ok(layout.origin_x) || !offset_ok(layout.origin_y))
    fail("origin (" + number_text(layout.origin_x) + ", " + number_text(layout.origin_y) +
         ") must be finite and within +-" + number_text(kMaxAssemblyOffsetPx) + " pixels");

  const double extent_rows = grid.expanded_rows(), extent_cols = grid.expanded_cols();
  for (std::size_t segment = 0; segment < layout.placement.size(); ++segment) {
    const SegmentPlacement& place = layout.placement[segment];
    const std::string which = "segment " + std::to_string(segment);
    if (!offset_ok(place.x_px) || !offset_ok(place.y_px))
      fail("places " + which + " at (" + number_text(place.x_px) + ", " + number_text(place.y_px) +
           "): offsets must be finite and within +-" + number_text(kMaxAssemblyOffsetPx) +
           " pixels");
    if (place.rotation_deg != 0 && place.rotation_deg != 90 && place.rotation_deg != 180 &&
        place.rotation_deg != 270)
      fail("rotates " + which + " by " + std::to_string(place.rotation_deg) +
           " degrees, not 0, 90, 180 or 270");
    // The segment's corners, from the image's corner: every pixel centre inside them must have
    // an image pixel, as the engine's image spans the placement's bounds rounded out.
    double left = 0, right = 0, top = 0, bottom = 0;
    bool first = true;
    for (const double row : {0.0, extent_rows})
      for (const double col : {0.0, extent_cols}) {
        const AssembledPoint corner = placed_point(place, row, col);
        const double x = corner.x - layout.origin_x, y = corner.y - layout.origin_y;
        left = first ? x : std::min(left, x), right = first ? x : std::max(right, x);
        top = first ? y : std::min(top, y), bottom = first ? y : std::max(bottom, y);
        first = false;
      }
    if (left < 0 || top < 0 || right > double(width) || bottom > double(height))
      fail("places " + which + " over columns " + number_text(left) + " to " + number_text(right) +
           " and rows " + number_text(top) + " to " + number_text(bottom) +
           ", outside the image's " + std::to_string(width) + " x " + std::to_string(height) +
           " pixels (width x height)");
  }
}

}  // namespace livedrp::protocol::detail
