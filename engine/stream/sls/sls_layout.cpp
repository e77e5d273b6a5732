#include "stream/sls/sls_layout.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"

namespace livedrp::stream::sls {
namespace {

// Bytes per pixel of the only bit mode the source takes (16).
constexpr std::size_t kPixelBytes = 2;

std::string pair_text(std::uint64_t x, std::uint64_t y) {
  return "[" + std::to_string(x) + ", " + std::to_string(y) + "]";
}

SlsPartCheck refuse(std::string reason, std::string problem) {
  return {std::nullopt, std::move(reason), std::move(problem)};
}

// Index of each distinct coordinate in ascending order.
std::map<double, int> ranks_of(const std::vector<double>& coordinates) {
  std::map<double, int> ranks;
  for (double value : coordinates) ranks.emplace(value, 0);
  int rank = 0;
  for (auto& [value, index] : ranks) index = rank++;
  return ranks;
}

}  // namespace

SlsLayout::SlsLayout(const DetectorDescription& detector, int ports_per_module)
    : detector_(detector), ports_per_module_(ports_per_module) {
  const std::string who = "sls source: detector '" + detector.name + "'";
  if (ports_per_module != 1 && ports_per_module != 2)
    throw InputError(who + ": " + std::to_string(ports_per_module) +
                     " ports per module; a Jungfrau module streams over 1 or 2 ports");
  if (detector.encoding != RawEncoding::Jungfrau)
    throw InputError(who + " has " + std::string(to_string(detector.encoding)) +
                     " raw words; the sls source feeds detectors with Jungfrau raw words "
                     "(16 bits, gain stage in bits 15:14)");
  if (detector.segments <= 0 || detector.rows <= 0 || detector.cols <= 0 ||
      int(detector.placement.size()) != detector.segments)
    throw InputError(who + " has no module layout (segments, segment_shape, placement)");
  if (detector.rows % ports_per_module != 0)
    throw InputError(who + ": " + std::to_string(detector.rows) +
                     " rows per module do not split into " + std::to_string(ports_per_module) +
                     " ports");

  std::vector<double> xs, ys;
  for (int segment = 0; segment < detector.segments; ++segment) {
    const SegmentPlacement& placement = detector.placement[std::size_t(segment)];
    if (placement.rotation_deg % 360 != 0)
      throw InputError(who + ": segment " + std::to_string(segment) + " is rotated by " +
                       std::to_string(placement.rotation_deg) +
                       " degrees; the sls source places modules on an unrotated grid");
    xs.push_back(placement.x_px);
    ys.push_back(placement.y_px);
  }
  const std::map<double, int> column_of_x = ranks_of(xs);
  const std::map<double, int> row_of_y = ranks_of(ys);
  module_columns_ = int(column_of_x.size());
  module_rows_ = int(row_of_y.size());
  if (module_rows_ * module_columns_ != detector.segments)
    throw InputError(who + ": its " + std::to_string(detector.segments) +
                     " segments are not a full grid of module rows and columns (" +
                     std::to_string(module_rows_) + " distinct y_px, " +
                     std::to_string(module_columns_) + " distinct x_px)");

  segment_at_.assign(std::size_t(detector.segments), -1);
  module_of_.resize(std::size_t(detector.segments));
  for (int segment = 0; segment < detector.segments; ++segment) {
    const SegmentPlacement& placement = detector.placement[std::size_t(segment)];
    const int row = row_of_y.at(placement.y_px);
    const int column = column_of_x.at(placement.x_px);
    int& cell = segment_at_[std::size_t(row * module_columns_ + column)];
    if (cell >= 0)
      throw InputError(who + ": segments " + std::to_string(cell) + " and " +
                       std::to_string(segment) + " sit at the same place");
    cell = segment;
    module_of_[std::size_t(segment)] = {row, column};
  }
}

int SlsLayout::ports_per_module_for(const DetectorDescription& detector, std::size_t endpoints) {
  const auto modules = std::size_t(std::max(detector.segments, 0));
  if (modules > 0 && endpoints == modules) return 1;
  if (modules > 0 && endpoints == 2 * modules) return 2;
  throw InputError("sls source: detector '" + detector.name + "' has " + std::to_string(modules) +
                   " modules, which stream over " + std::to_string(modules) +
                   " ports (one per "
                   "module) or " +
                   std::to_string(2 * modules) + " (two per module); got " +
                   std::to_string(endpoints) + " endpoints");
}

std::size_t SlsLayout::part_bytes() const {
  return std::size_t(part_rows()) * std::size_t(part_columns()) * kPixelBytes;
}

SlsPortPosition SlsLayout::position_of(int segment, int half) const {
  const SlsPortPosition module = module_of_.at(std::size_t(segment));
  return {module.row * ports_per_module_ + half, module.column};
}

SlsPartCheck SlsLayout::place(const SlsHeader& header, std::size_t data_bytes) const {
  const std::string detector_text = "'" + detector_.name + "' with " +
                                    std::to_string(ports_per_module_) + " port" +
                                    (ports_per_module_ == 1 ? "" : "s") + " per module";
  if (header.detector_type && *header.detector_type != kJungfrauDetType)
    return refuse("wrong_detector", "detType " + std::to_string(*header.detector_type) +
                                        "; the engine's detector is a Jungfrau (detType 3)");
  if (header.detector_port_columns != std::uint64_t(port_columns()) ||
      header.detector_port_rows != std::uint64_t(port_rows()))
    return refuse("wrong_detector",
                  "detshape " + pair_text(header.detector_port_columns, header.detector_port_rows) +
                      " (ports across x, y) does not match " + detector_text + ": " +
                      pair_text(std::uint64_t(port_columns()), std::uint64_t(port_rows())));
  if (header.part_columns != std::uint64_t(part_columns()) ||
      header.part_rows != std::uint64_t(part_rows()))
    return refuse("wrong_detector",
                  "shape " + pair_text(header.part_columns, header.part_rows) +
                      " (pixels across x, y) does not match " + detector_text + ": " +
                      pair_text(std::uint64_t(part_columns()), std::uint64_t(part_rows())));
  if (header.size != part_bytes())
    return refuse("wrong_detector", "size " + std::to_string(header.size) + " bytes; " +
                                        detector_text + " sends " + std::to_string(part_bytes()) +
                                        " bytes per port");
  if (header.row >= std::uint64_t(port_rows()) || header.column >= std::uint64_t(port_columns()))
    return refuse("wrong_detector", "row " + std::to_string(header.row) + ", column " +
                                        std::to_string(header.column) +
                                        " is outside the detector's " +
                                        std::to_string(port_rows()) + " x " +
                                        std::to_string(port_columns()) + " ports (rows x columns)");
  if (data_bytes < header.size)
    return refuse("truncated", "pixel part has " + std::to_string(data_bytes) +
                                   " bytes, the header's size says " + std::to_string(header.size));
  if (data_bytes > header.size)
    return refuse("oversized", "pixel part has " + std::to_string(data_bytes) +
                                   " bytes, the header's size says " + std::to_string(header.size));

  const int row = int(header.row);
  const int column = int(header.column);
  SlsPartPlace place;
  place.half = row % ports_per_module_;
  place.segment = segment_at_[std::size_t((row / ports_per_module_) * module_columns_ + column)];
  place.byte_offset = std::size_t(place.segment) * detector_.pixels_per_segment() * kPixelBytes +
                      std::size_t(place.half) * part_bytes();
  place.position = row * port_columns() + column;
  return {place, {}, {}};
}

}  // namespace livedrp::stream::sls
