// Compiled with --fmad=false (engine/CMakeLists.txt): peaks/peak_search.hpp and
// peaks/radial_threshold.hpp must round exactly as the host, which compiles them without
// contraction.
#include "cuda/peaks/device_peakfinder8.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "peaks/peak_search.hpp"
#include "peaks/radial_threshold.hpp"

namespace livedrp::gpu {

using peaks::Asic;
using peaks::Peak;
using peaks::RadialBinStats;
using peaks::SearchView;

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw RuntimeFault(std::string(what) + ": " + cudaGetErrorString(status) + " (" +
                       cudaGetErrorName(status) + ")");
}

// Per pixel, on the GPU: its radius bin, or kUnusedPixel where the pixel is not good (masked or
// outside the resolution limits), so that one 2-byte read answers both.
constexpr std::uint16_t kUnusedPixel = 0xFFFF;

// The radial statistics, every iteration, in one launch. A thread block takes a band of
// consecutive radius bins (up to BinsPerBlock, as many as fit its shared memory): a bin's
// statistics depend on its own pixels only, but reading a single bin's pixels from the image is a
// gather of one 32-byte sector for every one or two values (a 1-pixel ring crosses each row in a
// pixel or two), whereas a band of bins crosses a row in a run of several pixels. So the block
// reads the band's pixels in ascending pixel order (band_pixels, many loads in flight) and
// stores each value at its place in its bin's list (band_slots: the bin's offset in the band plus
// the pixel's rank in its bin), which leaves every bin's values in shared memory in the order of
// the bin's pixel list, exactly as a block per bin would have gathered them. Then each bin runs
// the iterations on its own kStatisticsThreads threads in the order of radial_threshold.hpp that
// the CPU follows: thread l of the bin is lane l, summing entries l, l + kRadialLanes, ... in turn.
// The lanes' sums meet in shared memory behind one barrier; the bin's first warp adds them
// pairwise as that order says (lane l + s into lane l: its thread t holds lanes t, t + 32, ...
// while s spans warps, then shuffles), its lane 0 finishes the bin, and a second barrier hands
// the thresholds to the bin's threads. A settled bin stops (as the CPU does); the block leaves
// when every bin has. A bin too large for shared memory alone runs on the spill kernel below.
constexpr int kStatisticsThreads = peaks::kRadialLanes;
static_assert(kStatisticsThreads % 32 == 0 && kStatisticsThreads <= 1024,
              "the statistics kernel runs a bin's lanes as whole warps of one block");
constexpr int kLanesPerThreadOfWarp0 = kStatisticsThreads / 32;
constexpr int kGatherBatch = 8;
constexpr std::size_t kStatisticsSharedLimit = 64 * 1024;
constexpr int kDefaultBinsPerBlock = 4;

// One iteration's lane sums of a bin added in the order of radial_threshold.hpp, by the bin's
// first warp (`lane` < 32); every lane returns the bin's sums.
struct LaneSums {
  double sum, squares;
  unsigned count;
};
__device__ __forceinline__ LaneSums add_lanes(const double* lane_sum, const double* lane_squares,
                                              const unsigned* lane_count, int lane) {
  // Thread t's element m is lane t + 32 m; a step s >= 32 adds lane l + s into lane l, which
  // is element m + s / 32 into element m of the same thread.
  double part_sum[kLanesPerThreadOfWarp0], part_squares[kLanesPerThreadOfWarp0];
  unsigned part_count[kLanesPerThreadOfWarp0];
#pragma unroll
  for (int m = 0; m < kLanesPerThreadOfWarp0; ++m) {
    part_sum[m] = lane_sum[lane + 32 * m];
    part_squares[m] = lane_squares[lane + 32 * m];
    part_count[m] = lane_count[lane + 32 * m];
  }
#pragma unroll
  for (int stride = kLanesPerThreadOfWarp0 / 2; stride >= 1; stride /= 2) {
#pragma unroll
    for (int m = 0; m < stride; ++m) {
      part_sum[m] += part_sum[m + stride];
      part_squares[m] += part_squares[m + stride];
      part_count[m] += part_count[m + stride];
    }
  }
  LaneSums s{part_sum[0], part_squares[0], part_count[0]};
  for (int stride = 16; stride > 0; stride /= 2) {
    s.sum += __shfl_down_sync(0xffffffffu, s.sum, stride);
    s.squares += __shfl_down_sync(0xffffffffu, s.squares, stride);
    s.count += __shfl_down_sync(0xffffffffu, s.count, stride);
  }
  return s;
}

// A lane's sums over its entries l, l + kStatisticsThreads, ... of a bin's n values.
__device__ __forceinline__ LaneSums lane_sums(const float* values, std::uint32_t n, int lane,
                                              const RadialBinStats& bin) {
  LaneSums s{0, 0, 0};
#pragma unroll 8
  for (std::uint32_t k = std::uint32_t(lane); k < n; k += kStatisticsThreads) {
    const float value = values[k];
    if (!peaks::enters_radial_statistics(value, bin)) continue;
    s.sum += double(value);
    s.squares += double(value) * double(value);
    ++s.count;
  }
  return s;
}

// Where the search's threshold flags are: per ASIC three areas of asic_words words, in the
// ASIC's own rows (row r's bits start at word r * words_per_row): "above" (good and above its
// bin's upper threshold: may seed or join a peak), the search's own background words, and "not
// below" (good and not below the upper threshold: above, equal or NaN, so never in a ring). Both
// flag areas are all zero between events: the statistics kernels set the few bits of the pixels
// they concern and the search kernel, having read them, puts them back to zero. A pixel's entry in
// flag_of_entry (per entry of the bins' pixel lists) is its "above" word's offset from the flags'
// start times 32 plus its bit, or kNoFlag for a pixel of no ASIC.
constexpr std::uint32_t kNoFlag = 0xFFFFFFFFu;
constexpr int kFlagAreas = 3;

// A finished bin's lane sets the flags of its entries k = lane, lane + kStatisticsThreads, ...:
// only the pixels not below the threshold, which are few, cost a load and an atomic.
__device__ __forceinline__ void flag_bin_pixels(const float* values, std::uint32_t n, int lane,
                                                const RadialBinStats& bin,
                                                const std::uint32_t* flag_of_entry,
                                                std::uint32_t* flags, int asic_words) {
  for (std::uint32_t k = std::uint32_t(lane); k < n; k += kStatisticsThreads) {
    const float value = values[k];
    if (peaks::below_threshold(value, bin)) continue;
    const std::uint32_t flag = __ldg(flag_of_entry + k);
    if (flag == kNoFlag) continue;
    const std::uint32_t word = flag >> 5, bit = 1u << (flag & 31u);
    atomicOr(flags + word + 2 * asic_words, bit);
    if (peaks::above_threshold(value, bin)) atomicOr(flags + word, bit);
  }
}

template <int BinsPerBlock>
__global__ void __launch_bounds__(kStatisticsThreads* BinsPerBlock)
    band_statistics_kernel(const float* __restrict__ data,
                           const std::uint32_t* __restrict__ band_first_bin,
                           const std::uint32_t* __restrict__ bin_offsets,
                           const std::uint32_t* __restrict__ band_pixels,
                           const std::uint16_t* __restrict__ band_slots, RadialBinStats* stats,
                           int iterations, float minimum_snr, float adc_threshold,
                           const std::uint32_t* __restrict__ flag_of_entry, std::uint32_t* flags,
                           int asic_words) {
  constexpr int kThreads = kStatisticsThreads * BinsPerBlock;
  extern __shared__ float staged_values[];
  __shared__ double lane_sum[kThreads], lane_squares[kThreads];
  __shared__ unsigned lane_count[kThreads];
  __shared__ RadialBinStats next_bin[BinsPerBlock];
  const std::uint32_t first_bin = band_first_bin[blockIdx.x];
  const int bins = int(band_first_bin[blockIdx.x + 1] - first_bin);
  const std::uint32_t band_start = bin_offsets[first_bin];
  const std::uint32_t band_size = bin_offsets[first_bin + std::uint32_t(bins)] - band_start;
  for (std::uint32_t base = threadIdx.x; base < band_size; base += kThreads * kGatherBatch) {
    std::uint32_t pixel[kGatherBatch];
    std::uint32_t slot[kGatherBatch];
#pragma unroll
    for (int j = 0; j < kGatherBatch; ++j) {
      const std::uint32_t k = base + std::uint32_t(j * kThreads);
      pixel[j] = k < band_size ? __ldg(band_pixels + band_start + k) : 0u;
      slot[j] = k < band_size ? std::uint32_t(__ldg(band_slots + band_start + k)) : 0u;
    }
    float value[kGatherBatch];
#pragma unroll
    for (int j = 0; j < kGatherBatch; ++j) value[j] = __ldg(data + pixel[j]);
#pragma unroll
    for (int j = 0; j < kGatherBatch; ++j) {
      const std::uint32_t k = base + std::uint32_t(j * kThreads);
      if (k < band_size) staged_values[slot[j]] = value[j];
    }
  }
  __syncthreads();
  const int own = int(threadIdx.x) / kStatisticsThreads,
            lane = int(threadIdx.x) % kStatisticsThreads;
  const bool has_bin = own < bins;
  const std::uint32_t b = first_bin + std::uint32_t(has_bin ? own : 0);
  const std::uint32_t first = bin_offsets[b] - band_start,
                      n = has_bin ? bin_offsets[b + 1] - bin_offsets[b] : 0;
  const float* values = staged_values + first;
  RadialBinStats bin{};
  bool settled = !has_bin;
  for (int iteration = 0;; ++iteration) {
    const bool works = !settled && iteration < iterations;
    if (works) {
      const LaneSums s = lane_sums(values, n, lane, bin);
      lane_sum[threadIdx.x] = s.sum;
      lane_squares[threadIdx.x] = s.squares;
      lane_count[threadIdx.x] = s.count;
    }
    if (__syncthreads_or(works) == 0) break;
    if (works && lane < 32) {
      const int own_lanes = own * kStatisticsThreads;
      const LaneSums s =
          add_lanes(lane_sum + own_lanes, lane_squares + own_lanes, lane_count + own_lanes, lane);
      if (lane == 0)
        next_bin[own] =
            peaks::finish_radial_bin(s.sum, s.squares, s.count, minimum_snr, adc_threshold);
    }
    // The bin's first warp has read every lane's sums before any thread passes here, so the next
    // iteration may overwrite them; every thread reads next_bin before the next iteration's
    // first barrier, so lane 0 may overwrite it after that one.
    __syncthreads();
    if (works) {
      // As the CPU (PeakFinder8::compute_radial_statistics): thresholds an iteration leaves as
      // they were admit the same values next time, so the later iterations would repeat this
      // result.
      const RadialBinStats next = next_bin[own];
      settled = next.upper == bin.upper && next.lower == bin.lower;
      bin = next;
    }
  }
  if (!has_bin) return;
  if (lane == 0) stats[b] = bin;
  flag_bin_pixels(values, n, lane, bin, flag_of_entry + bin_offsets[b], flags, asic_words);
}

// The statistics of bins too large for shared memory: a block per bin, gathering its values
// through its pixel list into its own range of `spill` (bin_offsets), the same order and
// iterations as above.
__global__ void __launch_bounds__(kStatisticsThreads)
    spill_statistics_kernel(const float* __restrict__ data,
                            const std::uint32_t* __restrict__ bin_offsets,
                            const std::uint32_t* __restrict__ bin_pixels, RadialBinStats* stats,
                            int iterations, float minimum_snr, float adc_threshold, float* spill,
                            const std::uint32_t* __restrict__ flag_of_entry, std::uint32_t* flags,
                            int asic_words) {
  __shared__ double lane_sum[kStatisticsThreads], lane_squares[kStatisticsThreads];
  __shared__ unsigned lane_count[kStatisticsThreads];
  __shared__ RadialBinStats next_bin;
  const int b = int(blockIdx.x), lane = int(threadIdx.x);
  const std::uint32_t first = bin_offsets[b], n = bin_offsets[b + 1] - first;
  float* const values = spill + first;
  for (std::uint32_t base = threadIdx.x; base < n; base += kStatisticsThreads * kGatherBatch) {
    std::uint32_t pixel[kGatherBatch];
#pragma unroll
    for (int j = 0; j < kGatherBatch; ++j) {
      const std::uint32_t k = base + std::uint32_t(j * kStatisticsThreads);
      pixel[j] = k < n ? __ldg(bin_pixels + first + k) : 0u;
    }
    float value[kGatherBatch];
#pragma unroll
    for (int j = 0; j < kGatherBatch; ++j) value[j] = __ldg(data + pixel[j]);
#pragma unroll
    for (int j = 0; j < kGatherBatch; ++j) {
      const std::uint32_t k = base + std::uint32_t(j * kStatisticsThreads);
      if (k < n) values[k] = value[j];
    }
  }
  __syncthreads();
  RadialBinStats bin{};
  for (int iteration = 0; iteration < iterations; ++iteration) {
    const LaneSums s = lane_sums(values, n, lane, bin);
    lane_sum[lane] = s.sum;
    lane_squares[lane] = s.squares;
    lane_count[lane] = s.count;
    __syncthreads();
    if (lane < 32) {
      const LaneSums total = add_lanes(lane_sum, lane_squares, lane_count, lane);
      if (lane == 0)
        next_bin = peaks::finish_radial_bin(total.sum, total.squares, total.count, minimum_snr,
                                            adc_threshold);
    }
    __syncthreads();
    const bool settled = next_bin.upper == bin.upper && next_bin.lower == bin.lower;
    bin = next_bin;
    if (settled) break;
  }
  if (lane == 0) stats[b] = bin;
  flag_bin_pixels(values, n, lane, bin, flag_of_entry + first, flags, asic_words);
}

// What the search kernel reads and writes besides the view.
struct SearchTables {
  const Asic* asics = nullptr;
  std::uint32_t* flags = nullptr;            // kFlagAreas areas per ASIC, asic_words apart
  const std::uint32_t* good_bits = nullptr;  // per ASIC asic_words: a bit per good pixel
  const std::uint16_t* bin_of_pixel = nullptr;
  std::uint32_t* owner_spill = nullptr;    // per ASIC largest_asic; nullptr: shared memory
  std::int32_t* members_spill = nullptr;   // per ASIC and warp member_capacity; nullptr: unused
  std::uint32_t* peak_seeds = nullptr;     // per ASIC asic_words: a bit per seed that gave a peak
  Peak* unsorted = nullptr;                // per ASIC capacity: peaks as the warps find them
  std::uint32_t* unsorted_seed = nullptr;  // their seeds
  int asic_words = 0, largest_asic = 0, member_capacity = 0;
  bool bitmaps_in_shared = true;
};

// The columns of word `q` of a row where a seed may lie: 1 .. width - 2, as the reference.
__device__ std::uint32_t seed_columns(int q, int width) {
  const int first = q * 32, last = width - 2 - first;  // last usable bit
  if (last < 0) return 0u;
  std::uint32_t mask = last < 31 ? (2u << last) - 1u : ~0u;
  if (first == 0) mask &= ~1u;
  return mask;
}

// Seeds searched independently. The CPU takes an ASIC's seeds in raster order and grows each
// unclaimed one over the 8-connected candidate pixels, claiming them; a growth therefore claims
// its whole connected set of candidates (stopping nowhere short of it), and the sets are
// disjoint. So the CPU grows exactly one peak per connected set, from the set's first seed in
// raster order, over pixels no other growth touches; and the background ring takes only pixels
// below the threshold, never a candidate, so no claim changes a ring either. Each peak therefore
// depends on its own set alone, and the warps of a block search an ASIC's seeds in any order:
// a seed is searched to the end only when it is the first of its set, known because
//  - a candidate pixel reached while growing that may itself seed (off the ASIC's border) and
//    comes earlier in raster order means it is not, and
//  - each pixel joins the growth with an atomic minimum of the seed's index in an owner map, so a
//    growth that meets a pixel owned by an earlier seed stops early; the first seed's own growth
//    is never stopped (no seed of its set is smaller) and sees its own claims only, so it visits
//    the members in the CPU's order.
// A growth that passes max_pixel_count stops too: its set cannot give a peak from any seed.
// Peaks found are put back in seed order at the end of the block (the CPU's order).
constexpr int kSearchWarps = 8;
constexpr int kSharedMembers = 256;  // per warp; a growth past it spills to global memory
constexpr int kRingBatch = 4;
constexpr std::uint32_t kNoOwner = 0xFFFFFFFFu;
constexpr std::size_t kSearchStaticShared = 64;  // next_chunk, found_in_asic, with room

__device__ __forceinline__ bool test_bit(const std::uint32_t* bits, int words_per_row, int row,
                                         int column) {
  return (bits[row * words_per_row + (column >> 5)] >> (column & 31)) & 1u;
}

// One warp's part of the search: the ASIC, its bitmaps and owner map, the warp's member lists.
struct WarpSearch {
  SearchView view;
  const std::uint16_t* bin_of_pixel;
  Asic asic;
  int words_per_row;
  const std::uint32_t *candidate, *background;
  std::uint32_t* owner;
  std::int32_t* members;  // kSharedMembers each: packed members, their values, their bin means
  float *member_values, *member_means;
  std::int32_t* members_spill;
  int lane;

  __device__ std::int32_t member_at(int k) const {
    return k < kSharedMembers ? members[k] : members_spill[k];
  }
  __device__ void set_member(int k, std::int32_t packed) const {
    if (k < kSharedMembers)
      members[k] = packed;
    else
      members_spill[k] = packed;
  }
  __device__ std::size_t pixel_of(std::int32_t packed) const {
    return std::size_t(asic.first_ss + (packed >> 16)) * std::size_t(view.width) +
           std::size_t(asic.first_fs + (packed & 0xFFFF));
  }
  __device__ bool may_seed(int row, int column) const {
    return row >= 1 && row < asic.height - 1 && column >= 1 && column < asic.width - 1;
  }

  // The search from the seed at (row, column) of the ASIC, a candidate: true with `peak` when
  // the seed is the first of its connected set and the peak passes every test. Every lane
  // returns the same answer.
  __device__ bool search(int row, int column, Peak& peak) const {
    constexpr unsigned kAll = 0xffffffffu;
    const std::uint32_t me = std::uint32_t(row * asic.width + column);
    std::uint32_t previous = 0;
    if (lane == 0) previous = atomicMin(owner + me, me);
    if (__shfl_sync(kAll, previous, 0) < me) return false;  // an earlier seed grew over it
    // Every lane's reads of the previous seed's members are done before lane 0 writes the first
    // member of this one: the shuffle above waits for every lane but orders no memory
    // (compute-sanitizer's racecheck reported the pair).
    __syncwarp();
    if (lane == 0) set_member(0, std::int32_t(row << 16 | column));
    // Grow, breadth first, as peaks::grow_peak: lanes 0..8 test a member's 3 x 3 neighbourhood
    // in the CPU's order and a ballot appends the joiners in that order.
    int count = 1;
    for (int next = 0; next < count; ++next) {
      __syncwarp();  // the last members appended and their owner marks are visible
      const std::int32_t member = member_at(next);
      const int n_row = (member >> 16) + lane / 3 - 1, n_column = (member & 0xFFFF) + lane % 3 - 1;
      const bool is_candidate = lane < 9 && n_row >= 0 && n_row < asic.height && n_column >= 0 &&
                                n_column < asic.width &&
                                test_bit(candidate, words_per_row, n_row, n_column);
      const std::uint32_t n_index = std::uint32_t(n_row * asic.width + n_column);
      if (__any_sync(kAll, is_candidate && n_index < me && may_seed(n_row, n_column)))
        return false;  // an earlier seed of the same set
      bool joins = is_candidate && static_cast<volatile std::uint32_t*>(owner)[n_index] != me;
      bool lost = false;
      if (joins) lost = atomicMin(owner + n_index, me) < me;
      if (__any_sync(kAll, lost)) return false;
      const unsigned joining = __ballot_sync(kAll, joins);
      if (joins)
        set_member(count + __popc(joining & ((1u << lane) - 1u)),
                   std::int32_t(n_row << 16 | n_column));
      count += __popc(joining);
      if (count > view.max_pixel_count) return false;  // too large from any of its seeds
    }
    __syncwarp();
    if (count < view.min_pixel_count) return false;
    // The first centroid: the members' values and bin means staged by the warp, added in member
    // order by lane 0.
    for (int k = lane; k < count && k < kSharedMembers; k += 32) {
      const std::size_t p = pixel_of(members[k]);
      member_values[k] = view.data[p];
      member_means[k] = view.stats[bin_of_pixel[p]].mean;
    }
    __syncwarp();
    peaks::CentroidSums centroid;
    if (lane == 0)
      for (int k = 0; k < count; ++k) {
        const std::int32_t member = member_at(k);
        float value, mean;
        if (k < kSharedMembers) {
          value = member_values[k];
          mean = member_means[k];
        } else {
          const std::size_t p = pixel_of(member);
          value = view.data[p];
          mean = view.stats[bin_of_pixel[p]].mean;
        }
        peaks::add_to_centroid(centroid, value, mean, asic.first_fs + (member & 0xFFFF),
                               asic.first_ss + (member >> 16));
      }
    centroid.intensity = __shfl_sync(kAll, centroid.intensity, 0);
    centroid.fs = __shfl_sync(kAll, centroid.fs, 0);
    centroid.ss = __shfl_sync(kAll, centroid.ss, 0);
    const peaks::GrownPeak grown = peaks::finish_growth(view, count, centroid);
    if (!grown.usable) return false;
    // The background ring, as peaks::ring_lane: positions lane, lane + 32, ... in order, their
    // values loaded kRingBatch at a time. Background pixels are never candidates, so no growth
    // (claim) can take one away.
    const int ring_reach = 2 * view.local_bg_radius, ring_side = 2 * ring_reach;
    const int ring_positions = ring_side * ring_side;
    peaks::RingSums ring;
    for (int base = lane; base < ring_positions; base += 32 * kRingBatch) {
      float value[kRingBatch];
      bool used[kRingBatch];
#pragma unroll
      for (int q = 0; q < kRingBatch; ++q) {
        const int i = base + 32 * q;
        const int dss = i / ring_side - ring_reach, dfs = i % ring_side - ring_reach;
        const int r = grown.centre_ss - asic.first_ss + dss;
        const int c = grown.centre_fs - asic.first_fs + dfs;
        used[q] = i < ring_positions && r >= 0 && r < asic.height && c >= 0 && c < asic.width &&
                  peaks::in_background_ring(dfs, dss, view.local_bg_radius) &&
                  test_bit(background, words_per_row, r, c);
        value[q] = used[q] ? view.data[std::size_t(asic.first_ss + r) * std::size_t(view.width) +
                                       std::size_t(asic.first_fs + c)]
                           : 0.0f;
      }
#pragma unroll
      for (int q = 0; q < kRingBatch; ++q)
        if (used[q]) peaks::add_to_ring(ring, value[q]);
    }
    for (int d = peaks::kRingLanes / 2; d > 0; d /= 2) {
      peaks::RingSums other;
      other.sum = __shfl_xor_sync(kAll, ring.sum, d);
      other.squares = __shfl_xor_sync(kAll, ring.squares, d);
      other.max = __shfl_xor_sync(kAll, ring.max, d);
      other.count = __shfl_xor_sync(kAll, ring.count, d);
      ring = peaks::combine_ring(ring, other);
    }
    const peaks::LocalBackground bg = peaks::local_background(view, asic, grown, ring);
    // The re-integration, as peaks::member_lane.
    peaks::MemberSums sums;
    for (int k = lane; k < count; k += 32) {
      const std::int32_t member = member_at(k);
      const float value = k < kSharedMembers ? member_values[k] : view.data[pixel_of(member)];
      peaks::add_to_members(sums, value, asic.first_fs + (member & 0xFFFF),
                            asic.first_ss + (member >> 16), bg.mean);
    }
    for (int d = peaks::kRingLanes / 2; d > 0; d /= 2) {
      peaks::MemberSums other;
      other.intensity = __shfl_xor_sync(kAll, sums.intensity, d);
      other.raw_sum = __shfl_xor_sync(kAll, sums.raw_sum, d);
      other.raw_fs = __shfl_xor_sync(kAll, sums.raw_fs, d);
      other.raw_ss = __shfl_xor_sync(kAll, sums.raw_ss, d);
      other.peak_max = __shfl_xor_sync(kAll, sums.peak_max, d);
      sums = peaks::combine_members(sums, other);
    }
    // Every lane holds the same sums, so every lane takes the same decision.
    return peaks::finish_peak(view, asic, grown, ring, bg, sums, peak);
  }
};

// A block of kSearchWarps warps per ASIC. The ASIC's candidate and background bitmaps (from the
// threshold flags the statistics kernels set) and its owner map sit in shared memory where they
// fit (else global memory), each warp's member lists
// in shared memory. Warps draw 32 bitmap words of seeds at a time and search every seed in them
// (WarpSearch::search); a peak found goes to the ASIC's unsorted list and its seed's bit is set.
// At the end the block puts the list in seed order. When an ASIC has more peaks than its list
// holds, the owner map is cleared and one warp searches again, in seed order, the first seeds
// that gave peaks, up to the list's size: the same growths, so the same peaks.
__global__ void __launch_bounds__(32 * kSearchWarps)
    search_kernel(SearchView view, SearchTables tables, Peak* per_asic_peaks, int* per_asic_found,
                  int capacity) {
  extern __shared__ std::uint32_t shared_words[];
  __shared__ int next_chunk, found_in_asic;
  const int a = int(blockIdx.x), warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  const int thread = int(threadIdx.x), threads = int(blockDim.x);
  const Asic asic = tables.asics[a];
  const int words_per_row = (asic.width + 31) / 32, words = asic.height * words_per_row;
  const int pixels = asic.height * asic.width;

  std::uint32_t* cursor = shared_words;
  WarpSearch w;
  w.view = view;
  w.bin_of_pixel = tables.bin_of_pixel;
  w.asic = asic;
  w.words_per_row = words_per_row;
  w.lane = lane;
  w.members = reinterpret_cast<std::int32_t*>(cursor + warp * 3 * kSharedMembers);
  w.member_values = reinterpret_cast<float*>(w.members + kSharedMembers);
  w.member_means = w.member_values + kSharedMembers;
  w.members_spill = tables.members_spill == nullptr
                        ? nullptr
                        : tables.members_spill + (std::size_t(a) * kSearchWarps + warp) *
                                                     std::size_t(tables.member_capacity);
  cursor += kSearchWarps * 3 * kSharedMembers;
  if (tables.owner_spill == nullptr) {
    w.owner = cursor;
    cursor += tables.largest_asic;
  } else {
    w.owner = tables.owner_spill + std::size_t(a) * std::size_t(tables.largest_asic);
  }
  // The candidate bitmap is the "above" flags; the background bitmap, the good pixels without
  // the "not below" flags. Each flag word is put back to zero once read (the "above" words in
  // global memory only after the search, which then reads them there).
  std::uint32_t* above =
      tables.flags + std::size_t(a) * kFlagAreas * std::size_t(tables.asic_words);
  std::uint32_t* background = above + tables.asic_words;
  std::uint32_t* not_below = above + 2 * tables.asic_words;
  const std::uint32_t* good = tables.good_bits + std::size_t(a) * std::size_t(tables.asic_words);
  std::uint32_t any_candidate = 0u;
  for (int i = thread; i < words; i += threads) {
    const std::uint32_t above_bits = above[i];
    const std::uint32_t background_bits = good[i] & ~not_below[i];
    any_candidate |= above_bits;
    not_below[i] = 0u;
    if (tables.bitmaps_in_shared) {
      cursor[i] = above_bits;
      above[i] = 0u;
      cursor[words + i] = background_bits;
    } else {
      background[i] = background_bits;
    }
  }
  // An ASIC without a candidate (most, in most events) has no seed: no owner map to clear, no
  // search; its "above" words are all zero already.
  if (__syncthreads_or(any_candidate != 0u) == 0) {
    if (thread == 0) per_asic_found[a] = 0;
    return;
  }
  w.candidate = tables.bitmaps_in_shared ? cursor : above;
  w.background = tables.bitmaps_in_shared ? cursor + words : background;
  std::uint32_t* peak_seeds = tables.peak_seeds + std::size_t(a) * std::size_t(tables.asic_words);
  Peak* unsorted = tables.unsorted + std::size_t(a) * std::size_t(capacity);
  std::uint32_t* unsorted_seed = tables.unsorted_seed + std::size_t(a) * std::size_t(capacity);
  for (int i = thread; i < pixels; i += threads) w.owner[i] = kNoOwner;
  for (int i = thread; i < words; i += threads) peak_seeds[i] = 0u;
  if (thread == 0) {
    next_chunk = 0;
    found_in_asic = 0;
  }
  __syncthreads();

  const int seed_words_end = asic.height > 2 ? (asic.height - 1) * words_per_row : 0;
  for (;;) {
    int chunk = 0;
    if (lane == 0) chunk = words_per_row + atomicAdd(&next_chunk, 32);
    chunk = __shfl_sync(0xffffffffu, chunk, 0);
    if (chunk >= seed_words_end) break;
    const int j = chunk + lane;
    const std::uint32_t bits =
        j < seed_words_end ? w.candidate[j] & seed_columns(j % words_per_row, asic.width) : 0u;
    unsigned flagged = __ballot_sync(0xffffffffu, bits != 0);
    while (flagged != 0) {
      const int source = __ffs(flagged) - 1;
      flagged &= flagged - 1;
      std::uint32_t word_bits = __shfl_sync(0xffffffffu, bits, source);
      const int word = chunk + source;
      const int row = word / words_per_row, first_column = (word % words_per_row) * 32;
      while (word_bits != 0) {
        const int bit = __ffs(word_bits) - 1;
        word_bits &= word_bits - 1;
        Peak peak;
        if (!w.search(row, first_column + bit, peak)) continue;
        if (lane == 0) {
          const int slot = atomicAdd(&found_in_asic, 1);
          if (slot < capacity) {
            unsorted[slot] = peak;
            unsorted_seed[slot] = std::uint32_t(row * asic.width + first_column + bit);
          }
          atomicOr(peak_seeds + word, 1u << bit);
        }
      }
    }
  }
  __syncthreads();
  const int found = found_in_asic;
  Peak* listed = per_asic_peaks + std::size_t(a) * std::size_t(capacity);
  if (found <= capacity) {
    // Each peak's place in seed order: the number of peaks with an earlier seed.
    for (int i = thread; i < found; i += threads) {
      const std::uint32_t seed = unsorted_seed[i];
      int rank = 0;
      for (int k = 0; k < found; ++k) rank += unsorted_seed[k] < seed ? 1 : 0;
      listed[rank] = unsorted[i];
    }
  } else {
    for (int i = thread; i < pixels; i += threads) w.owner[i] = kNoOwner;
    __syncthreads();
    if (warp == 0) {
      int rank = 0;
      for (int chunk = 0; chunk < words && rank < capacity; chunk += 32) {
        const int j = chunk + lane;
        const std::uint32_t bits = j < words ? peak_seeds[j] : 0u;
        unsigned flagged = __ballot_sync(0xffffffffu, bits != 0);
        while (flagged != 0 && rank < capacity) {
          const int source = __ffs(flagged) - 1;
          flagged &= flagged - 1;
          std::uint32_t word_bits = __shfl_sync(0xffffffffu, bits, source);
          const int word = chunk + source;
          const int row = word / words_per_row, first_column = (word % words_per_row) * 32;
          while (word_bits != 0 && rank < capacity) {
            const int bit = __ffs(word_bits) - 1;
            word_bits &= word_bits - 1;
            Peak peak;
            if (w.search(row, first_column + bit, peak) && lane == 0) listed[rank] = peak;
            ++rank;
          }
        }
      }
    }
  }
  if (!tables.bitmaps_in_shared) {
    __syncthreads();  // every warp is done with the candidate words
    for (int i = thread; i < words; i += threads) above[i] = 0u;
  }
  if (thread == 0) per_asic_found[a] = found;
}

// The ASICs' lists in ASIC order, cut at max_num_peaks, as the CPU appends them.
using Summary = DevicePeakFinder8::ListHeader;
__global__ void gather_kernel(const Peak* per_asic_peaks, const int* per_asic_found, int asics,
                              int capacity, int max_num_peaks, Peak* out, Summary* summary) {
  // One warp, 32 ASICs at a time: lane a's list goes after the lists of the ASICs before it (a
  // prefix over the lanes), each lane copying its own ASIC's peaks.
  const int lane = int(threadIdx.x);
  int found = 0, stored = 0;
  for (int a0 = 0; a0 < asics; a0 += 32) {
    const int a = a0 + lane;
    const int n = a < asics ? per_asic_found[a] : 0;
    const int listed = n < capacity ? n : capacity;
    int before = listed;  // inclusive prefix, then made exclusive
    for (int d = 1; d < 32; d *= 2) {
      const int y = __shfl_up_sync(0xffffffffu, before, d);
      if (lane >= d) before += y;
    }
    const int total_listed = __shfl_sync(0xffffffffu, before, 31);
    before -= listed;
    for (int k = 0; k < listed && stored + before + k < max_num_peaks; ++k)
      out[stored + before + k] = per_asic_peaks[std::size_t(a) * std::size_t(capacity) + k];
    int found_here = n;
    for (int d = 16; d > 0; d /= 2) found_here += __shfl_xor_sync(0xffffffffu, found_here, d);
    found += found_here;
    stored = stored + total_listed < max_num_peaks ? stored + total_listed : max_num_peaks;
  }
  if (lane == 0) {
    summary->found = found;
    summary->stored = stored;
  }
}

}  // namespace

// The band kernel's instantiations, by bins_per_block: 1, 2, 4, 8.
const void* const statistics_kernels[] = {reinterpret_cast<const void*>(band_statistics_kernel<1>),
                                          reinterpret_cast<const void*>(band_statistics_kernel<2>),
                                          reinterpret_cast<const void*>(band_statistics_kernel<4>),
                                          reinterpret_cast<const void*>(band_statistics_kernel<8>)};

int statistics_kernel_index(int bins_per_block) {
  return bins_per_block == 1 ? 0 : bins_per_block == 2 ? 1 : bins_per_block == 4 ? 2 : 3;
}

// How many radius bins a statistics block takes at most: kDefaultBinsPerBlock, or
// LIVEDRP_PF8_BINS_PER_BLOCK (1, 2, 4 or 8), which the benchmarks use to compare band widths.
int statistics_bins_per_block() {
  const char* setting = std::getenv("LIVEDRP_PF8_BINS_PER_BLOCK");
  if (setting == nullptr || *setting == '\0') return kDefaultBinsPerBlock;
  const std::string text(setting);
  if (text == "1" || text == "2" || text == "4" || text == "8") return std::stoi(text);
  throw InputError("LIVEDRP_PF8_BINS_PER_BLOCK is '" + text + "'; it takes 1, 2, 4 or 8");
}

// How many values a statistics band takes at most (a single bin may still hold up to the shared
// memory's limit): kStatisticsSharedLimit's worth, or LIVEDRP_PF8_BAND_VALUES (1024 .. 16384),
// which the benchmarks use to compare smaller, more even bands.
std::size_t statistics_band_values() {
  const std::size_t limit = kStatisticsSharedLimit / sizeof(float);
  const char* setting = std::getenv("LIVEDRP_PF8_BAND_VALUES");
  if (setting == nullptr || *setting == '\0') return limit;
  const std::string text(setting);
  char* end = nullptr;
  const unsigned long values = std::strtoul(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || values < 1024 || values > limit)
    throw InputError("LIVEDRP_PF8_BAND_VALUES is '" + text + "'; it takes 1024 to " +
                     std::to_string(limit));
  return std::size_t(values);
}

struct StatisticsBand {
  std::uint32_t first_bin = 0, end_bin = 0;
};

// Consecutive bins in bands of at most `bins_per_block` bins and `band_values` values (a bin
// larger than that alone in its band); none when one bin alone holds more than value_limit
// values (every bin then runs on the spill kernel).
std::vector<StatisticsBand> statistics_bands(const std::vector<std::uint32_t>& offsets,
                                             int bins_per_block, std::size_t value_limit,
                                             std::size_t band_values) {
  std::vector<StatisticsBand> bands;
  const std::uint32_t bins = std::uint32_t(offsets.size() - 1);
  const std::size_t budget = std::min(value_limit, band_values);
  for (std::uint32_t b = 0; b < bins;) {
    if (offsets[b + 1] - offsets[b] > value_limit) return {};
    StatisticsBand band{b, b + 1};
    while (band.end_bin < bins && int(band.end_bin - band.first_bin) < bins_per_block &&
           offsets[band.end_bin + 1] - offsets[band.first_bin] <= budget)
      ++band.end_bin;
    bands.push_back(band);
    b = band.end_bin;
  }
  return bands;
}

// What every finder of one geometry and parameter set reads and nobody writes: uploaded once and
// shared by siblings, so that one copy serves every stream (and stays in the L2 cache).
struct SharedTables {
  peaks::PeakFinderParams params;
  SearchView settings;  // without the event's pointers
  int bins = 0, asics = 0, largest_asic = 0, asic_words = 0;
  std::size_t pixels = 0, bin_pixel_count = 0, statistics_shared = 0, search_shared = 0;
  int member_capacity = 0;  // the most members a growth holds before it stops (max + 8 joiners)
  bool values_in_shared = true, owner_in_shared = true, bitmaps_in_shared = true;
  // The statistics' bands of bins (values_in_shared): `bands` blocks of up to bins_per_block
  // bins; else the spill kernel's per-bin pixel lists (bin_pixels).
  int bands = 0, bins_per_block = kDefaultBinsPerBlock;
  DeviceBuffer bin, bin_of_pixel, bin_offsets, bin_pixels, asic_table, band_first_bin, band_pixels,
      band_slots, good_bits, flag_of_entry;
};

struct DevicePeakFinder8::State {
  std::shared_ptr<const SharedTables> shared;
  SearchView settings;
  SearchTables tables;
  DeviceBuffer stats, members_spill, values_spill, owner_spill, peak_seeds, unsorted, unsorted_seed,
      flags, per_asic_peaks, per_asic_found, out;
  PinnedBuffer host_out;  // Summary, then max_num_peaks peaks
};

namespace {

std::shared_ptr<const SharedTables> upload_tables(const peaks::PeakFinder8& reference) {
  auto t = std::make_shared<SharedTables>();
  t->params = reference.params();
  t->settings = reference.search_settings();
  t->pixels = reference.layout().pixels();
  t->bins = int(reference.radial_stats().size());
  t->asics = int(reference.layout().asics.size());
  if (t->asics == 0) throw InputError("device peak finder: the slab has no ASICs");
  if (t->bins >= int(kUnusedPixel))
    throw InputError("device peak finder: " + std::to_string(t->bins) +
                     " radius bins; the GPU finder keeps a bin in 16 bits (at most " +
                     std::to_string(int(kUnusedPixel) - 1) + ")");
  for (const Asic& a : reference.layout().asics) {
    if (a.height > 0xFFFF || a.width > 0xFFFF)
      throw InputError("device peak finder: an ASIC of " + std::to_string(a.height) + " x " +
                       std::to_string(a.width) +
                       " pixels; the GPU finder takes at most 65535 rows and columns");
    t->largest_asic = std::max(t->largest_asic, a.height * a.width);
    t->asic_words = std::max(t->asic_words, a.height * ((a.width + 31) / 32));
  }
  auto upload = [](DeviceBuffer& target, const void* source, std::size_t bytes, const char* what) {
    target = DeviceBuffer(std::max<std::size_t>(bytes, 4));
    if (bytes > 0) check(cudaMemcpy(target.get(), source, bytes, cudaMemcpyHostToDevice), what);
  };
  const std::vector<std::int32_t>& bins = reference.pixel_bins();
  const std::vector<std::uint8_t>& good = reference.good_pixels();
  std::vector<std::uint16_t> bin_of_pixel(t->pixels);
  for (std::size_t p = 0; p < t->pixels; ++p)
    bin_of_pixel[p] = good[p] != 0 ? std::uint16_t(bins[p]) : kUnusedPixel;
  upload(t->bin, bins.data(), t->pixels * sizeof(std::int32_t), "cudaMemcpy(radius bins)");
  upload(t->bin_of_pixel, bin_of_pixel.data(), t->pixels * sizeof(std::uint16_t),
         "cudaMemcpy(radius bins, 16-bit)");
  upload(t->bin_offsets, reference.bin_offsets().data(),
         reference.bin_offsets().size() * sizeof(std::uint32_t), "cudaMemcpy(bin offsets)");
  t->bin_pixel_count = reference.bin_pixels().size();
  t->bins_per_block = statistics_bins_per_block();
  const std::vector<StatisticsBand> bands =
      statistics_bands(reference.bin_offsets(), t->bins_per_block,
                       kStatisticsSharedLimit / sizeof(float), statistics_band_values());
  t->values_in_shared = !bands.empty();
  if (t->values_in_shared) {
    // Per band: its first bin (and, last, the end); per entry of the band, in ascending pixel
    // order: the pixel and its place in the band's staged values.
    std::vector<std::uint32_t> first_bin;
    std::vector<std::uint32_t> band_pixels(t->bin_pixel_count);
    std::vector<std::uint16_t> band_slots(t->bin_pixel_count);
    const std::vector<std::uint32_t>& offsets = reference.bin_offsets();
    const std::vector<std::uint32_t>& pixels = reference.bin_pixels();
    std::vector<std::pair<std::uint32_t, std::uint16_t>> entries;
    std::size_t largest_band = 0;
    for (const StatisticsBand& band : bands) {
      first_bin.push_back(band.first_bin);
      const std::uint32_t start = offsets[band.first_bin], end = offsets[band.end_bin];
      largest_band = std::max<std::size_t>(largest_band, end - start);
      entries.clear();
      for (std::uint32_t k = start; k < end; ++k)
        entries.emplace_back(pixels[k], std::uint16_t(k - start));
      std::sort(entries.begin(), entries.end());
      for (std::size_t i = 0; i < entries.size(); ++i) {
        band_pixels[start + i] = entries[i].first;
        band_slots[start + i] = entries[i].second;
      }
    }
    first_bin.push_back(bands.back().end_bin);
    t->bands = int(bands.size());
    t->statistics_shared = largest_band * sizeof(float);
    upload(t->band_first_bin, first_bin.data(), first_bin.size() * sizeof(std::uint32_t),
           "cudaMemcpy(statistics bands)");
    upload(t->band_pixels, band_pixels.data(), band_pixels.size() * sizeof(std::uint32_t),
           "cudaMemcpy(band pixel lists)");
    upload(t->band_slots, band_slots.data(), band_slots.size() * sizeof(std::uint16_t),
           "cudaMemcpy(band slots)");
  } else {
    upload(t->bin_pixels, reference.bin_pixels().data(), t->bin_pixel_count * sizeof(std::uint32_t),
           "cudaMemcpy(bin pixel lists)");
  }
  upload(t->asic_table, reference.layout().asics.data(), std::size_t(t->asics) * sizeof(Asic),
         "cudaMemcpy(ASIC table)");

  // Per pixel of an ASIC: its threshold flag (word offset from the flags' start times 32, plus
  // its bit) and, per ASIC, a bit per good pixel; then the flags by entry of the bins' lists.
  const std::size_t flag_words = std::size_t(t->asics) * kFlagAreas * std::size_t(t->asic_words);
  if (flag_words * 32 >= std::size_t(kNoFlag))
    throw InputError("device peak finder: " + std::to_string(t->asics) + " ASICs of up to " +
                     std::to_string(t->asic_words) +
                     " bitmap words; the GPU finder addresses its threshold flags in 32 bits");
  std::vector<std::uint32_t> flag_of_pixel(t->pixels, kNoFlag);
  std::vector<std::uint32_t> good_bits(std::size_t(t->asics) * std::size_t(t->asic_words), 0u);
  const std::size_t width = std::size_t(reference.layout().width);
  for (int a = 0; a < t->asics; ++a) {
    const Asic& asic = reference.layout().asics[std::size_t(a)];
    const int words_per_row = (asic.width + 31) / 32;
    for (int row = 0; row < asic.height; ++row)
      for (int column = 0; column < asic.width; ++column) {
        const std::size_t p =
            std::size_t(asic.first_ss + row) * width + std::size_t(asic.first_fs + column);
        const std::size_t word =
            std::size_t(row) * std::size_t(words_per_row) + std::size_t(column / 32);
        flag_of_pixel[p] =
            std::uint32_t((std::size_t(a) * kFlagAreas * std::size_t(t->asic_words) + word) * 32 +
                          std::size_t(column % 32));
        if (good[p] != 0)
          good_bits[std::size_t(a) * std::size_t(t->asic_words) + word] |= 1u << (column % 32);
      }
  }
  std::vector<std::uint32_t> flag_of_entry(t->bin_pixel_count);
  for (std::size_t e = 0; e < t->bin_pixel_count; ++e)
    flag_of_entry[e] = flag_of_pixel[reference.bin_pixels()[e]];
  upload(t->good_bits, good_bits.data(), good_bits.size() * sizeof(std::uint32_t),
         "cudaMemcpy(good pixel bitmaps)");
  upload(t->flag_of_entry, flag_of_entry.data(), flag_of_entry.size() * sizeof(std::uint32_t),
         "cudaMemcpy(threshold flag places)");

  // Shared memory: an ASIC's bitmaps (search) where they fit, else global scratch of the same
  // layout.
  // The search block: its warps' member lists always; then the owner map and the bitmaps, each
  // where it still fits this device's shared memory per block.
  int device = 0, shared_optin = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&shared_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
        "cudaDeviceGetAttribute(shared memory per block)");
  const std::size_t search_limit = std::size_t(shared_optin) - kSearchStaticShared;
  t->member_capacity = t->params.max_pixel_count + 9;
  t->search_shared = std::size_t(kSearchWarps) * 3 * kSharedMembers * 4;
  const std::size_t owner_bytes = std::size_t(t->largest_asic) * 4;
  const std::size_t bitmap_bytes = 2 * std::size_t(t->asic_words) * 4;
  t->owner_in_shared = t->search_shared + owner_bytes <= search_limit;
  if (t->owner_in_shared) t->search_shared += owner_bytes;
  t->bitmaps_in_shared = t->search_shared + bitmap_bytes <= search_limit;
  if (t->bitmaps_in_shared) t->search_shared += bitmap_bytes;
  for (const void* kernel : statistics_kernels)
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               int(kStatisticsSharedLimit)),
          "cudaFuncSetAttribute(band_statistics_kernel)");
  // The device's limit, not this geometry's need: the attribute belongs to the kernel, and
  // finders of other geometries (other sizes) may launch it after this one.
  check(cudaFuncSetAttribute(search_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(search_limit)),
        "cudaFuncSetAttribute(search_kernel)");
  return t;
}

// A finder's own scratch and results around shared tables.
std::unique_ptr<DevicePeakFinder8::State> finder_state(std::shared_ptr<const SharedTables> shared) {
  auto s = std::make_unique<DevicePeakFinder8::State>();
  const SharedTables& t = *shared;
  const int capacity = t.params.max_num_peaks;
  s->stats = DeviceBuffer(std::size_t(t.bins) * sizeof(RadialBinStats));
  s->flags = DeviceBuffer(std::size_t(t.asics) * kFlagAreas * std::size_t(t.asic_words) * 4);
  if (t.member_capacity > kSharedMembers)
    s->members_spill =
        DeviceBuffer(std::size_t(t.asics) * kSearchWarps * std::size_t(t.member_capacity) * 4);
  if (!t.owner_in_shared)
    s->owner_spill = DeviceBuffer(std::size_t(t.asics) * std::size_t(t.largest_asic) * 4);
  s->peak_seeds = DeviceBuffer(std::size_t(t.asics) * std::size_t(t.asic_words) * 4);
  s->unsorted = DeviceBuffer(std::size_t(t.asics) * std::size_t(capacity) * sizeof(Peak));
  s->unsorted_seed = DeviceBuffer(std::size_t(t.asics) * std::size_t(capacity) * 4);
  if (!t.values_in_shared)
    s->values_spill = DeviceBuffer(std::max<std::size_t>(t.bin_pixel_count, 1) * sizeof(float));
  s->per_asic_peaks = DeviceBuffer(std::size_t(t.asics) * std::size_t(capacity) * sizeof(Peak));
  s->per_asic_found = DeviceBuffer(std::size_t(t.asics) * sizeof(int));
  s->out = DeviceBuffer(sizeof(Summary) + std::size_t(capacity) * sizeof(Peak));
  // Each event's copy to the host takes the whole list, of which the gather writes only the
  // `stored` peaks: cleared once here, so the copy never reads bytes no kernel wrote
  // (compute-sanitizer's initcheck counted every 32 bytes of the unwritten tail). The threshold
  // flags start at zero, as the search leaves them after each event.
  // The legacy stream's memsets are not ordered with the finder's non-blocking streams: waited for.
  check(cudaMemsetAsync(s->out.get(), 0, s->out.bytes(), cudaStreamLegacy),
        "cudaMemset(peak list)");
  check(cudaMemsetAsync(s->flags.get(), 0, s->flags.bytes(), cudaStreamLegacy),
        "cudaMemset(threshold flags)");
  check(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize(peak list clear)");
  s->host_out = PinnedBuffer(s->out.bytes());

  s->settings = t.settings;
  s->settings.bin = t.bin.as<const std::int32_t>();
  s->settings.stats = s->stats.as<const RadialBinStats>();
  s->settings.good = nullptr;  // the GPU search tests bitmaps instead
  s->settings.in_peak = nullptr;
  s->settings.members = nullptr;
  s->tables.asics = t.asic_table.as<const Asic>();
  s->tables.flags = s->flags.as<std::uint32_t>();
  s->tables.good_bits = t.good_bits.as<const std::uint32_t>();
  s->tables.bin_of_pixel = t.bin_of_pixel.as<const std::uint16_t>();
  s->tables.owner_spill = t.owner_in_shared ? nullptr : s->owner_spill.as<std::uint32_t>();
  s->tables.members_spill =
      t.member_capacity > kSharedMembers ? s->members_spill.as<std::int32_t>() : nullptr;
  s->tables.peak_seeds = s->peak_seeds.as<std::uint32_t>();
  s->tables.unsorted = s->unsorted.as<Peak>();
  s->tables.unsorted_seed = s->unsorted_seed.as<std::uint32_t>();
  s->tables.member_capacity = t.member_capacity;
  s->tables.bitmaps_in_shared = t.bitmaps_in_shared;
  s->tables.asic_words = t.asic_words;
  s->tables.largest_asic = t.largest_asic;
  s->shared = std::move(shared);
  return s;
}

}  // namespace

DevicePeakFinder8::DevicePeakFinder8(const peaks::PeakFinder8& reference) {
  use_device();
  state_ = finder_state(upload_tables(reference));
}

DevicePeakFinder8::DevicePeakFinder8(std::unique_ptr<State> state) : state_(std::move(state)) {}

std::unique_ptr<DevicePeakFinder8> DevicePeakFinder8::sibling() const {
  use_device();
  return std::unique_ptr<DevicePeakFinder8>(new DevicePeakFinder8(finder_state(state_->shared)));
}

DevicePeakFinder8::~DevicePeakFinder8() = default;

void DevicePeakFinder8::enqueue(const float* device_data, const Stream& stream) {
  enqueue_on_device(device_data, stream);
  State& s = *state_;
  copy_async(s.host_out.get(), s.out.get(), s.out.bytes(), stream, "peak list to the host");
}

const void* DevicePeakFinder8::device_list() const {
  return state_->out.get();
}

int DevicePeakFinder8::capacity() const {
  return state_->shared->params.max_num_peaks;
}

namespace {

// The search's kernels in launch order; launch_kernel(k) launches the k-th.
enum SearchKernel { kStatistics, kSearch, kGather, kSearchKernels };

void launch_kernel(int kernel, const DevicePeakFinder8::State& s, const float* device_data,
                   cudaStream_t st) {
  const SharedTables& t = *s.shared;
  switch (kernel) {
    case kStatistics:
      if (t.values_in_shared) {
        const void* kernel = statistics_kernels[statistics_kernel_index(t.bins_per_block)];
        const std::uint32_t* band_first_bin = t.band_first_bin.as<const std::uint32_t>();
        const std::uint32_t* bin_offsets = t.bin_offsets.as<const std::uint32_t>();
        const std::uint32_t* band_pixels = t.band_pixels.as<const std::uint32_t>();
        const std::uint16_t* band_slots = t.band_slots.as<const std::uint16_t>();
        RadialBinStats* stats = s.stats.as<RadialBinStats>();
        int iterations = t.params.iterations;
        float minimum_snr = t.params.minimum_snr, adc_threshold = t.params.adc_threshold;
        const std::uint32_t* flag_of_entry = t.flag_of_entry.as<const std::uint32_t>();
        std::uint32_t* flags = s.flags.as<std::uint32_t>();
        int asic_words = t.asic_words;
        void* args[] = {&device_data,   &band_first_bin, &bin_offsets, &band_pixels,
                        &band_slots,    &stats,          &iterations,  &minimum_snr,
                        &adc_threshold, &flag_of_entry,  &flags,       &asic_words};
        check(cudaLaunchKernel(kernel, dim3(unsigned(t.bands)),
                               dim3(unsigned(kStatisticsThreads * t.bins_per_block)), args,
                               t.statistics_shared, st),
              "band_statistics_kernel launch");
      } else {
        spill_statistics_kernel<<<t.bins, kStatisticsThreads, 0, st>>>(
            device_data, t.bin_offsets.as<const std::uint32_t>(),
            t.bin_pixels.as<const std::uint32_t>(), s.stats.as<RadialBinStats>(),
            t.params.iterations, t.params.minimum_snr, t.params.adc_threshold,
            s.values_spill.as<float>(), t.flag_of_entry.as<const std::uint32_t>(),
            s.flags.as<std::uint32_t>(), t.asic_words);
      }
      check_launch("radial statistics kernel");
      return;
    case kSearch: {
      SearchView view = s.settings;
      view.data = device_data;
      search_kernel<<<t.asics, 32 * kSearchWarps, t.search_shared, st>>>(
          view, s.tables, s.per_asic_peaks.as<Peak>(), s.per_asic_found.as<int>(),
          t.params.max_num_peaks);
      check_launch("search_kernel");
      return;
    }
    case kGather: {
      Summary* summary = s.out.as<Summary>();
      Peak* out = reinterpret_cast<Peak*>(s.out.as<char>() + sizeof(Summary));
      gather_kernel<<<1, 32, 0, st>>>(s.per_asic_peaks.as<const Peak>(),
                                      s.per_asic_found.as<const int>(), t.asics,
                                      t.params.max_num_peaks, t.params.max_num_peaks, out, summary);
      check_launch("gather_kernel");
      return;
    }
  }
}

}  // namespace

void DevicePeakFinder8::enqueue_on_device(const float* device_data, const Stream& stream) {
  for (int k = 0; k < kSearchKernels; ++k) launch_kernel(k, *state_, device_data, stream.get());
}

DevicePeakFinder8::KernelTimes DevicePeakFinder8::time_kernels(const float* device_data,
                                                               const Stream& stream, int repeats) {
  // One full search first, so that every kernel's inputs are those of this frame.
  enqueue_on_device(device_data, stream);
  // The search consumes the flags the statistics set, so it is timed after a statistics launch
  // each time and the statistics' own time taken off.
  const auto time_us = [&](std::initializer_list<int> kernels) {
    Event begin, end;
    begin.record(stream);
    for (int r = 0; r < repeats; ++r)
      for (int k : kernels) launch_kernel(k, *state_, device_data, stream.get());
    end.record(stream);
    end.synchronize();
    return 1e3 * double(end.elapsed_ms_since(begin)) / std::max(1, repeats);
  };
  const double statistics = time_us({kStatistics});
  const double statistics_and_search = time_us({kStatistics, kSearch});
  const double gather = time_us({kGather});
  return {statistics, std::max(0.0, statistics_and_search - statistics), gather};
}

peaks::PeakList DevicePeakFinder8::collect(const Stream& stream) {
  stream.synchronize();
  return list_from(state_->host_out.get());
}

peaks::PeakList DevicePeakFinder8::list_from(const void* list) const {
  const auto* summary = static_cast<const Summary*>(list);
  const auto* first =
      reinterpret_cast<const Peak*>(static_cast<const char*>(list) + sizeof(Summary));
  peaks::PeakList result;
  result.found = summary->found;
  const int stored = std::clamp(summary->stored, 0, capacity());
  result.peaks.assign(first, first + stored);
  result.hit = result.found >= state_->shared->params.min_peaks_for_hit;
  return result;
}

std::vector<RadialBinStats> DevicePeakFinder8::radial_stats(const Stream& stream) const {
  std::vector<RadialBinStats> stats(std::size_t(state_->shared->bins));
  copy_async(stats.data(), state_->stats.get(), stats.size() * sizeof(RadialBinStats), stream,
             "radial statistics to the host");
  stream.synchronize();
  return stats;
}

}  // namespace livedrp::gpu
