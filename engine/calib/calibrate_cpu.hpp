#pragma once
#include <cstddef>

#include "calib/calibration_math.hpp"
#include "calib/constants.hpp"
#include "core/detector.hpp"

namespace livedrp {

class ThreadPool;

// Calibrates one event on the CPU: `raw` holds detector.raw_event_bytes() bytes, `out` receives
// detector.pixels() float32 values. Work is split over bank rows (or image rows when the detector
// has no common mode) across `pool` when one is given. This is the reference for every backend.
void calibrate_event_cpu(const DetectorDescription& detector, const CalibrationConstants& constants,
                         const calib::CalibrationParams& params, const void* raw, float* out,
                         ThreadPool* pool = nullptr);

// One bank row: `first_pixel` indexes the row's first pixel in the event, `width` pixels follow.
void calibrate_bank_row_cpu(RawEncoding encoding, const CalibrationConstants& constants,
                            const calib::CalibrationParams& params, const void* raw,
                            std::size_t first_pixel, int width, float* out);

}  // namespace livedrp
