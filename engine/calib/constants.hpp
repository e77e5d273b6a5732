#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calib/calibration_math.hpp"
#include "core/detector.hpp"

namespace livedrp {

// Per-pixel calibration constants of one detector, laid out for the kernels: pedestal and gain of
// a mode side by side (one 8-byte load per pixel), planes ordered [mode][segment][row][col].
struct CalibrationConstants {
  int modes = 0;
  std::size_t pixels = 0;
  std::vector<calib::PedestalGain> pedestal_gain;  // modes * pixels
  std::vector<std::uint8_t> pixel_status;          // pixels: calib::kStatusMasked | config bits

  calib::PedestalGain at(int mode, std::size_t pixel) const {
    return pedestal_gain[std::size_t(mode) * pixels + pixel];
  }
  bool masked(std::size_t pixel) const { return pixel_status[pixel] & calib::kStatusMasked; }
  // Bytes the constants occupy (what a backend uploads once).
  std::size_t bytes() const {
    return pedestal_gain.size() * sizeof(calib::PedestalGain) + pixel_status.size();
  }
};

// Whether the detector's constants carry a per-pixel gain configuration (pixel_status &
// calib::kStatusConfigBits): the ePix10ka's FH FM FL AHL AML. Other detectors (Jungfrau, whose
// gain stage is in the raw word, and float32 ones) keep 0 there for every pixel.
bool has_gain_configuration(const DetectorDescription& detector);
// The ePix10ka gain configurations' names as the detector's users write them, indexed by their
// value (calib::Epix10kaConfig): "FH", "FM", "FL", "AHL", "AML".
const std::vector<std::string>& epix10ka_config_names();
// The value of configuration `name` (exactly as above), or nullopt for any other text.
std::optional<std::uint8_t> epix10ka_config_value(std::string_view name);

// Pedestal 0 and gain 1 in every mode, ePix10ka configuration FH, nothing masked but the
// description's gap pixels: calibration then returns adc (the float32 value, the integer image's
// count) unchanged.
CalibrationConstants identity_constants(const DetectorDescription& detector);

// HDF5 constants file (layout in docs/formats.md):
//   /pedestal  float32 [modes][segments][rows][cols]   ADU
//   /gain      float32 [modes][segments][rows][cols]   keV per ADU
//   /mask      uint8   [segments][rows][cols]          non-zero = bad pixel (pyFAI's convention)
//   /config    uint8   [segments][rows][cols]          ePix10ka gain configuration 0..4 (FH FM FL
//                                                      AHL AML); required for that detector only
//   attribute "detector" on the root group: the detector name
// Throws InputError naming the file, the dataset and what is wrong (missing, wrong shape or type,
// a different detector, a configuration value out of range, non-finite constants).
CalibrationConstants load_constants_hdf5(const std::filesystem::path& path,
                                         const DetectorDescription& detector);
void save_constants_hdf5(const std::filesystem::path& path, const DetectorDescription& detector,
                         const CalibrationConstants& constants);

// The gains of a constants file, or of a gain map: a file with only /gain (and, for the ePix10ka,
// optionally /config) laid out as in a constants file; /pedestal and /mask are not read.
struct GainMap {
  std::vector<float> gain;           // [modes][segments][rows][cols], output unit per ADU
  std::vector<std::uint8_t> config;  // ePix10ka gain configuration per pixel; empty when absent
};
// Throws InputError naming the file and the dataset (as load_constants_hdf5), also for gains that
// are not finite.
GainMap load_gain_map_hdf5(const std::filesystem::path& path, const DetectorDescription& detector);

}  // namespace livedrp
