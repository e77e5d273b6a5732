#pragma once
// Per-bin math of the 1-D integration, as pyFAI 0.21 keeps it: binning of a position (histogram
// engine), the four accumulators (signal, variance, normalisation, count) and the final
// intensity and errors. LIVEDRP_HD so the CUDA kernels use the same formulas.
#include <cmath>

#include "core/host_device.hpp"
#include "integrate/corrections.hpp"

namespace livedrp::integrate {

// pyFAI's calc_upper_bound: the upper edge of the last bin lies one float32 epsilon above the
// largest position, so that position still falls inside (1 + FLT_EPSILON, in double).
LIVEDRP_HD double upper_bound(double max_position) {
  constexpr double eps32 = 1.0 + 1.1920928955078125e-07;
  return max_position > 0.0 ? max_position * eps32 : max_position / eps32;
}

// The bins: `bins` equal bins from `min` to `max` (max from upper_bound()), internal unit.
struct BinGrid {
  int bins = 0;
  double min = 0.0, max = 0.0, delta = 0.0;
};
LIVEDRP_HD BinGrid make_bin_grid(int bins, double min, double max_inclusive) {
  BinGrid g;
  g.bins = bins;
  g.min = min;
  g.max = upper_bound(max_inclusive);
  g.delta = (g.max - g.min) / static_cast<double>(bins);
  return g;
}

// The bin of a position, -1 outside. pyFAI truncates (x - min) / delta towards zero, so a position
// less than one bin below `min` still lands in bin 0; kept for identical results.
LIVEDRP_HD int bin_index(const BinGrid& g, double x) {
  const double f = (x - g.min) / g.delta;
  if (!(f > -1.0) || !(f < static_cast<double>(g.bins))) return -1;  // NaN too
  return static_cast<int>(f);
}

// Sums over the pixels of a bin, in double (pyFAI's acc_t). norm_sq: sum of squared
// normalisations, for the standard deviation.
struct BinAccumulator {
  double signal = 0, variance = 0, normalization = 0, count = 0, norm_sq = 0;
};

// Poisson (or no) error model: plain sums; coef is the pixel's share of the bin (1 without
// splitting).
LIVEDRP_HD void accumulate(BinAccumulator& a, const PixelSample& s, double coef = 1.0) {
  a.signal += coef * s.signal;
  a.variance += coef * coef * s.variance;
  a.normalization += coef * s.normalization;
  a.count += coef * s.count;
  a.norm_sq += coef * coef * static_cast<double>(s.normalization) * s.normalization;
}

// Azimuthal error model: the variance is the spread of the normalised signal within the bin,
// accumulated in one pass with the weighted update of Schubert & Gertz (SSDBM 2018), as pyFAI's
// CSR engine does. Invalid pixels are skipped (pyFAI would divide 0 by 0 on them).
LIVEDRP_HD void accumulate_azimuthal(BinAccumulator& a, const PixelSample& s, double coef = 1.0) {
  if (s.normalization == 0.0f || s.count == 0.0f) return;
  const double w = coef * s.normalization;
  const double x = coef * s.signal;
  if (a.normalization == 0.0) {
    a.signal = x;
    a.normalization = w;
    a.count = coef * s.count;
    a.norm_sq = w * w;
    return;
  }
  const double omega_a = a.normalization;
  const double omega = omega_a + w;
  const double delta = w * a.signal - omega_a * x;
  a.variance += delta * delta / (omega * omega_a * w);
  a.signal += x;
  a.normalization = omega;
  a.count += coef * s.count;
  a.norm_sq += w * w;
}

// The bin's results: intensity = signal / normalisation; sigma (standard error of the mean, pyFAI's
// sigma) = sqrt(variance) / normalisation; std, the standard deviation of one pixel's normalised
// value: with the azimuthal model the weighted spread sqrt(variance / normalisation) (variance
// holds sum w (v - mean)^2), with Poisson sqrt(variance / sum of squared normalisations) (each
// pixel's variance over its normalisation squared). A bin without valid pixels gets `empty`.
struct BinResult {
  double intensity, sigma, std;
};
LIVEDRP_HD BinResult finalize_bin(const BinAccumulator& a, double empty,
                                  ErrorModel model = ErrorModel::Poisson) {
  if (a.normalization == 0.0 || a.count == 0.0) return {empty, empty, empty};
  BinResult r;
  r.intensity = a.signal / a.normalization;
  r.sigma = a.variance != 0.0 ? std::sqrt(a.variance) / a.normalization : empty;
  const double spread_norm = model == ErrorModel::Azimuthal ? a.normalization : a.norm_sq;
  r.std = a.variance != 0.0 && spread_norm > 0.0 ? std::sqrt(a.variance / spread_norm) : empty;
  return r;
}

// Sigma clipping as pyFAI 0.21's CSR sigma_clip: a pixel is rejected when its normalised value is
// further from the bin's mean than max(cutoff, Chauvenet's criterion for the bin's count, at least
// 3) times the bin's spread sqrt(variance / normalisation) (pyFAI's "std" there, whatever the
// error model).
LIVEDRP_HD double clip_spread(const BinAccumulator& a) {
  return a.normalization != 0.0 ? std::sqrt(a.variance / a.normalization) : NAN;
}
LIVEDRP_HD double clip_threshold(double count, double cutoff, double spread) {
  const double n = count > 3.0 ? count : 3.0;
  const double chauvenet = std::sqrt(2.0 * std::log(n / std::sqrt(2.0 * kPi)));
  return (cutoff > chauvenet ? cutoff : chauvenet) * spread;
}
// NaN mean or threshold rejects nothing, as in pyFAI.
LIVEDRP_HD bool clip_rejects(const PixelSample& s, double mean, double threshold) {
  return std::fabs(double(s.signal) / double(s.normalization) - mean) > threshold;
}

}  // namespace livedrp::integrate
