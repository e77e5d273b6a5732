#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/raw_encoding.hpp"
#include "core/segment_geometry.hpp"

namespace livedrp {

std::string_view to_string(RawEncoding encoding);
// The gain modes (planes of pedestal and gain) the encoding's decoder can return: 7 ePix10ka, 3
// Jungfrau, 1 for float32 and integer images.
int gain_modes_of(RawEncoding encoding);

struct GainMode {
  std::string name;
  double nominal_adu_per_kev = 1.0;  // typical conversion; the simulator varies it per pixel
};

// Rows or columns [first, first + count) of every segment that hold no sensor: the gaps between
// the modules of a detector delivered as one frame (Dectris Eiger), which its images mark with
// their bad-pixel value.
struct PixelRange {
  int first = 0;
  int count = 0;
};

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
