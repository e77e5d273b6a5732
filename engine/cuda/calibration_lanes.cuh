#pragma once
// How calibration spreads pixels over GPU threads, written once for every CUDA kernel that
// calibrates: the launched kernels of cuda_calibrator.cu and the device-resident pipeline
// (cuda/resident/). Every value comes from calib/calibration_math.hpp, the functions the CPU
// backend calls; what is here is only loading, the bank-row sort and storing.
//
// CUDA only (include from .cu files). The functions live in an unnamed namespace: each .cu that
// includes this gets its own inlined copy, so no device code is linked across files.
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "calib/calibration_math.hpp"
#include "core/raw_encoding.hpp"

namespace livedrp::gpu {
namespace {

using calib::CalibrationParams;
using calib::DecodedPixel;
using calib::PedestalGain;

constexpr unsigned kFullWarp = 0xFFFFFFFFu;
// Threads per block for every kernel: 8 warps, enough to hide latency with several blocks per
// multiprocessor, small enough that the last wave of an event is short.
constexpr int kBlockThreads = 256;
// Pixels one thread of the vectorised kernels handles: 16 bytes of 16-bit raw words (32 of 32-bit
// ones), 8 status bytes, two float4 stores.
constexpr int kLanePixels = 8;
// Vectorised common mode: a group of 8 lanes holds one bank row of up to 8 * 8 = 64 pixels.
constexpr int kGroupLanes = 8;
constexpr int kSortWidth = kGroupLanes * kLanePixels;
static_assert(kSortWidth == calib::kMaxBankColumns, "one group sorts one bank row");
static_assert(sizeof(PedestalGain) == 8, "PedestalGain is loaded as a float2");

// ---------------------------------------------------------------------------------------------
// Loading and decoding the pixels of one thread.

// Raw words of 4 bytes (float32, uint32, int32) are loaded as 32-bit words, the others as 16-bit.
template <RawEncoding E>
constexpr bool kWideWords = raw_word_bytes(E) == 4;

// One raw word as 32 bits (a 16-bit word zero-extended, or the 32-bit word's bits) -> the shared
// decoders.
template <RawEncoding E>
__device__ __forceinline__ DecodedPixel decode_word(std::uint32_t bits, std::uint8_t status) {
  if constexpr (E == RawEncoding::Epix10ka)
    return calib::decode_epix10ka(std::uint16_t(bits), status);
  else if constexpr (E == RawEncoding::Jungfrau)
    return calib::decode_jungfrau(std::uint16_t(bits), status);
  else if constexpr (E == RawEncoding::Uint16)
    return calib::decode_uint16(std::uint16_t(bits), status);
  else if constexpr (E == RawEncoding::Uint32)
    return calib::decode_uint32(bits, status);
  else if constexpr (E == RawEncoding::Int32)
    return calib::decode_int32(std::int32_t(bits), status);  // two's complement, as stored
  else
    return calib::decode_float32(__uint_as_float(bits), status);
}

// The pixels [first, first + count) of one thread (count <= kLanePixels), decoded, with their
// PedestalGain and their offset from the pedestal.
struct LanePixels {
  DecodedPixel pixel[kLanePixels];
  PedestalGain constants[kLanePixels];
  float offset[kLanePixels];
};

// kVector: count == kLanePixels and `first` a multiple of kLanePixels, with the pixel count even,
// so that the raw words, status bytes and PedestalGain pairs are read with 16- and 8-byte loads.
// Raw words are read once per event: a streaming load (evict first), which leaves the cache to the
// constants, read again by every event.
template <RawEncoding E, bool kVector>
__device__ __forceinline__ void load_lane(const void* __restrict__ raw,
                                          const std::uint8_t* __restrict__ status,
                                          const PedestalGain* __restrict__ pedestal_gain,
                                          std::size_t pixels, std::size_t first, int count,
                                          LanePixels& lane) {
  std::uint32_t words[kLanePixels];
  std::uint8_t flags[kLanePixels];
  if constexpr (kVector) {
    if constexpr (kWideWords<E>) {
      const uint4* source =
          reinterpret_cast<const uint4*>(static_cast<const std::uint32_t*>(raw) + first);
      const uint4 a = __ldcs(source), b = __ldcs(source + 1);
      const std::uint32_t loaded[kLanePixels] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < kLanePixels; ++i) words[i] = loaded[i];
    } else {
      const uint4 packed =
          __ldcs(reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(raw) + first));
      const std::uint32_t pairs[4] = {packed.x, packed.y, packed.z, packed.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {  // little endian: the lower address is the low half
        words[2 * i] = pairs[i] & 0xFFFFu;
        words[2 * i + 1] = pairs[i] >> 16;
      }
    }
    const uint2 status_bytes = __ldg(reinterpret_cast<const uint2*>(status + first));
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      flags[i] = std::uint8_t(status_bytes.x >> (8 * i));
      flags[4 + i] = std::uint8_t(status_bytes.y >> (8 * i));
    }
  } else {
#pragma unroll
    for (int i = 0; i < kLanePixels; ++i) {
      words[i] = 0;
      flags[i] = calib::kStatusMasked;
      if (i < count) {
        if constexpr (kWideWords<E>)
          words[i] = __ldcs(static_cast<const unsigned int*>(raw) + first + i);
        else
          words[i] = __ldcs(static_cast<const unsigned short*>(raw) + first + i);
        flags[i] = __ldg(status + first + i);
      }
    }
  }

#pragma unroll
  for (int i = 0; i < kLanePixels; ++i) lane.pixel[i] = decode_word<E>(words[i], flags[i]);

    // PedestalGain of the mode each pixel selects: one 16-byte load for a pair of neighbours in the
    // same mode (the common case: one configuration, few switched pixels), else two 8-byte loads.
#pragma unroll
  for (int i = 0; i < kLanePixels; i += 2) {
    const int m0 = lane.pixel[i].mode, m1 = lane.pixel[i + 1].mode;
    const PedestalGain* p0 = pedestal_gain + std::size_t(m0) * pixels + first + i;
    const PedestalGain* p1 = pedestal_gain + std::size_t(m1) * pixels + first + i + 1;
    if constexpr (kVector) {
      if (m0 == m1) {
        const float4 both = __ldg(reinterpret_cast<const float4*>(p0));
        lane.constants[i] = {both.x, both.y};
        lane.constants[i + 1] = {both.z, both.w};
      } else {
        const float2 a = __ldg(reinterpret_cast<const float2*>(p0));
        const float2 b = __ldg(reinterpret_cast<const float2*>(p1));
        lane.constants[i] = {a.x, a.y};
        lane.constants[i + 1] = {b.x, b.y};
      }
    } else {
      lane.constants[i] = {0.0f, 0.0f};
      lane.constants[i + 1] = {0.0f, 0.0f};
      if (i < count) {
        const float2 a = __ldg(reinterpret_cast<const float2*>(p0));
        lane.constants[i] = {a.x, a.y};
      }
      if (i + 1 < count) {
        const float2 b = __ldg(reinterpret_cast<const float2*>(p1));
        lane.constants[i + 1] = {b.x, b.y};
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kLanePixels; ++i)
    lane.offset[i] = calib::pedestal_offset(lane.pixel[i], lane.constants[i]);
}

template <bool kVector>
__device__ __forceinline__ void store_lane(float* __restrict__ out, std::size_t first, int count,
                                           const float (&values)[kLanePixels]) {
  if constexpr (kVector) {
    float4* target = reinterpret_cast<float4*>(out + first);
    target[0] = make_float4(values[0], values[1], values[2], values[3]);
    target[1] = make_float4(values[4], values[5], values[6], values[7]);
  } else {
#pragma unroll
    for (int i = 0; i < kLanePixels; ++i)
      if (i < count) out[first + i] = values[i];
  }
}

// ---------------------------------------------------------------------------------------------
// With common mode, vectorised: a group of 8 lanes per bank row, lane `member` holding pixels
// [8 * member, 8 * member + 8) of the row. The quiet offsets (others +inf) are sorted in registers
// by a bitonic network over the group's 64 slots, element e = 8 * member + r in register r; the
// two middle order statistics are then read at ranks (n-1)/2 and n/2. (The network was checked
// against a plain sort on random inputs with many ties; the tests check the kernel against the
// CPU.)

// The network is the bitonic sort in the form whose every comparison is ascending: merging two
// sorted runs of K/2 starts with a "flip" stage (element e against its mirror e ^ (K - 1) in the
// block of K), then half-cleaners (e against e ^ J, J = K/4 .. 1). The smaller value always goes
// to the lower element, so a comparison within a lane is one min and one max, and one across lanes
// is a shuffle and a min or max chosen by the lane's side, with no direction to work out.

// Within a lane: afterwards a <= b.
__device__ __forceinline__ void order(float& a, float& b) {
  const float lo = fminf(a, b);
  b = fmaxf(a, b);
  a = lo;
}

// Across lanes: lane `member` meets lane member ^ kLaneMask; register r meets the partner's r, or
// its 7 - r when kMirror (the flip stage). The lower lane keeps the minimum of each pair.
template <int kLaneMask, bool kMirror>
__device__ __forceinline__ void exchange_lanes(float (&v)[kLanePixels], bool lower) {
  float received[kLanePixels];
#pragma unroll
  for (int r = 0; r < kLanePixels; ++r)
    received[r] = __shfl_xor_sync(kFullWarp, v[kMirror ? kLanePixels - 1 - r : r], kLaneMask);
#pragma unroll
  for (int r = 0; r < kLanePixels; ++r)
    v[r] = lower ? fminf(v[r], received[r]) : fmaxf(v[r], received[r]);
}

// Half-cleaners J, J/2, .., 1.
template <int J>
__device__ __forceinline__ void half_cleaners(float (&v)[kLanePixels], int member) {
  if constexpr (J < kLanePixels) {
#pragma unroll
    for (int r = 0; r < kLanePixels; ++r)
      if ((r & J) == 0) order(v[r], v[r | J]);
  } else {
    exchange_lanes<J / kLanePixels, false>(v, (member & (J / kLanePixels)) == 0);
  }
  if constexpr (J > 1) half_cleaners<J / 2>(v, member);
}

// Merges the sorted runs of K/2 into sorted runs of K, then goes on up to the group's 64 slots.
template <int K>
__device__ __forceinline__ void bitonic_sort(float (&v)[kLanePixels], int member) {
  if constexpr (K <= kLanePixels) {
#pragma unroll
    for (int r = 0; r < kLanePixels; ++r)
      if (r < (r ^ (K - 1))) order(v[r], v[r ^ (K - 1)]);
  } else {
    exchange_lanes<K / kLanePixels - 1, true>(v, (member & (K / (2 * kLanePixels))) == 0);
  }
  if constexpr (K >= 4) half_cleaners<K / 4>(v, member);
  if constexpr (K < kSortWidth) bitonic_sort<2 * K>(v, member);
}

// Register `index` of v (same index in every lane of the group; selects, no local memory).
__device__ __forceinline__ float register_at(const float (&v)[kLanePixels], int index) {
  float x = v[0];
#pragma unroll
  for (int r = 1; r < kLanePixels; ++r) x = index == r ? v[r] : x;
  return x;
}

// Element `rank` of the group's sorted 64 slots, to every lane of the group.
__device__ __forceinline__ float sorted_element(const float (&v)[kLanePixels], int rank,
                                                int group_base_lane) {
  return __shfl_sync(kFullWarp, register_at(v, rank % kLanePixels),
                     group_base_lane + rank / kLanePixels);
}

// ---------------------------------------------------------------------------------------------
// Per-thread bodies: what one thread computes, for the kernels to store (and, in the resident
// pipeline, to checksum).

// Pixels [first, first + count) of one thread without common mode (count <= kLanePixels; kVector:
// count == kLanePixels and `first` a multiple of it). `plane`: PedestalGain entries per mode plane.
template <RawEncoding E, bool kVector>
__device__ __forceinline__ void calibrate_lane_pixels(
    const void* __restrict__ raw, const std::uint8_t* __restrict__ status,
    const PedestalGain* __restrict__ pedestal_gain, std::size_t plane, std::size_t first, int count,
    float (&values)[kLanePixels]) {
  LanePixels lane;
  load_lane<E, kVector>(raw, status, pedestal_gain, plane, first, count, lane);
#pragma unroll
  for (int i = 0; i < kLanePixels; ++i)
    values[i] = calib::calibrated_value(lane.pixel[i], lane.offset[i], 0.0f, lane.constants[i]);
}

// Where one lane's pixels of a bank row lie: `count` 0 when the lane holds none.
struct BankRowLane {
  std::size_t first = 0;
  int count = 0;
};

// Bank row `row` (of `rows`, each `width` pixels) with common mode, lane `member` of its group of
// kGroupLanes holding pixels [8 * member, 8 * member + 8) of the row. Every lane of the warp must
// call it (the sort shuffles across the group); lanes past the row's end or the last row hold
// nothing and get count 0. kVector needs width % kLanePixels == 0 and aligned buffers.
template <RawEncoding E, bool kVector>
__device__ __forceinline__ BankRowLane calibrate_bank_row_lane(
    const void* __restrict__ raw, const std::uint8_t* __restrict__ status,
    const PedestalGain* __restrict__ pedestal_gain, std::size_t plane, int width, std::size_t rows,
    std::size_t row, const CalibrationParams& params, float (&values)[kLanePixels]) {
  const int lane_id = threadIdx.x & 31;
  const int member = lane_id & (kGroupLanes - 1);
  const int begin = member * kLanePixels;
  BankRowLane where;
  where.count = row < rows ? max(0, min(kLanePixels, width - begin)) : 0;
  where.first = row * std::size_t(width) + std::size_t(begin);

  LanePixels lane;
  if (where.count > 0)
    load_lane<E, kVector>(raw, status, pedestal_gain, plane, where.first, where.count, lane);

  float keys[kLanePixels];
  int quiet = 0;
#pragma unroll
  for (int i = 0; i < kLanePixels; ++i) {
    const bool is_quiet = (i < where.count) & calib::is_quiet(lane.pixel[i], lane.offset[i],
                                                              params.common_mode_threshold_adu);
    keys[i] = is_quiet ? lane.offset[i] : INFINITY;  // never quiet: |offset| < threshold is finite
    quiet += is_quiet ? 1 : 0;
  }
#pragma unroll
  for (int mask = 1; mask < kGroupLanes; mask <<= 1)
    quiet += __shfl_xor_sync(kFullWarp, quiet, mask);

  bitonic_sort<2>(keys, member);

  const int group_base = lane_id & ~(kGroupLanes - 1);
  const int lower_rank = quiet > 0 ? (quiet - 1) / 2 : 0, upper_rank = quiet / 2;
  const float lower = sorted_element(keys, lower_rank, group_base);
  const float upper = sorted_element(keys, upper_rank, group_base);
  const float common_mode = quiet > 0 ? calib::common_mode_from_order_statistics(
                                            lower, upper, quiet, params.common_mode_min_pixels)
                                      : 0.0f;
  if (where.count == 0) return where;
#pragma unroll
  for (int i = 0; i < kLanePixels; ++i)
    values[i] =
        calib::calibrated_value(lane.pixel[i], lane.offset[i], common_mode, lane.constants[i]);
  return where;
}

}  // namespace
}  // namespace livedrp::gpu
