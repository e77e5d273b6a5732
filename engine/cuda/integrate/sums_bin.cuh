#pragma once
// How the sums paths (bin-major sums kernel's siblings: pixel-major, histogram) finish a bin: the
// event's signal and variance with the bin's static sums (normalisation, count, squared
// normalisation, formed once at upload), less the shares of the entries the event invalidated,
// then integrate::finalize_bin and the 7 stored fields in device_integrator.cu's layout.
#include <cstddef>
#include <cstdint>

#include "integrate/accumulate.hpp"

namespace livedrp::gpu {

// The entries of bin `bin` the event invalidated (a dummy or non-finite value).
struct LostSums {
  double entries = 0, normalization = 0, count = 0, norm_sq = 0;
};

inline constexpr int kStoredFields = 7;  // intensity, sigma, std, signal, variance, norm, count

// The bin's 7 stored fields, in their order.
__device__ inline void sums_bin_values(double (&values)[kStoredFields], double signal,
                                       double variance, double static_normalization,
                                       double static_count, double static_norm_sq,
                                       std::int32_t bin_entries, const LostSums& lost,
                                       integrate::ErrorModel model, double empty) {
  integrate::BinAccumulator total;
  total.signal = signal;
  total.variance = variance;
  total.normalization = static_normalization;
  total.count = static_count;
  total.norm_sq = static_norm_sq;
  if (lost.entries != 0.0) {
    if (lost.entries >= double(bin_entries)) {  // nothing valid left: exactly the CPU's zeros
      total.normalization = total.count = total.norm_sq = 0.0;
    } else {
      total.normalization -= lost.normalization;
      total.count -= lost.count;
      total.norm_sq -= lost.norm_sq;
    }
  }
  const integrate::BinResult r = integrate::finalize_bin(total, empty, model);
  values[0] = r.intensity;
  values[1] = r.sigma;
  values[2] = r.std;
  values[3] = total.signal;
  values[4] = total.variance;
  values[5] = total.normalization;
  values[6] = total.count;
}

// The same, stored in bin `bin` of one frame's fields (field k at frame_out[k * bins + bin]).
__device__ inline void store_sums_bin(double* frame_out, int bins, int bin, double signal,
                                      double variance, double static_normalization,
                                      double static_count, double static_norm_sq,
                                      std::int32_t bin_entries, const LostSums& lost,
                                      integrate::ErrorModel model, double empty) {
  double values[kStoredFields];
  sums_bin_values(values, signal, variance, static_normalization, static_count, static_norm_sq,
                  bin_entries, lost, model, empty);
  for (int k = 0; k < kStoredFields; ++k)
    frame_out[std::size_t(k) * std::size_t(bins) + std::size_t(bin)] = values[k];
}

}  // namespace livedrp::gpu
