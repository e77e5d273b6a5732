#pragma once
// pyFAI PONI files: the detector geometry scientists calibrate with pyFAI (pyFAI.io.ponifile).
// Versions 1 (PixelSize1/PixelSize2), 2 and 2.1 (Detector + Detector_config JSON). A detector
// named without its pixel size (pyFAI-calib2's `Detector: Eiger2_4M`) takes it from pyFAI's
// table (integrate/pyfai_detectors.hpp).
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "integrate/pyfai_detectors.hpp"

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
  // pyFAI's detector orientation 1..4 (integrate/orientation.hpp); 3 is no flip.
  int orientation = 3;
  // The table's entry when `detector` names one of pyFAI's detectors; nullptr otherwise.
  const PyfaiDetector* named = nullptr;
  // Detector_config's module_size, where it changes the named detector's.
  std::optional<std::array<int, 2>> module_size;
};

// Throws InputError naming `source` (the file), the line or key, and what is wrong: a missing
// key, a value that is not a number (or out of range), an unknown poni_version, bad
// Detector_config JSON, a spline file or an orientation livedrp does not handle.
PoniGeometry parse_poni(std::string_view text, const std::string& source);
PoniGeometry read_poni(const std::filesystem::path& path);

// The mask pyFAI gives a named detector of gaps between modules (Detector.calc_mask), for an image
// of rows x columns: 1 on the gaps. Empty when the PONI names no such detector or the image is
// not the detector's max_shape (the file's, else the table's): pyFAI rebins the mask of a binned
// image, livedrp does not.
std::vector<std::uint8_t> poni_detector_mask(const PoniGeometry& poni, int rows, int columns);

}  // namespace livedrp::integrate
