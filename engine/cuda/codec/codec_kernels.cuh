#pragma once
// What the codec kernels share: the per-chunk scratch layout, block-wide scans and sums over
// ranges longer than the block, and the launch functions device_codec.cu calls.
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "codec/codec_format.hpp"
#include "codec/codec_math.hpp"

namespace livedrp::gpu::codec_kernels {

using namespace livedrp::codec;

inline constexpr int kChunkThreads = 256;    // one block per chunk
inline constexpr int kStreamThreads = 1024;  // one block for header, table and checksums

// Scratch of one chunk lives at its chunk index times a stride, so chunks never share it. The
// strides are those of a full chunk (the last, short one uses less), rounded to 8 bytes.
struct Strides {
  std::uint64_t values, shuffled, level0, level1, level2, staging;
};

LIVEDRP_HD Strides strides_for(DType dtype, std::uint32_t chunk_bytes) {
  const ChunkLayout l = chunk_layout(dtype, chunk_elements(dtype, chunk_bytes));
  // level1 is expanded by the decoder in whole groups of 8 flags of level 2.
  return {l.elements,
          l.shuffled_bytes,
          l.level0_bytes,
          8 * std::uint64_t(l.level2_bytes),
          (std::uint64_t(l.level2_bytes) + 7) & ~std::uint64_t(7),
          chunk_bytes};
}

struct Scratch {
  std::uint32_t* values;         // per element: value or bin, then residuals when decoding
  std::uint32_t* outlier_index;  // lossy: per element
  std::uint32_t* outlier_bits;   // lossy: per element
  std::uint8_t* shuffled[2];     // Delta and Plain pipelines
  std::uint8_t* level0[2];
  std::uint8_t* level1[2];
  std::uint8_t* level2[2];
  std::uint8_t* staging;  // the chunk's stored bytes, before packing
  std::uint32_t* entries;
  std::uint64_t* offsets;  // chunk payload offsets, chunk_count + 1
  unsigned long long* checksum;
  std::uint64_t* size_word;
};

struct StreamShape {
  std::uint64_t dims[kMaxNdim];
  std::uint32_t ndim;
};

struct CompressArgs {
  const std::uint8_t* in;
  std::uint8_t* out;
  DType dtype;
  Codec codec;
  double error_bound;  // 0 for lossless
  std::uint32_t chunk_bytes;
  std::uint64_t count;
  std::uint64_t chunks;
  StreamShape shape;
  Scratch scratch;
};

// Why a stream cannot be decoded (the first found); 0 is success.
enum class DecodeStatus : std::uint32_t {
  Ok = 0,
  NotLivedrp,
  Truncated,
  Version,
  Ndim,
  HeaderChecksum,
  CodecId,
  DTypeId,
  LossyNotFloat,
  Reserved,
  ChunkBytes,
  ErrorBound,
  Count,
  Shape,
  ChunkCount,
  TooManyElements,
  TableEntry,
  PayloadBytes,
  PayloadSize,
  OutputCapacity,
  PayloadChecksum,
  ChunkDamaged,
};

// What the parse kernel finds, for the chunk decoder and the host.
struct DecodePlan {
  std::uint32_t status;
  std::uint32_t codec, dtype, chunk_bytes;
  std::uint64_t count, chunks, payload_at, payload_bytes, raw_bytes;
  std::uint64_t stored_payload_checksum;
  unsigned long long checksum;
  unsigned long long first_failure;  // (chunk << 8) | ChunkError, ~0 when none
  double error_bound;
};

struct DecompressArgs {
  const std::uint8_t* in;
  std::uint64_t size;
  std::uint8_t* out;
  std::uint64_t capacity;
  std::uint64_t max_elements;
  DecodePlan* plan;
  Scratch scratch;
};

void launch_compress(const CompressArgs& args, void* stream);
void launch_decompress(const DecompressArgs& args, unsigned grid, void* stream);

#ifdef __CUDACC__
// Calls body(i, position, weight(i)) for every i in [0, n), where position is the exclusive
// prefix sum of the weights before i; returns the total. Every thread of the block must call it.
template <int Threads, class T, class Weight, class Body>
__device__ T block_prefix_for(std::uint64_t n, Weight weight, Body body) {
  using Scan = cub::BlockScan<T, Threads>;
  __shared__ typename Scan::TempStorage storage;
  T carry = 0;
  for (std::uint64_t base = 0; base < n; base += Threads) {
    const std::uint64_t i = base + threadIdx.x;
    const T w = i < n ? weight(i) : T(0);
    T position, total;
    Scan(storage).ExclusiveSum(w, position, total);
    if (i < n) body(i, carry + position, w);
    carry += total;
    __syncthreads();  // the storage is reused by the next tile
  }
  return carry;
}

// Sum over the block of each thread's `value`, returned to every thread.
template <int Threads, class T>
__device__ T block_sum(T value) {
  using Reduce = cub::BlockReduce<T, Threads>;
  __shared__ typename Reduce::TempStorage storage;
  __shared__ T result;
  const T total = Reduce(storage).Sum(value);
  if (threadIdx.x == 0) result = total;
  __syncthreads();
  const T out = result;
  __syncthreads();
  return out;
}
#endif

}  // namespace livedrp::gpu::codec_kernels
