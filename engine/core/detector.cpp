#include "core/detector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/builtin_detectors.hpp"
#include "core/error.hpp"
#include "core/json_input.hpp"

namespace livedrp {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw InputError("detector description " + origin + ": " + what);
}

const json& require(const json& object, const char* key, const std::string& origin) {
  if (!object.is_object()) fail(origin, "expected a JSON object");
  auto it = object.find(key);
  if (it == object.end()) fail(origin, std::string("missing field '") + key + "'");
  return *it;
}

int require_positive_int(const json& object, const char* key, const std::string& origin,
                         int maximum = 1 << 20) {
  const json& value = require(object, key, origin);
  if (!value.is_number_integer() || value.get<long long>() <= 0 || value.get<long long>() > maximum)
    fail(origin, std::string("field '") + key + "' must be an integer in 1.." +
                     std::to_string(maximum) + ", got " + json_excerpt(value));
  return value.get<int>();
}

double require_positive_number(const json& object, const char* key, const std::string& origin) {
  const json& value = require(object, key, origin);
  if (!value.is_number() || !(value.get<double>() > 0))
    fail(origin,
         std::string("field '") + key + "' must be a positive number, got " + json_excerpt(value));
  return value.get<double>();
}

std::pair<int, int> require_shape(const json& object, const char* key, const std::string& origin) {
  const json& value = require(object, key, origin);
  if (!value.is_array() || value.size() != 2 || !value[0].is_number_integer() ||
      !value[1].is_number_integer() || value[0].get<long long>() <= 0 ||
      value[1].get<long long>() <= 0 || value[0].get<long long>() > 65536 ||
      value[1].get<long long>() > 65536)
    fail(origin, std::string("field '") + key +
                     "' must be [rows, cols] with positive integers, got " + json_excerpt(value));
  return {value[0].get<int>(), value[1].get<int>()};
}

RawEncoding parse_encoding(const json& value, const std::string& origin) {
  for (const RawEncoding encoding :
       {RawEncoding::Epix10ka, RawEncoding::Jungfrau, RawEncoding::Float32, RawEncoding::Uint16,
        RawEncoding::Uint32, RawEncoding::Int32})
    if (value == std::string(to_string(encoding))) return encoding;
  fail(origin,
       "field 'raw_encoding' must be one of epix10ka, jungfrau, float32, uint16, uint32, int32; "
       "got " +
           json_excerpt(value));
}

// "gaps": {"rows": [[first, count], ...], "cols": [...]}, each range inside the segment.
std::vector<PixelRange> parse_gap_ranges(const json& gaps, const char* key, int extent,
                                         const std::string& origin) {
  std::vector<PixelRange> ranges;
  const auto it = gaps.find(key);
  if (it == gaps.end()) return ranges;
  if (!it->is_array()) fail(origin, std::string("field 'gaps.") + key + "' must be a list");
  for (const json& range : *it) {
    if (!range.is_array() || range.size() != 2 || !range[0].is_number_integer() ||
        !range[1].is_number_integer() || range[0].get<long long>() < 0 ||
        range[1].get<long long>() <= 0 ||
        range[0].get<long long>() + range[1].get<long long>() > extent)
      fail(origin, std::string("field 'gaps.") + key +
                       "' must hold [first, count] ranges within the segment's " +
                       std::to_string(extent) + ", got " + json_excerpt(range));
    ranges.push_back({range[0].get<int>(), range[1].get<int>()});
  }
  return ranges;
}

json gap_ranges_json(const std::vector<PixelRange>& ranges) {
  json list = json::array();
  for (const PixelRange& range : ranges) list.push_back({range.first, range.count});
  return list;
}

}  // namespace

std::string_view to_string(RawEncoding encoding) {
  switch (encoding) {
    case RawEncoding::Epix10ka:
      return "epix10ka";
    case RawEncoding::Jungfrau:
      return "jungfrau";
    case RawEncoding::Float32:
      return "float32";
    case RawEncoding::Uint16:
      return "uint16";
    case RawEncoding::Uint32:
      return "uint32";
    case RawEncoding::Int32:
      return "int32";
  }
  return "unknown";
}

int gain_modes_of(RawEncoding encoding) {
  switch (encoding) {
    case RawEncoding::Epix10ka:
      return 7;
    case RawEncoding::Jungfrau:
      return 3;
    case RawEncoding::Float32:
    case RawEncoding::Uint16:
    case RawEncoding::Uint32:
    case RawEncoding::Int32:
      return 1;
  }
  return 0;
}

bool DetectorDescription::in_gap(int row, int col) const {
  for (const PixelRange& range : gap_rows)
    if (row >= range.first && row < range.first + range.count) return true;
  for (const PixelRange& range : gap_cols)
    if (col >= range.first && col < range.first + range.count) return true;
  return false;
}

DetectorDescription parse_detector_description(const json& object, const std::string& origin) {
  DetectorDescription d;
  const json& version = require(object, "schema_version", origin);
  if (version != 1)
    fail(origin, "unsupported schema_version " + json_excerpt(version) + " (expected 1)");
  const json& name = require(object, "name", origin);
  if (!name.is_string() || name.get<std::string>().empty())
    fail(origin, "field 'name' must be a non-empty string");
  d.name = name.get<std::string>();
  if (auto it = object.find("description"); it != object.end() && it->is_string())
    d.description = it->get<std::string>();
  d.encoding = parse_encoding(require(object, "raw_encoding", origin), origin);
  d.segments = require_positive_int(object, "segments", origin, 1024);
  std::tie(d.rows, d.cols) = require_shape(object, "segment_shape", origin);
  // Every pixel index fits 32 bits with room to spare; the largest detectors have about 2^24.
  constexpr std::uint64_t kMaxPixels = std::uint64_t(1) << 28;
  if (std::uint64_t(d.segments) * std::uint64_t(d.rows) * std::uint64_t(d.cols) > kMaxPixels)
    fail(origin, std::to_string(d.segments) + " segments of " + std::to_string(d.rows) + " x " +
                     std::to_string(d.cols) + " pixels are more than " +
                     std::to_string(kMaxPixels) + " pixels in all");
  d.pixel_size_um = require_positive_number(object, "pixel_size_um", origin);
  std::tie(d.asic_rows, d.asic_cols) = require_shape(object, "asic_shape", origin);
  if (d.rows % d.asic_rows != 0 || d.cols % d.asic_cols != 0)
    fail(origin, "asic_shape [" + std::to_string(d.asic_rows) + ", " + std::to_string(d.asic_cols) +
                     "] does not tile segment_shape [" + std::to_string(d.rows) + ", " +
                     std::to_string(d.cols) + "]");
  const json& bank = require(object, "bank_columns", origin);
  if (!bank.is_number_integer() || bank.get<long long>() < 0 || bank.get<long long>() > 64)
    fail(origin, "field 'bank_columns' must be an integer in 0..64 (0 = no common mode), got " +
                     json_excerpt(bank));
  d.bank_columns = bank.get<int>();
  // Common mode is an ADC baseline shift; counts and values converted upstream have none.
  if (is_integer_image(d.encoding) && d.bank_columns != 0)
    fail(origin, "bank_columns must be 0 for raw_encoding " + std::string(to_string(d.encoding)) +
                     " (integer images have no ADC baseline to correct), got " +
                     json_excerpt(bank));
  if (d.bank_columns > 0 && d.asic_cols % d.bank_columns != 0)
    fail(origin, "bank_columns " + std::to_string(d.bank_columns) +
                     " does not divide the ASIC width " + std::to_string(d.asic_cols));

  const json& modes = require(object, "gain_modes", origin);
  if (!modes.is_array() || int(modes.size()) != gain_modes_of(d.encoding))
    fail(origin, "field 'gain_modes' must list " + std::to_string(gain_modes_of(d.encoding)) +
                     " modes for raw_encoding " + std::string(to_string(d.encoding)));
  for (const json& mode : modes) {
    GainMode m;
    const json& mode_name = require(mode, "name", origin);
    if (!mode_name.is_string()) fail(origin, "gain mode name must be a string");
    m.name = mode_name.get<std::string>();
    m.nominal_adu_per_kev = require_positive_number(mode, "nominal_adu_per_kev", origin);
    d.gain_modes.push_back(std::move(m));
  }

  const json& placement = require(object, "placement", origin);
  if (!placement.is_array() || int(placement.size()) != d.segments)
    fail(origin,
         "field 'placement' must have one entry per segment (" + std::to_string(d.segments) + ")");
  for (const json& p : placement) {
    SegmentPlacement s;
    const json& x = require(p, "x_px", origin);
    const json& y = require(p, "y_px", origin);
    const json& rotation = require(p, "rotation_deg", origin);
    // Offsets beyond a million pixels are no detector's, and would lose the pixel's own
    // position in double precision when the image is assembled.
    constexpr double kMaxOffsetPx = 1 << 20;
    if (!x.is_number() || !y.is_number() || !(std::abs(x.get<double>()) <= kMaxOffsetPx) ||
        !(std::abs(y.get<double>()) <= kMaxOffsetPx))
      fail(origin, "placement x_px and y_px must be numbers within +-" +
                       std::to_string(int(kMaxOffsetPx)) + " pixels, got " + json_excerpt(x) +
                       ", " + json_excerpt(y));
    if (!rotation.is_number_integer() || std::abs(rotation.get<long long>()) > 3600 ||
        rotation.get<int>() % 90 != 0)
      fail(origin,
           "placement rotation_deg must be a multiple of 90, got " + json_excerpt(rotation));
    s.x_px = x.get<double>();
    s.y_px = y.get<double>();
    s.rotation_deg = ((rotation.get<int>() % 360) + 360) % 360;
    d.placement.push_back(s);
  }

  if (auto large = object.find("large_pixels"); large != object.end()) {
    if (!large->is_object())
      fail(origin,
           "field 'large_pixels' must be an object {\"factor\": F}, got " + json_excerpt(*large));
    const auto factor_entry = large->find("factor");
    if (factor_entry == large->end())
      fail(origin, "field 'large_pixels.factor' is missing (large_pixels: {\"factor\": F})");
    const json& factor = *factor_entry;
    // Whole normal pixels, so that the assembled image can split a large pixel's value evenly.
    if (!factor.is_number_integer() || factor.get<long long>() < 1 || factor.get<long long>() > 16)
      fail(origin,
           "field 'large_pixels.factor' must be an integer in 1..16 (the width of the "
           "pixels along internal ASIC edges, in normal pixels), got " +
               json_excerpt(factor));
    d.large_pixel_factor = factor.get<int>();
    // With one-pixel ASICs a pixel would be on both edges of its ASIC: no sensor is built so.
    const bool internal_row_edges = d.asic_rows < d.rows, internal_col_edges = d.asic_cols < d.cols;
    if (d.large_pixel_factor > 1 &&
        ((internal_row_edges && d.asic_rows < 2) || (internal_col_edges && d.asic_cols < 2)))
      fail(origin,
           "field 'large_pixels' needs ASICs at least 2 pixels wide and high, got "
           "asic_shape [" +
               std::to_string(d.asic_rows) + ", " + std::to_string(d.asic_cols) + "]");
  }

  if (auto gaps = object.find("gaps"); gaps != object.end()) {
    if (!is_integer_image(d.encoding))
      fail(origin,
           "field 'gaps' is for integer images (raw_encoding uint16, uint32, int32), "
           "whose frames mark gap pixels with their bad-pixel value");
    if (!gaps->is_object()) fail(origin, "field 'gaps' must be an object with 'rows' and 'cols'");
    d.gap_rows = parse_gap_ranges(*gaps, "rows", d.rows, origin);
    d.gap_cols = parse_gap_ranges(*gaps, "cols", d.cols, origin);
  }
  return d;
}

DetectorDescription load_detector_description(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot open detector description " + path.string());
  const json object = parse_json_input(in, "detector description " + path.string());
  return parse_detector_description(object, path.string());
}

std::vector<std::string> builtin_detector_names() {
  std::vector<std::string> names;
  for (const auto& builtin : builtin_detector_sources()) names.emplace_back(builtin.name);
  return names;
}

DetectorDescription find_detector(std::string_view name_or_path) {
  for (const auto& builtin : builtin_detector_sources()) {
    if (builtin.name == name_or_path)
      return parse_detector_description(json::parse(builtin.json),
                                        "built-in '" + std::string(builtin.name) + "'");
  }
  std::filesystem::path path(name_or_path);
  if (path.extension() == ".json") return load_detector_description(path);
  std::string known;
  for (const auto& name : builtin_detector_names()) known += (known.empty() ? "" : ", ") + name;
  throw InputError("unknown detector '" + std::string(name_or_path) + "' (known: " + known +
                   ", or a path to a .json description)");
}

nlohmann::json to_json(const DetectorDescription& d) {
  json modes = json::array();
  for (const auto& m : d.gain_modes)
    modes.push_back({{"name", m.name}, {"nominal_adu_per_kev", m.nominal_adu_per_kev}});
  json placement = json::array();
  for (const auto& p : d.placement)
    placement.push_back({{"x_px", p.x_px}, {"y_px", p.y_px}, {"rotation_deg", p.rotation_deg}});
  json description = {{"schema_version", d.schema_version},
                      {"name", d.name},
                      {"description", d.description},
                      {"raw_encoding", std::string(to_string(d.encoding))},
                      {"segments", d.segments},
                      {"segment_shape", {d.rows, d.cols}},
                      {"pixel_size_um", d.pixel_size_um},
                      {"asic_shape", {d.asic_rows, d.asic_cols}},
                      {"bank_columns", d.bank_columns},
                      {"gain_modes", modes},
                      {"placement", placement}};
  if (d.large_pixel_factor != 1) description["large_pixels"] = {{"factor", d.large_pixel_factor}};
  if (!d.gap_rows.empty() || !d.gap_cols.empty())
    description["gaps"] = {{"rows", gap_ranges_json(d.gap_rows)},
                           {"cols", gap_ranges_json(d.gap_cols)}};
  return description;
}

AssembledBounds assembled_bounds(const DetectorDescription& detector) {
  AssembledBounds b{std::numeric_limits<double>::max(), std::numeric_limits<double>::max(),
                    std::numeric_limits<double>::lowest(), std::numeric_limits<double>::lowest()};
  const SegmentGrid grid = detector.grid();
  for (const SegmentPlacement& placement : detector.placement)
    for (double row : {0.0, double(detector.rows)})
      for (double col : {0.0, double(detector.cols)}) {
        const AssembledPoint corner = assembled_point(placement, grid, row, col);
        b.min_x = std::min(b.min_x, corner.x), b.max_x = std::max(b.max_x, corner.x);
        b.min_y = std::min(b.min_y, corner.y), b.max_y = std::max(b.max_y, corner.y);
      }
  return b;
}

}  // namespace livedrp
