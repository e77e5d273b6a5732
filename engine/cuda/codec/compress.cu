// Compression on the GPU in one launch, one thread block per chunk, every chunk written straight
// to its final place in the stream:
//   1. The block claims the next chunk from a ticket counter, so a chunk only ever waits for
//      chunks whose blocks are already running (no deadlock whatever the scheduling order).
//   2. Each thread loads its 32-value shuffle blocks with wide loads, forms the first mode's
//      residuals (Plain for the lossy codec, Delta for the lossless one: codec_format.hpp's
//      first_mode) and bit-shuffles them in registers (codec_math.hpp's transpose32, or its
//      16-bit form when the block's values fit in 16 bits) into the workspace: shared memory for
//      chunks up to 32 KiB, else the chunk's global slot.
//   3. Warps build that pipeline's three bitmap levels and a block sum gives its size; only when
//      the chunk stays near but below its raw size (second_mode_needed) is the other mode built
//      too and the smaller kept. A lossy chunk that Plain leaves below 7/8 of its raw size is
//      also sized as a list of its nonzero bins (ChunkMode::Sparse, sparse_considered), kept when
//      strictly smaller. Raw when nothing is smaller than the raw bytes. All as on the CPU.
//      For the lossy codec one block scan of the quantiser's flags (scan_lossy_blocks) gives the
//      outlier count and tells each thread where its outliers and listed values go.
//   4. Decoupled look-back: the chunk publishes its padded size at once (flag "aggregate"), packs
//      its stored bytes into the other pipeline's workspace (each group of 8 bytes compacted by
//      byte permutes, compact_selectors), then reads its predecessors'
//      published words back to the nearest one holding an inclusive prefix, and publishes its own
//      inclusive prefix. Flag and value share one 64-bit word, so one atomic store publishes both.
//   5. The chunk's words go to their final offset with their payload checksum terms (the
//      checksum's terms depend on a word's index in the payload, which is now known), and its
//      table entry with its header checksum term; both sums go to two device accumulators.
//   6. The block of the last ticket, once every other block has counted itself done (a done
//      counter), writes the header and both checksums and the size word, and puts the counters
//      and look-back words back to zero for the next launch.
// Nothing here depends on a per-launch host value, so the launch can be captured in a graph.
// The math per element and per word is codec_math.hpp's, as on the CPU, so the bytes are the
// CPU's.
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cuda/atomic>
#include <string>

#include "core/error.hpp"
#include "cuda/codec/codec_kernels.cuh"
#include "cuda/codec/resident_dispatch.cuh"
#include "cuda/device.hpp"

namespace livedrp::gpu::codec_kernels {
namespace {

constexpr int T = kEncodeThreads;
constexpr int kWarps = T / 32;

using DeviceWord = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>;

// A look-back word: bit 62 "aggregate" (the chunk's own padded size is known), bit 63
// "inclusive" (the prefix through this chunk is known), bits 61..0 the value in 4-byte units.
// Zero means nothing published yet.
constexpr unsigned long long kAggregate = 1ull << 62;
constexpr unsigned long long kInclusive = 1ull << 63;
constexpr unsigned long long kUnitsMask = kAggregate - 1;

// Header field offsets (docs/formats.md, container.cpp).
constexpr std::size_t kVersionAt = 8, kCodecAt = 10, kDTypeAt = 11, kNdimAt = 12,
                      kChunkBytesAt = 16, kCountAt = 24, kErrorBoundAt = 32, kChunkCountAt = 40,
                      kPayloadBytesAt = 48;
__constant__ std::uint8_t kMagicBytes[8] = {0x89, 'L', 'D', 'R', 'P', 'Z', '\r', '\n'};

// One chunk's view of its workspace; slot 0 is the Delta pipeline, slot 1 the Plain one.
struct ChunkSpace {
  ChunkLayout layout;
  std::uint8_t* shuffled[2];
  std::uint8_t* level0[2];
  std::uint8_t* level1[2];
  std::uint8_t* level2[2];
  std::uint32_t* outlier_masks;  // lossy: bit i of word b set iff value 32 b + i is an outlier
  // Lossy: bit i of word b set iff Plain's z of value 32 b + i is nonzero, for the sparse form; in
  // the Delta pipeline's level-0 bitmap, which a second mode (after which no sparse form is
  // sized) overwrites.
  std::uint32_t* plain_nonzero;
  // Lossy: word b is the or of Plain's z over shuffle block b (the planes its values use), for
  // the sparse form's group masks; next to the nonzero flags (lossy_scratch).
  std::uint32_t* plain_any;
  std::uint32_t* bins;  // lossy: every element's bin, at bin_index
  bool bins_in_plain;   // the bins are the Plain pipeline's shuffled words
  const uint4* staged;  // lossy: the chunk's input in shared memory, or null
};

__device__ ChunkSpace chunk_space(std::uint8_t* base, const EncodeLayout& e,
                                  const ChunkLayout& layout) {
  ChunkSpace s;
  s.layout = layout;
  for (int slot = 0; slot < 2; ++slot) {
    s.shuffled[slot] = base + slot * e.shuffled_stride;
    s.level0[slot] = base + e.level0_at + slot * e.level0_stride;
    s.level1[slot] = base + e.level1_at + slot * e.level1_stride;
    s.level2[slot] = base + e.level2_at + slot * e.level2_stride;
  }
  s.outlier_masks = reinterpret_cast<std::uint32_t*>(base + e.masks_at);
  s.plain_nonzero = reinterpret_cast<std::uint32_t*>(s.level0[0]);
  s.plain_any = s.plain_nonzero + 3 * layout.blocks;
  s.bins = reinterpret_cast<std::uint32_t*>(base + e.bins_at);
  s.bins_in_plain = e.bins_at == e.shuffled_stride;
  s.staged = nullptr;
  return s;
}

// Sum over the block, returned to every thread. Every thread must call it.
__device__ std::uint64_t block_sum(std::uint64_t x) {
  __shared__ std::uint64_t warp_totals[kWarps];
  x = warp_sum64(x);
  if (threadIdx.x % 32 == 0) warp_totals[threadIdx.x / 32] = x;
  __syncthreads();
  std::uint64_t total = 0;
  for (int w = 0; w < kWarps; ++w) total += warp_totals[w];
  __syncthreads();  // warp_totals is reused by the next call
  return total;
}

// Stream compaction over [0, n): calls emit(i, position, total) for every i with a nonzero
// count(i), position being the sum of widen(count) over the items before i and total the sum
// over all. Each warp takes one contiguous segment and walks it twice (sum, then scan 32 items at
// a time), so the whole compaction costs two block barriers however long the range. count is a
// 32-bit value whose sum over 32 items fits in 32 bits, scanned across the warp in 32 bits;
// widen turns such a value (or sum) into the 64-bit running position (it is additive). Every
// thread must call it; count is called twice per item.
template <class Count, class Widen, class Emit>
__device__ std::uint64_t block_compact(std::uint32_t n, Count count, Widen widen, Emit emit) {
  __shared__ std::uint64_t warp_totals[kWarps];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::uint32_t segment = ((n + kWarps - 1) / kWarps + 31) / 32 * 32;
  const std::uint32_t begin = min(n, warp * segment), end = min(n, begin + segment);
  std::uint64_t mine = 0;
#pragma unroll 4
  for (std::uint32_t i = begin + lane; i < end; i += 32) mine += widen(count(i));
  mine = warp_sum64(mine);
  if (lane == 0) warp_totals[warp] = mine;
  __syncthreads();
  std::uint64_t base = 0, total = 0;
  for (unsigned w = 0; w < kWarps; ++w) {
    if (w < warp) base += warp_totals[w];
    total += warp_totals[w];
  }
  // The tiles' scans do not depend on each other, only the running base does: unrolled, their
  // shuffles overlap.
#pragma unroll 2
  for (std::uint32_t tile = begin; tile < end; tile += 32) {
    const std::uint32_t i = tile + lane;
    const std::uint32_t c = i < end ? count(i) : 0;
    const std::uint32_t inclusive = warp_inclusive_sum(c);
    if (c != 0) emit(i, base + widen(inclusive - c), total);
    base += widen(__shfl_sync(~0u, inclusive, 31));
  }
  __syncthreads();  // emitted bytes visible to the block; warp_totals free for the next call
  return total;
}

// The widen of block_compact for plain counts.
__device__ std::uint64_t as_count(std::uint32_t c) {
  return c;
}

// --- Step 2: values, residuals and the bit shuffle, one thread per 32-value block ---

// Element `index` of the chunk as a raw word (uint16 zero-extended, or float32 bits).
template <unsigned Bits>
__device__ std::uint32_t load_element(const std::uint8_t* in, std::uint32_t index) {
  if constexpr (Bits == 16) {
    return __ldg(reinterpret_cast<const std::uint16_t*>(in) + index);
  } else {
    return __ldg(reinterpret_cast<const std::uint32_t*>(in) + index);
  }
}

// The Bits input words of the full block starting at element `first` (uint16 values 2j and
// 2j + 1 in the low and high half of word j).
template <unsigned Bits>
__device__ void load_block_words(const std::uint8_t* in, std::uint32_t first, bool aligned16,
                                 std::uint32_t raw[Bits]) {
  const std::uint8_t* p = in + std::size_t(first) * (Bits / 8);
  if (aligned16) {
    const auto* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (unsigned k = 0; k < Bits / 4; ++k) {
      const uint4 v = __ldg(q + k);
      raw[4 * k] = v.x;
      raw[4 * k + 1] = v.y;
      raw[4 * k + 2] = v.z;
      raw[4 * k + 3] = v.w;
    }
  } else {
    const auto* q = reinterpret_cast<const std::uint32_t*>(p);
#pragma unroll
    for (unsigned k = 0; k < Bits; ++k) raw[k] = __ldg(q + k);
  }
}

// The raw words of elements [first, first + valid) into w[0, valid); w[valid, 32) = 0. A full
// block is read in 16-byte words when the input allows it (a block is 64 or 128 bytes from a
// chunk start, itself a multiple of 128 bytes from the array start), else in 4-byte words.
template <unsigned Bits>
__device__ void load_block(const std::uint8_t* in, std::uint32_t first, std::uint32_t valid,
                           bool aligned16, std::uint32_t w[32]) {
  if (valid == 32) {
    std::uint32_t raw[Bits];
    load_block_words<Bits>(in, first, aligned16, raw);
#pragma unroll
    for (unsigned i = 0; i < 32; ++i) {
      if constexpr (Bits == 16) {
        w[i] = (raw[i / 2] >> (16 * (i % 2))) & 0xFFFFu;
      } else {
        w[i] = raw[i];
      }
    }
    return;
  }
#pragma unroll
  for (unsigned i = 0; i < 32; ++i) w[i] = i < valid ? load_element<Bits>(in, first + i) : 0u;
}

// Word of value i of shuffle block b in the lossy bins: rotated by b within the block's 32 words,
// so that a warp writing one block (lane i) and a warp reading 32 blocks (lane b, value i) both
// touch 32 distinct shared-memory banks.
__device__ std::uint32_t bin_index(std::uint32_t b, std::uint32_t i) {
  return 32 * b + ((i + b) & 31u);
}

// A whole chunk's input into shared `to` by asynchronous copies (cp.async): every copy of the
// block is in flight at once and none holds a register, so the chunk arrives in one memory round
// trip. The quantiser then reads shared memory: reading the input straight from global memory, a
// warp waited for one round trip every few blocks, which made the lossy encoder's chain about a
// third memory latency (Nsight Compute, session 11). Needs 16-byte aligned input and `bytes` a
// multiple of 16; the caller's barrier makes the copies visible to the block.
//
// With `rotated`, piece j (16 bytes) of shuffle block b goes to piece 8 b + ((j + b) & 7) instead
// of 8 b + j (staged_piece), so that threads reading one piece of consecutive blocks each (the
// eight threads of a 16-byte shared load's phase) hit eight different groups of four banks.
__device__ std::uint32_t staged_piece(std::uint32_t b, std::uint32_t j) {
  return 8 * b + ((j + b) & 7u);
}
__device__ void stage_chunk(const std::uint8_t* in, std::uint32_t bytes, std::uint8_t* to,
                            bool rotated) {
  for (std::uint32_t k = threadIdx.x; 16 * k < bytes; k += T) {
    const std::uint32_t piece = rotated ? staged_piece(k / 8, k % 8) : k;
    __pipeline_memcpy_async(to + 16 * piece, in + 16 * k, 16);
  }
  __pipeline_commit();
  __pipeline_wait_prior(0);
}

// Lossy: the bin of every element of the chunk (0 for an outlier, and past the chunk's end), one
// warp per shuffle block and one element per lane, so the quantiser's code appears once; ballots
// give the block's outlier flags and nonzero flags (s.plain_nonzero; scan_lossy_blocks counts
// them), a reduction the or of its Plain words (s.plain_any). The input is read from `staged`
// (shared memory, filled by stage_chunk: a full chunk) when that is not null.
__device__ void quantize_chunk(const CompressArgs& a, const std::uint8_t* in,
                               const std::uint32_t* staged, const ChunkSpace& s) {
  const ChunkLayout& l = s.layout;
  const LossyScale scale = lossy_scale(a.error_bound);
  const unsigned lane = threadIdx.x % 32;
  // Bin q of element 32 b + lane; q is left 0 for an outlier (lossy_quantize writes only bins).
  const auto keep = [&](std::uint32_t b, std::int32_t q, bool outlier) {
    s.bins[bin_index(b, lane)] = std::uint32_t(q);
    const std::uint32_t mask = __ballot_sync(~0u, outlier);
    const std::uint32_t nonzero = __ballot_sync(~0u, q != 0);
    const std::uint32_t any = __reduce_or_sync(~0u, residual_word(std::uint32_t(q), 0, 32));
    if (lane == 0) {
      s.outlier_masks[b] = mask;
      s.plain_nonzero[b] = nonzero;
      s.plain_any[b] = any;
      s.plain_nonzero[2 * l.blocks + b] = 0;  // the sparse group mask b (lossy_scratch)
    }
  };
  if (staged) {
    // Every element is there: no bounds test, and several blocks' quantisations interleave.
#pragma unroll 4
    for (std::uint32_t b = threadIdx.x / 32; b < l.blocks; b += kWarps) {
      std::int32_t q = 0;
      // Quantised before keep() reads q (an argument's order of evaluation is unspecified).
      const bool outlier = !lossy_quantize(bits_float(staged[32 * b + lane]), scale, &q);
      keep(b, q, outlier);
    }
  } else {
    const auto* in32 = reinterpret_cast<const std::uint32_t*>(in);
#pragma unroll 1
    for (std::uint32_t b = threadIdx.x / 32; b < l.blocks; b += kWarps) {
      const std::uint32_t e = 32 * b + lane;
      std::int32_t q = 0;
      const bool outlier =
          e < l.elements && !lossy_quantize(bits_float(__ldg(in32 + e)), scale, &q);
      keep(b, q, outlier);
    }
  }
}

// The 32 values of block b (`valid` of them, all but in the chunk's last block; the rest 0) and
// the value before the block, the Delta prediction of its first (0 for the chunk's first): the
// lossy bins when `lossy`, else the input's words (float bits in their order-preserving form).
template <unsigned Bits>
__device__ void block_values(const CompressArgs& a, const std::uint8_t* in, const ChunkSpace& s,
                             bool lossy, std::uint32_t b, std::uint32_t valid, std::uint32_t v[32],
                             std::uint32_t* previous) {
  *previous = 0;
  if (Bits == 32 && lossy) {
#pragma unroll
    for (unsigned i = 0; i < 32; ++i) v[i] = s.bins[bin_index(b, i)];
    if (b > 0) *previous = s.bins[bin_index(b - 1, 31)];
    return;
  }
  const std::uint32_t first = 32 * b;
  load_block<Bits>(in, first, valid, a.input_aligned16, v);
  if (b > 0) *previous = load_element<Bits>(in, first - 1);
  if constexpr (Bits == 32) {
#pragma unroll
    for (unsigned i = 0; i < 32; ++i) v[i] = order_float_bits(v[i]);
    *previous = order_float_bits(*previous);
  }
}

// A full uint16 block's Delta residuals, two values to a 32-bit operation, straight into the words
// transpose32_values16 would form from delta_residuals<16>'s (value k in the low half and value
// k + 16 in the high half of a[k], k < 16; a[16..31] unused): transpose16_rounds then gives the
// same planes. raw[j] holds values 2j and 2j + 1; `previous` predicts value 0.
__device__ void packed_delta16(const std::uint32_t raw[16], std::uint32_t previous,
                               std::uint32_t a[32]) {
  constexpr std::uint32_t kSigns = 0x80008000u;
  std::uint32_t z[16];
#pragma unroll
  for (unsigned j = 0; j < 16; ++j) {
    // The predictions of values 2j and 2j + 1: values 2j - 1 and 2j.
    const std::uint32_t prediction =
        j ? __byte_perm(raw[j - 1], raw[j], 0x5432) : __byte_perm(previous, raw[0], 0x5410);
    // Each half's difference modulo 2^16 with no borrow crossing between the halves: the
    // halves' top bits are set apart for the subtraction and put right after it.
    const std::uint32_t d =
        ((raw[j] | kSigns) - (prediction & ~kSigns)) ^ ((raw[j] ^ ~prediction) & kSigns);
    // zigzag16 of each half: shifted left, all ones xored in when the half's sign bit is set.
    z[j] = ((d << 1) & 0xFFFEFFFEu) ^ (((d >> 15) & 0x00010001u) * 0xFFFFu);
  }
#pragma unroll
  for (unsigned k = 0; k < 16; ++k)
    a[k] = __byte_perm(z[k / 2], z[8 + k / 2], k % 2 ? 0x7632 : 0x5410);
}

// Residuals in place: Delta against the previous value (`previous` before the first), from the
// last value down so each reads its predecessor before it is replaced; Plain against 0. Values
// past `valid` become 0.
template <unsigned Bits>
__device__ void delta_residuals(std::uint32_t v[32], std::uint32_t previous, std::uint32_t valid) {
#pragma unroll
  for (unsigned i = 31; i > 0; --i) v[i] = i < valid ? residual_word(v[i], v[i - 1], Bits) : 0u;
  v[0] = residual_word(v[0], previous, Bits);  // a block holds at least one value
}
template <unsigned Bits>
__device__ void plain_residuals(std::uint32_t v[32], std::uint32_t valid) {
#pragma unroll
  for (unsigned i = 0; i < 32; ++i) v[i] = i < valid ? residual_word(v[i], 0, Bits) : 0u;
}

// The bitwise or of a block's 32 words: which planes its shuffle leaves nonzero.
__device__ std::uint32_t block_or(const std::uint32_t v[32]) {
  std::uint32_t any = 0;
#pragma unroll
  for (unsigned i = 0; i < 32; ++i) any |= v[i];
  return any;
}

// The bit shuffle of one block's residuals (codec_math.hpp): 16-bit residuals take the cheaper
// transpose, and so does a 32-bit block whose values all fit in 16 bits, or in 8 (the lossy
// codec's zigzagged bins nearly always do); the planes above are then zero, as transpose32 would
// give them.
// The choice is made for the warp (the or over its lanes' blocks): lanes that chose differently
// would run two transposes one after the other.
template <unsigned Bits>
__device__ void shuffle_block(std::uint32_t v[32]) {
  if constexpr (Bits == 16) {
    transpose32_values16(v);
  } else {
    const std::uint32_t any = __reduce_or_sync(__activemask(), block_or(v));
    if ((any >> 8) == 0) {
      transpose32_values8(v);
    } else if ((any >> 16) == 0) {
      transpose32_values16(v);
    } else {
      transpose32(v);
    }
  }
}

// Stores plane words already transposed (r[p] = plane p of block b).
template <unsigned Bits>
__device__ void store_planes(const std::uint32_t r[32], std::uint8_t* shuffled, std::uint32_t b,
                             std::uint32_t blocks) {
  auto* words = reinterpret_cast<std::uint32_t*>(shuffled);
  // Consecutive threads hold consecutive blocks, so each plane's stores hit consecutive words.
#pragma unroll
  for (unsigned p = 0; p < Bits; ++p) words[plane_word_index(p, b, blocks)] = r[p];
}

// Block b's lossy bins computed again from the input (for Delta after Plain's planes replaced the
// bins: the same quantiser, so the same bins; 0 for an outlier and past `valid`), and the bin
// before the block.
__device__ void requantized_block(const CompressArgs& a, const std::uint8_t* in, std::uint32_t b,
                                  std::uint32_t valid, std::uint32_t v[32],
                                  std::uint32_t* previous) {
  const LossyScale scale = lossy_scale(a.error_bound);
  const auto* in32 = reinterpret_cast<const std::uint32_t*>(in);
  const auto bin_of = [&](std::uint32_t e) {
    std::int32_t q = 0;
    return lossy_quantize(bits_float(__ldg(in32 + e)), scale, &q) ? std::uint32_t(q) : 0u;
  };
#pragma unroll
  for (unsigned i = 0; i < 32; ++i) v[i] = i < valid ? bin_of(32 * b + i) : 0u;
  *previous = b > 0 ? bin_of(32 * b - 1) : 0u;
}

// Planes that residual words whose bitwise or is `any` leave nonzero: bits up to the highest set.
__device__ std::uint32_t planes_used(std::uint32_t any) {
  return 32u - unsigned(__clz(any));
}
// The same for the packed uint16 residuals of packed_delta16 (two values to a word).
__device__ std::uint32_t packed16_planes_used(const std::uint32_t a[16]) {
  std::uint32_t any = 0;
#pragma unroll
  for (unsigned k = 0; k < 16; ++k) any |= a[k];
  return planes_used((any | (any >> 16)) & 0xFFFFu);
}
__device__ std::uint32_t block_planes_used(const std::uint32_t v[32]) {
  return planes_used(block_or(v));
}

// Lossy, chunks of at most one block a thread (the bins would be the Plain pipeline's words):
// thread b quantises its own block and forms its Plain residuals, all in registers, with no bins
// in shared memory and no barrier. The single-precision path (lossy_quantize_settled) runs for
// all 32 values; the few it leaves open take the double path one at a time after the shuffle,
// their bits put into the plane words directly (a value's index is then a shift, not a register
// index). Stores the block's outlier and nonzero flags (scan_lossy_blocks counts them) and the or
// of its values (the planes they use, for the sparse form's masks); returns
// the planes the block leaves nonzero. `staged`: the chunk in shared memory (stage_chunk,
// rotated), or null.
__device__ std::uint32_t quantize_shuffle_plain(const CompressArgs& a, const std::uint8_t* in,
                                                const uint4* staged, const ChunkSpace& s) {
  const ChunkLayout& l = s.layout;
  const std::uint32_t b = threadIdx.x;
  if (b >= l.blocks) return 0;
  const std::uint32_t valid = min(32u, l.elements - 32 * b);
  // The single-precision path's constants as kernel parameters (CompressArgs).
  LossyScale fast{};
  fast.inverse_width_float = a.lossy_inverse_width_float;
  fast.float_path_limit = a.lossy_float_path_limit;
  const auto* in32 = reinterpret_cast<const std::uint32_t*>(in) + 32 * b;
  std::uint32_t v[32];
  if (staged) {  // a full chunk
#pragma unroll
    for (unsigned j = 0; j < 8; ++j) {
      const uint4 piece = staged[staged_piece(b, j)];
      v[4 * j] = piece.x;
      v[4 * j + 1] = piece.y;
      v[4 * j + 2] = piece.z;
      v[4 * j + 3] = piece.w;
    }
  } else {
    load_block<32>(in, 32 * b, valid, a.input_aligned16, v);
  }
  // Values past `valid` were loaded as 0.0: settled as bin 0 (or, without the single-precision
  // path, bin 0 by the double path), so they need no test of their own.
  std::uint32_t open = 0;  // values the single-precision path did not settle
#pragma unroll
  for (unsigned i = 0; i < 32; ++i) {
    std::int32_t q;
    if (!lossy_quantize_settled(bits_float(v[i]), fast, &q)) open |= 1u << i;
    v[i] = residual_word(std::uint32_t(q), 0, 32);  // q is 0 when not settled
  }
  std::uint32_t any = block_or(v);
  shuffle_block<32>(v);
  std::uint32_t mask = 0;
  for (; open != 0; open &= open - 1) {
    const unsigned i = unsigned(__ffs(int(open)) - 1);
    const float x = staged ? reinterpret_cast<const float*>(staged + staged_piece(b, i / 4))[i % 4]
                           : bits_float(__ldg(in32 + i));
    std::int32_t q = 0;
    if (!lossy_quantize_double(x, lossy_scale(a.error_bound), &q)) {
      mask |= 1u << i;  // an outlier: bin 0, no bits
      continue;
    }
    const std::uint32_t z = residual_word(std::uint32_t(q), 0, 32);
    any |= z;
#pragma unroll
    for (unsigned p = 0; p < 32; ++p) v[p] |= ((z >> p) & 1u) << i;
  }
  // The nonzero values' flags are the or of the planes (a few instructions a block, where the
  // sparse form would otherwise read every plane word again).
  std::uint32_t nonzero = 0;
#pragma unroll
  for (unsigned p = 0; p < 32; ++p) nonzero |= v[p];
  s.outlier_masks[b] = mask;
  s.plain_nonzero[b] = nonzero;
  s.plain_any[b] = any;
  s.plain_nonzero[2 * l.blocks + b] = 0;  // the sparse group mask b (lossy_scratch)
  store_planes<32>(v, s.shuffled[1], b, l.blocks);
  return planes_used(any);
}

// Every block of the chunk, one thread per block, one mode's residuals bit-shuffled into its
// plane words (slot 0 Delta, slot 1 Plain). Lossy chunks of at most a block a thread quantise
// here: Plain in quantize_shuffle_plain, a later Delta again from the input
// (requantized_block); larger lossy chunks had their bins formed by quantize_chunk before.
// Returns the planes this thread's blocks leave nonzero (every plane at or above the most of any
// thread is zero in every block).
template <unsigned Bits, bool Lossy>
__device__ std::uint32_t shuffle_mode(const CompressArgs& a, const std::uint8_t* in,
                                      const ChunkSpace& s, int slot) {
  static_assert(!Lossy || Bits == 32, "the lossy codec is for float32");
  const ChunkLayout& l = s.layout;
  std::uint32_t planes = 0;
  if (Lossy && s.bins_in_plain) {
    const std::uint32_t b = threadIdx.x;
    const std::uint32_t valid = b < l.blocks ? min(32u, l.elements - 32 * b) : 0u;
    std::uint32_t v[32], previous = 0;
    if (slot == 1) {
      return quantize_shuffle_plain(a, in, s.staged, s);
    } else if (valid) {
      requantized_block(a, in, b, valid, v, &previous);
      delta_residuals<Bits>(v, previous, valid);
      planes = block_planes_used(v);
      shuffle_block<Bits>(v);
      store_planes<Bits>(v, s.shuffled[0], b, l.blocks);
    }
    return planes;
  }
  for (std::uint32_t b = threadIdx.x; b < l.blocks; b += T) {
    std::uint32_t v[32], previous = 0;
    const std::uint32_t valid = min(32u, l.elements - 32 * b);
    if constexpr (Bits == 16) {
      // The common case, full uint16 blocks under Delta, two values to an operation.
      if (slot == 0 && valid == 32) {
        std::uint32_t raw[16];
        load_block_words<16>(in, 32 * b, a.input_aligned16, raw);
        if (b > 0) previous = load_element<16>(in, 32 * b - 1);
        packed_delta16(raw, previous, v);
        planes = max(planes, packed16_planes_used(v));
        transpose16_rounds(v);
        store_planes<16>(v, s.shuffled[0], b, l.blocks);
        continue;
      }
    }
    block_values<Bits>(a, in, s, Lossy, b, valid, v, &previous);
    if (slot == 0) {
      delta_residuals<Bits>(v, previous, valid);
    } else {
      plain_residuals<Bits>(v, valid);
    }
    planes = max(planes, block_planes_used(v));
    shuffle_block<Bits>(v);
    store_planes<Bits>(v, s.shuffled[slot], b, l.blocks);
  }
  return planes;
}

// Level-0 bytes that can be nonzero when no block uses a plane at or above `planes`: those of the
// planes below it (plane p's words start at byte 4 p blocks), rounded up to whole level-1 bytes.
// Every level-0 byte after them is zero, and so is every level-1 byte after theirs.
__device__ std::uint32_t level0_bytes_used(const ChunkLayout& l, std::uint32_t planes) {
  const std::uint32_t bytes = (4 * planes * l.blocks + 7) / 8;
  return min(l.level0_bytes, (bytes + 7) / 8 * 8);
}

// --- Step 3: bitmaps and sizes ---

struct PipelineCounts {
  std::uint32_t level1_kept, level0_kept, data_kept;  // nonzero bytes of each level
};

// Level 0 and level 1 of one pipeline: lane g of a warp takes shuffled bytes [8 g, 8 g + 8), so
// the loads are consecutive; the level-1 byte of 8 lanes comes from one ballot. Adds the nonzero
// bytes of the data and of level 0 to `counts`.
// Only the first `n0` level-0 bytes (level0_bytes_used) are built; the level-1 bytes after theirs
// are set to zero, and the level-0 bytes after them are never read.
__device__ void build_levels01(const ChunkLayout& l, const std::uint8_t* shuffled,
                               std::uint8_t* level0, std::uint8_t* level1, std::uint32_t n0,
                               PipelineCounts& counts) {
  const unsigned lane = threadIdx.x % 32;
  for (std::uint32_t j = n0 / 8 + threadIdx.x; j < l.level1_bytes; j += T) level1[j] = 0;
#pragma unroll 4
  for (std::uint32_t tile = threadIdx.x - lane; tile < n0; tile += T) {
    const std::uint32_t g = tile + lane;
    std::uint32_t m = 0;
    if (g < n0) {
      m = nonzero_byte_mask(*reinterpret_cast<const std::uint64_t*>(shuffled + 8 * g));
      level0[g] = std::uint8_t(m);
    }
    const std::uint32_t flags = __ballot_sync(~0u, m != 0);
    if (lane % 8 == 0 && g < n0) {
      const std::uint32_t byte = (flags >> lane) & 0xFFu;
      level1[g / 8] = std::uint8_t(byte);
      counts.level0_kept += __popc(byte);
    }
    counts.data_kept += __popc(m);
  }
}

// Level 2 of one pipeline from its level 1 (the last group of 8 may be short: missing bytes are
// zero); adds the nonzero bytes of level 1 to `counts`.
__device__ void build_level2(const ChunkLayout& l, const std::uint8_t* level1, std::uint8_t* level2,
                             std::uint32_t k, PipelineCounts& counts) {
  const std::uint32_t n1 = l.level1_bytes;
  std::uint64_t group = 0;
  for (std::uint32_t j = 8 * k; j < 8 * k + 8 && j < n1; ++j)
    group |= std::uint64_t(level1[j]) << (8 * (j - 8 * k));
  const std::uint32_t m = nonzero_byte_mask(group);
  level2[k] = std::uint8_t(m);
  counts.level1_kept += __popc(m);
}

// --- Step 3, lossy: one scan of the quantiser's flags ---
//
// Each thread takes a contiguous run of shuffle blocks (thread_blocks: one block a thread up to
// 16 KiB chunks) and one block-wide scan over the runs gives every thread, for the blocks before
// its run, the outliers, the nonzero bins (the values a sparse form lists), the blocks holding
// one, and one past the last nonzero element; and the chunk's totals. It takes the place of the
// block sum of the lossy counts that the encoder needs anyway (two barriers either way), so that
// the outlier prefix and the sparse form need no compaction of their own: the positions they
// write to follow from the scan.
//
// Its per-warp sums meet in the Delta pipeline's bitmaps, whose first writes (by a second mode)
// come after a barrier that every thread reaches only after reading them. The sparse form's lists
// use the rest of its level-0 bitmap (sparse_space); static shared memory would come out of every
// lossy block's share of the SM.

// The counts scanned, packed in one word: outliers from bit 0, nonzero bins from bit 20, blocks
// holding one from bit 40. A chunk has at most 2^18 elements and 2^13 blocks, so no field of a
// sum carries into the next.
constexpr unsigned kScanValuesShift = 20, kScanHoldingShift = 40;
constexpr std::uint64_t kScanFieldMask = (1u << kScanValuesShift) - 1;
static_assert(kMaxChunkBytes / 4 < (1u << kScanValuesShift) &&
                  kMaxChunkBytes / 128 < (1u << (64 - kScanHoldingShift)),
              "the scanned counts fit their fields");

__device__ std::uint32_t scanned_outliers(std::uint64_t packed) {
  return std::uint32_t(packed & kScanFieldMask);
}
__device__ std::uint32_t scanned_values(std::uint64_t packed) {
  return std::uint32_t((packed >> kScanValuesShift) & kScanFieldMask);
}
__device__ std::uint32_t scanned_holding(std::uint64_t packed) {
  return std::uint32_t(packed >> kScanHoldingShift);
}

// The shuffle blocks [begin, end) this thread takes in the lossy scan and in what follows from
// it (outlier prefix, sparse sizing and gaps): contiguous, in thread order.
struct BlockRun {
  std::uint32_t begin, end;
};
__device__ BlockRun thread_blocks(std::uint32_t blocks) {
  const std::uint32_t per_thread = (blocks + T - 1) / T;
  const std::uint32_t begin = min(blocks, threadIdx.x * per_thread);
  return {begin, min(blocks, begin + per_thread)};
}

// One past the last set flag of shuffle block b (flags nonzero): one past its last nonzero element.
__device__ std::uint32_t after_last_flag(std::uint32_t b, std::uint32_t flags) {
  return 32 * b + 32 - unsigned(__clz(flags));
}

struct LossyScan {
  std::uint64_t before;          // packed counts of the blocks before this thread's run
  std::uint64_t total;           // packed counts of the chunk
  std::uint32_t after_previous;  // one past the last nonzero element before the run, else 0
};

// Where the scan's and the sparse sizing's per-warp sums meet, and the sparse lists: words of
// the Delta pipeline's bitmaps. Level 0 holds 16 bytes per shuffle block of a full chunk: the
// quantiser's nonzero flags and or of values (plain_nonzero, plain_any), the listed blocks' places
// and the group masks take its four words per block of this chunk. Levels 1 and 2 hold at least
// 16 bytes each: the packed sums. The other per-warp words are static (32 bytes).
static_assert(kWarps <= 4,
              "the lossy scan's sums and the sparse lists fit in the Delta pipeline's bitmaps");
__shared__ std::uint32_t lossy_warp_words[2 * kWarps];
struct LossyScratch {
  std::uint32_t* place;       // [blocks] sparse: the listed blocks (sparse_body_size)
  std::uint32_t* masks;       // [blocks] sparse: each group's plane mask (at most a group a block)
  std::uint32_t* warp_after;  // [kWarps] the scan's last nonzero element of each warp, plus one
  std::uint32_t* warp_sizes;  // [kWarps] sparse: escapes and plane words of each warp
  std::uint32_t* warp_low;    // [kWarps] the scan's packed sums of each warp, low half
  std::uint32_t* warp_high;   // [kWarps] high half
};
__device__ LossyScratch lossy_scratch(const ChunkSpace& s) {
  LossyScratch x;
  x.place = s.plain_nonzero + s.layout.blocks;
  x.masks = x.place + s.layout.blocks;  // then plain_any
  x.warp_after = lossy_warp_words;
  x.warp_sizes = lossy_warp_words + kWarps;
  x.warp_low = reinterpret_cast<std::uint32_t*>(s.level1[0]);
  x.warp_high = reinterpret_cast<std::uint32_t*>(s.level2[0]);
  return x;
}

// The lossy scan (above), after the barrier that follows the quantiser's flags (the quantiser
// also zeroed the group masks the sparse sizing ors into, one a block). Every thread must call
// it; two barriers.
__device__ LossyScan scan_lossy_blocks(const ChunkSpace& s) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const LossyScratch x = lossy_scratch(s);
  const BlockRun run = thread_blocks(s.layout.blocks);
  std::uint64_t mine = 0;
  std::uint32_t after = 0;
#pragma unroll 1
  for (std::uint32_t b = run.begin; b < run.end; ++b) {
    const std::uint32_t flags = s.plain_nonzero[b];
    mine += unsigned(__popc(s.outlier_masks[b])) +
            (std::uint64_t(__popc(flags)) << kScanValuesShift) +
            (std::uint64_t(flags != 0) << kScanHoldingShift);
    if (flags != 0) after = after_last_flag(b, flags);
  }
  // Blocks rise with the lane, so the running max of `after` is the last nonzero element's.
  std::uint64_t inclusive = mine;
  std::uint32_t after_inclusive = after;
  for (unsigned d = 1; d < 32; d *= 2) {
    const std::uint64_t y = __shfl_up_sync(~0u, inclusive, d);
    const std::uint32_t a = __shfl_up_sync(~0u, after_inclusive, d);
    if (lane >= d) {
      inclusive += y;
      after_inclusive = max(after_inclusive, a);
    }
  }
  if (lane == 31) {
    x.warp_low[warp] = std::uint32_t(inclusive);
    x.warp_high[warp] = std::uint32_t(inclusive >> 32);
    x.warp_after[warp] = after_inclusive;
  }
  const std::uint32_t after_in_warp = __shfl_up_sync(~0u, after_inclusive, 1);
  __syncthreads();
  LossyScan scan{inclusive - mine, 0, lane > 0 ? after_in_warp : 0u};
  for (unsigned w = 0; w < kWarps; ++w) {
    const std::uint64_t sum = x.warp_low[w] | (std::uint64_t(x.warp_high[w]) << 32);
    if (w < warp) {
      scan.before += sum;
      scan.after_previous = max(scan.after_previous, x.warp_after[w]);
    }
    scan.total += sum;
  }
  return scan;
}

// --- Step 4: the stored bytes, into the staging area ---

// Lossy prefix: u32 count, the outliers' indices, then their bits, in index order. Each thread
// writes the outliers of its run of blocks, from the rank the lossy scan gave it.
__device__ void emit_outliers(const ChunkSpace& s, const std::uint8_t* in, const LossyScan& scan,
                              std::uint32_t* staging) {
  const std::uint32_t total = scanned_outliers(scan.total);
  if (threadIdx.x == 0) staging[0] = total;
  const auto* in32 = reinterpret_cast<const std::uint32_t*>(in);
  std::uint32_t position = scanned_outliers(scan.before);
  const BlockRun run = thread_blocks(s.layout.blocks);
#pragma unroll 1
  for (std::uint32_t b = run.begin; b < run.end; ++b) {
    for (std::uint32_t m = s.outlier_masks[b]; m != 0; m &= m - 1, ++position) {
      const std::uint32_t index = 32 * b + unsigned(__ffs(int(m)) - 1);
      staging[1 + position] = index;
      staging[1 + total + position] = __ldg(in32 + index);
    }
  }
}

// Byte-permute selectors that move the nonzero bytes of 8 (flagged by an 8-bit mask) to the front,
// in order: nibble k of entry m is the position of the k-th flagged byte, so the entry and the
// entry shifted right by 16 are the __byte_perm(low word, high word, selector) selectors of output
// bytes 0-3 and 4-7. Copied once per thread block from a table built at compile time
// (fill_compact_selectors); the emit then needs two permutes a group of 8 bytes instead of a loop
// over its set bits.
__shared__ __align__(16) std::uint32_t compact_selectors[256];

struct alignas(16) CompactSelectorTable {
  std::uint32_t entry[256];
};
constexpr CompactSelectorTable make_compact_selector_table() {
  CompactSelectorTable table{};
  for (unsigned m = 0; m < 256; ++m) {
    std::uint32_t selector = 0;
    unsigned kept = 0;
    for (unsigned j = 0; j < 8; ++j)
      if (m & (1u << j)) selector |= j << (4 * kept++);
    table.entry[m] = selector;
  }
  return table;
}
__device__ const CompactSelectorTable kCompactSelectorTable = make_compact_selector_table();
static_assert(make_compact_selector_table().entry[0xA5] == 0x7520u,
              "bits 0, 2, 5 and 7 of 0xA5 move to bytes 0-3");

// The planes each mode (slot 0 Delta, 1 Plain) leaves nonzero in the block's chunk: the most over
// its warps, raised before the barrier that follows the mode's shuffle. Zeroed with the
// selectors' fill, before the kernel's first barrier (a block encodes one chunk).
__shared__ std::uint32_t mode_planes[2];

// One 16-byte asynchronous copy each for the first 64 threads, waited for just before the first
// mode's bitmaps are built, so that the kernel's first barrier does not wait for the table's
// round trip (H200: float32 lossless compression 626-630 -> 676-688 GB/s on 4 streams, against
// a load and store here, before that barrier). (Computing the 256 entries here, a loop over 8 bits
// each, was 5.5% of the lossy encoder's instructions: a block encodes one chunk.)
__device__ void fill_compact_selectors() {
  static_assert(T >= 64, "64 threads copy the table");
  if (threadIdx.x < 64)
    __pipeline_memcpy_async(
        reinterpret_cast<uint4*>(compact_selectors) + threadIdx.x,
        reinterpret_cast<const uint4*>(kCompactSelectorTable.entry) + threadIdx.x, 16);
  __pipeline_commit();
}

// Stores the bytes of `bytes` flagged in the 8-bit mask m at out[0, popc(m)), in order.
__device__ void store_kept_bytes(std::uint64_t bytes, std::uint32_t m, std::uint8_t* out) {
  const std::uint32_t selector = compact_selectors[m];
  const auto low = std::uint32_t(bytes), high = std::uint32_t(bytes >> 32);
  const std::uint32_t kept_low = __byte_perm(low, high, selector);
  const std::uint32_t kept_high = __byte_perm(low, high, selector >> 16);
  const unsigned kept = unsigned(__popc(m));
#pragma unroll
  for (unsigned j = 0; j < 8; ++j)
    if (j < kept) out[j] = std::uint8_t((j < 4 ? kept_low : kept_high) >> (8 * (j % 4)));
}

// Zero-byte elimination's output of one pipeline: level 2 whole, then the nonzero bytes of
// level 1, of level 0 and of the shuffled data, each in order. Level-0 bytes from `n0` on
// (level0_bytes_used) are zero: they are not read.
__device__ void emit_eliminated(const ChunkLayout& l, const std::uint8_t* shuffled,
                                const std::uint8_t* level0, const std::uint8_t* level1,
                                const std::uint8_t* level2, std::uint32_t n0, std::uint8_t* out) {
  const std::uint32_t n2 = l.level2_bytes;
  for (std::uint32_t k = threadIdx.x; k < n2; k += T) out[k] = level2[k];
  out += n2;
  const auto kept1 = std::uint32_t(block_compact(
      l.level1_bytes, [&](std::uint32_t j) { return std::uint32_t(level1[j] != 0); }, as_count,
      [&](std::uint32_t j, std::uint64_t at, std::uint64_t) { out[at] = level1[j]; }));
  out += kept1;
  // One scan for both level 0 and the data. A count holds the kept level-0 byte in its high
  // half and the kept data bytes in its low half (32 items sum to at most 32 and 256, so the
  // halves never carry); a position holds them in its high and low 32 bits (at most 2^17 and
  // 2^20).
  block_compact(
      n0,
      [&](std::uint32_t i) {
        const std::uint32_t m = level0[i];
        return (std::uint32_t(m != 0) << 16) | std::uint32_t(__popc(m));
      },
      [](std::uint32_t c) { return (std::uint64_t(c >> 16) << 32) | (c & 0xFFFFu); },
      [&](std::uint32_t i, std::uint64_t at, std::uint64_t total) {
        const std::uint32_t m = level0[i];
        out[at >> 32] = std::uint8_t(m);
        store_kept_bytes(*reinterpret_cast<const std::uint64_t*>(shuffled + 8 * i), m,
                         out + (total >> 32) + std::uint32_t(at));
      });
}

// --- The sparse form (lossy codec, ChunkMode::Sparse) ---
//
// Sized only when Plain is kept with no second mode built (sparse_considered), and only when a
// sparse body of the chunk's nonzero values (counted by the lossy scan) could be smaller. The
// Delta pipeline's workspace is then free: its shuffled words are the staging area, as for any
// chunk, and its bitmaps hold the lists (lossy_scratch). The listed values are the nonzero Plain
// words z in element order; the lossy scan gave each thread the rank of the first value in its
// run of shuffle blocks, the listed blocks before the run, and one past the listed element before
// it, so:
//   1. sparse_body_size: each thread, for each block of its run holding a value, lists the block
//      with its first value's rank (for step 3), counts its first gap if escaped (the only gap of
//      a block that can be) and ors the planes its values use (the quantiser's or of the block's
//      z; split plane by plane only for a block whose values fall in two groups) into the masks
//      of the groups they fall in. The or returns the mask before, so the thread also counts the
//      plane words it was first to announce: summed over the chunk they are the masks' bits, with
//      no barrier between the ors and the count. One scan of (escapes, plane words) then gives the
//      size, and each thread the escapes before its run. One barrier.
//   2. emit_sparse, gaps: each thread writes its values' gap bytes at their ranks, and its escaped
//      gaps after the escapes before its run.
//   3. emit_sparse, plane words: a warp takes a group of 32 listed values, one a lane. The group's
//      values lie in the 32 listed blocks from the one holding its first value, so an or of the
//      blocks' starts tells each lane its block; a lane finds its element in the block's flags,
//      and for each plane of the group's mask reads its bit from the Plain plane word and the
//      warp's ballot forms the group's word. Each warp takes a contiguous run of groups, so that
//      its plane words follow those of the warps before it (the popcounts of their masks), and the
//      block holding its next group's first value follows from its last lane.

// A listed block's rank and number in one word (rank << kPlaceBlockBits | block): ranks are below
// 2^18 (the most elements a chunk holds) and blocks below 2^13.
constexpr unsigned kPlaceBlockBits = 13;
static_assert(kMaxChunkBytes / 4 <= (1u << 18) && kMaxChunkBytes / 128 <= (1u << kPlaceBlockBits),
              "a listed block's rank and number fit in one word");
// The sizing's scan packs the escapes above the plane words: at most 2^18 words (32 a group) and
// 2^10 escapes (each follows a gap of at least 255 elements) in a chunk.
constexpr unsigned kEscapesShift = 20;
static_assert(kMaxChunkBytes / 4 < (1u << kEscapesShift) &&
                  kMaxChunkBytes / 4 / (kSparseGapEscape + 1) < (1u << (32 - kEscapesShift)),
              "a chunk's plane words and escapes fit one word");

struct SparseSpace {
  LossyScratch lists;                // place, masks, warp_sizes (lossy_scratch)
  const std::uint32_t* nonzero;      // per shuffle block b: bit i set iff z of 32 b + i is nonzero
  const std::uint32_t* any;          // per shuffle block: the or of its z
  const std::uint32_t* plain_words;  // the Plain pipeline's plane words
  std::uint32_t blocks;              // the chunk's shuffle blocks: the planes' stride
  std::uint32_t listed;              // N, the listed values
  std::uint32_t listed_blocks;       // the blocks holding one
  std::uint32_t escapes;             // the escaped gaps (sparse_body_size)
  std::uint32_t escapes_before;      // those before this thread's run (sparse_body_size)
};

__device__ SparseSpace sparse_space(const ChunkSpace& s, const LossyScan& scan) {
  SparseSpace sp{};
  sp.lists = lossy_scratch(s);
  sp.nonzero = s.plain_nonzero;
  sp.any = s.plain_any;
  sp.plain_words = reinterpret_cast<const std::uint32_t*>(s.shuffled[1]);
  sp.blocks = s.layout.blocks;
  sp.listed = scanned_values(scan.total);
  sp.listed_blocks = scanned_holding(scan.total);
  return sp;
}

__device__ std::uint32_t place_rank(std::uint32_t place) {
  return place >> kPlaceBlockBits;
}
__device__ std::uint32_t place_block(std::uint32_t place) {
  return place & ((1u << kPlaceBlockBits) - 1);
}

// The position of the set bit of `flags` with `k` set bits below it (k < popc(flags)): five
// halvings by population count, fewer instructions than __fns.
__device__ unsigned select_bit(std::uint32_t flags, unsigned k) {
  unsigned position = 0;
#pragma unroll
  for (unsigned width = 16; width != 0; width /= 2) {
    const auto below = unsigned(__popc(flags & ((1u << width) - 1)));
    if (k >= below) {
      k -= below;
      position += width;
      flags >>= width;
    }
  }
  return position;
}

// The groups of 32 listed values that warp `warp` takes: a contiguous run, in warp order.
__device__ std::uint32_t groups_per_warp(std::uint32_t listed) {
  return (sparse_groups(listed) + kWarps - 1) / kWarps;
}
__device__ void warp_groups(std::uint32_t listed, unsigned warp, std::uint32_t* begin,
                            std::uint32_t* end) {
  const std::uint32_t groups = sparse_groups(listed);
  *begin = min(groups, warp * groups_per_warp(listed));
  *end = min(groups, *begin + groups_per_warp(listed));
}

// The sparse body's size in bytes (sparse_body_bytes); lists the blocks holding a value, leaves
// the groups' masks for emit_sparse and sets sp.escapes and sp.escapes_before. Every thread must
// call it, after scan_lossy_blocks (which zeroed the masks); one barrier, none when no value is
// nonzero (a chunk between sparse photons).
__device__ std::uint64_t sparse_body_size(SparseSpace& sp, const LossyScan& scan) {
  if (sp.listed == 0) return sparse_body_bytes(0, 0, 0);  // the count word alone
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const BlockRun run = thread_blocks(sp.blocks);
  std::uint32_t rank = scanned_values(scan.before), k = scanned_holding(scan.before);
  std::uint32_t after_previous = scan.after_previous, escapes = 0, words = 0;
#pragma unroll 1
  for (std::uint32_t b = run.begin; b < run.end; ++b) {
    const std::uint32_t flags = sp.nonzero[b];
    if (flags == 0) continue;
    sp.lists.place[k++] = (rank << kPlaceBlockBits) | b;
    // The block's first value: its gap is the only one of the block that can be escaped.
    const std::uint32_t first_element = 32 * b + unsigned(__ffs(int(flags)) - 1);
    escapes += first_element - after_previous >= kSparseGapEscape;
    after_previous = after_last_flag(b, flags);
    const std::uint32_t group = rank / 32;
    // The values past the group's room (at most 32 values a block, so in the next group).
    const std::uint32_t room = 32 - rank % 32;
    const auto values = unsigned(__popc(flags));
    const std::uint32_t next_flags = values > room ? flags & (~0u << select_bit(flags, room)) : 0u;
    // The planes the block's values use, from the quantiser; split between the two groups (a plane
    // at a time, for the planes used alone) only when the block's values fall in both.
    std::uint32_t mask = sp.any[b], next_mask = 0;
    if (next_flags != 0) {
      std::uint32_t low = 0;
#pragma unroll 1
      for (std::uint32_t left = mask; left != 0; left &= left - 1) {
        const unsigned p = unsigned(__ffs(int(left)) - 1);
        // A plane word's bits lie within the flags.
        const std::uint32_t word = sp.plain_words[plane_word_index(p, b, sp.blocks)];
        low |= std::uint32_t((word & ~next_flags) != 0) << p;
        next_mask |= std::uint32_t((word & next_flags) != 0) << p;
      }
      mask = low;
    }
    // Each bit of a final mask is counted once: by the one or that found it clear.
    words += unsigned(__popc(mask & ~atomicOr(&sp.lists.masks[group], mask)));
    if (next_flags != 0)
      words += unsigned(__popc(next_mask & ~atomicOr(&sp.lists.masks[group + 1], next_mask)));
    rank += values;
  }
  const std::uint32_t mine = (escapes << kEscapesShift) | words;
  const std::uint32_t inclusive = warp_inclusive_sum(mine);
  if (lane == 31) sp.lists.warp_sizes[warp] = inclusive;
  __syncthreads();  // also: the places and masks visible to the block, for emit_sparse
  std::uint32_t before = inclusive - mine, total = 0;
  for (unsigned w = 0; w < kWarps; ++w) {
    if (w < warp) before += sp.lists.warp_sizes[w];
    total += sp.lists.warp_sizes[w];
  }
  sp.escapes = total >> kEscapesShift;
  sp.escapes_before = before >> kEscapesShift;
  return sparse_body_bytes(sp.listed, sp.escapes, total & ((1u << kEscapesShift) - 1));
}

// The listed block holding listed value r (every lane alike): the last whose rank is at most r.
// A 32-way search: each round the warp tests 32 evenly spaced places of the range left and keeps
// the stretch after the last one at or below r (two rounds up to 1,024 listed blocks).
__device__ std::uint32_t listed_block_holding(const SparseSpace& sp, std::uint32_t r) {
  const unsigned lane = threadIdx.x % 32;
  // The answer lies in [low, low + count); place 0 has rank 0, at most r.
  std::uint32_t low = 0, count = sp.listed_blocks;
  while (count > 1) {
    const std::uint32_t stride = (count + 31) / 32;
    const std::uint32_t k = lane * stride;
    // Ranks rise with k: the lanes at or below r are a prefix, lane 0 among them.
    const std::uint32_t at_or_below =
        __ballot_sync(~0u, k < count && place_rank(sp.lists.place[low + k]) <= r);
    const std::uint32_t last = 31u - unsigned(__clz(at_or_below));
    low += last * stride;
    count = min(stride, count - last * stride);
  }
  return low;
}

// The sparse body (docs/formats.md) at `body`, a 4-byte aligned place after the lossy prefix:
// count, gap bytes and their zero pad, escaped gaps, group masks, plane words. Every thread must
// call it, after sparse_body_size. A barrier must follow before the body is read.
__device__ void emit_sparse(const SparseSpace& sp, const LossyScan& scan, std::uint32_t* body) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::uint32_t n = sp.listed;
  auto* gaps = reinterpret_cast<std::uint8_t*>(body) + sparse_gaps_at();
  std::uint32_t* escaped_gaps = body + sparse_escapes_at(n) / 4;
  std::uint32_t* masks = body + sparse_masks_at(n, sp.escapes) / 4;
  std::uint32_t* plane_words = masks + sparse_groups(n);
  if (threadIdx.x == 0) {
    body[0] = n;
    for (std::uint32_t k = n; k < padded_size(n); ++k) gaps[k] = 0;
  }
  if (n == 0) return;
  // Gaps: this thread's values, from the rank and previous element the scan gave it.
  {
    const BlockRun run = thread_blocks(sp.blocks);
    std::uint32_t rank = scanned_values(scan.before), escapes = sp.escapes_before;
    std::uint32_t after_previous = scan.after_previous;
#pragma unroll 1
    for (std::uint32_t b = run.begin; b < run.end; ++b) {
      for (std::uint32_t m = sp.nonzero[b]; m != 0; m &= m - 1, ++rank) {
        const std::uint32_t element = 32 * b + unsigned(__ffs(int(m)) - 1);
        const std::uint32_t gap = element - after_previous;
        gaps[rank] = std::uint8_t(sparse_gap_byte(gap));
        if (gap >= kSparseGapEscape) escaped_gaps[escapes++] = gap;
        after_previous = element + 1;
      }
    }
  }
  // Masks and plane words: this warp's run of groups.
  std::uint32_t begin, end;
  warp_groups(n, warp, &begin, &end);
  if (begin == end) return;
  std::uint32_t words_before = 0;
  for (std::uint32_t g = lane; g < begin; g += 32)
    words_before += unsigned(__popc(sp.lists.masks[g]));
  words_before = __reduce_add_sync(~0u, words_before);
  // The listed block holding the run's first value.
  std::uint32_t first = listed_block_holding(sp, 32 * begin);
#pragma unroll 1
  for (std::uint32_t j = begin; j < end; ++j) {
    const std::uint32_t base = 32 * j, r = base + lane;
    // Lane s reads listed block first + s (a rank past any value when there is none).
    std::uint32_t entry_place = ~0u, entry_flags = 0;
    if (first + lane < sp.listed_blocks) {
      entry_place = sp.lists.place[first + lane];
      entry_flags = sp.nonzero[place_block(entry_place)];
    }
    // Bit v set iff a listed block after `first` starts at value base + v (so v >= 1).
    const std::uint32_t entry_rank = place_rank(entry_place);
    const std::uint32_t starts =
        __reduce_or_sync(~0u, lane > 0 && entry_rank < base + 32 ? 1u << (entry_rank - base) : 0u);
    // This lane's listed block is first + s: the starts at or below its value.
    const auto s = unsigned(__popc(starts & ((2u << lane) - 1)));
    const std::uint32_t place = __shfl_sync(~0u, entry_place, s);
    const std::uint32_t flags = __shfl_sync(~0u, entry_flags, s);
    const bool valid = r < n;
    const std::uint32_t b = valid ? place_block(place) : 0u;
    const unsigned i = valid ? select_bit(flags, r - place_rank(place)) : 32u;
    // For the next group: its first value follows lane 31's, in the same block unless that one
    // ends there.
    const bool block_ends = place_rank(place) + unsigned(__popc(flags)) == r + 1;
    first += __shfl_sync(~0u, s, 31) + unsigned(__shfl_sync(~0u, int(block_ends), 31));

    const std::uint32_t mask = sp.lists.masks[j];
    if (lane == 0) masks[j] = mask;
    // Plane word k of the group (the k-th set bit of the mask) is kept by lane k, so that the
    // group's words are stored at once. Each lane reads its value's bit of plane p from the Plain
    // words (i = 32 past the group's values: a shift that gives 0).
    std::uint32_t my_word = 0;
    unsigned k = 0;
#pragma unroll 1
    for (std::uint32_t left = mask; left != 0; left &= left - 1, ++k) {
      const unsigned p = unsigned(__ffs(int(left)) - 1);
      const std::uint32_t plane = sp.plain_words[plane_word_index(p, b, sp.blocks)];
      const std::uint32_t word = __ballot_sync(~0u, i < 32 && ((plane >> i) & 1u));
      if (lane == k) my_word = word;
    }
    if (lane < k) plane_words[words_before + lane] = my_word;
    words_before += k;
  }
}

// --- Step 4: look-back ---

// Run by one whole warp for chunk c > 0: the payload offset of chunk c in 4-byte units, the sum
// of its predecessors' padded sizes. Lane k reads chunk top - k, 32 chunks at a time, until one
// of them holds an inclusive prefix. Every predecessor's block is running (it claimed an earlier
// ticket) and publishes its aggregate without waiting for anything, so the wait ends.
__device__ std::uint64_t look_back(unsigned long long* words, std::uint64_t c) {
  const unsigned lane = threadIdx.x % 32;
  std::uint64_t exclusive = 0;
  for (std::int64_t top = std::int64_t(c) - 1;; top -= 32) {
    const std::int64_t j = top - std::int64_t(lane);
    unsigned long long word;
    for (;;) {
      // Before chunk 0 there is nothing: an inclusive zero.
      word = j >= 0 ? DeviceWord(words[j]).load(cuda::memory_order_relaxed) : kInclusive;
      if (__all_sync(~0u, word != 0)) break;
      __nanosleep(100);
    }
    const std::uint32_t inclusive = __ballot_sync(~0u, (word & kInclusive) != 0);
    // Lanes up to and including the nearest inclusive one count (all of them when none is).
    const unsigned nearest = inclusive ? unsigned(__ffs(int(inclusive)) - 1) : 31u;
    exclusive += warp_sum64(lane <= nearest ? (word & kUnitsMask) : 0);
    if (inclusive) return exclusive;
  }
}

// --- Step 6: the header, by the block of the last ticket ---

__device__ void write_header(const CompressArgs& a) {
  EncodeCounters& counters = *a.scratch.counters;
  const std::uint64_t units =
      a.chunks ? DeviceWord(a.scratch.lookback[a.chunks - 1]).load(cuda::memory_order_relaxed) &
                     kUnitsMask
               : 0;
  const std::uint64_t payload_bytes = 4 * units;
  const std::uint64_t payload_checksum =
      checksum_count_term(units) +
      DeviceWord(counters.payload_terms).load(cuda::memory_order_relaxed);

  std::uint8_t h[kFixedHeaderBytes + 8 * kMaxNdim] = {};
  for (int i = 0; i < 8; ++i) h[i] = kMagicBytes[i];
  store_le16(h + kVersionAt, kFormatVersion);
  h[kCodecAt] = std::uint8_t(a.codec);
  h[kDTypeAt] = std::uint8_t(a.dtype);
  h[kNdimAt] = std::uint8_t(a.shape.ndim);
  store_le32(h + kChunkBytesAt, a.chunk_bytes);
  store_le64(h + kCountAt, a.count);
  store_le64(h + kErrorBoundAt, std::uint64_t(__double_as_longlong(a.error_bound)));
  store_le64(h + kChunkCountAt, a.chunks);
  store_le64(h + kPayloadBytesAt, payload_bytes);
  for (std::uint32_t d = 0; d < a.shape.ndim; ++d)
    store_le64(h + kFixedHeaderBytes + 8 * d, a.shape.dims[d]);

  // The header checksum covers the header, the table (whose terms the chunks summed) and the
  // payload checksum.
  auto* out = reinterpret_cast<std::uint32_t*>(a.out);
  std::uint64_t sum = DeviceWord(counters.table_terms).load(cuda::memory_order_relaxed);
  const std::uint64_t header_words = header_bytes(a.shape.ndim) / 4;
  for (std::uint64_t w = 0; w < header_words; ++w) {
    const std::uint32_t word = load_le32(h + 4 * w);
    out[w] = word;
    sum += checksum_word_term(word, w);
  }
  const std::uint64_t at = (payload_offset(a.shape.ndim, a.chunks) - kChecksumBytes) / 4;
  const auto low = std::uint32_t(payload_checksum), high = std::uint32_t(payload_checksum >> 32);
  out[at] = low;
  out[at + 1] = high;
  sum += checksum_word_term(low, at) + checksum_word_term(high, at + 1);
  const std::uint64_t header_checksum = checksum_count_term(at + 2) + sum;
  out[at + 2] = std::uint32_t(header_checksum);
  out[at + 3] = std::uint32_t(header_checksum >> 32);
  *a.scratch.size_word = payload_offset(a.shape.ndim, a.chunks) + payload_bytes;

  // Ready for the next launch (stream order makes these visible to it).
  DeviceWord(counters.ticket).store(0, cuda::memory_order_relaxed);
  DeviceWord(counters.done).store(0, cuda::memory_order_relaxed);
  DeviceWord(counters.payload_terms).store(0, cuda::memory_order_relaxed);
  DeviceWord(counters.table_terms).store(0, cuda::memory_order_relaxed);
}

// --- The kernel ---

// The dtype and codec a kernel instantiation is for.
template <unsigned Bits>
__host__ __device__ constexpr DType kernel_dtype() {
  static_assert(Bits == 16 || Bits == 32, "uint16 or float32");
  return Bits == 16 ? DType::UInt16 : DType::Float32;
}
template <bool Lossy>
__host__ __device__ constexpr Codec kernel_codec() {
  return Lossy ? Codec::Lossy : Codec::Lossless;
}

// Encodes chunk c and writes it, its table entry and its checksum terms; returns (to thread 0)
// this block's payload checksum terms and sets *table_term.
template <unsigned Bits, bool Lossy, bool SharedWorkspace>
__device__ std::uint64_t encode_chunk(const CompressArgs& a, std::uint64_t c, std::uint8_t* base,
                                      std::uint64_t* table_term) {
  __shared__ std::uint64_t chunk_offset;
  constexpr DType dtype = kernel_dtype<Bits>();
  constexpr Codec codec = kernel_codec<Lossy>();
  const EncodeLayout e = encode_layout(dtype, a.chunk_bytes, codec);
  const std::uint32_t per_chunk = chunk_elements(dtype, a.chunk_bytes);
  ChunkSpace s =
      chunk_space(base, e, chunk_layout(dtype, elements_in_chunk(a.count, per_chunk, c)));
  const ChunkLayout& l = s.layout;
  const std::uint8_t* in = a.in + c * a.chunk_bytes;

  // The lossy bins and outlier flags, then the first mode (codec_format.hpp's first_mode), and
  // the second only when the first is not enough (second_mode_needed), as on the CPU. With at
  // most a block a thread the bins are formed in the first mode's shuffle itself.
  if constexpr (Lossy) {
    // The Delta pipeline's words are free until a second mode is built: they hold the input.
    const bool stage = SharedWorkspace && a.input_aligned16 && l.elements == per_chunk;
    if (stage) {
      stage_chunk(in, l.raw_bytes, s.shuffled[0], s.bins_in_plain);
      __syncthreads();
      if (s.bins_in_plain) s.staged = reinterpret_cast<const uint4*>(s.shuffled[0]);
    }
    if (!s.bins_in_plain) {
      quantize_chunk(a, in, stage ? reinterpret_cast<const std::uint32_t*>(s.shuffled[0]) : nullptr,
                     s);
      __syncthreads();
    }
  }
  const int first_slot = first_mode(codec) == ChunkMode::Plain ? 1 : 0;
  // The level-0 bytes that can be nonzero in each mode (level0_bytes_used of mode_planes).
  std::uint32_t level0_used[2] = {0, 0};
  // One mode's bitmaps and its stored size (level 2 whole plus the kept bytes); the block sum
  // also orders the level-2 writes.
  const auto build_mode = [&](int slot) {
    const std::uint32_t planes = __reduce_max_sync(~0u, shuffle_mode<Bits, Lossy>(a, in, s, slot));
    if (threadIdx.x % 32 == 0) atomicMax(&mode_planes[slot], planes);
    __syncthreads();
    level0_used[slot] = level0_bytes_used(l, mode_planes[slot]);
    PipelineCounts counts = {};
    build_levels01(l, s.shuffled[slot], s.level0[slot], s.level1[slot], level0_used[slot], counts);
    __syncthreads();
    for (std::uint32_t k = threadIdx.x; k < l.level2_bytes; k += T)
      build_level2(l, s.level1[slot], s.level2[slot], k, counts);
    return l.level2_bytes +
           std::uint32_t(block_sum(counts.level1_kept + counts.level0_kept + counts.data_kept));
  };
  __pipeline_wait_prior(0);  // the selectors' copy (fill_compact_selectors); the barriers of
                             // build_mode publish it to the block
  const std::uint32_t first_size = build_mode(first_slot);
  // Lossy: the outliers and nonzero bins, scanned (the prefix's size, and where each thread's
  // outliers and sparse values go). The lossless kernels keep the block sum (of zeros) that stood
  // here: their machine code is unchanged by the sparse form; dropping it is a change of its own.
  LossyScan scan{};
  if constexpr (Lossy) {
    scan = scan_lossy_blocks(s);
  } else {
    block_sum(0);
  }
  const std::uint64_t prefix = Lossy ? 4 + 8 * std::uint64_t(scanned_outliers(scan.total)) : 0;
  int slot = first_slot;
  std::uint32_t kept_size = first_size;
  if (second_mode_needed(prefix + first_size, l.raw_bytes)) {  // the same in every thread
    const std::uint32_t second_size = build_mode(1 - first_slot);
    const std::uint32_t delta_size = first_slot ? second_size : first_size;
    const std::uint32_t plain_size = first_slot ? first_size : second_size;
    slot = plain_size < delta_size ? 1 : 0;  // ties go to Delta, as on the CPU
    kept_size = slot ? plain_size : delta_size;
  }
  // A lossy chunk Plain keeps alone may list its nonzero bins instead (ChunkMode::Sparse), when
  // that is strictly smaller; the form is built only when its least size could be.
  bool sparse = false;
  SparseSpace listed{};
  if constexpr (Lossy) {
    if (sparse_considered(codec, prefix + first_size, l.raw_bytes)) {  // the same in every thread
      listed = sparse_space(s, scan);
      if (sparse_body_least(listed.listed) < first_size) {
        const std::uint64_t body = sparse_body_size(listed, scan);
        sparse = sparse_wins(prefix + body, prefix + first_size);
        if (sparse) kept_size = std::uint32_t(body);
      }
    }
  }
  const std::uint64_t total = prefix + kept_size;
  const bool raw = total >= l.raw_bytes;
  const auto stored = std::uint32_t(raw ? l.raw_bytes : total);
  const std::uint64_t units = padded_size(stored) / 4;
  if (threadIdx.x == 0)
    DeviceWord(a.scratch.lookback[c])
        .store((c == 0 ? kInclusive : kAggregate) | units, cuda::memory_order_relaxed);

  // The other pipeline's shuffled words (lost, or never built) are not needed: they become the
  // staging area.
  auto* staging = reinterpret_cast<std::uint32_t*>(slot ? s.shuffled[0] : s.shuffled[1]);
  if (!raw) {
    if constexpr (Lossy) emit_outliers(s, in, scan, staging);
    if (sparse) {
      if constexpr (Lossy) emit_sparse(listed, scan, staging + prefix / 4);  // prefix: 4-byte words
    } else if (slot) {
      emit_eliminated(l, s.shuffled[1], s.level0[1], s.level1[1], s.level2[1], level0_used[1],
                      reinterpret_cast<std::uint8_t*>(staging) + prefix);
    } else {
      emit_eliminated(l, s.shuffled[0], s.level0[0], s.level1[0], s.level2[0], level0_used[0],
                      reinterpret_cast<std::uint8_t*>(staging) + prefix);
    }
  }

  if (threadIdx.x < 32) {
    const std::uint64_t exclusive = c == 0 ? 0 : look_back(a.scratch.lookback, c);
    if (threadIdx.x == 0) {
      chunk_offset = exclusive;
      if (c != 0)
        DeviceWord(a.scratch.lookback[c])
            .store(kInclusive | (exclusive + units), cuda::memory_order_relaxed);
    }
  }
  __syncthreads();
  const std::uint64_t offset = chunk_offset;  // in 4-byte units

  auto* to =
      reinterpret_cast<std::uint32_t*>(a.out + payload_offset(a.shape.ndim, a.chunks)) + offset;
  std::uint64_t terms = 0;
  if (raw) {
    const auto* from = reinterpret_cast<const std::uint32_t*>(in);
    const std::uint32_t whole = l.raw_bytes / 4;
    // Each thread's loads of a batch are issued before any is used: a 16 KiB chunk is copied in
    // two memory round trips instead of a chain of them (as the decoder's checksum pass).
    constexpr unsigned kBatch = 16;
    for (std::uint32_t w0 = threadIdx.x; w0 < units; w0 += kBatch * T) {
      std::uint32_t loaded[kBatch];
#pragma unroll
      for (unsigned k = 0; k < kBatch; ++k) {
        const std::uint32_t w = w0 + k * T;
        // A raw uint16 chunk of an odd count ends in half a word: one element and a zero pad.
        loaded[k] = w < whole   ? __ldg(from + w)
                    : w < units ? __ldg(reinterpret_cast<const std::uint16_t*>(from + w))
                                : 0u;
      }
#pragma unroll
      for (unsigned k = 0; k < kBatch; ++k) {
        const std::uint32_t w = w0 + k * T;
        if (w >= units) break;
        to[w] = loaded[k];
        terms += checksum_word_term(loaded[k], offset + w);
      }
    }
  } else {
    const std::uint32_t tail = stored % 4;
#pragma unroll 4
    for (std::uint32_t w = threadIdx.x; w < units; w += T) {
      std::uint32_t word = staging[w];
      if (tail != 0 && w == units - 1) word &= (1u << (8 * tail)) - 1;  // zero pad bytes
      to[w] = word;
      terms += checksum_word_term(word, offset + w);
    }
  }
  const ChunkMode mode = raw      ? ChunkMode::Raw
                         : sparse ? ChunkMode::Sparse
                         : slot   ? ChunkMode::Plain
                                  : ChunkMode::Delta;
  const std::uint32_t entry = make_table_entry(mode, stored);
  if (threadIdx.x == 0) {
    reinterpret_cast<std::uint32_t*>(a.out + header_bytes(a.shape.ndim))[c] = entry;
    *table_term = checksum_word_term(entry, header_bytes(a.shape.ndim) / 4 + c);
  }
  return block_sum(terms);
}

// One kernel per dtype and codec (and workspace place): each holds only its own path, so that the
// instructions a chunk runs are not spread among the other paths' (instruction fetch is the top
// stall of the encoder in Nsight Compute), and the dtype and codec tests fold away.
template <unsigned Bits, bool Lossy, bool SharedWorkspace>
__global__ void __launch_bounds__(T, 5) compress_stream(CompressArgs a) {
  extern __shared__ uint4 shared_workspace[];
  __shared__ std::uint64_t ticket;
  EncodeCounters& counters = *a.scratch.counters;
  if (threadIdx.x == 0)
    ticket = DeviceWord(counters.ticket).fetch_add(1, cuda::memory_order_relaxed);
  fill_compact_selectors();
  if (threadIdx.x < 2) mode_planes[threadIdx.x] = 0;
  __syncthreads();
  const std::uint64_t c = ticket;

  std::uint64_t payload_terms = 0, table_term = 0;
  if (c < a.chunks) {
    std::uint8_t* base =
        SharedWorkspace
            ? reinterpret_cast<std::uint8_t*>(shared_workspace)
            : a.scratch.workspace +
                  c * encode_layout(kernel_dtype<Bits>(), a.chunk_bytes, kernel_codec<Lossy>())
                          .bytes;
    payload_terms = encode_chunk<Bits, Lossy, SharedWorkspace>(a, c, base, &table_term);
  }
  // The block of the last ticket (claimed after every other) writes the header once every
  // other block has counted itself done; the others count themselves and leave without waiting
  // for the count's round trip (H200: that wait held 5.1% of the lossy encoder's stall samples).
  // Nothing waits for the finishing block, and every block it waits for holds an earlier ticket,
  // so is running.
  const bool finisher = c == gridDim.x - 1;
  if (threadIdx.x == 0)
    add_terms_and_count(counters.payload_terms, counters.table_terms, counters.done, payload_terms,
                        table_term, finisher, gridDim.x - 1);
  if (!finisher) return;
  __syncthreads();
  if (threadIdx.x == 0) write_header(a);
  __syncthreads();  // the last chunk's look-back word has been read
  // Every block has finished its look-back: the words go back to zero for the next launch.
  for (std::uint64_t k = threadIdx.x; k < a.chunks; k += T)
    DeviceWord(a.scratch.lookback[k]).store(0, cuda::memory_order_relaxed);
}

// --- The resident compressor (resident_compressor.hpp): the same chunks, no launch per array ---

// Block 0 dispatches (resident_dispatch.cuh). Every other block claims (job, chunk) tickets in
// order and encodes the chunk exactly as compress_stream does, with the job's work slot as its
// scratch; the block of a job's last chunk waits for the job's other blocks (all hold earlier
// tickets, so all run), writes the header, clears the slot's words and publishes the job's size
// to the host. A ticket only ever waits for
// earlier ones, so whatever number of blocks the device runs at once, nothing deadlocks.
template <unsigned Bits, bool Lossy>
__global__ void __launch_bounds__(T, 5) compress_resident(ResidentCompressArgs r) {
  extern __shared__ uint4 shared_workspace[];
  // The job's arguments in shared memory: a per-thread copy would live in local memory (a 312-byte
  // stack frame), whereas encode_chunk reads these as often as the kernel parameter.
  __shared__ CompressArgs a;
  __shared__ ClaimedTicket claimed;
  __shared__ bool job_running;
  if (blockIdx.x == 0) {
    if (threadIdx.x < 32) dispatch_jobs(r.ring);
    return;
  }
  fill_compact_selectors();
  if (threadIdx.x == 0) a = r.array;
  const unsigned long long chunks = r.array.chunks;
  for (;;) {
    if (threadIdx.x == 0) {
      job_running = claim_ticket(r.ring, chunks, claimed);
      if (job_running) {
        const std::uint64_t slot = claimed.job.work_slot;
        a.in = claimed.job.in;
        a.out = claimed.job.out;
        a.scratch.lookback = r.lookback + slot * chunks;
        a.scratch.counters = r.counters + slot;
        a.scratch.size_word = r.size_words + slot;
      }
    }
    if (threadIdx.x < 2) mode_planes[threadIdx.x] = 0;
    __syncthreads();
    if (!job_running) return;
    const unsigned long long c = claimed.chunk;
    std::uint64_t table_term = 0;
    const std::uint64_t payload_terms = encode_chunk<Bits, Lossy, true>(
        a, c, reinterpret_cast<std::uint8_t*>(shared_workspace), &table_term);
    EncodeCounters& counters = *a.scratch.counters;
    const bool finisher = c == chunks - 1;
    if (threadIdx.x == 0)
      add_terms_and_count(counters.payload_terms, counters.table_terms, counters.done,
                          payload_terms, table_term, finisher, chunks - 1);
    if (finisher) {
      __syncthreads();
      if (threadIdx.x == 0) write_header(a);
      __syncthreads();
      for (std::uint64_t k = threadIdx.x; k < chunks; k += T)
        DeviceWord(a.scratch.lookback[k]).store(0, cuda::memory_order_relaxed);
      __syncthreads();
      if (threadIdx.x == 0) {
        ResidentResult result{};
        result.bytes = *a.scratch.size_word;
        publish_result(r.ring, claimed.sequence, claimed.job.work_slot, result);
      }
    }
    __syncthreads();  // the job's words are rewritten for the next ticket
  }
}

}  // namespace

namespace {

using CompressKernel = void (*)(CompressArgs);
// The kernel for a dtype and codec, its workspace in shared memory or in global memory.
CompressKernel compress_kernel(DType dtype, Codec codec, bool shared_workspace) {
  if (dtype == DType::UInt16)
    return shared_workspace ? compress_stream<16, false, true> : compress_stream<16, false, false>;
  if (codec == Codec::Lossy)
    return shared_workspace ? compress_stream<32, true, true> : compress_stream<32, true, false>;
  return shared_workspace ? compress_stream<32, false, true> : compress_stream<32, false, false>;
}

}  // namespace

void prepare_compress_kernels() {
  // Workspaces above 48 KiB need the opt-in; the carveout favours shared memory so that the
  // blocks of several streams fit on one SM (the input is read once, L1 gains little from it).
  for (const auto& [dtype, codec] :
       {std::pair{DType::UInt16, Codec::Lossless}, std::pair{DType::Float32, Codec::Lossless},
        std::pair{DType::Float32, Codec::Lossy}}) {
    const CompressKernel kernel = compress_kernel(dtype, codec, true);
    const cudaError_t limit = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kMaxSharedWorkspace));
    const cudaError_t carveout =
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                             int(cudaSharedmemCarveoutMaxShared));
    for (const cudaError_t status : {limit, carveout})
      if (status != cudaSuccess)
        throw RuntimeFault(std::string("cudaFuncSetAttribute(compress_stream): ") +
                           cudaGetErrorString(status));
  }
}

namespace {

using ResidentKernel = void (*)(ResidentCompressArgs);
ResidentKernel resident_kernel(DType dtype, Codec codec) {
  if (dtype == DType::UInt16) return compress_resident<16, false>;
  return codec == Codec::Lossy ? compress_resident<32, true> : compress_resident<32, false>;
}

void set_shared_memory_limits(const void* kernel, const char* name) {
  const cudaError_t limit = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kMaxSharedWorkspace));
  const cudaError_t carveout = cudaFuncSetAttribute(
      kernel, cudaFuncAttributePreferredSharedMemoryCarveout, int(cudaSharedmemCarveoutMaxShared));
  for (const cudaError_t status : {limit, carveout})
    if (status != cudaSuccess)
      throw RuntimeFault(std::string("cudaFuncSetAttribute(") + name +
                         "): " + cudaGetErrorString(status));
}

}  // namespace

unsigned resident_compress_grid(DType dtype, Codec codec, std::uint32_t chunk_bytes) {
  const ResidentKernel kernel = resident_kernel(dtype, codec);
  set_shared_memory_limits(reinterpret_cast<const void*>(kernel), "compress_resident");
  const std::uint32_t workspace = encode_layout(dtype, chunk_bytes, codec).bytes;
  int per_sm = 0, device = 0, sms = 0;
  cudaError_t status =
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, T, std::size_t(workspace));
  if (status == cudaSuccess) status = cudaGetDevice(&device);
  if (status == cudaSuccess)
    status = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (status != cudaSuccess)
    throw RuntimeFault(std::string("resident compressor occupancy: ") + cudaGetErrorString(status));
  if (per_sm < 1)
    throw RuntimeFault("resident compressor: no block of " + std::to_string(workspace) +
                       " bytes of shared memory fits on a multiprocessor");
  return unsigned(per_sm * sms);
}

void launch_compress_resident(const ResidentCompressArgs& args, unsigned grid, void* stream) {
  const std::uint32_t workspace =
      encode_layout(args.array.dtype, args.array.chunk_bytes, args.array.codec).bytes;
  resident_kernel(
      args.array.dtype,
      args.array.codec)<<<grid, T, workspace, static_cast<cudaStream_t>(stream)>>>(args);
  check_launch("compress_resident");
}

void launch_compress(const CompressArgs& args, void* stream) {
  auto* s = static_cast<cudaStream_t>(stream);
  // One block per chunk; an empty array still needs one to write the header.
  const auto grid = unsigned(args.chunks ? args.chunks : 1);
  const std::uint32_t workspace = encode_layout(args.dtype, args.chunk_bytes, args.codec).bytes;
  const bool shared_workspace = workspace <= kMaxSharedWorkspace;
  compress_kernel(args.dtype, args.codec,
                  shared_workspace)<<<grid, T, shared_workspace ? workspace : 0, s>>>(args);
  check_launch("compress_stream");
}

}  // namespace livedrp::gpu::codec_kernels
