#pragma once
// One peak search of peakfinder8, written once for both backends (LIVEDRP_HD): from a seed pixel,
// grow the peak, measure its local background, re-integrate it and apply the reference's tests.
// The CPU backend runs it for every candidate seed of an ASIC in raster order; the CUDA backend's
// warp per ASIC takes the candidates in the same order from bitmaps in shared memory, grows each
// peak with the warp and shares out its background ring and re-integration over the 32 lanes. Both
// add every term through the helpers here (add_to_centroid, add_to_ring, add_to_members) in the
// same order, so both claim the same pixels and produce the same peaks, value for value.
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

// Below its bin's upper threshold: a good pixel that may count in a peak's background ring (when
// no peak claimed it).
LIVEDRP_HD bool below_threshold(float value, const RadialBinStats& bin) {
  return value < bin.upper;
}

// Good and above its bin's upper threshold: may seed or join a peak (when not yet claimed).
LIVEDRP_HD bool above_its_threshold(const SearchView& v, std::size_t p) {
  return v.good[p] != 0 && above_threshold(v.data[p], v.stats[v.bin[p]]);
}

// The search of one seed in three parts, so that the GPU can give the middle one (the local
// background ring, most of the pixels a search reads) to a whole warp: grow_peak and finish_peak
// run in one lane, ring_lane in each of kRingLanes lanes, and the lanes' partial sums are added in
// the fixed butterfly order of combine_ring_lanes on both backends, so the sums are the same bits.

// What growing a peak found: its pixels are v.members[0, count), claimed (in_peak 1).
struct GrownPeak {
  int count = 0;
  int centre_ss = 0, centre_fs = 0;  // the first centroid, rounded
  bool usable = false;  // pixel count within limits and a non-zero weight: measure the ring
};

// The first centroid's sums: each member weighed by its value above its radius bin's mean, added
// in member order (the GPU adds them in the same order from the members' staged values).
struct CentroidSums {
  double intensity = 0, fs = 0, ss = 0;
};
LIVEDRP_HD void add_to_centroid(CentroidSums& c, float value, float bin_mean, int fs, int ss) {
  const double above = double(value) - double(bin_mean);
  c.intensity += above;
  c.fs += above * double(fs);
  c.ss += above * double(ss);
}

// The grown peak from its pixel count and centroid sums: usable when the count is within limits
// and the weight is not zero.
LIVEDRP_HD GrownPeak finish_growth(const SearchView& v, int count, const CentroidSums& c) {
  GrownPeak g;
  g.count = count;
  if (count < v.min_pixel_count || count > v.max_pixel_count) return g;
  if (fabs(c.intensity) < 1e-10) return g;
  g.centre_ss = int(rint(c.ss / fabs(c.intensity)));
  g.centre_fs = int(rint(c.fs / fabs(c.intensity)));
  g.usable = true;
  return g;
}

// Grows the peak seeded at pixel `seed` (a candidate not yet claimed) over the 8-neighbourhood
// within the ASIC, breadth first (neighbours in row-major order of the 3 x 3 square), and claims
// its pixels.
inline GrownPeak grow_peak(const SearchView& v, const Asic& asic, std::size_t seed) {
  const std::size_t width = std::size_t(v.width);
  const int ss_end = asic.first_ss + asic.height, fs_end = asic.first_fs + asic.width;
  int count = 0;
  v.members[count++] = std::int32_t(seed);
  v.in_peak[seed] = 1;
  CentroidSums centroid;
  for (int next = 0; next < count; ++next) {
    const std::size_t p = std::size_t(v.members[next]);
    const int ss = int(p / width), fs = int(p % width);
    add_to_centroid(centroid, v.data[p], v.stats[v.bin[p]].mean, fs, ss);
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
  return finish_growth(v, count, centroid);
}

// The local background ring's sums: good pixels below their threshold and in no peak, within
// the ASIC, up to 2 * local_bg_radius around the rounded centroid.
inline constexpr int kRingLanes = 32;
struct RingSums {
  double sum = 0, squares = 0, max = 0;
  std::uint32_t count = 0;
};

// A background pixel's terms.
LIVEDRP_HD void add_to_ring(RingSums& r, float value) {
  r.sum += double(value);
  r.squares += double(value) * double(value);
  r.max = double(value) > r.max ? double(value) : r.max;
  ++r.count;
}

// Lane `lane`'s share of the ring: the positions i = lane, lane + kRingLanes, ... of the square
// (2 * reach)^2 around the centre, row by row, added in that order.
inline RingSums ring_lane(const SearchView& v, const Asic& asic, const GrownPeak& g, int lane) {
  const std::size_t width = std::size_t(v.width);
  const int ss_end = asic.first_ss + asic.height, fs_end = asic.first_fs + asic.width;
  const int reach = 2 * v.local_bg_radius, side = 2 * reach;
  RingSums r;
  // Position i is row i / side, column i % side of the square; both are stepped along with i
  // (no division per position).
  int row = lane / side, column = lane % side;
  const auto step = [&] {
    for (column += kRingLanes; column >= side; column -= side) ++row;
  };
  for (int i = lane; i < side * side; i += kRingLanes, step()) {
    const int dss = row - reach, dfs = column - reach;
    const int ss = g.centre_ss + dss, fs = g.centre_fs + dfs;
    if (ss < asic.first_ss || ss >= ss_end || fs < asic.first_fs || fs >= fs_end) continue;
    if (!in_background_ring(dfs, dss, v.local_bg_radius)) continue;
    const std::size_t p = std::size_t(ss) * width + std::size_t(fs);
    const float value = v.data[p];
    if (v.good[p] == 0 || v.in_peak[p] != 0 || !below_threshold(value, v.stats[v.bin[p]])) continue;
    add_to_ring(r, value);
  }
  return r;
}

// Two lanes' sums; symmetric bit for bit (a + b == b + a), so every lane of a butterfly ends with
// the same total.
LIVEDRP_HD RingSums combine_ring(const RingSums& a, const RingSums& b) {
  RingSums r;
  r.sum = a.sum + b.sum;
  r.squares = a.squares + b.squares;
  r.max = a.max > b.max ? a.max : b.max;
  r.count = a.count + b.count;
  return r;
}

// The lanes' sums added as a warp's xor butterfly adds them (lane l takes lane l ^ d for d = 16,
// 8, 4, 2, 1); `lanes` is overwritten. The host's way to the GPU's total: only lane 0's result is
// needed, and after step d it depends on lanes below d alone, where l ^ d = l + d; so each step
// updates those lanes in place (31 combines instead of the butterfly's 160, the same values).
inline RingSums combine_ring_lanes(RingSums (&lanes)[kRingLanes]) {
  for (int d = kRingLanes / 2; d > 0; d /= 2)
    for (int l = 0; l < d; ++l) lanes[l] = combine_ring(lanes[l], lanes[l + d]);
  return lanes[0];
}

// The local background from the ring's sums: mean and sigma of the ring's pixels, or, for an
// empty ring, the reference's values (mean of the centroid pixel's radius bin, sigma 0.01).
struct LocalBackground {
  double mean = 0, sigma = 0.01;
};
LIVEDRP_HD LocalBackground local_background(const SearchView& v, const Asic& asic,
                                            const GrownPeak& g, const RingSums& ring) {
  const std::size_t width = std::size_t(v.width);
  const int ss_end = asic.first_ss + asic.height, fs_end = asic.first_fs + asic.width;
  LocalBackground bg;
  if (ring.count > 0) {
    bg.mean = ring.sum / double(ring.count);
    const double variance = ring.squares / double(ring.count) - bg.mean * bg.mean;
    if (variance >= 0) bg.sigma = sqrt(variance);
  } else {
    // The radius bin of the centroid pixel, as the reference (held inside the ASIC).
    const int ss = g.centre_ss < asic.first_ss ? asic.first_ss
                                               : (g.centre_ss >= ss_end ? ss_end - 1 : g.centre_ss);
    const int fs = g.centre_fs < asic.first_fs ? asic.first_fs
                                               : (g.centre_fs >= fs_end ? fs_end - 1 : g.centre_fs);
    bg.mean = v.stats[v.bin[std::size_t(ss) * width + std::size_t(fs)]].mean;
  }
  return bg;
}

// Re-integration and re-centroiding of the peak's pixels with the local background, shared out
// like the ring: lane `lane` takes members lane, lane + kRingLanes, ... in order.
struct MemberSums {
  double intensity = 0, raw_sum = 0, raw_fs = 0, raw_ss = 0, peak_max = 0;
};
// A member's terms, at slab position (fs, ss).
LIVEDRP_HD void add_to_members(MemberSums& m, float member_value, int fs, int ss,
                               double local_mean) {
  const double value = member_value;
  m.intensity += value - local_mean;
  m.raw_sum += value;
  m.raw_fs += value * double(fs);
  m.raw_ss += value * double(ss);
  m.peak_max = value - local_mean > m.peak_max ? value - local_mean : m.peak_max;
}
inline MemberSums member_lane(const SearchView& v, const GrownPeak& g, double local_mean,
                              int lane) {
  const std::size_t width = std::size_t(v.width);
  MemberSums m;
  for (int k = lane; k < g.count; k += kRingLanes) {
    const std::size_t p = std::size_t(v.members[k]);
    add_to_members(m, v.data[p], int(p % width), int(p / width), local_mean);
  }
  return m;
}
// Symmetric bit for bit, as combine_ring.
LIVEDRP_HD MemberSums combine_members(const MemberSums& a, const MemberSums& b) {
  MemberSums r;
  r.intensity = a.intensity + b.intensity;
  r.raw_sum = a.raw_sum + b.raw_sum;
  r.raw_fs = a.raw_fs + b.raw_fs;
  r.raw_ss = a.raw_ss + b.raw_ss;
  r.peak_max = a.peak_max > b.peak_max ? a.peak_max : b.peak_max;
  return r;
}
// Lane 0 of the butterfly, as combine_ring_lanes.
inline MemberSums combine_member_lanes(MemberSums (&lanes)[kRingLanes]) {
  for (int d = kRingLanes / 2; d > 0; d /= 2)
    for (int l = 0; l < d; ++l) lanes[l] = combine_members(lanes[l], lanes[l + d]);
  return lanes[0];
}

// The reference's tests on the re-integrated peak; `peak` is filled when it passes. The caller
// then marks the peak's pixels in_peak 2 (mark_peak).
LIVEDRP_HD bool finish_peak(const SearchView& v, const Asic& asic, const GrownPeak& g,
                            const RingSums& ring, const LocalBackground& bg, const MemberSums& m,
                            Peak& peak) {
  const int ss_end = asic.first_ss + asic.height, fs_end = asic.first_fs + asic.width;
  if (fabs(m.raw_sum) < 1e-10) return false;
  const double fs = m.raw_fs / fabs(m.raw_sum), ss = m.raw_ss / fabs(m.raw_sum);
  const double snr = fabs(bg.sigma) > 1e-10 ? m.intensity / bg.sigma : 0.0;
  if (snr < v.minimum_snr) return false;
  if (m.peak_max < ring.max - bg.mean) return false;
  if (fs < asic.first_fs || fs > fs_end - 1 || ss < asic.first_ss || ss > ss_end - 1) return false;
  peak.fs = float(fs);
  peak.ss = float(ss);
  peak.segment = asic.segment;
  peak.ss_in_segment =
      float(v.segment_rows > 0 ? ss - double(asic.segment) * double(v.segment_rows) : ss);
  peak.intensity = float(m.intensity);
  peak.num_pixels = g.count;
  peak.max_value = float(m.peak_max);
  peak.local_sigma = float(bg.sigma);
  peak.snr = float(snr);
  return true;
}

// The whole search of one seed on the host: grow, the ring and the re-integration in kRingLanes
// shares added as the GPU's warp adds them, the tests, the peak's pixels marked. Returns whether
// the peak passes every test.
inline bool search_from_seed(const SearchView& v, const Asic& asic, std::size_t seed, Peak& peak) {
  const GrownPeak g = grow_peak(v, asic, seed);
  if (!g.usable) return false;
  RingSums ring_lanes[kRingLanes];
  for (int l = 0; l < kRingLanes; ++l) ring_lanes[l] = ring_lane(v, asic, g, l);
  const RingSums ring = combine_ring_lanes(ring_lanes);
  const LocalBackground bg = local_background(v, asic, g, ring);
  MemberSums member_lanes[kRingLanes];
  for (int l = 0; l < kRingLanes; ++l) member_lanes[l] = member_lane(v, g, bg.mean, l);
  if (!finish_peak(v, asic, g, ring, bg, combine_member_lanes(member_lanes), peak)) return false;
  for (int k = 0; k < g.count; ++k) v.in_peak[v.members[k]] = 2;
  return true;
}

}  // namespace livedrp::peaks
