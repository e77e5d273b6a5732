// Decompression on the GPU in one launch. Thread blocks claim chunks from a ticket counter, as
// the encoder does, and each one:
//   1. checks the header's fields itself (scalar loads; every block reaches the same verdict) and
//      adds its table entry's header checksum term to a device sum;
//   2. finds its chunk's payload offset: the table holds every chunk's size from the start, so a
//      block adds its predecessors' sizes back to the nearest chunk that has published its
//      inclusive prefix, never waiting for anyone, and publishes its own;
//   3. brings the chunk's words into its shared workspace by one bulk copy (the Tensor Memory
//      Accelerator's cp.async.bulk, sm_90; the last chunk's few words past the buffer's last whole
//      16-byte word, every word of a chunk in a global workspace, and every word on GPUs without
//      bulk copies, are loaded by threads) and reads them
//      once for the payload checksum (a Raw chunk's then go to the output), then expands zero-byte
//      elimination's levels (the data level's groups found by a rank table, a prefix count of set
//      flags per 32-bit word, and spread by byte permutes, expand_selectors), and unshuffles: one
//      thread per 32-value block transposes the plane words back in registers (codec_math.hpp's
//      transpose32, its own inverse, or its 16-bit form when planes 16-31 are empty). For Delta
//      chunks a block's running sum starts from the sum of the residuals before it, which a first
//      pass gets from popcounts of the plane words alone. Lossy bins below 2^15 become floats in
//      one multiply (small_bins), and each warp's 32 blocks reach the output as whole lines, staged
//      in the workspace's copy of the stored bytes. A Sparse chunk (lossy only) zeroes its output,
//      finds its listed elements' positions by block-wide scans over the gap bytes and a warp
//      rebuilds each group of 32 values from its plane words (decode_sparse);
//   4. the last block to finish compares both checksums and the payload size, writes the plan
//      (status, first damaged chunk, decoded size) and puts the counters back to zero.
// Every read is checked against the buffer and every write against the output capacity before
// it happens; a damaged stream only changes the status the host reads. The kernel goes out as a
// programmatic dependent launch (codec_kernels.cuh), so a decoder behind another in its stream
// is scheduled while that one's last blocks finish.
#include <cuda_runtime.h>

#include <algorithm>
#include <cuda/atomic>
#include <string>
#include <type_traits>

#include "codec/chunk_cpu.hpp"
#include "codec/container.hpp"
#include "core/error.hpp"
#include "cuda/codec/codec_kernels.cuh"
#include "cuda/codec/resident_dispatch.cuh"
#include "cuda/device.hpp"

namespace livedrp::gpu::codec_kernels {
namespace {

constexpr int T = kDecodeThreads;
constexpr std::size_t kVersionAt = 8, kCodecAt = 10, kDTypeAt = 11, kNdimAt = 12, kReserved1At = 13,
                      kChunkBytesAt = 16, kReserved2At = 20, kCountAt = 24, kErrorBoundAt = 32,
                      kChunkCountAt = 40, kPayloadBytesAt = 48;
constexpr unsigned long long kNoFailure = ~0ull;
// The magic bytes 0x89 "LDRPZ\r\n" as one little-endian word.
constexpr std::uint64_t kExpectedMagicWord = 0x0A0D5A5052444C89ull;
static_assert([] {
  std::uint64_t word = 0;
  for (int i = 7; i >= 0; --i) word = (word << 8) | kMagic[i];
  return word;
}() == kExpectedMagicWord);

using DeviceWord = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>;
// A look-back word: bit 63 set once the chunk's inclusive prefix (bits 62..0, in 4-byte units)
// is known. Zero means not yet.
constexpr unsigned long long kInclusive = 1ull << 63;

// The most header bytes the checks read: the fixed header and the largest shape.
constexpr std::uint32_t kMaxHeaderBytes = kFixedHeaderBytes + 8 * kMaxNdim;

// A header field of the block's shared copy: every field sits at a multiple of its size, and the
// copy is 8-byte aligned, so one aligned load (little-endian, as the format) instead of a byte
// load per byte; thread 0 runs these checks alone while the block waits.
template <class Word>
__device__ Word field(const std::uint8_t* b, std::size_t at) {
  return *reinterpret_cast<const Word*>(b + at);
}

// The scalar checks of the fixed header and shape, in container.cpp's order; fills the plan.
// `b` holds the stream's first min(size, kMaxHeaderBytes) bytes; nothing past them is read.
__device__ DecodeStatus check_header(const std::uint8_t* b, std::uint64_t size, DecodePlan& p,
                                     unsigned& ndim) {
  if (size >= 8) {
    if (field<std::uint64_t>(b, 0) != kExpectedMagicWord) return DecodeStatus::NotLivedrp;
  } else {
    for (std::uint64_t i = 0; i < size; ++i)
      if (b[i] != std::uint8_t(kExpectedMagicWord >> (8 * i))) return DecodeStatus::NotLivedrp;
  }
  if (size < kFixedHeaderBytes) return DecodeStatus::Truncated;
  if (!version_readable(field<std::uint16_t>(b, kVersionAt))) return DecodeStatus::Version;
  ndim = b[kNdimAt];
  if (ndim > kMaxNdim) return DecodeStatus::Ndim;
  const std::uint64_t shape_end = header_bytes(ndim);
  if (size < shape_end) return DecodeStatus::Truncated;
  p.chunks = field<std::uint64_t>(b, kChunkCountAt);
  if (p.chunks > (size - shape_end) / 4) return DecodeStatus::Truncated;
  if (size < payload_offset(ndim, p.chunks)) return DecodeStatus::Truncated;
  return DecodeStatus::Ok;
}

template <DecodeKind Kind>
__device__ DecodeStatus check_fields(const DecompressArgs& a, const std::uint8_t* b, DecodePlan& p,
                                     unsigned ndim) {
  p.codec = b[kCodecAt];
  p.dtype = b[kDTypeAt];
  if (p.codec != unsigned(Codec::Lossless) && p.codec != unsigned(Codec::Lossy))
    return DecodeStatus::CodecId;
  if (p.dtype != unsigned(DType::UInt16) && p.dtype != unsigned(DType::Float32))
    return DecodeStatus::DTypeId;
  if (p.codec == unsigned(Codec::Lossy) && p.dtype != unsigned(DType::Float32))
    return DecodeStatus::LossyNotFloat;
  if constexpr (Kind != DecodeKind::Any)
    if (p.dtype != unsigned(kind_dtype(Kind)) || p.codec != unsigned(kind_codec(Kind)))
      return DecodeStatus::KindNotAsked;
  if (b[kReserved1At] || b[kReserved1At + 1] || b[kReserved1At + 2] ||
      field<std::uint32_t>(b, kReserved2At))
    return DecodeStatus::Reserved;
  p.chunk_bytes = field<std::uint32_t>(b, kChunkBytesAt);
  if (p.chunk_bytes < kMinChunkBytes || p.chunk_bytes > kMaxChunkBytes ||
      p.chunk_bytes % kChunkBytesMultiple != 0)
    return DecodeStatus::ChunkBytes;
  const std::uint64_t eb_bits = field<std::uint64_t>(b, kErrorBoundAt);
  p.error_bound = __longlong_as_double(static_cast<long long>(eb_bits));
  if (p.codec == unsigned(Codec::Lossless)) {
    if (eb_bits != 0) return DecodeStatus::ErrorBound;
  } else {
    const double width = lossy_bin_width(p.error_bound);
    if (!(p.error_bound > 0 && p.error_bound <= 1.7976931348623157e308 &&
          width <= 1.7976931348623157e308))
      return DecodeStatus::ErrorBound;
  }
  // No 64-bit division below: thread 0 runs these checks while its block waits, and each one is
  // a long dependent chain of instructions on the GPU (five of them were about a tenth of a
  // block's life when it decodes one chunk). The dtype is valid here, so esize is 2 or 4.
  const std::uint32_t esize = element_bytes(DType(p.dtype));
  const unsigned esize_shift = esize == 4 ? 2u : 1u;
  p.count = field<std::uint64_t>(b, kCountAt);
  if (p.count > (~std::uint64_t(0) / 2) >> esize_shift) return DecodeStatus::Count;
  p.raw_bytes = p.count * esize;
  if (p.count > a.max_elements) return DecodeStatus::TooManyElements;
  if (ndim > 0) {
    std::uint64_t product = 1;
    bool overflow = false;
    for (unsigned d = 0; d < ndim; ++d) {
      const std::uint64_t n = field<std::uint64_t>(b, kFixedHeaderBytes + 8 * d);
      if (__umul64hi(product, n) != 0) overflow = true;  // product * n >= 2^64
      product *= n;
    }
    if (overflow || product != p.count) return DecodeStatus::Shape;
  }
  // chunks == ceil(count / per_chunk): (chunks - 1) per_chunk < count <= chunks per_chunk.
  const std::uint64_t per_chunk = p.chunk_bytes >> esize_shift;
  const std::uint64_t covered = p.chunks * per_chunk;
  const bool chunk_count_right = p.chunks == 0
                                     ? p.count == 0
                                     : __umul64hi(p.chunks, per_chunk) == 0 && p.count <= covered &&
                                           p.count > covered - per_chunk;
  if (!chunk_count_right) return DecodeStatus::ChunkCount;
  if (p.raw_bytes > a.capacity) return DecodeStatus::OutputCapacity;
  return DecodeStatus::Ok;
}

// Is a table entry's mode and size possible for its chunk? (container.cpp's table check.) A kind
// of one dtype and codec knows them: check_fields refused every other.
template <DecodeKind Kind>
__device__ bool entry_valid(const DecodePlan& p, std::uint32_t entry, std::uint64_t c) {
  const DType dtype = Kind == DecodeKind::Any ? DType(p.dtype) : kind_dtype(Kind);
  const Codec codec = Kind == DecodeKind::Any ? Codec(p.codec) : kind_codec(Kind);
  const std::uint32_t per_chunk = chunk_elements(dtype, p.chunk_bytes);
  const ChunkLayout l = chunk_layout(dtype, elements_in_chunk(p.count, per_chunk, c));
  return entry_possible(codec, l, entry);
}

// Raises the block's chunk error to `e`: None is 0, so any error replaces it, and of several the
// highest code wins, so the report does not depend on which thread came first.
__device__ void note_error(unsigned* error, ChunkError e) {
  atomicMax(error, unsigned(e));
}

// Byte-permute selectors for expanding zero-byte elimination: nibble j of entry m is the rank of
// byte j among the bytes flagged in the 8-bit mask m (for an unflagged byte some byte below 8,
// which a byte mask then clears), so __byte_perm(first 4, next 4 stored bytes, entry >> 16 k) gives
// output bytes 4k..4k+3. Filled once per thread block (fill_expand_selectors).
__shared__ std::uint32_t expand_selectors[256];

__device__ void fill_expand_selectors() {
  for (unsigned m = threadIdx.x; m < 256; m += T) {
    // Bit j of m to bit 4 j (nibble j), in three spreading steps; then multiplying by
    // 0x11111110 adds every lower nibble into each nibble: the exclusive prefix count of the
    // flags, below 8, so no nibble carries. (A loop over the 8 flags cost each thread block 5%
    // of the decoder's instructions when it decodes a single chunk.)
    std::uint32_t spread = (m | (m << 12)) & 0x000F000Fu;
    spread = (spread | (spread << 6)) & 0x03030303u;
    spread = (spread | (spread << 3)) & 0x11111111u;
    expand_selectors[m] = spread * 0x11111110u;
  }
}

// 0xFF in byte j of the result for each bit j of the 4-bit `flags`.
__device__ std::uint32_t byte_mask4(std::uint32_t flags) {
  // flags * 0x00204081 puts bit j at bit 8 j (the four shifted copies do not overlap).
  return ((flags * 0x00204081u) & 0x01010101u) * 0xFFu;
}

// 0x80 in each byte of the result whose byte in w is zero, and 0 elsewhere (exact: the add
// cannot carry across bytes).
__device__ std::uint32_t zero_bytes(std::uint32_t w) {
  return ~(((w & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) | w) & 0x80808080u;
}

// The 8 bytes of one flag byte m, expanded from the stored bytes at src[next, next + popc(m)):
// the three aligned words around them, funnel-shifted into place, spread by two byte permutes
// and masked (no loop over the flags). Sets zero_flagged when a flagged byte is zero. Reads up to
// 12 bytes from the aligned word holding src[next]: every workspace leaves room for them.
__device__ std::uint64_t spread_stored_bytes(const std::uint8_t* src, std::uint32_t next,
                                             std::uint32_t m, bool& zero_flagged) {
  const auto at = reinterpret_cast<std::uintptr_t>(src + next);
  const auto* aligned = reinterpret_cast<const std::uint32_t*>(at & ~std::uintptr_t(3));
  const unsigned shift = 8 * unsigned(at & 3u);
  const std::uint32_t w0 = aligned[0], w1 = aligned[1], w2 = aligned[2];
  const std::uint32_t first = __funnelshift_r(w0, w1, shift);
  const std::uint32_t second = __funnelshift_r(w1, w2, shift);
  const std::uint32_t selector = expand_selectors[m];
  const std::uint32_t low_mask = byte_mask4(m & 0xFu), high_mask = byte_mask4(m >> 4);
  const std::uint32_t low = __byte_perm(first, second, selector) & low_mask;
  const std::uint32_t high = __byte_perm(first, second, selector >> 16) & high_mask;
  // Every flagged byte must be nonzero: no zero byte under the flags' mask.
  zero_flagged |= ((zero_bytes(low) & low_mask) | (zero_bytes(high) & high_mask)) != 0;
  return (std::uint64_t(high) << 32) | low;
}

// Expands one level of zero-byte elimination, run by one warp: out[8 g + j] (g < flag_bytes) is
// the next stored byte of src[start, available) when bit j of flags[g] is set, else 0; 32 flag
// bytes a step, their positions from a warp scan. Returns the bytes used; on a shortfall notes
// Truncated and writes nothing.
__device__ std::uint32_t expand_level_warp(const std::uint8_t* flags, std::uint32_t flag_bytes,
                                           const std::uint8_t* src, std::uint32_t start,
                                           std::uint32_t available, std::uint8_t* out,
                                           unsigned* error) {
  const unsigned lane = threadIdx.x % 32;
  std::uint32_t used = 0;
  for (std::uint32_t g = lane; g < flag_bytes; g += 32) used += __popc(flags[g]);
  used = __reduce_add_sync(~0u, used);
  if (used > available - start) {
    if (lane == 0) note_error(error, ChunkError::Truncated);
    return used;
  }
  std::uint32_t base = start;
  bool zero_flagged = false;
  for (std::uint32_t g0 = 0; g0 < flag_bytes; g0 += 32) {
    const std::uint32_t g = g0 + lane;
    const unsigned m = g < flag_bytes ? flags[g] : 0u;
    const std::uint32_t inclusive = warp_inclusive_sum(__popc(m));
    const std::uint32_t next = base + inclusive - __popc(m);
    const std::uint64_t bytes = spread_stored_bytes(src, next, m, zero_flagged);
    if (g < flag_bytes) *reinterpret_cast<std::uint64_t*>(out + 8 * std::size_t(g)) = bytes;
    base += __shfl_sync(~0u, inclusive, 31);
  }
  if (zero_flagged) note_error(error, ChunkError::FlaggedByteIsZero);
  return used;
}

// One warp's share of a level's expansion: the flag bytes in 32-bit words [begin, end) of
// `flags` (bytes at or past flag_bytes are not expanded; their flags are zero), each lane taking
// one word (4 flag bytes) a step, its stored bytes from src[start, ...) in order, positions from a
// warp scan. With CountFlags, returns the number of set bits in the bytes this lane wrote: the
// stored bytes they flag in the next level (else 0).
template <bool CountFlags>
__device__ std::uint32_t expand_words_warp(const std::uint8_t* flags, std::uint32_t begin,
                                           std::uint32_t end, std::uint32_t flag_bytes,
                                           const std::uint8_t* src, std::uint32_t start,
                                           std::uint8_t* out, bool& zero_flagged) {
  const unsigned lane = threadIdx.x % 32;
  const auto* words = reinterpret_cast<const std::uint32_t*>(flags);
  std::uint32_t base = start, flagged = 0;
  for (std::uint32_t w0 = begin; w0 < end; w0 += 32) {
    const std::uint32_t w = w0 + lane;
    const std::uint32_t word = w < end ? words[w] : 0u;
    const auto count = std::uint32_t(__popc(word));
    const std::uint32_t inclusive = warp_inclusive_sum(count);
    std::uint32_t next = base + inclusive - count;
#pragma unroll
    for (std::uint32_t k = 0; k < 4; ++k) {
      const std::uint32_t g = 4 * w + k, m = (word >> (8 * k)) & 0xFFu;
      if (w < end && g < flag_bytes) {
        const std::uint64_t bytes = spread_stored_bytes(src, next, m, zero_flagged);
        *reinterpret_cast<std::uint64_t*>(out + 8 * std::size_t(g)) = bytes;
        if constexpr (CountFlags) flagged += std::uint32_t(__popcll(bytes));
      }
      next += std::uint32_t(__popc(m));
    }
    base += __shfl_sync(~0u, inclusive, 31);
  }
  return flagged;
}

constexpr unsigned kDecodeWarps = T / 32;

// Warp w's words of a bitmap of `words` 32-bit words: [begin, end), contiguous, in warp order.
struct WarpRange {
  std::uint32_t begin, end;
};
__device__ WarpRange warp_range(std::uint32_t words, unsigned warp) {
  const std::uint32_t per = (words + kDecodeWarps - 1) / kDecodeWarps;
  const std::uint32_t begin = min(words, warp * per);
  return {begin, min(words, begin + per)};
}

// One instruction (REDUX) where a butterfly of shuffles took five dependent steps.
__device__ std::uint32_t warp_total(std::uint32_t x) {
  return __reduce_add_sync(~0u, x);
}

// Sum of counts[0, warp) into *before and of every warp's into the return value.
__device__ std::uint32_t warp_prefix(const std::uint32_t* counts, unsigned warp,
                                     std::uint32_t* before) {
  std::uint32_t total = 0;
  *before = 0;
  for (unsigned w = 0; w < kDecodeWarps; ++w) {
    if (w == warp) *before = total;
    total += counts[w];
  }
  return total;
}

// The sum, modulo 2^32, of the unzigzagged residuals of one shuffle block, from its plane words
// alone: with P_p plane p, sum_i (z_i >> 1) = sum_{p>=1} 2^(p-1) popc(P_p), and an odd z_i
// (set in P_0) decodes to -(z_i >> 1) - 1 instead of +(z_i >> 1). For 16-bit words the sum is
// right modulo 2^16, which is all the store keeps.
// Planes from `planes` on are zero and not read.
template <unsigned Bits>
__device__ std::uint32_t residual_sum(const std::uint32_t* words, std::uint32_t b,
                                      std::uint32_t blocks, std::uint32_t planes) {
  const std::uint32_t p0 = planes ? words[plane_word_index(0, b, blocks)] : 0u;
  std::uint32_t sum = 0u - std::uint32_t(__popc(p0));
#pragma unroll
  for (unsigned p = 1; p < Bits; ++p) {
    const std::uint32_t pp = p < planes ? words[plane_word_index(p, b, blocks)] : 0u;
    sum += (std::uint32_t(__popc(pp)) - 2u * std::uint32_t(__popc(pp & p0))) << (p - 1);
  }
  return sum;
}

struct ChunkContext {
  const DecodePlan* plan;
  ChunkLayout layout;
  ChunkMode mode;
  const std::uint8_t* in;      // the chunk's stored bytes (global memory)
  const std::uint8_t* stored;  // their copy in the workspace
  std::uint32_t size;
  std::uint8_t* out;  // the chunk's decoded bytes
  bool out_aligned16;
  std::uint8_t* work;  // DecodeLayout workspace
  DecodeLayout d;
  std::uint32_t planes;  // plane words at or past plane `planes` are zero (and not in `work`)
};

// Whether a chunk of a Bits-bit dtype holds lossy bins: known from the kind, except for Any's
// float32 path (uint16 is never lossy: check_fields refuses it).
template <unsigned Bits, DecodeKind Kind>
__device__ bool lossy_chunk(const DecodePlan& p) {
  if constexpr (Kind != DecodeKind::Any) return Kind == DecodeKind::Float32Lossy;
  return Bits == 32 && p.codec == unsigned(Codec::Lossy);
}

// How a lossy chunk's bins become floats, decided once a chunk (see small_bins in codec_math.hpp).
struct LossyDecode {
  double width;
  SmallBins small;
};

// Bins to floats with every check, for the blocks small_bins does not cover (Delta chunks, bins
// of 2^15 and more, widths beyond 2^112).
__device__ void reconstruct_checked(std::uint32_t (&v)[32], std::uint32_t outliers,
                                    std::uint32_t valid, double width, unsigned* error) {
  bool outlier_bin = false, out_of_range = false;
#pragma unroll
  for (unsigned i = 0; i < 32; ++i) {
    const auto q = std::int32_t(v[i]);
    float r = 0;
    if ((outliers >> i) & 1u) {
      outlier_bin |= q != 0;
    } else if (i < valid && (q > std::int32_t(kLossyMaxBin) || q < -std::int32_t(kLossyMaxBin) ||
                             !lossy_reconstruct(q, width, &r))) {
      out_of_range = true;
    }
    v[i] = float_bits(r);
  }
  if (outlier_bin) note_error(error, ChunkError::OutlierBinNotZero);
  if (out_of_range) note_error(error, ChunkError::BinOutOfRange);
}

// Writes full block b's Quads 16-byte words (16-byte aligned in the output). With `staged` (the
// caller's warp is whole and all its blocks are full) they go through the workspace's
// stored-bytes copy (free once the chunk is expanded), so that the warp's stores are whole lines:
// written directly, each thread's 64 or 128 contiguous bytes made every 16-byte store of the warp
// touch 32 lines, and the stores' queue stalled the decoder (a fifth of its stall samples on the
// H200). The staging rows are swizzled (16-byte word k of lane l's block at k ^ s(l)), so that
// neither the rows' writes nor the lines' reads conflict in shared-memory banks.
template <unsigned Quads>
__device__ void store_full_block(const ChunkContext& x, std::uint32_t b, const uint4 (&q)[Quads],
                                 bool staged) {
  if (!staged) {
    auto* o = reinterpret_cast<uint4*>(x.out) + Quads * b;
#pragma unroll
    for (unsigned k = 0; k < Quads; ++k) o[k] = q[k];
    return;
  }
  const unsigned lane = threadIdx.x % 32;
  // Quads 8: a row is 128 bytes (one bank cycle), so 8 lanes' rows need 8 different columns;
  // Quads 4: two rows share a bank cycle, so lanes in pairs.
  const auto swizzle = [](unsigned row) { return Quads == 8 ? row % 8 : (row / 2) % 4; };
  const std::uint32_t first = (b - lane) * Quads;  // the warp's first 16-byte word in the chunk
  auto* stage = reinterpret_cast<uint4*>(x.work + x.d.stored_at) + first;
#pragma unroll
  for (unsigned k = 0; k < Quads; ++k) stage[lane * Quads + (k ^ swizzle(lane))] = q[k];
  __syncwarp();
  // Word 32 i + lane is row (32 / Quads) i + lane / Quads, column lane % Quads: its row's swizzle
  // depends on i through its parity alone, so two offsets a lane, computed once, leave every
  // load and store an immediate offset (this runs once per block, straight-line, and its
  // instructions are fetched anew by each warp: the lossy decoder's top stall).
  const unsigned column = lane % Quads, row0 = lane / Quads, row1 = row0 + 32 / Quads;
  const unsigned at_even = row0 * Quads + (column ^ swizzle(row0));
  const unsigned at_odd = row1 * Quads + (column ^ swizzle(row1)) - 32;
  const uint4* stage_even = stage + at_even;
  const uint4* stage_odd = stage + at_odd;
  auto* out = reinterpret_cast<uint4*>(x.out) + first + lane;
#pragma unroll
  for (unsigned i = 0; i < Quads; ++i) out[32 * i] = (i % 2 ? stage_odd : stage_even)[32 * i];
}

// The 32 values of shuffle block b into the output, Delta running sums starting from `carry`.
// Every thread of a warp calls it for consecutive blocks (the last warp of a chunk may be short).
template <unsigned Bits, DecodeKind Kind>
__device__ void write_block(const ChunkContext& x, std::uint32_t b, std::uint32_t carry,
                            const LossyDecode& lossy, unsigned* error) {
  const ChunkLayout& l = x.layout;
  const auto* words = reinterpret_cast<const std::uint32_t*>(x.work);
  std::uint32_t v[32];
#pragma unroll
  for (unsigned p = 0; p < 32; ++p)
    v[p] = p < Bits && (Bits == 16 || p < x.planes) ? words[plane_word_index(p, b, l.blocks)] : 0u;
  // Bit i of `nonzero` is set when residual i is: the padding and outlier checks need no pass
  // over the values. Planes 16-31 all zero (16-bit data, and nearly every block of lossy bins):
  // the cheaper inverse transpose gives the same values.
  std::uint32_t high_planes = 0, nonzero = 0;
#pragma unroll
  for (unsigned p = 16; p < 32; ++p) high_planes |= v[p];
#pragma unroll
  for (unsigned p = 0; p < 16; ++p) nonzero |= v[p];
  nonzero |= high_planes;
  const std::uint32_t valid = min(32u, l.elements - 32 * b);
  if (valid < 32 && (nonzero >> valid) != 0) note_error(error, ChunkError::PaddingNotZero);
  if constexpr (Bits == 16) {
    // The 16-bit inverse stops before unpacking: word k holds residuals k (low half) and k + 16
    // (high half), and the zigzag is undone on both halves at once (a third of the
    // instructions of undoing it value by value; these run once per block, straight-line, and
    // were the uint16 decoder's top stall, instruction fetch). Only each value's low 16 bits
    // are stored, so word k stands for value k as it is: carries only move up.
    transpose16_rounds(v);
#pragma unroll
    for (unsigned k = 0; k < 16; ++k) {
      const std::uint32_t z = v[k];
      v[k] = ((z >> 1) & 0x7FFF7FFFu) ^ ((z & 0x00010001u) * 0xFFFFu);
      v[k + 16] = v[k] >> 16;
    }
  } else {
    // Lossy bins mostly zigzag below 2^8 (planes 8-31 empty): half the 16-bit inverse's work.
    // The choice is made for the warp (lanes that chose differently would run two inverses one
    // after the other); a wider inverse gives the same values.
    std::uint32_t middle_planes = 0;
#pragma unroll
    for (unsigned p = 8; p < 16; ++p) middle_planes |= v[p];
    const unsigned lanes = __activemask();
    const bool warp_high = __any_sync(lanes, high_planes != 0);
    const bool warp_middle = __any_sync(lanes, middle_planes != 0);
    if (!warp_high && !warp_middle) {
      transpose32_planes8(v);
    } else if (!warp_high) {
      transpose32_planes16(v);
    } else {
      transpose32(v);
    }
  }
  // Residuals to values. Two loops rather than one with a select per value: the loop runs once
  // per block, straight-line, and every instruction of it is fetched anew by each warp
  // (instruction fetch is the lossy decoder's top stall; Plain, its common mode, needs no sums).
  const bool delta = x.mode == ChunkMode::Delta;
  // 16-bit residuals are unzigzagged above.
  const auto residual = [](std::uint32_t z) { return Bits == 16 ? z : unzigzag32(z); };
  if (delta) {
    std::uint32_t running = carry;
#pragma unroll
    for (unsigned i = 0; i < 32; ++i) {
      running += residual(v[i]);
      v[i] = running;
    }
  } else if (Bits == 32) {
#pragma unroll
    for (unsigned i = 0; i < 32; ++i) v[i] = residual(v[i]);
  }
  // A warp whose 32 blocks are all full stores through the staging rows. Its lanes take
  // consecutive blocks, so when the last one exists every lane is here and takes part in the vote.
  const bool full = valid == 32 && x.out_aligned16;
  const bool warp_whole = b - threadIdx.x % 32 + 32 <= l.blocks;
  const bool staged = warp_whole && __all_sync(~0u, full);
  const DecodePlan& p = *x.plan;
  if constexpr (Bits == 16) {
    if (full) {
      uint4 q[4];
#pragma unroll
      for (unsigned k = 0; k < 4; ++k)
        q[k] = make_uint4(__byte_perm(v[8 * k], v[8 * k + 1], 0x5410),
                          __byte_perm(v[8 * k + 2], v[8 * k + 3], 0x5410),
                          __byte_perm(v[8 * k + 4], v[8 * k + 5], 0x5410),
                          __byte_perm(v[8 * k + 6], v[8 * k + 7], 0x5410));
      store_full_block<4>(x, b, q, staged);
    } else {
      auto* o = reinterpret_cast<std::uint16_t*>(x.out) + 32 * b;
      for (unsigned i = 0; i < valid; ++i) o[i] = std::uint16_t(v[i]);
    }
    return;
  } else {
    if (lossy_chunk<Bits, Kind>(p)) {
      const auto* masks = reinterpret_cast<const std::uint32_t*>(x.work + x.d.masks_at);
      const std::uint32_t outliers = masks[b];
      // Plain bins are the residuals: below 2^16 zigzagged, |q| <= 2^15 (small_bins), and an
      // outlier's bin is zero when its residual is. Outliers get 0 here; their bits are written
      // after the chunk's values.
      if (!delta && high_planes == 0 && lossy.small.fit) {
        if ((outliers & nonzero) != 0) note_error(error, ChunkError::OutlierBinNotZero);
        if (lossy.small.float_width) {
#pragma unroll
          for (unsigned i = 0; i < 32; ++i)
            v[i] = float_bits(reconstruct_small_bin(std::int32_t(v[i]), lossy.small.width_float));
        } else {
#pragma unroll
          for (unsigned i = 0; i < 32; ++i)
            v[i] = float_bits(float(multiply_rn(double(std::int32_t(v[i])), lossy.width)));
        }
      } else {
        reconstruct_checked(v, outliers, valid, lossy.width, error);
      }
    } else {
#pragma unroll
      for (unsigned i = 0; i < 32; ++i) v[i] = order_float_bits(v[i]);
    }
    if (full) {
      uint4 q[8];
#pragma unroll
      for (unsigned k = 0; k < 8; ++k)
        q[k] = make_uint4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
      store_full_block<8>(x, b, q, staged);
    } else {
      auto* o = reinterpret_cast<std::uint32_t*>(x.out) + 32 * b;
      for (unsigned i = 0; i < valid; ++i) o[i] = v[i];
    }
  }
}

// A lossy chunk's prefix, from the workspace's copy (aligned, filled by the checksum pass, which
// also zeroed the masks): outlier count, indices (strictly increasing, inside the chunk), their
// bits. Each index sets its flag in its shuffle block's mask. Every thread calls it; false when
// the prefix is damaged (the error is noted).
__device__ bool read_outliers(const ChunkContext& x, unsigned* error, std::uint32_t& outliers) {
  if (x.size < 4) {
    note_error(error, ChunkError::Truncated);
    return false;
  }
  const auto* stored32 = reinterpret_cast<const std::uint32_t*>(x.stored);
  outliers = stored32[0];
  if (outliers > x.layout.elements) {
    note_error(error, ChunkError::OutlierCount);
    return false;
  }
  if ((x.size - 4) / 8 < outliers) {
    note_error(error, ChunkError::Truncated);
    return false;
  }
  auto* masks = reinterpret_cast<std::uint32_t*>(x.work + x.d.masks_at);
  for (std::uint32_t k = threadIdx.x; k < outliers; k += T) {
    const std::uint32_t index = stored32[1 + k];
    if (index >= x.layout.elements || (k > 0 && index <= stored32[k])) {
      note_error(error, ChunkError::OutlierOrder);
    } else {
      atomicOr(masks + index / 32, 1u << (index % 32));
    }
  }
  __syncthreads();
  return *error == unsigned(ChunkError::None);
}

// The outliers' exact bits over the zeros written for them, once the chunk's values are written.
// Every thread calls it.
__device__ void write_outlier_bits(const ChunkContext& x, std::uint32_t outliers) {
  __syncthreads();  // the block's values are written; the outliers' bits replace theirs
  auto* o = reinterpret_cast<std::uint32_t*>(x.out);
  for (std::uint32_t k = threadIdx.x; k < outliers; k += T)
    o[load_le32(x.in + 4 + 4 * std::size_t(k))] =
        load_le32(x.in + 4 + 4 * std::size_t(outliers + k));
}

// Decodes a Delta or Plain chunk whose stored bytes passed the checksum pass. Every thread calls
// it; the chunk's error (or None) is in *error afterwards.
template <unsigned Bits, DecodeKind Kind>
__device__ void decode_chunk(ChunkContext& x, unsigned* error) {
  const ChunkLayout& l = x.layout;
  const DecodePlan& p = *x.plan;
  const bool lossy = lossy_chunk<Bits, Kind>(p);
  auto* carries = reinterpret_cast<std::uint32_t*>(x.work + x.d.carries_at);
  std::uint8_t* level0 = x.work + x.d.level0_at;
  std::uint8_t* level1 = x.work + x.d.level1_at;
  std::uint8_t* shuffled = x.work;

  std::uint32_t pos = 0, outliers = 0;
  if (lossy) {
    if (!read_outliers(x, error, outliers)) return;
    pos = 4 + 8 * outliers;
  }

  const std::uint8_t* z = x.stored + pos;
  const std::uint32_t available = x.size - pos;
  const std::uint32_t n0 = l.level0_bytes, n1 = l.level1_bytes, n2 = l.level2_bytes;
  if (available < n2) return note_error(error, ChunkError::Truncated);
  if (n1 % 8 != 0 && (z[n2 - 1] >> (n1 % 8)) != 0)
    return note_error(error, ChunkError::BitmapPadding);
  // Level 1 (1/512 of the shuffled bytes) by warp 0, which also counts the stored bytes of each
  // warp's range of level 0. Levels 0 and then the data are expanded by every warp, each over a
  // contiguous range of its level's flags, from the position the ranges before it end at: one
  // barrier a level, no serial pass over a whole level by one warp. Only level 1's words up to
  // its last nonzero one are expanded: every level-0 byte they do not cover is zero, and so is
  // every shuffled byte under those, which spares expanding the empty high planes (most of a
  // lossy chunk's 32).
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __shared__ std::uint32_t level1_end, words1_used, counts1[kDecodeWarps], counts0[kDecodeWarps];
  if (warp == 0) {
    const std::uint32_t used = expand_level_warp(z, n2, z, n2, available, level1, error);
    __syncwarp();
    if (lane == 0) level1_end = n2 + used;
    // Level 1's bytes past n1 are zero (checked above), so whole words may be read. uint16
    // residuals fill most of their 16 planes: there the search costs more than it spares
    // (H200, 2%), and every word is expanded.
    std::uint32_t last = Bits == 16 ? (n1 + 3) / 4 : 0;  // one past the last nonzero word
    if constexpr (Bits == 32) {
      for (std::uint32_t i = lane; i < (n1 + 3) / 4; i += 32)
        if (reinterpret_cast<const std::uint32_t*>(level1)[i] != 0) last = i + 1;
      last = __reduce_max_sync(~0u, last);
    }
    if (lane == 0) words1_used = last;
    for (unsigned w = 0; w < kDecodeWarps; ++w) {
      const WarpRange r = warp_range(last, w);
      std::uint32_t count = 0;
      for (std::uint32_t i = r.begin + lane; i < r.end; i += 32)
        count += __popc(reinterpret_cast<const std::uint32_t*>(level1)[i]);
      count = warp_total(count);
      if (lane == 0) counts1[w] = count;
    }
  }
  __syncthreads();
  if (*error != unsigned(ChunkError::None)) return;
  const std::uint32_t words1 = words1_used;
  const WarpRange r1 = warp_range(words1, warp);
  std::uint32_t before = 0;
  const std::uint32_t level0_stored = warp_prefix(counts1, warp, &before);
  const std::uint32_t level0_at = level1_end;
  if (level0_stored > available - level0_at) {
    if (threadIdx.x == 0) note_error(error, ChunkError::Truncated);
    return;
  }
  bool zero_flagged = false;
  std::uint32_t flagged = expand_words_warp<true>(level1, r1.begin, r1.end, n1, z,
                                                  level0_at + before, level0, zero_flagged);
  flagged = warp_total(flagged);
  if (lane == 0) counts0[warp] = flagged;
  if (zero_flagged) note_error(error, ChunkError::FlaggedByteIsZero);
  __syncthreads();
  if (*error != unsigned(ChunkError::None)) return;
  const std::uint32_t data_at = level0_at + level0_stored;
  const std::uint32_t data_bytes = warp_prefix(counts0, warp, &before);
  if (data_bytes > available - data_at) {
    if (threadIdx.x == 0) note_error(error, ChunkError::Truncated);
    return;
  }
  // Warp w's level-0 bytes are those its level-1 words flagged: words [8 begin, 8 end) of level
  // 0, cut at level 0's end.
  expand_words_warp<false>(level0, min(n0 / 4, 8 * r1.begin), min(n0 / 4, 8 * r1.end), n0, z,
                           data_at + before, shuffled, zero_flagged);
  if (zero_flagged) note_error(error, ChunkError::FlaggedByteIsZero);
  // The shuffled words written: 8 a level-0 word expanded. The planes they reach are read; the
  // rest of the last of those planes is zeroed here.
  const std::uint32_t words_written = 8 * min(n0 / 4, 8 * words1);
  x.planes = min(Bits, (words_written + l.blocks - 1) / l.blocks);
  for (std::uint32_t w = words_written + threadIdx.x; w < x.planes * l.blocks; w += T)
    reinterpret_cast<std::uint32_t*>(shuffled)[w] = 0;
  __syncthreads();
  if (*error != unsigned(ChunkError::None)) return;
  if (data_at + data_bytes != available) return note_error(error, ChunkError::TrailingBytes);

  const auto* words = reinterpret_cast<const std::uint32_t*>(shuffled);
  if (x.mode == ChunkMode::Delta) {
    for (std::uint32_t b = threadIdx.x; b < l.blocks; b += T)
      carries[b] = residual_sum<Bits>(words, b, l.blocks, Bits == 16 ? Bits : x.planes);
    __syncthreads();
    block_prefix_for<T, std::uint32_t>(
        l.blocks, [&](std::uint64_t b) { return carries[b]; },
        [&](std::uint64_t b, std::uint32_t before, std::uint32_t) { carries[b] = before; });
    __syncthreads();
  }
  LossyDecode lossy_decode{};
  if (lossy) {
    lossy_decode.width = lossy_bin_width(p.error_bound);
    lossy_decode.small = small_bins(lossy_decode.width);
  }
  for (std::uint32_t b = threadIdx.x; b < l.blocks; b += T)
    write_block<Bits, Kind>(x, b, x.mode == ChunkMode::Delta ? carries[b] : 0u, lossy_decode,
                            error);
  if (lossy) write_outlier_bits(x, outliers);
}

// Exclusive prefix sum over the block of each thread's `x` (in thread order), and the block's total
// in `total`. Every thread calls it. The warp-scans algorithm keeps CUB's shared storage to a few
// words (the default raking one takes 672 bytes; the lossy kernels' static shared memory, beside
// their 35,616-byte workspace, must leave room for 5 blocks an SM).
__device__ std::uint32_t block_exclusive_sum(std::uint32_t x, std::uint32_t& total) {
  using Scan = cub::BlockScan<std::uint32_t, T, cub::BLOCK_SCAN_WARP_SCANS>;
  __shared__ typename Scan::TempStorage storage;
  std::uint32_t before;
  Scan(storage).ExclusiveSum(x, before, total);
  __syncthreads();  // the storage is reused by the next scan
  return before;
}

// Every element a sparse chunk does not list decodes to +0.0f: the whole chunk is zeroed first, in
// 16-byte stores where the output allows (a warp's stores then fill whole lines), and a barrier
// orders these stores before the listed values'.
__device__ void zero_chunk_output(const ChunkContext& x) {
  const std::uint32_t words = x.layout.elements;  // float32: a word an element
  std::uint32_t zeroed = 0;
  if (x.out_aligned16) {
    auto* out = reinterpret_cast<uint4*>(x.out);
    for (std::uint32_t q = threadIdx.x; q < words / 4; q += T) out[q] = make_uint4(0, 0, 0, 0);
    zeroed = words / 4 * 4;
  }
  auto* out = reinterpret_cast<std::uint32_t*>(x.out);
  for (std::uint32_t w = zeroed + threadIdx.x; w < words; w += T) out[w] = 0;
}

// Decodes a Sparse chunk (lossy float32; see codec_format.hpp) whose stored bytes passed the
// checksum pass. Every thread calls it; the chunk's error (or None) is in *error afterwards. The
// chunk has no shuffled words or bitmaps, so their workspace regions hold the listing: each listed
// value's element index in the shuffled words' region (4 bytes an element, so room for all of
// them) and each group's first plane word in the carries (a word a shuffle block of 32 elements,
// and a group lists 32 values). Every section's size is checked against the chunk's stored size
// before it is read, and every position against the element count before it is written to.
__device__ void decode_sparse(const ChunkContext& x, unsigned* error) {
  const ChunkLayout& l = x.layout;
  zero_chunk_output(x);  // its stores drain while the listing is parsed
  std::uint32_t outliers = 0;
  if (!read_outliers(x, error, outliers)) return;
  // The body, after the prefix: it starts at a multiple of 4, as its sections do.
  const std::uint32_t body_at = 4 + 8 * outliers;
  const std::uint32_t available = x.size - body_at;
  const auto* body = reinterpret_cast<const std::uint32_t*>(x.stored + body_at);
  if (available < 4) return note_error(error, ChunkError::Truncated);
  const std::uint32_t listed = body[0];
  if (listed > l.elements) return note_error(error, ChunkError::SparseCount);
  const auto escapes_at = std::uint32_t(sparse_escapes_at(listed));  // listed <= 2^18: no wrap
  if (escapes_at > available) return note_error(error, ChunkError::Truncated);

  // Positions: i_k = (sum over m <= k of g_m + 1) - 1, a block-wide scan over the gap bytes, a
  // word of 4 a thread; an escape byte's gap is escape word e, e the escape bytes before it (a
  // first scan). A gap counts at most `elements` (a larger one puts its position past the chunk
  // anyway) and the running position stops at `elements`, so no sum wraps: a tile of 512 gaps
  // adds at most 512 (2^18 + 1) < 2^28.
  const std::uint32_t gap_words = (listed + 3) / 4;
  const std::uint32_t* gaps = body + 1;
  const std::uint32_t* escape_words = body + escapes_at / 4;
  const std::uint32_t escape_room = (available - escapes_at) / 4;  // escape words the bytes hold
  auto* positions = reinterpret_cast<std::uint32_t*>(x.work);
  std::uint32_t escapes = 0, next_position = 0;  // before the tile
  bool bad_padding = false, bad_gap = false, short_escapes = false;
  for (std::uint32_t w0 = 0; w0 < gap_words; w0 += T) {
    const std::uint32_t w = w0 + threadIdx.x;
    const std::uint32_t word = w < gap_words ? gaps[w] : 0u;
    const std::uint32_t gap_bytes = w < gap_words ? min(4u, listed - 4 * w) : 0u;
    const std::uint32_t gap_mask = gap_bytes == 4 ? ~0u : (1u << (8 * gap_bytes)) - 1u;
    bad_padding |= (word & ~gap_mask) != 0;  // the last word's bytes past the gaps are padding
    const auto word_escapes = std::uint32_t(__popc(zero_bytes(~word) & gap_mask));  // 255 bytes
    std::uint32_t tile_escapes = 0;
    std::uint32_t escape = escapes + block_exclusive_sum(word_escapes, tile_escapes);
    std::uint32_t steps[4], run = 0;  // run: sum of g + 1 over the word's bytes up to j
#pragma unroll
    for (unsigned j = 0; j < 4; ++j) {
      std::uint32_t gap = (word >> (8 * j)) & 0xFFu;
      if (j < gap_bytes && gap == kSparseGapEscape) {
        if (escape < escape_room) {
          gap = escape_words[escape];
          bad_gap |= gap < kSparseGapEscape;
        } else {
          short_escapes = true;
        }
        ++escape;
      }
      if (j < gap_bytes) run += min(gap, l.elements) + 1;
      steps[j] = run;
    }
    std::uint32_t tile_steps = 0;
    const std::uint32_t before = next_position + block_exclusive_sum(run, tile_steps);
#pragma unroll
    for (unsigned j = 0; j < 4; ++j) {
      const std::uint32_t position = before + steps[j] - 1;
      if (j >= gap_bytes) break;
      if (position < l.elements)
        positions[4 * w + j] = position;
      else
        bad_gap = true;
    }
    escapes += tile_escapes;
    next_position = min(next_position + tile_steps, l.elements);
  }
  if (bad_padding) note_error(error, ChunkError::SparsePadding);
  if (bad_gap) note_error(error, ChunkError::SparseGap);
  if (short_escapes) note_error(error, ChunkError::Truncated);
  __syncthreads();
  if (*error != unsigned(ChunkError::None)) return;

  // Plane masks, and each group's first plane word: a scan over the masks' popcounts. Then the
  // chunk must end exactly after the last plane word.
  const std::uint32_t groups = sparse_groups(listed);
  const std::uint32_t masks_at = escapes_at + 4 * escapes;  // escapes <= escape_room
  if (available - masks_at < 4 * groups) return note_error(error, ChunkError::Truncated);
  const std::uint32_t* group_masks = body + masks_at / 4;
  auto* first_words = reinterpret_cast<std::uint32_t*>(x.work + x.d.carries_at);
  std::uint32_t plane_words = 0;
  for (std::uint32_t g0 = 0; g0 < groups; g0 += T) {
    const std::uint32_t g = g0 + threadIdx.x;
    const auto count = g < groups ? std::uint32_t(__popc(group_masks[g])) : 0u;
    std::uint32_t tile_words = 0;
    const std::uint32_t first = plane_words + block_exclusive_sum(count, tile_words);
    if (g < groups) first_words[g] = first;
    plane_words += tile_words;
  }
  const std::uint32_t words_at = masks_at + 4 * groups;  // 32 plane words a group at most: no wrap
  if (available - words_at < 4 * plane_words) return note_error(error, ChunkError::Truncated);
  if (available - words_at > 4 * plane_words) return note_error(error, ChunkError::TrailingBytes);
  __syncthreads();  // positions and first words are written; the zeros are stored before the values

  // Values: a warp a group, lane t taking the group's value t from the plane words (each read by
  // the whole warp at once), reconstructed as write_block does Plain bins.
  const std::uint32_t* words = group_masks + groups;
  const auto* outlier_flags = reinterpret_cast<const std::uint32_t*>(x.work + x.d.masks_at);
  auto* out = reinterpret_cast<std::uint32_t*>(x.out);
  const double width = lossy_bin_width(x.plan->error_bound);
  const SmallBins small = small_bins(width);
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  bool bad_values = false, outlier_listed = false, out_of_range = false;
  for (std::uint32_t g = warp; g < groups; g += kDecodeWarps) {
    std::uint32_t z = 0, at = first_words[g];
    for (std::uint32_t m = group_masks[g]; m != 0; m &= m - 1) {
      const std::uint32_t plane = words[at++];
      bad_values |= plane == 0;
      z |= ((plane >> lane) & 1u) << (__ffs(int(m)) - 1);
    }
    const std::uint32_t k = 32 * g + lane;
    if (k >= listed) {  // the last group's padding
      bad_values |= z != 0;
      continue;
    }
    bad_values |= z == 0;
    const std::uint32_t i = positions[k];
    outlier_listed |= ((outlier_flags[i / 32] >> (i % 32)) & 1u) != 0;
    // Zigzagged below 2^16: |q| <= 2^15, small_bins' range (write_block's Plain fast path).
    const auto q = std::int32_t(unzigzag32(z));
    float r = 0;
    if (z < 65536 && small.fit) {
      r = small.float_width ? reconstruct_small_bin(q, small.width_float)
                            : float(multiply_rn(double(q), width));
    } else if (q > std::int32_t(kLossyMaxBin) || q < -std::int32_t(kLossyMaxBin) ||
               !lossy_reconstruct(q, width, &r)) {
      out_of_range = true;
    }
    out[i] = float_bits(r);
  }
  if (bad_values) note_error(error, ChunkError::SparseValues);
  if (outlier_listed) note_error(error, ChunkError::OutlierBinNotZero);
  if (out_of_range) note_error(error, ChunkError::BinOutOfRange);
  write_outlier_bits(x, outliers);
}

// The chunk table's entries: aligned 32-bit loads when the stream is 4-byte aligned (it always is
// in device buffers; the table starts at a multiple of 4), byte loads otherwise.
struct TableReader {
  const std::uint8_t* table;
  bool aligned;
  __device__ std::uint32_t entry(std::uint64_t j) const {
    return aligned ? __ldg(reinterpret_cast<const std::uint32_t*>(table) + j)
                   : load_le32(table + 4 * j);
  }
};

// Payload offset of chunk c in 4-byte units: the padded sizes of its predecessors, read from the
// table back to the nearest chunk whose inclusive prefix is published (the whole block reads T
// chunks at a time). Every thread calls it; the result goes to every thread. (Reading 8 T entries
// a window, every load at once, and the look-back words only past the first window, decoded one
// stream faster but four streams slower on the H200: under load a block nearly always finds its
// neighbour published, float32 lossless 1,092-1,119 GB/s against 857-860 on 4 streams; 2 or 4
// entries a thread, calibrated lossy 836-854 against 863.)
__device__ std::uint64_t find_offset(const TableReader& table, unsigned long long* lookback,
                                     std::uint64_t c) {
  // Each warp's nearest published chunk and its sum of nearer sizes, in shared memory: a window
  // costs two barriers and a few warp-wide instructions (it took five: a block-wide atomicMin and
  // a 64-bit CUB reduction; CUB's reductions were 7% of the lossy decoder's instructions on the
  // H200, most of them here).
  // Each word is written again (next window, or next chunk) only after a barrier that every warp
  // reaches after its last read of it, so no third barrier is needed.
  __shared__ unsigned warp_nearest[kDecodeWarps];
  __shared__ std::uint32_t warp_units[kDecodeWarps];
  __shared__ unsigned long long nearest_prefix;
  // A valid entry's chunk holds at most 1 MiB (2^18 units); a larger one makes the stream fail
  // (TableEntry, from the chunk's own block) whatever offsets follow it, and the clamp keeps a
  // warp's sum of 32 within 32 bits.
  constexpr std::uint32_t kUnitsClamp = 1u << 19;
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  std::uint64_t exclusive = 0;
  for (std::int64_t top = std::int64_t(c) - 1; top >= 0; top -= T) {
    const std::int64_t j = top - std::int64_t(threadIdx.x);
    unsigned long long word = 0;
    std::uint32_t units = 0;
    if (j >= 0) {
      word = DeviceWord(lookback[j]).load(cuda::memory_order_relaxed);
      units = std::uint32_t(
          min(padded_size(entry_size(table.entry(j))) / 4, std::uint64_t(kUnitsClamp)));
    }
    const unsigned published = __ballot_sync(~0u, (word & kInclusive) != 0);
    if (lane == 0) warp_nearest[warp] = published ? 32 * warp + __ffs(int(published)) - 1 : T;
    __syncthreads();
    unsigned n = T;  // the nearest published chunk's thread, T when none is
    for (unsigned w = 0; w < kDecodeWarps; ++w) n = min(n, warp_nearest[w]);
    const std::uint32_t nearer = __reduce_add_sync(~0u, threadIdx.x < n ? units : 0u);
    if (lane == 0) warp_units[warp] = nearer;
    if (threadIdx.x == n) nearest_prefix = word & ~kInclusive;
    __syncthreads();
    for (unsigned w = 0; w < kDecodeWarps; ++w) exclusive += warp_units[w];
    if (n < T) return exclusive + nearest_prefix;
  }
  return exclusive;
}

// How many thread blocks decode chunks of the given dtype and size: every block when their
// workspace fits in shared memory; above 16 KiB only those that have a global slot (as many as
// fit), the lowest-numbered ones.
template <DecodeKind Kind>
__device__ std::uint64_t chunk_decoders(const DecompressArgs& a, DType dtype,
                                        std::uint32_t chunk_bytes, Codec codec) {
  const std::uint32_t bytes = decode_layout(dtype, chunk_bytes, codec).bytes;
  if (bytes <= decode_shared_bytes(Kind)) return gridDim.x;
  return min(std::uint64_t(gridDim.x), a.scratch.workspace_bytes / bytes);
}

// Whether this block decodes chunks of the given dtype and size.
template <DecodeKind Kind>
__device__ bool block_claims(const DecompressArgs& a, DType dtype, std::uint32_t chunk_bytes,
                             Codec codec) {
  return blockIdx.x < chunk_decoders<Kind>(a, dtype, chunk_bytes, codec);
}

// Header checks of one block, as the status they give (Ok when the chunks may be decoded).
struct HeaderVerdict {
  DecodeStatus header, fields;
  unsigned ndim;
};

__device__ void finish(const DecompressArgs& a, const DecodePlan& plan, const HeaderVerdict& v) {
  DecodeCounters& k = *a.scratch.decode_counters;
  DecodePlan out = plan;
  out.first_failure = kNoFailure;
  DecodeStatus status = v.header;
  if (status == DecodeStatus::Ok) {
    // Header words and the stored payload checksum: the table's terms were summed by the chunks.
    const std::uint64_t at = payload_offset(v.ndim, plan.chunks) - kChecksumBytes;
    std::uint64_t sum = DeviceWord(k.table_terms).load(cuda::memory_order_relaxed);
    for (std::uint64_t w = 0; w < header_bytes(v.ndim) / 4; ++w)
      sum += checksum_word_term(load_le32(a.in + 4 * w), w);
    sum += checksum_word_term(load_le32(a.in + at), at / 4) +
           checksum_word_term(load_le32(a.in + at + 4), at / 4 + 1);
    if (checksum_count_term(at / 4 + 2) + sum != load_le64(a.in + at + 8))
      status = DecodeStatus::HeaderChecksum;
    else
      status = v.fields;
  }
  if (status == DecodeStatus::Ok) {
    const std::uint64_t units =
        plan.chunks
            ? DeviceWord(a.scratch.lookback[plan.chunks - 1]).load(cuda::memory_order_relaxed) &
                  ~kInclusive
            : 0;
    const std::uint64_t payload = 4 * units;
    const std::uint64_t stored_checksum =
        load_le64(a.in + payload_offset(v.ndim, plan.chunks) - kChecksumBytes);
    const unsigned long long failure = DeviceWord(k.failure).load(cuda::memory_order_relaxed);
    if (DeviceWord(k.bad_entry).load(cuda::memory_order_relaxed)) {
      status = DecodeStatus::TableEntry;
    } else if (load_le64(a.in + kPayloadBytesAt) != payload) {
      status = DecodeStatus::PayloadBytes;
    } else if (a.size - plan.payload_at != payload) {
      status = DecodeStatus::PayloadSize;
    } else if (checksum_count_term(units) +
                   DeviceWord(k.payload_terms).load(cuda::memory_order_relaxed) !=
               stored_checksum) {
      status = DecodeStatus::PayloadChecksum;
    } else if (failure != 0) {
      status = DecodeStatus::ChunkDamaged;
      out.first_failure = ~failure;
    }
    out.payload_bytes = payload;
    out.stored_payload_checksum = stored_checksum;
  }
  out.status = std::uint32_t(status);
  *a.plan = out;
}

// A chunk's stored bytes into the shared workspace by one bulk copy of the Tensor Memory
// Accelerator (cp.async.bulk, sm_90), issued by one thread and awaited on a shared mbarrier: one
// memory round trip for the whole chunk and no load or store instruction per word (the checksum
// pass loaded 32 words a thread in two round trips and stored each to shared memory). The copy
// moves whole 16-byte words, so it covers the chunk's bytes from the 16-byte word holding the
// first to the one holding the last: up to 12 bytes either side, inside the buffer (checked).
// Code for GPUs below sm_90 has no bulk copies: the functions below are empty there and
// decode_one never calls them (BulkCopy::barrier is nullptr: kBulkCopiesCompiled).
#if __CUDA_ARCH__ >= 900
constexpr bool kBulkCopiesCompiled = true;
__device__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
#else
constexpr bool kBulkCopiesCompiled = false;
#endif
__device__ void bulk_barrier_init(std::uint64_t* barrier) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(barrier)) : "memory");
#else
  (void)barrier;
#endif
}
// Thread 0's part. The fence orders the block's earlier generic accesses to `to` (ordered before
// this thread by a barrier) before the copy's writes, which go through the async proxy.
__device__ void bulk_copy_to_shared(void* to, const void* from, std::uint32_t bytes,
                                    std::uint64_t* barrier) {
#if __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(barrier)),
      "r"(bytes)
      : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(shared_address(to)),
      "l"(from), "r"(bytes), "r"(shared_address(barrier))
      : "memory");
#else
  (void)to, (void)from, (void)bytes, (void)barrier;
#endif
}
// Every thread's wait for the copy of phase `phase` (0, 1, 0, ... for successive copies).
__device__ void bulk_wait(std::uint64_t* barrier, unsigned phase) {
#if __CUDA_ARCH__ >= 900
  unsigned done = 0;
  do {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, "
        "p; }"
        : "=r"(done)
        : "r"(shared_address(barrier)), "r"(phase)
        : "memory");
  } while (!done);
#else
  (void)barrier, (void)phase;
#endif
}

// Where a block's bulk copies are awaited: the mbarrier and the parity of the next copy's phase
// (the same in every thread).
struct BulkCopy {
  // nullptr when the workspace is in global memory or the chunks come in by the threads' loads
  // (DecompressArgs::bulk_copies false, or code below sm_90)
  std::uint64_t* barrier;
  unsigned phase;
};

// Decodes chunk c (its table entry `entry`, payload offset `offset` units): the checksum pass,
// then the chunk. Returns this thread's payload checksum terms. SharedWork: the workspace is the
// block's dynamic shared memory, named as such, so that every access to it compiles to a
// shared-memory load or store (LDS/STS, 32-bit addresses) instead of a generic one through a
// 64-bit pointer that may point anywhere (H200, Nsight Compute: the uint16 decoder's workspace
// reads and staging were generic loads); otherwise it is global_work, a chunk's global slot.
template <DecodeKind Kind, bool SharedWork>
__device__ std::uint64_t decode_one(const DecompressArgs& a, const DecodePlan& p, std::uint64_t c,
                                    std::uint32_t entry, std::uint64_t offset,
                                    std::uint8_t* global_work, BulkCopy& bulk, unsigned* error) {
  extern __shared__ uint4 shared_workspace[];
  std::uint8_t* const work =
      SharedWork ? reinterpret_cast<std::uint8_t*>(shared_workspace) : global_work;
  // A kind's dtype is a constant (check_fields refused any other): no division by its size.
  const DType dtype = Kind == DecodeKind::Any ? DType(p.dtype) : kind_dtype(Kind);
  const std::uint32_t per_chunk = chunk_elements(dtype, p.chunk_bytes);
  ChunkContext x;
  x.plan = &p;
  x.layout = chunk_layout(dtype, elements_in_chunk(p.count, per_chunk, c));
  x.mode = ChunkMode(entry_mode_bits(entry));
  x.in = a.in + p.payload_at + 4 * offset;
  x.size = entry_size(entry);
  x.out = a.out + c * std::uint64_t(per_chunk) * element_bytes(dtype);
  x.out_aligned16 = a.output_aligned16;
  x.work = work;
  x.d = decode_layout(dtype, p.chunk_bytes, Codec(p.codec));
  x.stored = work + x.d.stored_at;
  x.planes = 32;  // decode_chunk narrows it once the bitmaps are expanded
  const std::uint32_t units = std::uint32_t(padded_size(x.size) / 4);
  const bool raw = x.mode == ChunkMode::Raw;
  // In a shared workspace the chunk comes in by a bulk copy of the 16-byte words around it, cut
  // at the last whole 16-byte word inside the buffer; the few words past that cut (the last
  // chunk's, at most 3) are loaded by threads.
  const auto chunk_at = reinterpret_cast<std::uintptr_t>(x.in);
  const auto first_word = chunk_at & ~std::uintptr_t(15);
  const auto buffer_end_word =
      (reinterpret_cast<std::uintptr_t>(a.in) + a.size) & ~std::uintptr_t(15);
  const auto end_word = min((chunk_at + 4 * units + 15) & ~std::uintptr_t(15), buffer_end_word);
  constexpr bool in_shared = SharedWork;
  const bool by_bulk = in_shared && bulk.barrier != nullptr && end_word > first_word;
  std::uint8_t* const stored_bytes = work + x.d.stored_at + (in_shared ? chunk_at & 15u : 0u);
  x.stored = stored_bytes;
  if (by_bulk && threadIdx.x == 0)
    bulk_copy_to_shared(work + x.d.stored_at, reinterpret_cast<const void*>(first_word),
                        std::uint32_t(end_word - first_word), bulk.barrier);

  // Checksum pass: every stored word with its index in the payload; pad bytes must be zero; a
  // Raw chunk goes to the output (a uint16 chunk of odd count ends in half a word).
  const auto* in32 = reinterpret_cast<const std::uint32_t*>(x.in);
  auto* out32 = reinterpret_cast<std::uint32_t*>(x.out);
  auto* stored32 = reinterpret_cast<std::uint32_t*>(stored_bytes);
  // The payload checksum's terms (word ^ key)(2 (offset + w) + 1) summed as
  // sum (word ^ key)(2 w + 1) + 2 offset sum (word ^ key), modulo 2^64 alike: per word one 32 x 32
  // multiply-add into 64 bits and one add, instead of a 64-bit index and product.
  std::uint64_t weighted = 0, keyed_sum = 0;
  bool pads_clean = true;
  // Word w's terms; a Raw chunk's (is_raw: std::true_type) also to the output.
  const auto take = [&](std::uint32_t w, std::uint32_t word, auto is_raw) {
    constexpr bool kRaw = decltype(is_raw)::value;
    const std::uint32_t keyed = word ^ kChecksumWordKey;
    weighted += std::uint64_t(keyed) * (2 * w + 1);  // 2 w + 1 < 2^21: chunks are <= 1 MiB
    keyed_sum += keyed;
    if (4 * w + 4 > x.size) {
      const std::uint32_t kept = x.size - 4 * w;  // 1..3 bytes
      if ((word >> (8 * kept)) != 0) pads_clean = false;
      if (kRaw) reinterpret_cast<std::uint16_t*>(out32 + w)[0] = std::uint16_t(word);
    } else if (kRaw) {
      out32[w] = word;
    }
  };
  if (!raw && p.codec == unsigned(Codec::Lossy)) {  // outlier flags, set by decode_chunk
    auto* masks = reinterpret_cast<std::uint32_t*>(work + x.d.masks_at);
    for (std::uint32_t b = threadIdx.x; b < x.layout.blocks; b += T) masks[b] = 0;
  }
  if (in_shared) {
    const auto copied =
        std::uint32_t(by_bulk && end_word > chunk_at ? (end_word - chunk_at) / 4 : 0);
    if (copied < units) {  // the same in every thread
      for (std::uint32_t w = copied + threadIdx.x; w < units; w += T) stored32[w] = __ldg(in32 + w);
      __syncthreads();
    }
    if (by_bulk) {
      bulk_wait(bulk.barrier, bulk.phase);
      bulk.phase ^= 1u;
    }
    if (raw) {
      for (std::uint32_t w = threadIdx.x; w < units; w += T) take(w, stored32[w], std::true_type{});
    } else {
#pragma unroll 8
      for (std::uint32_t w = threadIdx.x; w < units; w += T)
        take(w, stored32[w], std::false_type{});
    }
  } else {
#pragma unroll 4
    for (std::uint32_t w = threadIdx.x; w < units; w += T) {
      const std::uint32_t word = __ldg(in32 + w);
      if (raw) {
        take(w, word, std::true_type{});
      } else {
        take(w, word, std::false_type{});
        stored32[w] = word;
      }
    }
  }
  const std::uint64_t terms = weighted + 2 * offset * keyed_sum;
  if (!__syncthreads_and(pads_clean)) {
    if (threadIdx.x == 0) note_error(error, ChunkError::TrailingBytes);
  } else if (lossy_chunk<32, Kind>(p) && x.mode == ChunkMode::Sparse) {
    decode_sparse(x, error);  // entry_valid lets Sparse through for lossy streams alone
  } else if (!raw) {
    if constexpr (Kind == DecodeKind::Any) {
      if (dtype == DType::UInt16)
        decode_chunk<16, Kind>(x, error);
      else
        decode_chunk<32, Kind>(x, error);
    } else {
      decode_chunk<kind_dtype(Kind) == DType::UInt16 ? 16u : 32u, Kind>(x, error);
    }
  }
  return terms;
}

// The kernel's body; the two kernels below differ only in their register budget.
template <DecodeKind Kind>
__device__ __forceinline__ void decompress_body(const DecompressArgs& a) {
  extern __shared__ uint4 shared_workspace[];
  __shared__ DecodePlan plan;
  __shared__ HeaderVerdict verdict;
  __shared__ std::uint64_t ticket;
  __shared__ unsigned error;
  __shared__ bool last;
  DecodeCounters& k = *a.scratch.decode_counters;
  // The header's bytes come in with one load a thread, in parallel: thread 0's checks then read
  // shared memory instead of waiting for a chain of dependent global loads.
  __shared__ alignas(8) std::uint8_t header[kMaxHeaderBytes];
  __shared__ bool claimed_early;
  __shared__ std::uint64_t bulk_barrier;
  fill_expand_selectors();  // ordered before use by the barrier below
  if (threadIdx.x == 0) bulk_barrier_init(&bulk_barrier);
  wait_for_prerequisite_grid();  // nothing global is touched before (see codec_kernels.cuh)
  for (std::uint32_t i = threadIdx.x; i < kMaxHeaderBytes && i < a.size; i += T)
    header[i] = a.in[i];
  __syncthreads();
  // The first chunk is claimed while thread 0 checks the header, its round trip hidden behind
  // the checks, by a block that will decode chunks whatever they find: block_claims on the
  // header's own dtype and chunk size gives the verdict below when the fields are valid, and
  // when they are not every block claims (to sum the table's checksum terms).
  constexpr unsigned kEarlyClaimer = 32 % T;
  if (threadIdx.x == kEarlyClaimer) {
    claimed_early =
        a.size >= kFixedHeaderBytes &&
        block_claims<Kind>(a, DType(header[kDTypeAt]), field<std::uint32_t>(header, kChunkBytesAt),
                           Codec(header[kCodecAt]));
    if (claimed_early) ticket = DeviceWord(k.ticket).fetch_add(1, cuda::memory_order_relaxed);
  }
  if (threadIdx.x == 0) {
    plan = DecodePlan{};
    unsigned ndim = 0;
    verdict.header = check_header(header, a.size, plan, ndim);
    verdict.ndim = ndim;
    verdict.fields = verdict.header == DecodeStatus::Ok ? check_fields<Kind>(a, header, plan, ndim)
                                                        : verdict.header;
    plan.payload_at = payload_offset(ndim, plan.chunks);
  }
  __syncthreads();
  const bool table_readable = verdict.header == DecodeStatus::Ok;
  const bool decodable = verdict.fields == DecodeStatus::Ok;
  std::uint8_t* work = reinterpret_cast<std::uint8_t*>(shared_workspace);
  bool claims = true;
  std::uint64_t claimers = gridDim.x;  // every block claims when the fields are not valid
  if (decodable) {
    claimers = chunk_decoders<Kind>(a, DType(plan.dtype), plan.chunk_bytes, Codec(plan.codec));
    claims = blockIdx.x < claimers;
    const std::uint32_t bytes =
        decode_layout(DType(plan.dtype), plan.chunk_bytes, Codec(plan.codec)).bytes;
    if (bytes > decode_shared_bytes(Kind))
      work = a.scratch.workspace + blockIdx.x * std::uint64_t(bytes);
  }
  const bool shared_work = work == reinterpret_cast<std::uint8_t*>(shared_workspace);
  BulkCopy bulk{shared_work && kBulkCopiesCompiled && a.bulk_copies ? &bulk_barrier : nullptr, 0u};
  const TableReader table{a.in + header_bytes(verdict.ndim),
                          reinterpret_cast<std::uintptr_t>(a.in) % 4 == 0};
  const std::uint64_t chunks = table_readable ? plan.chunks : 0;
  std::uint64_t table_terms = 0, payload_terms = 0;
  // With at least as many claiming blocks as chunks, every chunk goes to some block's first
  // claim, so a block stops after its first chunk instead of claiming again to learn that none is
  // left (an atomic round trip at the end of every block's life).
  const bool one_chunk_each = claimers >= chunks;
  bool first = true;
  while (claims) {
    if (!first && one_chunk_each) break;
    if (threadIdx.x == 0) {
      if (!first || !claimed_early)
        ticket = DeviceWord(k.ticket).fetch_add(1, cuda::memory_order_relaxed);
      error = unsigned(ChunkError::None);
    }
    first = false;
    __syncthreads();
    const std::uint64_t c = ticket;
    __syncthreads();  // ticket read by all before thread 0 claims again
    if (c >= chunks) break;
    // The entry's load goes out with find_offset's, one round trip for both.
    const std::uint32_t entry = table.entry(c);
    if (!decodable) {
      if (threadIdx.x == 0)
        table_terms += checksum_word_term(entry, header_bytes(verdict.ndim) / 4 + c);
      continue;
    }
    const std::uint64_t offset = find_offset(table, a.scratch.lookback, c);
    const std::uint64_t units = padded_size(entry_size(entry)) / 4;
    if (threadIdx.x == 0) {
      DeviceWord(a.scratch.lookback[c])
          .store(kInclusive | (offset + units), cuda::memory_order_relaxed);
      table_terms += checksum_word_term(entry, header_bytes(verdict.ndim) / 4 + c);
    }
    if (!entry_valid<Kind>(plan, entry, c)) {
      if (threadIdx.x == 0) DeviceWord(k.bad_entry).store(1, cuda::memory_order_relaxed);
      continue;
    }
    // Past the buffer's end the final size check reports it; nothing is read there.
    if (4 * (offset + units) > a.size - plan.payload_at) continue;
    if (shared_work)
      payload_terms += decode_one<Kind, true>(a, plan, c, entry, offset, nullptr, bulk, &error);
    else
      payload_terms += decode_one<Kind, false>(a, plan, c, entry, offset, work, bulk, &error);
    __syncthreads();
    if (threadIdx.x == 0 && error != unsigned(ChunkError::None))
      DeviceWord(k.failure).fetch_max(~((static_cast<unsigned long long>(c) << 8) | error),
                                      cuda::memory_order_relaxed);
  }
  allow_dependent_launch();
  // The block's payload terms, for thread 0: one barrier (CUB's 64-bit reduction took two more).
  __shared__ std::uint64_t warp_terms[kDecodeWarps];
  payload_terms = warp_sum64(payload_terms);
  if (threadIdx.x % 32 == 0) warp_terms[threadIdx.x / 32] = payload_terms;
  __syncthreads();
  if (threadIdx.x == 0)
    for (unsigned w = 1; w < kDecodeWarps; ++w) payload_terms += warp_terms[w];
  if (threadIdx.x == 0) {
    DeviceWord(k.payload_terms).fetch_add(payload_terms, cuda::memory_order_relaxed);
    DeviceWord(k.table_terms).fetch_add(table_terms, cuda::memory_order_relaxed);
    last = DeviceWord(k.done).fetch_add(1, cuda::memory_order_acq_rel) + 1 == gridDim.x;
  }
  __syncthreads();
  if (!last) return;
  if (threadIdx.x == 0) finish(a, plan, verdict);
  __syncthreads();
  // Every block is done: the look-back words and counters go back to zero for the next launch.
  if (decodable)
    for (std::uint64_t c = threadIdx.x; c < chunks; c += T)
      DeviceWord(a.scratch.lookback[c]).store(0, cuda::memory_order_relaxed);
  if (threadIdx.x == 0) {
    DeviceWord(k.ticket).store(0, cuda::memory_order_relaxed);
    DeviceWord(k.done).store(0, cuda::memory_order_relaxed);
    DeviceWord(k.payload_terms).store(0, cuda::memory_order_relaxed);
    DeviceWord(k.table_terms).store(0, cuda::memory_order_relaxed);
    DeviceWord(k.bad_entry).store(0, cuda::memory_order_relaxed);
    DeviceWord(k.failure).store(0, cuda::memory_order_relaxed);
  }
}

// Blocks an SM each kind's registers must leave room for: as many as its shared workspace
// allows, 6 for the three fixed kinds (72-80 registers, no spills; H200, 4 streams, uint16
// decompression 519-524 -> 555-558 GB/s going from 5 to 6, float32 lossless 1,157-1,178 ->
// 1,211-1,231). Unbounded, the lossy kinds' unrolled reconstruction takes 113 registers (4
// blocks) and the float32 lossless kind 128. Any stays at 5: its larger static shared memory
// leaves room for no more.
template <DecodeKind Kind>
constexpr int kDecodeMinBlocks = Kind != DecodeKind::Any ? 6 : 5;

template <DecodeKind Kind>
__global__ void __launch_bounds__(T, kDecodeMinBlocks<Kind>) decompress_stream(DecompressArgs a) {
  decompress_body<Kind>(a);
}

// --- The resident decompressor (resident_decompressor.hpp): no launch per stream ---

// Block 0 dispatches (resident_dispatch.cuh). Every other block claims (job, chunk) tickets in
// order, r.chunks a job (the most a stream may have), and for its chunk does what one iteration
// of decompress_body's loop does, after checking the job's header itself (every block of a job
// reaches the same verdict): a chunk the header does not have, or every chunk of a stream the
// fields make undecodable, only adds its table entry's checksum term. The block of a job's last
// ticket waits for the job's other blocks (all hold earlier tickets, so all run), writes the plan
// (finish), clears the work slot's words and publishes the result. A stream with more chunks than
// r.chunks, or chunks whose workspace exceeds shared memory, is refused as ResidentGeometry.
// The lossy kind at 6 blocks an SM spills 144 bytes here (its job bookkeeping costs registers
// the launched kernel does not have), so it takes 5.
template <DecodeKind Kind>
constexpr int kResidentDecodeMinBlocks = Kind == DecodeKind::Float32Lossy ? 5 : 6;

template <DecodeKind Kind>
__global__ void __launch_bounds__(T, kResidentDecodeMinBlocks<Kind>)
    decompress_resident(ResidentDecompressArgs r) {
  static_assert(Kind != DecodeKind::Any, "a resident decoder is for one dtype and codec");
  extern __shared__ uint4 shared_workspace[];
  // The job's arguments in shared memory (a per-thread copy would live in local memory).
  __shared__ DecompressArgs a;
  __shared__ DecodePlan plan;
  __shared__ HeaderVerdict verdict;
  __shared__ ClaimedTicket claimed;
  __shared__ unsigned error;
  __shared__ bool job_running;
  __shared__ alignas(8) std::uint8_t header[kMaxHeaderBytes];
  __shared__ std::uint64_t bulk_barrier;
  __shared__ std::uint64_t warp_terms[kDecodeWarps];
  if (blockIdx.x == 0) {
    if (threadIdx.x < 32) dispatch_jobs(r.ring);
    return;
  }
  fill_expand_selectors();  // ordered before use by the loop's barriers
  if (threadIdx.x == 0) {
    bulk_barrier_init(&bulk_barrier);
    a = r.array;
  }
  BulkCopy bulk{kBulkCopiesCompiled && r.array.bulk_copies ? &bulk_barrier : nullptr, 0u};
  const unsigned long long tickets = r.chunks;
  for (;;) {
    if (threadIdx.x == 0) {
      job_running = claim_ticket(r.ring, tickets, claimed);
      if (job_running) {
        const ResidentJob& posted = claimed.job;
        const std::uint64_t slot = posted.work_slot;
        a.in = posted.in;
        a.size = posted.in_bytes;
        a.out = posted.out;
        a.capacity = posted.out_capacity;
        a.output_aligned16 = reinterpret_cast<std::uintptr_t>(posted.out) % 16 == 0;
        a.plan = r.plans + slot;
        a.scratch.lookback = r.lookback + slot * tickets;
        a.scratch.decode_counters = r.counters + slot;
      }
      error = unsigned(ChunkError::None);
    }
    __syncthreads();
    if (!job_running) return;
    for (std::uint32_t i = threadIdx.x; i < kMaxHeaderBytes && i < a.size; i += T)
      header[i] = a.in[i];
    __syncthreads();
    if (threadIdx.x == 0) {
      plan = DecodePlan{};
      unsigned ndim = 0;
      verdict.header = check_header(header, a.size, plan, ndim);
      verdict.ndim = ndim;
      verdict.fields = verdict.header == DecodeStatus::Ok
                           ? check_fields<Kind>(a, header, plan, ndim)
                           : verdict.header;
      plan.payload_at = payload_offset(ndim, plan.chunks);
    }
    __syncthreads();
    const unsigned long long c = claimed.chunk;
    const bool table_readable = verdict.header == DecodeStatus::Ok;
    // The geometry this kernel decodes: no more chunks than tickets, each in shared memory.
    const bool geometry_fits =
        !table_readable ||
        (plan.chunks <= tickets &&
         (verdict.fields != DecodeStatus::Ok ||
          decode_layout(kind_dtype(Kind), plan.chunk_bytes, kind_codec(Kind)).bytes <=
              decode_shared_bytes(Kind)));
    const bool decodable = verdict.fields == DecodeStatus::Ok && geometry_fits;
    DecodeCounters& k = *a.scratch.decode_counters;
    std::uint64_t table_terms = 0, payload_terms = 0;
    if (table_readable && geometry_fits && c < plan.chunks) {  // the same in every thread
      const TableReader table{a.in + header_bytes(verdict.ndim),
                              reinterpret_cast<std::uintptr_t>(a.in) % 4 == 0};
      const std::uint32_t entry = table.entry(c);
      if (threadIdx.x == 0)
        table_terms = checksum_word_term(entry, header_bytes(verdict.ndim) / 4 + c);
      if (decodable) {
        const std::uint64_t offset = find_offset(table, a.scratch.lookback, c);
        const std::uint64_t units = padded_size(entry_size(entry)) / 4;
        if (threadIdx.x == 0)
          DeviceWord(a.scratch.lookback[c])
              .store(kInclusive | (offset + units), cuda::memory_order_relaxed);
        if (!entry_valid<Kind>(plan, entry, c)) {
          if (threadIdx.x == 0) DeviceWord(k.bad_entry).store(1, cuda::memory_order_relaxed);
        } else if (4 * (offset + units) <= a.size - plan.payload_at) {
          // Past the buffer's end the final size check reports it; nothing is read there.
          payload_terms = decode_one<Kind, true>(a, plan, c, entry, offset, nullptr, bulk, &error);
          __syncthreads();
          if (threadIdx.x == 0 && error != unsigned(ChunkError::None))
            DeviceWord(k.failure).fetch_max(~((static_cast<unsigned long long>(c) << 8) | error),
                                            cuda::memory_order_relaxed);
        }
      }
    }
    payload_terms = warp_sum64(payload_terms);
    if (threadIdx.x % 32 == 0) warp_terms[threadIdx.x / 32] = payload_terms;
    __syncthreads();
    const bool finisher = c == tickets - 1;
    if (threadIdx.x == 0) {
      for (unsigned w = 1; w < kDecodeWarps; ++w) payload_terms += warp_terms[w];
      add_terms_and_count(k.payload_terms, k.table_terms, k.done, payload_terms, table_terms,
                          finisher, tickets - 1);
    }
    if (finisher) {
      __syncthreads();
      if (threadIdx.x == 0) {
        if (geometry_fits) {
          finish(a, plan, verdict);
        } else {
          DecodePlan out = plan;
          out.first_failure = kNoFailure;
          out.status = std::uint32_t(DecodeStatus::ResidentGeometry);
          *a.plan = out;
        }
      }
      __syncthreads();
      for (std::uint64_t j = threadIdx.x; j < tickets; j += T)
        DeviceWord(a.scratch.lookback[j]).store(0, cuda::memory_order_relaxed);
      if (threadIdx.x == 0) {
        DeviceWord(k.done).store(0, cuda::memory_order_relaxed);
        DeviceWord(k.payload_terms).store(0, cuda::memory_order_relaxed);
        DeviceWord(k.table_terms).store(0, cuda::memory_order_relaxed);
        DeviceWord(k.bad_entry).store(0, cuda::memory_order_relaxed);
        DeviceWord(k.failure).store(0, cuda::memory_order_relaxed);
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        const DecodePlan& done = *a.plan;
        ResidentResult result{};
        result.status = done.status;
        result.bytes = done.status == std::uint32_t(DecodeStatus::Ok) ? done.raw_bytes : 0;
        result.first_failure = done.first_failure;
        result.dtype = done.dtype;
        result.codec = done.codec;
        publish_result(r.ring, claimed.sequence, claimed.job.work_slot, result);
      }
    }
    __syncthreads();  // the job's shared words are rewritten for the next ticket
  }
}

}  // namespace

namespace {

using DecompressKernel = void (*)(DecompressArgs);
DecompressKernel decompress_kernel(DecodeKind kind) {
  switch (kind) {
    case DecodeKind::UInt16Lossless:
      return decompress_stream<DecodeKind::UInt16Lossless>;
    case DecodeKind::Float32Lossless:
      return decompress_stream<DecodeKind::Float32Lossless>;
    case DecodeKind::Float32Lossy:
      return decompress_stream<DecodeKind::Float32Lossy>;
    case DecodeKind::Any:
      break;
  }
  return decompress_stream<DecodeKind::Any>;
}

}  // namespace

void prepare_decompress_kernels() {
  for (int k = 0; k < kDecodeKinds; ++k) {
    const cudaError_t carveout = cudaFuncSetAttribute(
        decompress_kernel(DecodeKind(k)), cudaFuncAttributePreferredSharedMemoryCarveout,
        int(cudaSharedmemCarveoutMaxShared));
    if (carveout != cudaSuccess)
      throw RuntimeFault(std::string("cudaFuncSetAttribute(decompress_stream): ") +
                         cudaGetErrorString(carveout));
  }
}

unsigned decompress_grid(DecodeKind kind) {
  int per_sm = 0;
  const cudaError_t status = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, decompress_kernel(kind), T, decode_shared_bytes(kind));
  if (status != cudaSuccess)
    throw RuntimeFault(std::string("cudaOccupancyMaxActiveBlocksPerMultiprocessor: ") +
                       cudaGetErrorString(status));
  return unsigned(std::max(1, per_sm) * std::max(1, device_properties().multiprocessors));
}

namespace {

using ResidentDecoder = void (*)(ResidentDecompressArgs);
ResidentDecoder resident_decoder(DecodeKind kind) {
  switch (kind) {
    case DecodeKind::UInt16Lossless:
      return decompress_resident<DecodeKind::UInt16Lossless>;
    case DecodeKind::Float32Lossless:
      return decompress_resident<DecodeKind::Float32Lossless>;
    case DecodeKind::Float32Lossy:
      return decompress_resident<DecodeKind::Float32Lossy>;
    case DecodeKind::Any:
      break;
  }
  throw InputError("resident decompressor: it decodes one dtype and codec, not any");
}

}  // namespace

unsigned resident_decompress_grid(DecodeKind kind) {
  const ResidentDecoder kernel = resident_decoder(kind);
  cudaError_t status = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                            int(cudaSharedmemCarveoutMaxShared));
  int per_sm = 0;
  if (status == cudaSuccess)
    status = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, T,
                                                           decode_shared_bytes(kind));
  if (status != cudaSuccess)
    throw RuntimeFault(std::string("resident decompressor occupancy: ") +
                       cudaGetErrorString(status));
  return unsigned(std::max(0, per_sm) * std::max(1, device_properties().multiprocessors));
}

void launch_decompress_resident(const ResidentDecompressArgs& args, DecodeKind kind, unsigned grid,
                                void* stream) {
  resident_decoder(kind)<<<grid, T, decode_shared_bytes(kind), static_cast<cudaStream_t>(stream)>>>(
      args);
  check_launch("decompress_resident");
}

void launch_decompress(const DecompressArgs& args, DecodeKind kind, unsigned grid, void* stream) {
  launch_programmatic(decompress_kernel(kind), grid, T, decode_shared_bytes(kind),
                      static_cast<cudaStream_t>(stream), "decompress_stream", args);
}

}  // namespace livedrp::gpu::codec_kernels
