// The pixel-major integration path (pixel_major.hpp). Compiled with --fmad=false like the rest of
// cuda/integrate, so the per-pixel and per-bin math rounds as the host's does.
#include "cuda/integrate/pixel_major.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "cuda/device.hpp"
#include "cuda/integrate/device_integrator.hpp"
#include "cuda/integrate/sums_bin.cuh"

namespace livedrp::gpu::pixel_major {

namespace {

// A tile's entries in (bin, pixel) order, reordered inside each run of kEntriesPerThread (a
// thread's) among the entries of the same bin, which the sums do not tell apart: thread l of a
// warp walks run l, so at each step the warp's 32 lanes read 32 entries of 32 runs from shared
// memory, and two that fall in the same bank (pixel column mod 32: a tile row is 128 floats)
// cost another pass. Position by position, each lane takes, of its bin's entries left in its
// run, one whose bank the warp's earlier lanes at that step use least. Greedy and deterministic.
// On the ePix10ka2M at 1000 bins a warp's load takes 2.07 passes instead of 3.36 (H200: 3-4% more
// frames/s). Sums of floats in double are exact there either way; in general the order of a
// segment's additions changes within an ulp.
void spread_over_banks(std::vector<std::pair<std::int32_t, std::uint32_t>>& entries) {
  constexpr std::size_t kRun = kEntriesPerThread, kWarp = 32, kBanks = 32;
  const std::size_t n = entries.size();
  for (std::size_t warp_first = 0; warp_first < n; warp_first += kWarp * kRun)
    for (std::size_t step = 0; step < kRun; ++step) {
      int used[kBanks] = {};
      for (std::size_t lane = 0; lane < kWarp; ++lane) {
        const std::size_t k = warp_first + lane * kRun + step;
        if (k >= n) break;
        // The candidates: positions k.. of the same bin in this run (the earlier ones are placed).
        const std::size_t run_end = std::min(n, (k / kRun + 1) * kRun);
        std::size_t best = k;
        for (std::size_t j = k; j < run_end && entries[j].first == entries[k].first; ++j)
          if (used[entries[j].second % kBanks] < used[entries[best].second % kBanks]) best = j;
        std::swap(entries[k], entries[best]);
        ++used[entries[k].second % kBanks];
      }
    }
}

}  // namespace

bool build_tables(const IntegrationPlan& plan, Tables& t) {
  if (plan.split || plan.error_model == integrate::ErrorModel::Azimuthal || plan.bins < 1)
    return false;
  std::vector<std::int32_t> entry_of_pixel(plan.pixels, -1), bin_of_pixel(plan.pixels, -1);
  std::vector<int> empty_bins;
  for (int b = 0; b < plan.bins; ++b) {
    if (plan.row_start[std::size_t(b)] == plan.row_start[std::size_t(b) + 1])
      empty_bins.push_back(b);
    for (std::int32_t e = plan.row_start[std::size_t(b)]; e < plan.row_start[std::size_t(b) + 1];
         ++e) {
      const std::int32_t p = plan.pixel[std::size_t(e)];
      if (p < 0 || std::size_t(p) >= plan.pixels || entry_of_pixel[std::size_t(p)] >= 0)
        return false;  // a pixel in two entries: this path sums each pixel once
      entry_of_pixel[std::size_t(p)] = e;
      bin_of_pixel[std::size_t(p)] = b;
    }
  }
  t = Tables{};
  // Segment shape: rows x cols, or the whole image as one row when the plan has none.
  const bool shaped = plan.rows > 0 && plan.cols > 0 &&
                      plan.pixels % (std::size_t(plan.rows) * std::size_t(plan.cols)) == 0;
  const std::size_t cols = shaped ? std::size_t(plan.cols) : plan.pixels;
  const std::size_t rows = shaped ? std::size_t(plan.rows) : 1;
  const std::size_t segments = plan.pixels / (rows * cols);
  if (plan.pixels > std::size_t(INT32_MAX) || cols > std::size_t(INT32_MAX)) return false;
  t.row_pitch = int(cols);
  for (std::size_t segment = 0; segment < segments; ++segment)
    for (std::size_t r0 = 0; r0 < rows; r0 += kTileRows)
      for (std::size_t c0 = 0; c0 < cols; c0 += kTileCols) {
        const std::size_t tile_rows = std::min<std::size_t>(kTileRows, rows - r0);
        const std::size_t tile_cols = std::min<std::size_t>(kTileCols, cols - c0);
        t.tile_origin.push_back(std::int32_t(segment * rows * cols + r0 * cols + c0));
        t.tile_shape.push_back(std::int32_t((tile_rows << 16) | tile_cols));
      }
  t.tiles = t.tile_origin.size();
  if (t.tiles == 0) return false;
  t.entry.reserve(plan.pixel.size() + t.tiles * kEntriesPerThread);
  t.normalization.reserve(t.entry.capacity());
  std::vector<std::vector<std::int32_t>> segments_of_bin(std::size_t(plan.bins));
  std::vector<std::pair<std::int32_t, std::uint32_t>> tile_entries;  // (bin, pixel in tile)
  std::vector<std::int32_t> pixel_of_local(kTilePixels);
  auto add_segment = [&](int bin, std::uint16_t first_entry) {
    segments_of_bin[std::size_t(bin)].push_back(std::int32_t(t.segment_bin.size()));
    t.segment_bin.push_back(bin);
    t.segment_first_entry.push_back(first_entry);
  };
  t.tile_segment_start.push_back(0);
  t.tile_entry_start.push_back(0);
  for (std::size_t tile = 0; tile < t.tiles; ++tile) {
    const std::size_t origin = std::size_t(t.tile_origin[tile]);
    const std::size_t tile_rows = std::size_t(t.tile_shape[tile]) >> 16;
    const std::size_t tile_cols = std::size_t(t.tile_shape[tile]) & 0xFFFF;
    tile_entries.clear();
    for (std::size_t r = 0; r < tile_rows; ++r)
      for (std::size_t c = 0; c < tile_cols; ++c) {
        const std::size_t p = origin + r * cols + c;
        const std::uint32_t local = std::uint32_t(r * kTileCols + c);
        pixel_of_local[local] = std::int32_t(p);
        if (bin_of_pixel[p] >= 0) tile_entries.emplace_back(bin_of_pixel[p], local);
      }
    std::sort(tile_entries.begin(), tile_entries.end());
    spread_over_banks(tile_entries);
    const std::size_t tile_first_segment = t.segment_bin.size();
    for (std::size_t k = 0; k < tile_entries.size(); ++k) {
      const auto [bin, local] = tile_entries[k];
      const bool head = k == 0 || bin != tile_entries[k - 1].first;
      // Runs start at multiples of kEntriesPerThread: the segments begun before this one.
      if (t.entry.size() % kEntriesPerThread == 0)
        t.run_segment.push_back(std::uint16_t(t.segment_bin.size() - tile_first_segment));
      if (head)
        add_segment(bin, std::uint16_t(t.entry.size() - std::size_t(t.tile_entry_start.back())));
      const std::size_t e = std::size_t(entry_of_pixel[std::size_t(pixel_of_local[local])]);
      // Tiles start at even entries, so an entry's parity in the table is its parity in the pair.
      const bool even = t.entry.size() % 2 == 0;
      if (head && !even) t.entry.back() |= kOddHead;
      t.entry.push_back(std::uint16_t(local * 4 | (head && even ? kEvenHead : 0)));
      t.normalization.push_back(plan.normalization[e]);
      if (!plan.dark.empty()) t.dark.push_back(plan.dark[e]);
    }
    while (t.entry.size() % kEntriesPerThread != 0) {  // whole runs: aligned 16-byte loads
      t.entry.push_back(kPaddingOffset);
      t.normalization.push_back(0.0f);
      if (!plan.dark.empty()) t.dark.push_back(0.0f);
    }
    // Bins without entries: an empty segment each, spread over the tiles after their own.
    for (std::size_t k = tile; k < empty_bins.size(); k += t.tiles)
      add_segment(empty_bins[k], kNoEntries);
    t.tile_segment_start.push_back(std::int32_t(t.segment_bin.size()));
    t.tile_entry_start.push_back(std::int32_t(t.entry.size()));
    t.max_tile_segments =
        std::max(t.max_tile_segments, t.tile_segment_start[tile + 1] - t.tile_segment_start[tile]);
  }
  if (t.entry.size() > std::size_t(INT32_MAX) || t.max_tile_segments > 0xFFFF) return false;
  t.bin_segment_start.push_back(0);
  t.segment_slot.assign(t.segment_bin.size(), -1);
  std::int32_t slot = 0;
  for (const auto& list : segments_of_bin) {
    for (const std::int32_t segment : list) t.segment_slot[std::size_t(segment)] = slot++;
    t.bin_segment_start.push_back(slot);
  }
  return true;
}

namespace {

// A bin's sums over its segments' partials in the merge: the event's signal and variance, and
// the static shares of the entries the event invalidated (count = entries without splitting).
struct Piece {
  double signal = 0, variance = 0, lost = 0, lost_norm = 0, lost_norm_sq = 0;
};

// A segment's static shares of the entries the event invalidated (count = entries without
// splitting).
struct LostShares {
  double entries, norm, norm_sq;
};

// Slots for the running sums at the tile's segment heads: an even number, so that the arrays
// after them stay 16-byte aligned.
__host__ __device__ int segment_slots(int max_tile_segments) {
  return max_tile_segments < 1 ? 2 : (max_tile_segments + 1) / 2 * 2;
}

// Shared memory of a block: the running sums at the tile's segment heads, each run's sums, the
// tile's image and its padding slot, and each run's invalidated entries.
std::size_t shared_bytes(int max_tile_segments) {
  return sizeof(double2) * (std::size_t(segment_slots(max_tile_segments)) + kThreads) +
         (kTilePixels + 4) * sizeof(float) + kThreads * sizeof(std::uint32_t);
}

// The second kernel of a launch: a warp per (bin, frame) adds the bin's segment partials, which
// lie consecutive at the bin's slots (lane l takes slots l, l + 32, ... in order; the lanes' sums
// are combined in a fixed pattern), and a block's kMergeBins bins are stored together: field k of
// the block's bins as 64 consecutive bytes, so that results written straight to pinned host
// memory cross PCIe in runs rather than single doubles. It is launched as a programmatic
// dependent of tile_kernel (launch()): its blocks may start while the tiles finish, and wait
// (griddepcontrol.wait: the tiles complete, their stores visible) only before reading partials.
// Before, the slots were found through an index: three dependent trips to L2 per frame, and
// scattered 8-byte loads as many L2 requests as the tile kernel's image loads. H200, graphs of
// single-frame launches on 8 streams: 217,000-218,000 frames/s then; 248,000-251,000 with the
// slots (8 or 16 lanes per bin instead of 32: 224,000-226,000 and 244,000-245,000, their longer
// per-lane chains showing; batched rows favoured 8 lanes, single frames 32).
constexpr int kLanesPerBin = 32;
constexpr int kMergeThreads = 256;
constexpr int kMergeBins = kMergeThreads / kLanesPerBin;
constexpr int kMergeGroup = 4;  // slots a lane loads before adding them
static_assert(32 % kLanesPerBin == 0 && kMergeBins * kStoredFields <= kMergeThreads,
              "a bin's lanes sit in one warp; the store has a thread per field and bin");

// The sums of a bin's lanes, combined in a fixed pattern: lanes i and i ^ offset add the same two
// values (a + b == b + a), so every lane of the group ends with the same, run-independent sum.
__device__ __forceinline__ double group_sum(double value) {
#pragma unroll
  for (int offset = kLanesPerBin / 2; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xFFFFFFFFu, value, offset);
  return value;
}

__global__ void __launch_bounds__(kMergeThreads)
    merge_kernel(DeviceTables t, double* __restrict__ out) {
  __shared__ double values[kStoredFields][kMergeBins];
  const int sub = int(threadIdx.x) % kLanesPerBin, local_bin = int(threadIdx.x) / kLanesPerBin;
  const int first_bin = int(blockIdx.x) * kMergeBins;
  const int bin = first_bin + local_bin;
  const std::size_t frame = blockIdx.y;
  const bool here = bin < t.bins;
  const std::int32_t first = here ? __ldg(t.bin_segment_start + bin) : 0;
  const std::int32_t end = here ? __ldg(t.bin_segment_start + bin + 1) : 0;
  // The bin's static sums, requested with its slots so that both trips to L2 overlap the
  // partials' (only the group's first lane finishes the bin).
  const bool finisher = here && sub == 0;
  const double static_normalization = finisher ? __ldg(t.static_normalization + bin) : 0.0;
  const double static_count = finisher ? __ldg(t.static_count + bin) : 0.0;
  const double static_norm_sq = finisher ? __ldg(t.static_norm_sq + bin) : 0.0;
  const std::int32_t bin_entries = finisher ? __ldg(t.bin_entries + bin) : 0;
  const double2* partials = reinterpret_cast<const double2*>(t.partials) + frame * t.segments;
  const double* lost_partials = t.lost_partials + frame * t.segments * 3;
#if __CUDA_ARCH__ >= 900  // below sm_90 no launch is a programmatic dependent (launch_dependent)
  asm volatile("griddepcontrol.wait;" ::: "memory");  // the tile kernel's partials
#endif
  Piece sum;
  for (std::int32_t k0 = first + sub; k0 < end; k0 += kLanesPerBin * kMergeGroup) {
    double2 v[kMergeGroup];
#pragma unroll
    for (int g = 0; g < kMergeGroup; ++g) {
      const std::int32_t k = k0 + kLanesPerBin * g;
      v[g] = k < end ? partials[k] : make_double2(0.0, 0.0);
    }
#pragma unroll
    for (int g = 0; g < kMergeGroup; ++g) {
      sum.signal += v[g].x;
      if (!signbit(v[g].y)) {
        sum.variance += v[g].y;
      } else {  // the event invalidated some of the segment's entries (rare)
        sum.variance -= v[g].y;
        const std::size_t k = std::size_t(k0 + kLanesPerBin * g);
        sum.lost += lost_partials[3 * k];
        sum.lost_norm += lost_partials[3 * k + 1];
        sum.lost_norm_sq += lost_partials[3 * k + 2];
      }
    }
  }
  sum.signal = group_sum(sum.signal);
  sum.variance = group_sum(sum.variance);
  if (__any_sync(0xFFFFFFFFu, sum.lost != 0.0)) {
    sum.lost = group_sum(sum.lost);
    sum.lost_norm = group_sum(sum.lost_norm);
    sum.lost_norm_sq = group_sum(sum.lost_norm_sq);
  }
  if (finisher) {
    double bin_values[kStoredFields];
    sums_bin_values(bin_values, sum.signal, sum.variance, static_normalization, static_count,
                    static_norm_sq, bin_entries,
                    LostSums{sum.lost, sum.lost_norm, sum.lost, sum.lost_norm_sq}, t.model,
                    t.empty);
    for (int k = 0; k < kStoredFields; ++k) values[k][local_bin] = bin_values[k];
  }
  __syncthreads();
  const int field = int(threadIdx.x) / kMergeBins, lane_bin = int(threadIdx.x) % kMergeBins;
  if (field < kStoredFields && first_bin + lane_bin < t.bins)
    out[(frame * kStoredFields + std::size_t(field)) * std::size_t(t.bins) +
        std::size_t(first_bin + lane_bin)] = values[field][lane_bin];
}

// A thread's run of entries, as pairs (see kOffsetMask).
constexpr int kWords = kEntriesPerThread / 2;
static_assert(kWords == 16, "walk_again_checked passes a run as four uint4");
// The unchecked walk loads the values of a group of entries before adding them. As far as the
// compiler knows a head's store may alias the tile, so a load after one waits for it (and the
// store for the sums before it): one entry at a time, every load's latency is on the walk's path.
// Loaded a group at a time they are in flight together; 8 fits the kernel's 48 registers.
constexpr int kLoadGroup = 8;
__device__ __forceinline__ std::uint32_t entry_offset(const std::uint32_t (&word)[kWords], int k) {
  return k % 2 == 0 ? word[k / 2] & kOffsetMask : word[k / 2] >> 16;
}
__device__ __forceinline__ bool entry_heads(const std::uint32_t (&word)[kWords], int k) {
  return (word[k / 2] & (k % 2 == 0 ? kEvenHead : kOddHead)) != 0;
}

// Sums over a run, and the entries whose sample the event invalidated (bit k for entry k).
struct RunSums {
  double signal = 0.0, variance = 0.0;
  std::uint32_t lost = 0;
};

// At an entry that heads a segment: the run's sums so far into the next head slot.
__device__ __forceinline__ void store_head_sums(const RunSums& r, char* head_sums,
                                                std::uint32_t& head_at) {
  *reinterpret_cast<double2*>(head_sums + head_at) = make_double2(r.signal, r.variance);
  head_at += sizeof(double2);
}

// Both walks add the run's samples in order without branching on the flags: at each entry that
// heads a segment they store the sums so far at byte `head_at` of the shared `head_sums` and move
// it on (a 32-bit offset from a shared base, so the stores stay shared stores), so that a segment's
// sums within a run are a difference of two running sums (exact here: sums of floats in double;
// in general within an ulp of the run's sum).
//
// The usual plan's walk (Poisson errors, no dark, no dummy test; statically valid entries have a
// normalisation that changes nothing in signal and variance): for a finite raw value the sample
// is (raw, poisson_variance(raw)) (integrate::preprocess_pixel), so raw values are added as they
// are and only the run's sum is tested. A sum of at most 32 finite floats in double is finite, so
// a sum that is not means an invalid sample somewhere in the run: the caller walks it again,
// checked. Padding reads the slot that holds 0, adding 0 to the signal and 1 to the variance,
// which the caller takes out.
__device__ __forceinline__ RunSums walk_unchecked(const std::uint32_t (&word)[kWords],
                                                  const char* tile, char* head_sums,
                                                  std::uint32_t& head_at) {
  RunSums r;
#pragma unroll
  for (int g = 0; g < kEntriesPerThread; g += kLoadGroup) {
    float raw[kLoadGroup];
#pragma unroll
    for (int j = 0; j < kLoadGroup; ++j)
      raw[j] = *reinterpret_cast<const float*>(tile + entry_offset(word, g + j));
#pragma unroll
    for (int j = 0; j < kLoadGroup; ++j) {
      if (entry_heads(word, g + j)) store_head_sums(r, head_sums, head_at);
      r.signal += raw[j];
      r.variance += integrate::poisson_variance(raw[j]);
    }
  }
  return r;
}

// Every other plan, and runs with an invalid sample: each entry through preprocess_pixel; an
// invalid sample (or padding) adds zeros and is marked lost.
template <bool HasDark>
__device__ __forceinline__ RunSums walk_checked(const std::uint32_t (&word)[kWords],
                                                const char* tile, char* head_sums,
                                                std::uint32_t& head_at, const float* dark,
                                                integrate::ErrorModel model,
                                                const integrate::DummyTest& dummy) {
  RunSums r;
#pragma unroll
  for (int k = 0; k < kEntriesPerThread; ++k) {
    if (entry_heads(word, k)) store_head_sums(r, head_sums, head_at);
    const std::uint32_t offset = entry_offset(word, k);
    const float raw = *reinterpret_cast<const float*>(tile + offset);
    const float dark_value = HasDark ? __ldg(dark + k) : 0.0f;
    const integrate::PixelSample sample =
        is_padding(offset) ? integrate::PixelSample{}
                           : integrate::preprocess_pixel(raw, dark_value, 1.0f, model, dummy);
    r.signal += sample.signal;
    r.variance += sample.variance;
    if (sample.count == 0.0f) r.lost |= 1u << k;
  }
  return r;
}

// The unchecked walk's fallback, out of line and with every argument by value, so that the rare
// path takes no registers from the usual one and puts nothing in local memory.
struct CheckedWalk {
  RunSums sums;
  std::uint32_t head_at;
};
__device__ __noinline__ CheckedWalk walk_again_checked(uint4 w0, uint4 w1, uint4 w2, uint4 w3,
                                                       const char* tile, char* head_sums,
                                                       std::uint32_t head_at) {
  const std::uint32_t word[kWords] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w,
                                      w2.x, w2.y, w2.z, w2.w, w3.x, w3.y, w3.z, w3.w};
  CheckedWalk walk;
  walk.sums = walk_checked<false>(word, tile, head_sums, head_at, nullptr,
                                  integrate::ErrorModel::Poisson, integrate::DummyTest{});
  walk.head_at = head_at;
  return walk;
}

// A block per (tile, frame of the batch). Variants: the usual plan's (Unchecked: Poisson errors,
// no dark, no dummy test), and checked ones with and without the dark and the dummy test.
// 5 blocks of 256 threads an SM: 48 registers, and the 32 KiB tile plus its segments' and runs'
// sums in shared memory. Each block waits for its tile's load before it can walk, so the blocks
// an SM holds are what overlaps loads with work (H200, graphs of single-frame launches on 8
// streams, 32 x 128 tiles of 128 threads: 7 blocks 178,000 frames/s; 9 blocks with the grouped
// loads 189,000; segments from running sums and 10 blocks 204,000). Tiles of 64 x 128 halve the
// segments a bin has for the merge: 249,000-250,400 -> 262,700-263,200 frames/s on 8 streams and
// 240,000-243,600 -> 252,600-258,400 on 4, but 105,400 -> 99,200 on one stream, where a frame's
// 288 tiles spread less evenly over 132 SMs than 528 did (session 14).
template <bool HasDark, bool TestDummy, bool Unchecked>
__global__ void __launch_bounds__(kThreads, 5)
    tile_kernel(DeviceTables t, const float* __restrict__ frames) {
  extern __shared__ double2 shared[];
  // The running sums at each segment's head (before its first entry), by the segment's number in
  // the tile; each run's sums; the tile; each run's invalidated entries (bit k: entry k).
  double2* const head_sums = shared;
  double2* const run_sums = head_sums + segment_slots(t.max_tile_segments);
  float* const tile_values = reinterpret_cast<float*>(run_sums + kThreads);
  std::uint32_t* const run_lost = reinterpret_cast<std::uint32_t*>(tile_values + kTilePixels + 4);

  const int tid = int(threadIdx.x);
  const std::size_t tile = blockIdx.x, frame = blockIdx.y;
  const std::int32_t entries_first = t.tile_entry_start[tile];
  const std::int32_t entries_end = t.tile_entry_start[tile + 1];
  const std::int32_t run_first = entries_first + tid * kEntriesPerThread;
  const bool has_run = run_first < entries_end;

  // This thread's run of entries, requested before the tile so that both loads are in flight; a
  // thread past the tile's entries gets padding and walks nothing.
  std::uint32_t word[kWords];
  {
    constexpr std::uint32_t kPaddingPair = std::uint32_t(kPaddingOffset) * 0x10001u;
    const uint4* source = reinterpret_cast<const uint4*>(t.entry + run_first);
#pragma unroll
    for (int q = 0; q < kWords / 4; ++q) {
      const uint4 v = has_run ? __ldg(source + q)
                              : make_uint4(kPaddingPair, kPaddingPair, kPaddingPair, kPaddingPair);
      word[4 * q] = v.x;
      word[4 * q + 1] = v.y;
      word[4 * q + 2] = v.z;
      word[4 * q + 3] = v.w;
    }
  }
  // The tile's segments that begin before this run: where its first head stores its sums.
  const int first_head = has_run ? int(__ldg(t.run_segment + run_first / kEntriesPerThread)) : 0;

  // The tile's rows, coalesced: 16-byte loads when every row starts 16-byte aligned; a whole
  // tile (the usual case) as a fixed number of loads a thread, all in flight at once.
  const float* image = frames + frame * t.pixels + t.tile_origin[tile];
  const std::uint32_t shape = std::uint32_t(t.tile_shape[tile]);
  const std::uint32_t rows = shape >> 16, cols = shape & 0xFFFFu;
  // Launched as a programmatic dependent (launch()), the block may start before the kernel ahead
  // of it in the stream has finished: it has requested the static tables above, and waits here
  // for that kernel's completion and its writes (the previous merge's reads of the partials, or
  // whatever wrote the frames) before it reads the frame or writes anything.
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const bool aligned =
      (reinterpret_cast<std::uintptr_t>(image) | std::uintptr_t(t.row_pitch) * 4 | cols * 4) % 16 ==
      0;
  constexpr std::uint32_t kQuadsPerRow = kTileCols / 4;
  constexpr int kQuadsPerThread = int(kTilePixels / 4) / kThreads;
  if (aligned && rows == kTileRows && cols == kTileCols) {
    // Thread tid loads quads tid, tid + kThreads, ...: the same column, kThreads / kQuadsPerRow
    // rows apart, so one pointer stepped along (no per-load index arithmetic).
    const float4* source =
        reinterpret_cast<const float4*>(image + std::size_t(tid / kQuadsPerRow) * t.row_pitch) +
        tid % kQuadsPerRow;
    const std::size_t step = std::size_t(kThreads / kQuadsPerRow) * t.row_pitch / 4;  // quads
    float4 v[kQuadsPerThread];
#pragma unroll
    for (int k = 0; k < kQuadsPerThread; ++k, source += step) v[k] = __ldcs(source);
#pragma unroll
    for (int k = 0; k < kQuadsPerThread; ++k)
      reinterpret_cast<float4*>(tile_values)[tid + k * kThreads] = v[k];
  } else if (aligned) {
    const std::uint32_t quads = cols / 4;
    for (std::uint32_t i = tid; i < rows * quads; i += kThreads) {
      const std::uint32_t r = i / quads, q = i % quads;
      const float4 v =
          __ldcs(reinterpret_cast<const float4*>(image + std::size_t(r) * t.row_pitch) + q);
      reinterpret_cast<float4*>(tile_values + r * kTileCols)[q] = v;
    }
  } else {
    for (std::uint32_t i = tid; i < rows * cols; i += kThreads) {
      const std::uint32_t r = i / cols, c = i % cols;
      tile_values[r * kTileCols + c] = __ldcs(image + std::size_t(r) * t.row_pitch + c);
    }
  }
  if (tid == 0) tile_values[kTilePixels] = 0.0f;  // the padding slot
  __syncthreads();                                // the tile

  const char* tile_bytes = reinterpret_cast<const char*>(tile_values);
  char* head_bytes = reinterpret_cast<char*>(head_sums);
  const std::uint32_t first_head_at = std::uint32_t(first_head) * sizeof(double2);
  std::uint32_t head_at = first_head_at;
  RunSums run;
  if (has_run) {
    if constexpr (Unchecked) {
      run = walk_unchecked(word, tile_bytes, head_bytes, head_at);
      if (!isfinite(run.signal)) {  // an invalid sample in the run (rare): walk again, checked
        head_at = first_head_at;
        const CheckedWalk again = walk_again_checked(
            make_uint4(word[0], word[1], word[2], word[3]),
            make_uint4(word[4], word[5], word[6], word[7]),
            make_uint4(word[8], word[9], word[10], word[11]),
            make_uint4(word[12], word[13], word[14], word[15]), tile_bytes, head_bytes, head_at);
        run = again.sums;
        head_at = again.head_at;
      } else if (is_padding(word[kWords - 1] >> 16)) {  // the tile's last run ends in padding
        int padding = 0;
#pragma unroll
        for (int k = 0; k < kEntriesPerThread; ++k)
          padding += is_padding(entry_offset(word, k)) ? 1 : 0;
        run.variance -= padding;  // poisson_variance(0) = 1 each
      }
    } else {
      run = walk_checked<HasDark>(word, tile_bytes, head_bytes, head_at,
                                  HasDark ? t.dark + run_first : nullptr, t.model,
                                  TestDummy ? t.dummy : integrate::DummyTest{});
    }
  }
  // The walks are done: the merge of this launch may start its blocks (they wait for this grid to
  // complete before reading partials) as the tiles' last blocks finish.
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
  // Each run's sums and invalidated entries (padding aside) for the segments that end or pass
  // through it. The barrier ends every walk; any_lost is the same in every thread.
  std::uint32_t lost_here = 0;
  if (run.lost != 0) {
    std::uint32_t padding_mask = 0;
#pragma unroll
    for (int k = 0; k < kEntriesPerThread; ++k)
      padding_mask |= (is_padding(entry_offset(word, k)) ? 1u : 0u) << k;
    lost_here = run.lost & ~padding_mask;
  }
  run_sums[tid] = make_double2(run.signal, run.variance);
  run_lost[tid] = lost_here;
  const bool any_lost = __syncthreads_or(lost_here != 0) != 0;

  // Each segment's sums from the running sums: within one run, the difference of two heads' sums;
  // across runs, the rest of its first run, the whole runs between, and the start of its last run
  // (up to the next head, or the whole run at the tile's end). Partials go to the segment's slot
  // in global memory (one 16-byte store, scattered: a store does not wait, where the merge's
  // loads would); merge_kernel adds them per bin.
  double2* partials = reinterpret_cast<double2*>(t.partials) + frame * t.segments;
  double* lost_partials = t.lost_partials + frame * t.segments * 3;
  const std::int32_t first_segment = t.tile_segment_start[tile];
  const std::int32_t tile_segments = t.tile_segment_start[tile + 1] - first_segment;
  const std::uint16_t* first_entry = t.segment_first_entry + first_segment;
  const int tile_entries = entries_end - entries_first;  // whole runs
  for (int local = tid; local < tile_segments; local += kThreads) {
    const std::uint32_t first = __ldg(first_entry + local);
    const std::size_t slot = std::size_t(__ldg(t.segment_slot + first_segment + local));
    double2 sums = make_double2(0.0, 0.0);
    LostShares lost{0.0, 0.0, 0.0};
    if (first != kNoEntries) {
      const std::uint32_t next =
          local + 1 < tile_segments ? __ldg(first_entry + local + 1) : std::uint32_t(kNoEntries);
      const bool ends_tile = next == kNoEntries;
      const std::uint32_t end = ends_tile ? std::uint32_t(tile_entries) : next;  // exclusive
      const int first_run = int(first / kEntriesPerThread);
      const int last_run = int((ends_tile ? end - 1 : end) / kEntriesPerThread);
      const double2 start = head_sums[local];
      const double2 stop = ends_tile ? run_sums[last_run] : head_sums[local + 1];
      if (first_run == last_run) {
        sums = make_double2(stop.x - start.x, stop.y - start.y);
      } else {
        const double2 rest = run_sums[first_run];
        sums = make_double2(rest.x - start.x, rest.y - start.y);
        for (int r = first_run + 1; r < last_run; ++r) {
          const double2 whole = run_sums[r];
          sums.x += whole.x;
          sums.y += whole.y;
        }
        sums.x += stop.x;
        sums.y += stop.y;
      }
      if (any_lost) {  // the static shares of the segment's invalidated entries, in entry order
        for (int r = first_run; r <= last_run; ++r) {
          std::uint32_t m = run_lost[r];
          const std::uint32_t from = r == first_run ? first % kEntriesPerThread : 0;
          const std::uint32_t to = std::uint32_t(r) == end / kEntriesPerThread
                                       ? end % kEntriesPerThread
                                       : std::uint32_t(kEntriesPerThread);
          m &= (0xFFFFFFFFu << from) & (to == 32 ? 0xFFFFFFFFu : (1u << to) - 1u);
          for (; m != 0; m &= m - 1) {
            const int k = __ffs(int(m)) - 1;
            const float norm = __ldg(t.normalization + entries_first + r * kEntriesPerThread + k);
            lost.entries += 1.0;
            lost.norm += norm;
            lost.norm_sq += static_cast<double>(norm) * norm;
          }
        }
      }
    }
    // -sums.y sets the sign bit even for a zero variance (-0.0): the merge's mark of losses.
    const bool marked = lost.entries != 0.0;
    partials[slot] = make_double2(sums.x, marked ? -sums.y : sums.y);
    if (marked) {
      lost_partials[3 * slot] = lost.entries;
      lost_partials[3 * slot + 1] = lost.norm;
      lost_partials[3 * slot + 2] = lost.norm_sq;
    }
  }
}

using TileKernel = void (*)(DeviceTables, const float*);
// The variant for the plan: the usual one (no dark, no dummy test, Poisson errors) unchecked,
// the others checked.
TileKernel tile_kernel_for(const DeviceTables& t) {
  const bool poisson = t.model == integrate::ErrorModel::Poisson;
  if (t.dark)
    return t.dummy.enabled ? tile_kernel<true, true, false> : tile_kernel<true, false, false>;
  if (t.dummy.enabled) return tile_kernel<false, true, false>;
  return poisson ? tile_kernel<false, false, true> : tile_kernel<false, false, false>;
}

}  // namespace

void prepare(const DeviceTables& t) {
  const cudaError_t status =
      cudaFuncSetAttribute(tile_kernel_for(t), cudaFuncAttributeMaxDynamicSharedMemorySize,
                           int(shared_bytes(t.max_tile_segments)));
  if (status != cudaSuccess)
    throw RuntimeFault(std::string("cudaFuncSetAttribute(pixel_major::tile_kernel): ") +
                       cudaGetErrorString(status));
}

namespace {

// A launch as a programmatic dependent of the kernel ahead of it in the stream (Hopper): the
// kernel may start while that one finishes, and waits for it in the kernel (griddepcontrol.wait),
// not in the stream. Elsewhere (gpu::hopper_features false) a plain launch in stream order.
template <typename... Params, typename... Args>
void launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared,
                      cudaStream_t stream, const char* name, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = gpu::hopper_features() ? 1 : 0;  // a plain launch below sm_90
  const cudaError_t status = cudaLaunchKernelEx(&config, kernel, args...);
  if (status != cudaSuccess)
    throw RuntimeFault(std::string("cudaLaunchKernelEx(") + name +
                       "): " + cudaGetErrorString(status));
  check_launch(name);
}

}  // namespace

// Both kernels are programmatic dependents: the tiles' blocks start as the kernel before them
// (the previous launch's merge, most often) exits, and the merge's as the tiles finish their
// walks; each waits in the kernel for its predecessor's completion before reading what that one
// wrote. H200, graphs of single-frame launches, 1 / 4 / 8 streams: neither a dependent 98,000 /
// 221,000-223,000 / 248,000-251,000 frames/s; the merge alone 103,000 / 238,000-247,000 /
// 248,000-251,000; both 105,000 / 244,000 / 251,000. A merge that released the next tiles at
// its start (griddepcontrol.launch_dependents first) gave 252,000-256,000 on 8 streams but
// 85,000 / 211,000-213,000 on 1 and 4: not kept.
void launch(const DeviceTables& t, const float* frames, int frames_count, double* out,
            void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  launch_dependent(tile_kernel_for(t), dim3(unsigned(t.tiles), unsigned(frames_count)),
                   dim3(kThreads), shared_bytes(t.max_tile_segments), s, "pixel_major::tile_kernel",
                   t, frames);
  launch_dependent(merge_kernel,
                   dim3(unsigned((t.bins + kMergeBins - 1) / kMergeBins), unsigned(frames_count)),
                   dim3(kMergeThreads), 0, s, "pixel_major::merge_kernel", t, out);
}

}  // namespace livedrp::gpu::pixel_major
