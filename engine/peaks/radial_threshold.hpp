#pragma once
// peakfinder8's per-bin and per-pixel math, written once for both backends (LIVEDRP_HD).
//
// The radial statistics use 1-pixel-wide radius bins (bin = rint(r)); each iteration keeps the
// pixels strictly between the bin's lower and upper thresholds and recomputes, per bin, the mean
// and standard deviation, then upper = max(mean + snr * sigma, adc_threshold) and
// lower = mean - snr * sigma. The reference (Cheetah / CrystFEL peakfinder8.c) sums in float;
// livedrp sums in double, so that the GPU's sums, whatever their order, round to the same floats
// (agreement to 1e-5 relative rather than bit-identity of a float sum's order).
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"

namespace livedrp::peaks {

// The summation order of a bin: its good pixels, in ascending pixel index, are dealt to
// kRadialLanes lanes (entry k to lane k % kRadialLanes, each lane adding its entries in turn), then
// the lanes are added pairwise: lane l += lane l + s for s = kRadialLanes / 2, ..., 2, 1. The GPU
// runs a thread block per bin, one thread per lane (the pairwise steps are its reduction tree);
// the CPU follows the same order. 128 lanes: a bin's serial chains are short enough for the GPU
// to run the five iterations of a ~5,000-pixel bin in a few microseconds.
constexpr int kRadialLanes = 128;

struct RadialBinStats {
  float mean = 0;
  float sigma = 0;
  float upper = 1e9f;  // the reference's starting thresholds: every pixel counts at first
  float lower = -1e9f;
};

LIVEDRP_HD int radius_bin(float radius_px) {
  return int(rintf(radius_px));
}

// Whether a good pixel's value enters its bin's statistics in this iteration. `&` rather than
// `&&`: the same answer without a short circuit, so the CPU's lane loop has no control flow and
// vectorises.
LIVEDRP_HD bool enters_radial_statistics(float value, const RadialBinStats& bin) {
  return (value < bin.upper) & (value > bin.lower);
}

// A bin's statistics from its sums. An empty bin gets the reference's values: mean and sigma 0,
// upper FLT_MAX (no seed there) and lower FLT_MIN (the smallest positive float, as the reference
// writes it). A variance that rounding makes negative counts as 0.
LIVEDRP_HD RadialBinStats finish_radial_bin(double sum, double sum_squares, std::uint32_t count,
                                            float minimum_snr, float adc_threshold) {
  RadialBinStats bin;
  if (count == 0) {
    bin.upper = FLT_MAX;
    bin.lower = FLT_MIN;
    return bin;
  }
  const double mean = sum / double(count);
  const double variance = sum_squares / double(count) - mean * mean;
  bin.mean = float(mean);
  bin.sigma = float(variance > 0 ? sqrt(variance) : 0.0);
  // In double: a float product is exact there, so a fused multiply-add gives the same result
  // as separate operations and neither backend's contraction changes the threshold.
  const double spread = double(minimum_snr) * double(bin.sigma);
  bin.upper = float(double(bin.mean) + spread);
  bin.lower = float(double(bin.mean) - spread);
  if (bin.upper < adc_threshold) bin.upper = adc_threshold;
  return bin;
}

// A peak seed or peak pixel: good, not yet in a peak, above its bin's upper threshold.
LIVEDRP_HD bool above_threshold(float value, const RadialBinStats& bin) {
  return value > bin.upper;
}

// The local background ring around a centroid: offsets (dfs, dss) in [-2R, 2R) with
// dfs^2 + dss^2 <= (2R)^2, as the reference's square loop and radius test.
LIVEDRP_HD bool in_background_ring(int dfs, int dss, int local_bg_radius) {
  const int width = 2 * local_bg_radius;
  return dfs * dfs + dss * dss <= width * width;
}

}  // namespace livedrp::peaks
