#include "calib/calibrate_cpu.hpp"

#include <algorithm>
#include <array>

#include "calib/middle_order_statistics.hpp"
#include "core/thread_pool.hpp"

namespace livedrp {

using calib::CalibrationParams;
using calib::DecodedPixel;

namespace {

// The constants of 7 gain modes (121 MB for an ePix10ka2M) cannot stay in cache, and a pixel's
// entry sits in the plane of its mode, so the hardware prefetcher, which sees several planes
// touched in turns, falls behind. Asking for the entry 32 pixels ahead in the current pixel's
// mode (neighbours mostly share it: the configuration is per ASIC) measured 1.05x on the whole
// ePix10ka2M calibration, with common mode and without (medians of alternating runs, 2-core VM).
void prefetch_constants(const CalibrationConstants& constants, int mode, std::size_t pixel) {
  const std::size_t ahead = std::min(pixel + 32, constants.pixels - 1);
  __builtin_prefetch(constants.pedestal_gain.data() + std::size_t(mode) * constants.pixels + ahead);
}

}  // namespace

void calibrate_bank_row_cpu(RawEncoding encoding, const CalibrationConstants& constants,
                            const CalibrationParams& params, const void* raw,
                            std::size_t first_pixel, int width, float* out) {
  // Two passes over the row: the first writes each pixel's pedestal offset into `out` and gathers
  // the quiet ones (branch-free: mispredicted branches cost more than the spare store); the second
  // decodes again and writes the calibrated value. Decoding twice is cheaper than keeping the
  // decoded pixels in a side array (measured: 39 vs 57 ms per ePix10ka2M event on one core).
  std::array<float, calib::kMaxBankColumns> quiet;
  int quiet_count = 0;
  const std::uint8_t* status = constants.pixel_status.data() + first_pixel;
  for (int i = 0; i < width; ++i) {
    const std::size_t p = first_pixel + std::size_t(i);
    const DecodedPixel pixel = calib::decode_raw(encoding, raw, p, status[i]);
    prefetch_constants(constants, pixel.mode, p);
    const float offset = calib::pedestal_offset(pixel, constants.at(pixel.mode, p));
    out[p] = offset;
    quiet[quiet_count] = offset;
    quiet_count += calib::is_quiet(pixel, offset, params.common_mode_threshold_adu) ? 1 : 0;
  }
  float common_mode = 0.0f;
  if (quiet_count > 0) {
    // The two middle order statistics, v[(n-1)/2] and v[n/2].
    const calib::MiddleOrderStatistics middle =
        calib::middle_order_statistics(quiet.data(), quiet_count);
    common_mode = calib::common_mode_from_order_statistics(middle.lower, middle.upper, quiet_count,
                                                           params.common_mode_min_pixels);
  }
  for (int i = 0; i < width; ++i) {
    const std::size_t p = first_pixel + std::size_t(i);
    const DecodedPixel pixel = calib::decode_raw(encoding, raw, p, status[i]);
    out[p] = calib::calibrated_value(pixel, out[p], common_mode, constants.at(pixel.mode, p));
  }
}

void calibrate_event_cpu(const DetectorDescription& detector, const CalibrationConstants& constants,
                         const CalibrationParams& params, const void* raw, float* out,
                         ThreadPool* pool) {
  const RawEncoding encoding = detector.encoding;
  const bool common_mode = params.common_mode && detector.bank_columns > 0;
  // Work unit: one bank row with common mode, else a block of pixels.
  const std::size_t unit = common_mode ? std::size_t(detector.bank_columns) : 4096;
  const std::size_t pixels = detector.pixels();
  const std::size_t units = (pixels + unit - 1) / unit;
  auto body = [&](std::size_t begin, std::size_t end) {
    for (std::size_t u = begin; u < end; ++u) {
      const std::size_t first = u * unit;
      if (common_mode) {
        calibrate_bank_row_cpu(encoding, constants, params, raw, first, int(unit), out);
        continue;
      }
      const std::size_t last = std::min(first + unit, pixels);
      for (std::size_t p = first; p < last; ++p) {
        const DecodedPixel pixel = calib::decode_raw(encoding, raw, p, constants.pixel_status[p]);
        prefetch_constants(constants, pixel.mode, p);
        const calib::PedestalGain pg = constants.at(pixel.mode, p);
        out[p] = calib::calibrated_value(pixel, calib::pedestal_offset(pixel, pg), 0.0f, pg);
      }
    }
  };
  if (pool)
    pool->parallel_for(units, body);
  else
    body(0, units);
}

}  // namespace livedrp
