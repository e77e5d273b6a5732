#pragma once
// What the codec kernels share: the per-chunk scratch layouts, block-wide scans and sums over
// ranges longer than the block, and the launch functions device_codec.cu calls.
#include <cuda_runtime.h>

#include <cstdint>
#include <cub/block/block_scan.cuh>
#include <cuda/atomic>
#include <string>
#include <utility>
#include <vector>

#include "codec/codec.hpp"
#include "codec/codec_format.hpp"
#include "codec/codec_math.hpp"
#include "core/error.hpp"
#include "cuda/codec/resident_ring.hpp"
#include "cuda/device.hpp"

namespace livedrp::gpu::codec_kernels {

using namespace livedrp::codec;

// Decoding: blocks claim chunks one after another; one thread per 32-value shuffle block.
inline constexpr int kDecodeThreads = 128;
// Encoding: one block per chunk, one thread per 32-value shuffle block (a 16 KiB float32 chunk has
// 128), so a chunk's shuffle is a single pass of the block.
inline constexpr int kEncodeThreads = 128;
// An encoder workspace up to this size lives in shared memory (chunks up to 32 KiB, at least two
// blocks per SM); larger ones use a global slot per chunk.
inline constexpr std::uint32_t kMaxSharedWorkspace = 96 * 1024;

LIVEDRP_HD std::uint32_t round_up16(std::uint32_t n) {
  return (n + 15) & ~15u;
}

// Programmatic dependent launch (sm_90): the launched decoder goes out with the stream
// serialisation attribute, so that a decoder behind another kernel in its stream is scheduled
// while the earlier one's last blocks finish instead of after it has ended and the launch latency
// has passed. Each block does only shared-memory set-up before wait_for_prerequisite_grid, which
// returns once every earlier kernel of the stream has finished and its writes are visible: the
// stream to decode and the counters the previous decoder's last block reset are read after it.
// Each block calls allow_dependent_launch once its chunks are done, so the next decoder's blocks
// may take the SMs its blocks leave. Both are no-ops in a kernel launched without the attribute.
// (H200, one uint16 event per launch: decompression 640-653 -> 681-685 GB/s on 4 streams. The
// encoder launched the same way went from 655-662 to 701-702 on uint16 but lost float32
// lossless, 685-690 -> 618-626 on 4 streams, so it stays a plain launch; docs/benchmarks.md,
// Session 23.)
// Below sm_90 there is no such launch (the host never asks for one, gpu::hopper_features) and
// stream order alone keeps the kernels apart.
__device__ __forceinline__ void wait_for_prerequisite_grid() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_dependent_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Launches kernel<<<grid, block, shared_bytes, stream>>>(args...) with the programmatic stream
// serialisation attribute where the GPU has it (gpu::hopper_features), as a plain launch
// elsewhere; throws RuntimeFault naming the kernel when the launch fails.
template <class... Params, class... Args>
void launch_programmatic(void (*kernel)(Params...), unsigned grid, unsigned block,
                         std::uint32_t shared_bytes, cudaStream_t stream, const char* name,
                         Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute attribute[1]{};
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = gpu::hopper_features() ? 1 : 0;
  const cudaError_t status = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (status != cudaSuccess)
    throw RuntimeFault(std::string("launch of ") + name + ": " + cudaGetErrorString(status));
}

// The decoder's workspace for one chunk: the expanded shuffled words and the two expanded bitmap
// levels, per shuffle block the Delta carry and, for lossy chunks, the outlier flags, and a copy of
// the chunk's stored bytes (its expansion reads them in no particular order). The carries live in
// level 0's bytes: they are computed once the data level is expanded, when level 0 is no longer
// read (a Sparse chunk, which keeps its groups' first words there, has no bitmaps). Every region
// starts at a multiple of 16 bytes. Chunks up to 16 KiB decode in shared memory; larger ones in a
// global slot per thread block.
struct DecodeLayout {
  std::uint32_t level0_at, level1_at, carries_at, masks_at, stored_at, bytes;
};

LIVEDRP_HD DecodeLayout decode_layout(DType dtype, std::uint32_t chunk_bytes, Codec codec) {
  const ChunkLayout l = chunk_layout(dtype, chunk_elements(dtype, chunk_bytes));
  DecodeLayout d{};
  d.level0_at = l.shuffled_bytes;  // a multiple of 64
  // 4 bytes a shuffle block, within level 0's Bits / 2 >= 8 a block.
  d.carries_at = d.level0_at;
  d.level1_at = d.level0_at + round_up16(l.level0_bytes);
  // Level 1 is expanded in whole groups of 8 flags of level 2.
  d.masks_at = d.level1_at + round_up16(8 * l.level2_bytes);
  d.stored_at = d.masks_at + (codec == Codec::Lossy ? round_up16(4 * l.blocks) : 0u);
  // A stored chunk is never above its raw size; 32 bytes more because its copy may start 12 bytes
  // in (decompress.cu's bulk copy moves whole 16-byte words) and the data level's expansion reads
  // the 12 aligned bytes around each group's up to 8 stored bytes.
  d.bytes = d.stored_at + round_up16(l.raw_bytes) + 32;
  return d;
}
// The largest chunk whose workspace is in shared memory.
inline constexpr std::uint32_t kDecodeSharedChunkBytes = 16 * 1024;

// The encoder's workspace for one chunk: both pipelines' shuffled words and bitmap levels (slot 0
// Delta, slot 1 Plain), the lossy outlier flags (one 32-bit word per shuffle block) and, for the
// lossy codec, every element's bin: in a region of its own when the chunk has more shuffle blocks
// than the thread block has threads, else in the Plain pipeline's shuffled words (each thread
// reads its block's bins before any is overwritten). Every region starts at a multiple of 16
// bytes. The pipeline that loses becomes the chunk's output staging: its shuffled size is at
// least the chunk's raw size, which a kept chunk is below.
struct EncodeLayout {
  std::uint32_t shuffled_stride, level0_stride, level1_stride, level2_stride;
  std::uint32_t level0_at, level1_at, level2_at, masks_at, bins_at, bytes;
};

LIVEDRP_HD EncodeLayout encode_layout(DType dtype, std::uint32_t chunk_bytes, Codec codec) {
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
  e.bins_at = e.masks_at + round_up16(4 * l.blocks);
  const bool own_bins = codec == Codec::Lossy && l.blocks > std::uint32_t(kEncodeThreads);
  if (codec == Codec::Lossy && !own_bins) e.bins_at = e.shuffled_stride;  // slot 1's words
  e.bytes = e.masks_at + round_up16(4 * l.blocks) + (own_bins ? 128 * l.blocks : 0);
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

// Device words of one DeviceCodec's decompression, zero between launches like EncodeCounters.
struct DecodeCounters {
  unsigned long long ticket;         // chunks claimed
  unsigned long long done;           // blocks finished
  unsigned long long payload_terms;  // payload checksum terms of the chunks decoded
  unsigned long long table_terms;    // header checksum terms of the table entries
  unsigned long long bad_entry;      // nonzero when a table entry is impossible for its chunk
  unsigned long long failure;        // ~((chunk << 8) | ChunkError) of the first damaged chunk
};

struct Scratch {
  // Encoding: per chunk; decoding: per thread block; when the workspace does not fit in shared
  // memory.
  std::uint8_t* workspace;
  std::uint64_t workspace_bytes;
  // Per chunk: its published size or prefix (see compress.cu and decompress.cu), else 0. Shared
  // by both directions: one DeviceCodec runs one launch at a time.
  unsigned long long* lookback;
  EncodeCounters* counters;
  DecodeCounters* decode_counters;
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
  // lossy_scale(error_bound)'s single-precision path constants, formed once on the host (the
  // same IEEE operations as on the device): read as kernel parameters, they cost the
  // quantiser no instructions or registers.
  float lossy_inverse_width_float, lossy_float_path_limit;
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
  KindNotAsked,      // the header's dtype and codec are not those the decoder was launched for
  ResidentGeometry,  // more chunks, or larger ones, than a resident decoder was set up for
};

// The streams a decoder instantiation takes: Any holds every path; the others hold one dtype and
// codec's path alone (fewer registers, so more blocks an SM, and no other path's code) and refuse
// a header that says anything else.
enum class DecodeKind : std::uint32_t { Any, UInt16Lossless, Float32Lossless, Float32Lossy };
inline constexpr int kDecodeKinds = 4;
// The dtype and codec of a kind's one path (not meaningful for Any).
constexpr DType kind_dtype(DecodeKind k) {
  return k == DecodeKind::UInt16Lossless ? DType::UInt16 : DType::Float32;
}
constexpr Codec kind_codec(DecodeKind k) {
  return k == DecodeKind::Float32Lossy ? Codec::Lossy : Codec::Lossless;
}

// The dynamic shared memory a decode kind asks for: the workspace of a kDecodeSharedChunkBytes
// chunk of its dtype and codec (Any: the largest of the three pairs). Asking for no more than that
// matters: the uint16 lossless decoder's 35,104 bytes (and at most 80 registers) leave room for 6
// blocks an SM where 40 KiB allowed 5.
LIVEDRP_HD std::uint32_t decode_shared_bytes(DecodeKind k) {
  const auto bytes = [](DType dtype, Codec codec) {
    return decode_layout(dtype, kDecodeSharedChunkBytes, codec).bytes;
  };
  if (k != DecodeKind::Any) return bytes(kind_dtype(k), kind_codec(k));
  const std::uint32_t uint16 = bytes(DType::UInt16, Codec::Lossless);
  const std::uint32_t float32 = bytes(DType::Float32, Codec::Lossless);
  const std::uint32_t lossy = bytes(DType::Float32, Codec::Lossy);
  const std::uint32_t lossless = uint16 > float32 ? uint16 : float32;
  return lossless > lossy ? lossless : lossy;
}

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
  bool output_aligned16;  // every chunk's output may be written in 16-byte words
  // Chunks come into a shared workspace by the Tensor Memory Accelerator's bulk copies (sm_90)
  // rather than by the threads' loads: gpu::hopper_features() on the host, and only in code
  // compiled for sm_90.
  bool bulk_copies;
  DecodePlan* plan;
  Scratch scratch;
};

// The fixed kind that decodes `dtype` under `codec`; InputError when there is none.
DecodeKind decode_kind(DType dtype, Codec codec);
// What is wrong with a stream whose decode ended in `status`, as finish_decompress says it: the
// status's text, the first damaged chunk and its error (ChunkDamaged), or the header's dtype and
// codec against those asked for (KindNotAsked).
std::string decode_failure(DecodeStatus status, unsigned long long first_failure,
                           std::uint32_t header_dtype, std::uint32_t header_codec,
                           DecodeKind asked);

// The arguments of compressing `count` elements of `dtype` (C order `shape`, or flat when it is
// empty) with `params` (already checked): everything but the buffers (in, out, input_aligned16,
// scratch), which the caller sets.
CompressArgs compress_args(DType dtype, std::uint64_t count,
                           const std::vector<std::uint64_t>& shape, const CodecParams& params);

void launch_compress(const CompressArgs& args, void* stream);
// A resident compressor (resident_compressor.hpp): the queue's ring and, per work slot, the
// look-back words, counters and size word of one compression.
struct ResidentCompressArgs {
  CompressArgs array;  // the arrays' shape, dtype and parameters; in, out and scratch per job
  ResidentRing ring;
  unsigned long long* lookback;  // work slots x chunks
  EncodeCounters* counters;      // per work slot
  std::uint64_t* size_words;     // per work slot
};
// The resident kernel for the args' dtype and codec on `stream` with `grid` blocks (block 0
// dispatches, the others compress); it returns once the host has asked it to stop and every job
// dispatched is done. The workspace must fit in shared memory.
void launch_compress_resident(const ResidentCompressArgs& args, unsigned grid, void* stream);
// Blocks of that kernel the device holds at once (the grid to launch).
unsigned resident_compress_grid(DType dtype, Codec codec, std::uint32_t chunk_bytes);

// A resident decompressor (resident_decompressor.hpp): the queue's ring and, per work slot, the
// look-back words, counters and plan of one decode.
struct ResidentDecompressArgs {
  DecompressArgs array;  // max_elements; in, size, out, capacity and scratch per job
  ResidentRing ring;
  unsigned long long* lookback;  // work slots x chunks
  DecodeCounters* counters;      // per work slot
  DecodePlan* plans;             // per work slot
  unsigned long long chunks;     // tickets per job: the most chunks a stream may have
};
// The resident decoder of `kind` (not Any) on `stream` with `grid` blocks, as
// launch_compress_resident.
void launch_decompress_resident(const ResidentDecompressArgs& args, DecodeKind kind, unsigned grid,
                                void* stream);
unsigned resident_decompress_grid(DecodeKind kind);

// Sets the compression kernels' shared-memory limits; once per device, before the first launch.
void prepare_compress_kernels();
// Sets the decompression kernel's shared-memory carveout; once per device.
void prepare_decompress_kernels();
// Thread blocks one decompression launch of the kind's kernel runs (as many as the device holds
// at once).
unsigned decompress_grid(DecodeKind kind);
void launch_decompress(const DecompressArgs& args, DecodeKind kind, unsigned grid, void* stream);

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

// Sum of x over this lane and the lanes below it in the warp (every lane must call it).
__device__ inline std::uint32_t warp_inclusive_sum(std::uint32_t x) {
  const unsigned lane = threadIdx.x % 32;
  for (unsigned d = 1; d < 32; d *= 2) {
    const std::uint32_t y = __shfl_up_sync(~0u, x, d);
    if (lane >= d) x += y;
  }
  return x;
}

// Counts a block done: adds 1 to a device-wide counter with release semantics (this thread's
// earlier reads and writes, and the block's before a barrier, happen before it), as a PTX `red`,
// which does not wait for the old value to come back.
__device__ inline void count_done_release(unsigned long long* counter) {
  asm volatile("red.release.gpu.add.u64 [%0], 1;" ::"l"(counter) : "memory");
}

// Thread 0 of a block at its end: adds the block's checksum terms to the launch's (or job's)
// sums, then either counts the block done (release: its sums, look-back reads and writes before
// the count; no wait for the count's round trip) or, in the finishing block, waits until `others`
// blocks have (acquire: their sums and look-back words are seen).
__device__ inline void add_terms_and_count(unsigned long long& payload_sum,
                                           unsigned long long& table_sum, unsigned long long& done,
                                           std::uint64_t payload_terms, std::uint64_t table_terms,
                                           bool finisher, unsigned long long others) {
  using Word = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>;
  Word(payload_sum).fetch_add(payload_terms, cuda::memory_order_relaxed);
  Word(table_sum).fetch_add(table_terms, cuda::memory_order_relaxed);
  if (!finisher) {
    count_done_release(&done);
  } else {
    while (Word(done).load(cuda::memory_order_acquire) != others) __nanosleep(64);
  }
}

// Sum over the warp of a 64-bit value, modulo 2^64, from four warp reductions (REDUX) of its
// 16-bit pieces: each piece's sum over 32 lanes stays below 2^21, so none wraps, and shifted back
// into place they add up to the sum. Four instructions where a butterfly of 64-bit shuffles
// takes ten shuffles and ten adds. Every lane of the warp must call it.
__device__ inline std::uint64_t warp_sum64(std::uint64_t x) {
  const auto low = std::uint32_t(x), high = std::uint32_t(x >> 32);
  const std::uint64_t p0 = __reduce_add_sync(~0u, low & 0xFFFFu);
  const std::uint64_t p1 = __reduce_add_sync(~0u, low >> 16);
  const std::uint64_t p2 = __reduce_add_sync(~0u, high & 0xFFFFu);
  const std::uint64_t p3 = __reduce_add_sync(~0u, high >> 16);
  return p0 + (p1 << 16) + (p2 << 32) + (p3 << 48);
}

#endif

}  // namespace livedrp::gpu::codec_kernels
