#pragma once
// What the codec kernels share: the per-chunk scratch layouts, block-wide scans and sums over
// ranges longer than the block, and the launch functions device_codec.cu calls.
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "codec/codec_format.hpp"
#include "codec/codec_math.hpp"

namespace livedrp::gpu::codec_kernels {

using namespace livedrp::codec;

inline constexpr int kChunkThreads = 256;    // decoding: one block per chunk
inline constexpr int kStreamThreads = 1024;  // decoding: one block for header, table and checksums
// Encoding: one block per chunk, one thread per 32-value shuffle block (a 16 KiB float32 chunk has
// 128), so a chunk's shuffle is a single pass of the block.
inline constexpr int kEncodeThreads = 128;
// An encoder workspace up to this size lives in shared memory (chunks up to 32 KiB, at least two
// blocks per SM); larger ones use a global slot per chunk.
inline constexpr std::uint32_t kMaxSharedWorkspace = 96 * 1024;

// Decoder scratch of one chunk lives at its chunk index times a stride, so chunks never share
// it. The strides are those of a full chunk (the last, short one uses less), rounded to 8 bytes.
struct Strides {
  std::uint64_t values, shuffled, level0, level1;
};

LIVEDRP_HD Strides strides_for(DType dtype, std::uint32_t chunk_bytes) {
  const ChunkLayout l = chunk_layout(dtype, chunk_elements(dtype, chunk_bytes));
  // level1 is expanded by the decoder in whole groups of 8 flags of level 2.
  return {l.elements, l.shuffled_bytes, l.level0_bytes, 8 * std::uint64_t(l.level2_bytes)};
}

// The encoder's workspace for one chunk: both pipelines' shuffled words and bitmap levels (slot 0
// Delta, slot 1 Plain) and the lossy outlier flags, one 32-bit word per shuffle block. Every
// region starts at a multiple of 16 bytes. The pipeline that loses becomes the chunk's output
// staging: its shuffled size is at least the chunk's raw size, which a kept chunk is below.
struct EncodeLayout {
  std::uint32_t shuffled_stride, level0_stride, level1_stride, level2_stride;
  std::uint32_t level0_at, level1_at, level2_at, masks_at, bytes;
};

LIVEDRP_HD std::uint32_t round_up16(std::uint32_t n) {
  return (n + 15) & ~15u;
}

LIVEDRP_HD EncodeLayout encode_layout(DType dtype, std::uint32_t chunk_bytes) {
  const ChunkLayout l = chunk_layout(dtype, chunk_elements(dtype, chunk_bytes));
  EncodeLayout e{};
  e.shuffled_stride = l.shuffled_bytes;  // a multiple of 64
  e.level0_stride = round_up16(l.level0_bytes);
  e.level1_stride = round_up16(l.level1_bytes);
  e.level2_stride = round_up16(l.level2_bytes);
  e.level0_at = 2 * e.shuffled_stride;
  e.level1_at = e.level0_at + 2 * e.level0_stride;
  e.level2_at = e.level1_at + 2 * e.level1_stride;
  e.masks_at = e.level2_at + 2 * e.level2_stride;
  e.bytes = e.masks_at + round_up16(4 * l.blocks);
  return e;
}

// Device words of one DeviceCodec's compression that live across launches. All are zero between
// launches: the last block of a launch (the one that writes the header) puts them back to zero.
struct EncodeCounters {
  unsigned long long ticket;         // chunks claimed: blocks take chunks in the order they start
  unsigned long long done;           // blocks finished
  unsigned long long payload_terms;  // sum of the payload checksum terms of every chunk
  unsigned long long table_terms;    // sum of the header checksum terms of every table entry
};

struct Scratch {
  // Decoding, per chunk at the strides above.
  std::uint32_t* values;  // residuals, then values
  std::uint8_t* shuffled;
  std::uint8_t* level0;
  std::uint8_t* level1;
  std::uint64_t* offsets;  // chunk payload offsets, chunk_count + 1
  // Encoding.
  std::uint8_t* workspace;       // per chunk, when the workspace does not fit in shared memory
  unsigned long long* lookback;  // per chunk: its published size (see compress.cu), else 0
  EncodeCounters* counters;
  std::uint64_t* size_word;  // the byte size of the last stream compressed
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
  bool input_aligned16;  // every chunk's input may be read in 16-byte words
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
// Sets the compression kernels' shared-memory limits; once per device, before the first launch.
void prepare_compress_kernels();
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
