#pragma once
// pyFAI PONI files: the detector geometry scientists calibrate with pyFAI (pyFAI.io.ponifile).
// Versions 1 (PixelSize1/PixelSize2), 2 and 2.1 (Detector + Detector_config JSON).
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace livedrp::integrate {

// pyFAI's names and units. Axis 1 is the slow axis (rows, y), axis 2 the fast one (columns, x).
struct PoniGeometry {
  int version = 1;        // 1, 2, or 21 for "2.1"
  double distance = 0.0;  // m, sample to the PONI along the detector normal
  double poni1 = 0.0;     // m, PONI from the detector origin along axis 1
  double poni2 = 0.0;     // m, along axis 2
  double rot1 = 0.0;      // rad
  double rot2 = 0.0;
  double rot3 = 0.0;
  std::optional<double> wavelength;             // m; q needs it
  double pixel1 = 0.0;                          // m, pixel size along axis 1
  double pixel2 = 0.0;                          // m, along axis 2
  std::optional<std::array<int, 2>> max_shape;  // {rows, columns} when the file gives it
  std::string detector;                         // pyFAI's detector class name, "" when none
  int orientation = 3;                          // pyFAI's detector orientation; 3 is no flip
};

// Throws InputError naming `source` (the file), the line or key, and what is wrong: a missing
// key, a value that is not a number (or out of range), an unknown poni_version, bad
// Detector_config JSON, a spline file or an orientation livedrp does not handle.
PoniGeometry parse_poni(std::string_view text, const std::string& source);
PoniGeometry read_poni(const std::filesystem::path& path);

}  // namespace livedrp::integrate
