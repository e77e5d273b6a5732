#include "stages/fidelity/fidelity_measures.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "core/error.hpp"

namespace livedrp::stages {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

ProfileDifference compare_profiles(std::span<const double> original,
                                   std::span<const double> decompressed) {
  if (original.size() != decompressed.size())
    throw InputError("fidelity: the decompressed profile has " +
                     std::to_string(decompressed.size()) + " bins, the original " +
                     std::to_string(original.size()));
  ProfileDifference out;
  out.relative.resize(original.size(), kNaN);
  double sum_abs = 0, sum_squares = 0;
  for (std::size_t bin = 0; bin < original.size(); ++bin) {
    const double o = original[bin], d = decompressed[bin];
    if (!std::isfinite(o) || !std::isfinite(d) || o == 0) continue;
    const double relative = (d - o) / std::abs(o);
    out.relative[bin] = relative;
    ++out.compared_bins;
    out.max_abs = std::max(out.max_abs, std::abs(relative));
    sum_abs += std::abs(relative);
    sum_squares += relative * relative;
  }
  if (out.compared_bins == 0) {
    out.max_abs = out.mean_abs = out.rms = kNaN;
  } else {
    out.mean_abs = sum_abs / double(out.compared_bins);
    out.rms = std::sqrt(sum_squares / double(out.compared_bins));
  }
  return out;
}

PeakMatch match_peaks(std::span<const peaks::Peak> original,
                      std::span<const peaks::Peak> decompressed, double radius_px) {
  PeakMatch out;
  out.original = original.size();
  out.decompressed = decompressed.size();
  std::vector<PeakMatch::Pair> candidates;
  for (std::size_t i = 0; i < original.size(); ++i)
    for (std::size_t j = 0; j < decompressed.size(); ++j) {
      const double distance = std::hypot(double(decompressed[j].fs) - double(original[i].fs),
                                         double(decompressed[j].ss) - double(original[i].ss));
      if (distance <= radius_px) candidates.push_back({i, j, distance});
    }
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return std::tie(a.distance_px, a.original, a.decompressed) <
           std::tie(b.distance_px, b.original, b.decompressed);
  });
  std::vector<bool> original_taken(original.size()), decompressed_taken(decompressed.size());
  double shift_sum = 0;
  for (const PeakMatch::Pair& pair : candidates) {
    if (original_taken[pair.original] || decompressed_taken[pair.decompressed]) continue;
    original_taken[pair.original] = decompressed_taken[pair.decompressed] = true;
    out.pairs.push_back(pair);
    shift_sum += pair.distance_px;
    out.max_shift_px = std::max(out.max_shift_px, pair.distance_px);
  }
  out.kept = out.pairs.size();
  out.lost = out.original - out.kept;
  out.added = out.decompressed - out.kept;
  out.recall = out.original ? double(out.kept) / double(out.original) : kNaN;
  out.precision = out.decompressed ? double(out.kept) / double(out.decompressed) : kNaN;
  if (out.kept) {
    out.mean_shift_px = shift_sum / double(out.kept);
  } else {
    out.mean_shift_px = out.max_shift_px = kNaN;
  }
  return out;
}

double max_pixel_error(std::span<const float> original, std::span<const float> decompressed) {
  double largest = 0;
  const std::size_t count = std::min(original.size(), decompressed.size());
  for (std::size_t p = 0; p < count; ++p) {
    const double o = original[p], d = decompressed[p];
    if (std::isfinite(o) && std::isfinite(d)) largest = std::max(largest, std::abs(d - o));
  }
  return largest;
}

}  // namespace livedrp::stages
