#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/raw_encoding.hpp"

namespace livedrp {

std::string_view to_string(RawEncoding encoding);
// The gain modes (planes of pedestal and gain) the encoding's decoder can return: 7 ePix10ka, 3
// Jungfrau, 1 for float32 and integer images.
int gain_modes_of(RawEncoding encoding);

struct GainMode {
  std::string name;
  double nominal_adu_per_kev = 1.0;  // typical conversion; the simulator varies it per pixel
};

// Where a segment lands in the assembled image: its pixel (row 0, col 0) corner, in assembled
// pixels, and a rotation by a multiple of 90 degrees about that corner.
struct SegmentPlacement {
  double x_px = 0;
  double y_px = 0;
  int rotation_deg = 0;
};

// Rows or columns [first, first + count) of every segment that hold no sensor: the gaps between
// the modules of a detector delivered as one frame (Dectris Eiger), which its images mark with
// their bad-pixel value.
struct PixelRange {
  int first = 0;
  int count = 0;
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
};

// Along one axis of `extent` raw pixels tiled by ASICs of `asic` pixels: where raw coordinate
// `raw` (pixel i spans [i, i + 1)) lies, in normal pixels from the segment's edge. Linear inside
// every pixel, so a wide pixel's [i, i + 1) stretches over edge_factor normal pixels; beyond
// the segment it continues with normal pixels.
double expanded_coordinate(double raw, int extent, int asic, int edge_factor);

// A detector as the engine sees it: segment layout, raw encoding, gain modes, ASIC and bank layout.
// Loaded from resources/detectors/NAME.json (built into the binaries) or from a file.
struct DetectorDescription {
  int schema_version = 1;
  std::string name;
  std::string description;
  RawEncoding encoding = RawEncoding::Float32;
  int segments = 0;
  int rows = 0;  // per segment (slow scan)
  int cols = 0;  // per segment (fast scan)
  double pixel_size_um = 0;
  int asic_rows = 0;
  int asic_cols = 0;
  int bank_columns = 0;  // width of a common-mode bank row; 0 = no common mode for this detector
  // Width of the sensor pixels along internal ASIC edges, in normal pixels (optional
  // "large_pixels": {"factor": F}; 1 = none). See SegmentGrid.
  int large_pixel_factor = 1;
  std::vector<GainMode> gain_modes;
  std::vector<SegmentPlacement> placement;  // one per segment
  // Integer images only (optional "gaps": {"rows": [[first, count], ...], "cols": [...]}).
  std::vector<PixelRange> gap_rows, gap_cols;

  std::size_t pixels_per_segment() const { return std::size_t(rows) * std::size_t(cols); }
  std::size_t pixels() const { return pixels_per_segment() * std::size_t(segments); }
  std::size_t raw_bytes_per_pixel() const { return raw_word_bytes(encoding); }
  std::size_t raw_event_bytes() const { return pixels() * raw_bytes_per_pixel(); }
  int modes() const { return int(gain_modes.size()); }
  SegmentGrid grid() const { return {rows, cols, asic_rows, asic_cols, large_pixel_factor}; }
  // Whether segment pixel (row, col) lies in a gap row or column.
  bool in_gap(int row, int col) const;
  // Bank rows: each segment row is cut into cols / bank_columns banks.
  std::size_t bank_rows() const {
    return bank_columns > 0 ? pixels() / std::size_t(bank_columns) : 0;
  }
};

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
// The assembled image's bounding box, and its middle (where the simulator puts the beam).
struct AssembledBounds {
  double min_x = 0, min_y = 0, max_x = 0, max_y = 0;
  AssembledPoint centre() const { return {0.5 * (min_x + max_x), 0.5 * (min_y + max_y)}; }
};
AssembledBounds assembled_bounds(const DetectorDescription& detector);

// Parses and validates a description; `origin` names the file in error messages.
// Throws InputError naming the field and the value that is wrong.
DetectorDescription parse_detector_description(const nlohmann::json& json,
                                               const std::string& origin);
DetectorDescription load_detector_description(const std::filesystem::path& path);

// A built-in detector by name ("epix10ka2m", "jungfrau4m", "generic_f32", "eiger2x4m"), or a path
// to a .json file. Throws InputError listing the known names when the name is unknown.
DetectorDescription find_detector(std::string_view name_or_path);
std::vector<std::string> builtin_detector_names();

nlohmann::json to_json(const DetectorDescription& detector);

}  // namespace livedrp
