#pragma once
// One peak search of peakfinder8, written once for both backends (LIVEDRP_HD): from a seed pixel,
// grow the peak, measure its local background, re-integrate it and apply the reference's tests.
// The CPU backend calls it for every candidate seed of an ASIC in raster order; the CUDA backend's
// warp per ASIC finds the candidates with a ballot and calls it from one lane in the same order, so
// both claim the same pixels and produce the same peaks, value for value.
//
// Both backends must evaluate every expression here the same way: the host compiles engine/peaks
// with -ffp-contract=off and the device code with --fmad=false, so no multiply-add is fused on one
// side only.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/host_device.hpp"
#include "peaks/radial_threshold.hpp"

namespace livedrp::peaks {

// A rectangle of the slab (the event's 2-D array, rows = slow scan) that peaks do not cross.
struct Asic {
  int first_ss = 0, first_fs = 0;
  int height = 0, width = 0;
  int segment = 0;
};

struct Peak {
  float fs = 0, ss = 0;  // centroid in slab coordinates, pixel centres at integers
  float ss_in_segment = 0;
  int segment = 0;
  float intensity = 0;  // sum of (value - local background mean)
  int num_pixels = 0;
  float max_value = 0;  // largest (value - local background mean), at least 0 as the reference
  float local_sigma = 0;
  float snr = 0;
};

// What a search reads and writes; plain pointers so that a kernel can hold one.
struct SearchView {
  const float* data = nullptr;
  const std::int32_t* bin = nullptr;   // per pixel: radius bin
  const std::uint8_t* good = nullptr;  // per pixel: 1 = used
  const RadialBinStats* stats = nullptr;
  std::uint8_t* in_peak = nullptr;  // per pixel: 0 free, 1 claimed, 2 in a peak (zeroed per event)
  std::int32_t* members = nullptr;  // scratch: at least the ASIC's pixel count
  int width = 0;                    // of the slab
  int segment_rows = 0;             // rows per segment (0: the slab is one panel)
  int min_pixel_count = 0, max_pixel_count = 0, local_bg_radius = 0;
  float minimum_snr = 0;
};

// Good and above its bin's upper threshold: may seed or join a peak (when not yet claimed).
LIVEDRP_HD bool above_its_threshold(const SearchView& v, std::size_t p) {
  return v.good[p] != 0 && above_threshold(v.data[p], v.stats[v.bin[p]]);
}

// Grows the peak seeded at pixel `seed` (a candidate not yet claimed), claims its pixels, and
// returns whether it passes every test; `peak` is filled when it does.
LIVEDRP_HD bool search_from_seed(const SearchView& v, const Asic& asic, std::size_t seed,
                                 Peak& peak) {
  const std::size_t width = std::size_t(v.width);
  const int ss_end = asic.first_ss + asic.height, fs_end = asic.first_fs + asic.width;

  // Grow over the 8-neighbourhood within the ASIC, breadth first. The first centroid weighs each
  // pixel by its value above its radius bin's mean.
  int count = 0;
  v.members[count++] = std::int32_t(seed);
  v.in_peak[seed] = 1;
  double sum_i = 0, sum_fs = 0, sum_ss = 0;
  for (int next = 0; next < count; ++next) {
    const std::size_t p = std::size_t(v.members[next]);
    const int ss = int(p / width), fs = int(p % width);
    const double above = double(v.data[p]) - double(v.stats[v.bin[p]].mean);
    sum_i += above;
    sum_fs += above * double(fs);
    sum_ss += above * double(ss);
    for (int dss = -1; dss <= 1; ++dss)
      for (int dfs = -1; dfs <= 1; ++dfs) {
        const int nss = ss + dss, nfs = fs + dfs;
        if (nss < asic.first_ss || nss >= ss_end || nfs < asic.first_fs || nfs >= fs_end) continue;
        const std::size_t n = std::size_t(nss) * width + std::size_t(nfs);
        if (v.in_peak[n] != 0 || !above_its_threshold(v, n)) continue;
        v.in_peak[n] = 1;
        v.members[count++] = std::int32_t(n);
      }
  }
  if (count < v.min_pixel_count || count > v.max_pixel_count) return false;
  if (fabs(sum_i) < 1e-10) return false;

  // Local background: the ring around the rounded centroid, within the ASIC, of good pixels
  // below their threshold and in no peak.
  const int centre_ss = int(rint(sum_ss / fabs(sum_i)));
  const int centre_fs = int(rint(sum_fs / fabs(sum_i)));
  const int reach = 2 * v.local_bg_radius;
  double ring_sum = 0, ring_squares = 0, ring_max = 0;
  std::uint32_t ring_count = 0;
  for (int dss = -reach; dss < reach; ++dss)
    for (int dfs = -reach; dfs < reach; ++dfs) {
      const int ss = centre_ss + dss, fs = centre_fs + dfs;
      if (ss < asic.first_ss || ss >= ss_end || fs < asic.first_fs || fs >= fs_end) continue;
      if (!in_background_ring(dfs, dss, v.local_bg_radius)) continue;
      const std::size_t p = std::size_t(ss) * width + std::size_t(fs);
      const float value = v.data[p];
      if (v.good[p] == 0 || v.in_peak[p] != 0 || !(value < v.stats[v.bin[p]].upper)) continue;
      ring_sum += double(value);
      ring_squares += double(value) * double(value);
      ring_max = double(value) > ring_max ? double(value) : ring_max;
      ++ring_count;
    }
  double local_mean = 0, local_sigma = 0.01;  // the reference's values for an empty ring
  if (ring_count > 0) {
    local_mean = ring_sum / double(ring_count);
    const double variance = ring_squares / double(ring_count) - local_mean * local_mean;
    if (variance >= 0) local_sigma = sqrt(variance);
  } else {
    // The radius bin of the centroid pixel, as the reference (held inside the ASIC).
    const int ss =
        centre_ss < asic.first_ss ? asic.first_ss : (centre_ss >= ss_end ? ss_end - 1 : centre_ss);
    const int fs =
        centre_fs < asic.first_fs ? asic.first_fs : (centre_fs >= fs_end ? fs_end - 1 : centre_fs);
    local_mean = v.stats[v.bin[std::size_t(ss) * width + std::size_t(fs)]].mean;
  }

  // Re-integrate and re-centroid with the local background.
  double intensity = 0, raw_sum = 0, raw_fs = 0, raw_ss = 0, peak_max = 0;
  for (int k = 0; k < count; ++k) {
    const std::size_t p = std::size_t(v.members[k]);
    const double value = v.data[p];
    intensity += value - local_mean;
    raw_sum += value;
    raw_fs += value * double(p % width);
    raw_ss += value * double(p / width);
    peak_max = value - local_mean > peak_max ? value - local_mean : peak_max;
  }
  if (fabs(raw_sum) < 1e-10) return false;
  const double fs = raw_fs / fabs(raw_sum), ss = raw_ss / fabs(raw_sum);
  const double snr = fabs(local_sigma) > 1e-10 ? intensity / local_sigma : 0.0;
  if (snr < v.minimum_snr) return false;
  if (peak_max < ring_max - local_mean) return false;
  if (fs < asic.first_fs || fs > fs_end - 1 || ss < asic.first_ss || ss > ss_end - 1) return false;

  for (int k = 0; k < count; ++k) v.in_peak[v.members[k]] = 2;
  peak.fs = float(fs);
  peak.ss = float(ss);
  peak.segment = asic.segment;
  peak.ss_in_segment =
      float(v.segment_rows > 0 ? ss - double(asic.segment) * double(v.segment_rows) : ss);
  peak.intensity = float(intensity);
  peak.num_pixels = count;
  peak.max_value = float(peak_max);
  peak.local_sigma = float(local_sigma);
  peak.snr = float(snr);
  return true;
}

}  // namespace livedrp::peaks
