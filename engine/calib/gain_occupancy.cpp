#include "calib/gain_occupancy.hpp"

#include <cstddef>
#include <cstdint>

#include "calib/calibration_math.hpp"
#include "core/error.hpp"

namespace livedrp::calib {

namespace {

// Float32 detectors deliver calibrated values: one "mode", named for what the values are.
constexpr const char* kFloat32ModeName = "calibrated";
constexpr const char* kBadModeName = "bad";

}  // namespace

GainOccupancy gain_occupancy(const DetectorDescription& detector,
                             const CalibrationConstants& constants, const void* raw) {
  const std::string name = "gain occupancy of detector '" + detector.name + "'";
  if (raw == nullptr) throw InputError(name + ": no raw event data");
  if (detector.segments <= 0 || detector.rows <= 0 || detector.cols <= 0)
    throw InputError(name + ": the detector has no pixels");
  const std::size_t pixels = detector.pixels();
  if (constants.pixel_status.size() != pixels)
    throw InputError(name + ": the constants have " +
                     std::to_string(constants.pixel_status.size()) + " pixel status values for " +
                     std::to_string(pixels) + " pixels");

  GainOccupancy occupancy;
  occupancy.segments = detector.segments;
  if (detector.encoding == RawEncoding::Float32) {
    occupancy.modes = {kFloat32ModeName};
  } else {
    for (const GainMode& mode : detector.gain_modes) occupancy.modes.push_back(mode.name);
  }
  // Every mode the decoder can return must have a column (the description lists them all).
  const int decodable_modes = gain_modes_of(detector.encoding);
  if (int(occupancy.modes.size()) < decodable_modes)
    throw InputError(name + ": the description names " + std::to_string(occupancy.modes.size()) +
                     " gain modes, the " + std::string(to_string(detector.encoding)) +
                     " encoding decodes " + std::to_string(decodable_modes));
  const std::size_t good_modes = occupancy.modes.size();
  occupancy.modes.push_back(kBadModeName);
  const std::size_t columns = occupancy.modes.size();

  // Counted, then divided once: fractions of one segment then sum to 1 up to float rounding.
  std::vector<std::size_t> counts(std::size_t(detector.segments) * columns, 0);
  const std::size_t per_segment = detector.pixels_per_segment();
  for (std::size_t pixel = 0; pixel < pixels; ++pixel) {
    const DecodedPixel decoded =
        decode_raw(detector.encoding, raw, pixel, constants.pixel_status[pixel]);
    const std::size_t column = decoded.bad ? good_modes : std::size_t(decoded.mode);
    ++counts[(pixel / per_segment) * columns + column];
  }
  occupancy.fraction.resize(counts.size());
  for (std::size_t index = 0; index < counts.size(); ++index)
    occupancy.fraction[index] = float(double(counts[index]) / double(per_segment));
  return occupancy;
}

}  // namespace livedrp::calib
