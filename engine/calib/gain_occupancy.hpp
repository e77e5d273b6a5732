#pragma once
// Gain-mode occupancy of one raw event: the fraction of each segment's pixels in each gain mode,
// decoded from the raw words with the same decoding the calibration uses (calibration_math.hpp),
// plus a last column for bad pixels (masked by the constants or by the raw word). For operators:
// a segment drifting into medium or low gain shows here before it shows in the image.
#include <string>
#include <vector>

#include "calib/constants.hpp"
#include "core/detector.hpp"

namespace livedrp::calib {

struct GainOccupancy {
  std::vector<std::string> modes;  // the detector's gain mode names, then "bad"
  int segments = 0;
  std::vector<float> fraction;  // segments * modes.size(), row per segment, each row sums to 1
};

// raw: detector.raw_event_bytes() of one event. A Float32 detector has no gain modes: `modes` is
// {"calibrated", "bad"}, bad = masked by the constants. An integer image has its one mode (named
// by the description), bad = masked or holding the encoding's marker value.
GainOccupancy gain_occupancy(const DetectorDescription& detector,
                             const CalibrationConstants& constants, const void* raw);

}  // namespace livedrp::calib
