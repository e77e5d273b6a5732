#pragma once
// What a lossy stream costs one event, measured against the same event uncompressed: how far its
// radial profile moved, bin by bin, and which of its peaks survived. Pure functions of the two
// results, so that a test can check them on inputs whose answer is known.
#include <cstdint>
#include <span>
#include <vector>

#include "peaks/peak_search.hpp"

namespace livedrp::stages {

// The decompressed profile against the original, bin by bin:
//   relative[b] = (decompressed[b] - original[b]) / |original[b]|
// NaN where either is NaN (a bin without pixels) or the original is 0 (no scale to be relative
// to). The summaries are over the bins with a finite relative difference (`compared_bins`); NaN
// when there are none.
struct ProfileDifference {
  std::vector<double> relative;
  std::uint64_t compared_bins = 0;
  double max_abs = 0;   // max |relative|
  double mean_abs = 0;  // mean |relative|
  double rms = 0;       // sqrt(mean relative^2)
};
// Throws InputError when the profiles differ in length.
ProfileDifference compare_profiles(std::span<const double> original,
                                   std::span<const double> decompressed);

// The peaks of the decompressed image against those of the original, matched one to one by
// centroid (fs, ss in slab pixels): every pair closer than `radius_px` (distance <= radius) is a
// candidate; candidates are taken closest first (ties: lower original index, then lower
// decompressed index), skipping a pair when either peak is already matched. Matched pairs are
// kept peaks, unmatched originals are lost, unmatched decompressed peaks are added.
//   recall    = kept / original peaks      (NaN when the original has none)
//   precision = kept / decompressed peaks  (NaN when the decompressed image has none)
// Shifts are the kept pairs' centroid distances (NaN when none is kept).
struct PeakMatch {
  std::uint64_t original = 0, decompressed = 0;
  std::uint64_t kept = 0, lost = 0, added = 0;
  double recall = 0, precision = 0;
  double mean_shift_px = 0, max_shift_px = 0;
  // Per kept pair: indices into the two lists, and their distance (closest first).
  struct Pair {
    std::size_t original, decompressed;
    double distance_px;
  };
  std::vector<Pair> pairs;
};
PeakMatch match_peaks(std::span<const peaks::Peak> original,
                      std::span<const peaks::Peak> decompressed, double radius_px);

// Largest |decompressed - original| over the pixels where both are finite (0 when none): what
// the codec's absolute bound promises to keep below the bound.
double max_pixel_error(std::span<const float> original, std::span<const float> decompressed);

}  // namespace livedrp::stages
