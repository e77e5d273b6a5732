#pragma once
// The compressed-stream format, as numbers: codec and dtype ids, limits, the chunk-table entry and
// the geometry of one chunk's encoded form. docs/formats.md ("Compressed arrays") describes the
// bytes; this header is what host and device code agree on, so it stays plain C++ that nvcc
// compiles (no std containers, no exceptions).
#include <cstddef>
#include <cstdint>

#include "core/host_device.hpp"

namespace livedrp::codec {

// Ids as stored in the header; 0 is never valid so that a zeroed header is rejected.
enum class Codec : std::uint8_t { Lossless = 1, Lossy = 2 };
enum class DType : std::uint8_t { UInt16 = 1, Float32 = 2 };

// How one chunk is stored (top two bits of its chunk-table entry). The pipelines differ only in
// the predictor: Delta predicts each element by the previous one (smooth data), Plain predicts 0
// (sparse data, where a delta would turn every isolated value into two). The encoder keeps
// whichever is smaller, and stores the chunk Raw when neither is smaller than its raw bytes.
// Sparse (lossy codec only, format version 3) lists the nonzero bins of Plain by position.
enum class ChunkMode : std::uint8_t { Raw = 0, Delta = 1, Plain = 2, Sparse = 3 };

// Which mode the encoder builds first: the one that wins on detector data, Plain for the lossy
// codec's bin numbers (mostly 0 around sparse photons) and Delta for lossless values (smooth
// pedestals). It builds the other mode too, and keeps the smaller, only when the first leaves the
// chunk (with the lossy prefix) at 7/8 of its raw bytes or more but below them: well-compressing
// chunks are then encoded once, and a chunk the first mode cannot shrink at all (noise in float
// mantissas) is stored raw at once. Both backends decide alike, so their bytes stay equal.
LIVEDRP_HD ChunkMode first_mode(Codec codec) {
  return codec == Codec::Lossy ? ChunkMode::Plain : ChunkMode::Delta;
}
LIVEDRP_HD bool second_mode_needed(std::uint64_t first_stored, std::uint64_t raw_bytes) {
  return first_stored >= raw_bytes - raw_bytes / 8 && first_stored < raw_bytes;
}

inline constexpr std::uint16_t kFormatVersion = 3;
// Version 2 streams are version 3 streams without Sparse chunks: decoders read both.
inline constexpr std::uint16_t kOldestReadableVersion = 2;
LIVEDRP_HD bool version_readable(std::uint32_t version) {
  return version >= kOldestReadableVersion && version <= kFormatVersion;
}
inline constexpr std::uint32_t kDefaultChunkBytes = 16384;
inline constexpr std::uint32_t kMinChunkBytes = 1024;
inline constexpr std::uint32_t kMaxChunkBytes = 1u << 20;
// Chunks hold whole 32-element shuffle blocks of 32-bit words (128 bytes), for either dtype.
inline constexpr std::uint32_t kChunkBytesMultiple = 128;
inline constexpr unsigned kMaxNdim = 8;

// Byte layout of the stream: fixed header, shape, chunk table, two checksums, payload.
inline constexpr std::size_t kFixedHeaderBytes = 56;
inline constexpr std::size_t kChecksumBytes = 16;  // payload checksum u64, header checksum u64
inline constexpr std::uint32_t kPayloadAlignment = 4;

LIVEDRP_HD std::size_t header_bytes(unsigned ndim) {
  return kFixedHeaderBytes + 8 * ndim;
}
LIVEDRP_HD std::size_t payload_offset(unsigned ndim, std::uint64_t chunks) {
  return header_bytes(ndim) + 4 * std::size_t(chunks) + kChecksumBytes;
}

LIVEDRP_HD std::uint32_t element_bytes(DType dtype) {
  return dtype == DType::UInt16 ? 2 : 4;
}
// Bits per word of the residual (or bin) stream, i.e. bit planes per shuffle block.
LIVEDRP_HD std::uint32_t word_bits(DType dtype) {
  return dtype == DType::UInt16 ? 16 : 32;
}

// --- Chunk table entry: bits 29..0 the stored size in bytes, bits 31..30 the ChunkMode. ---
inline constexpr std::uint32_t kEntrySizeMask = 0x3FFFFFFFu;
inline constexpr unsigned kEntryModeShift = 30;

LIVEDRP_HD std::uint32_t make_table_entry(ChunkMode mode, std::uint32_t size) {
  return (std::uint32_t(mode) << kEntryModeShift) | (size & kEntrySizeMask);
}
LIVEDRP_HD std::uint32_t entry_size(std::uint32_t entry) {
  return entry & kEntrySizeMask;
}
LIVEDRP_HD std::uint32_t entry_mode_bits(std::uint32_t entry) {
  return entry >> kEntryModeShift;
}
// Each chunk starts at a multiple of 4 bytes in the payload, so a chunk's offset is the exclusive
// prefix sum of padded_size() over the chunks before it; the pad bytes are zero.
LIVEDRP_HD std::uint64_t padded_size(std::uint32_t size) {
  return (std::uint64_t(size) + (kPayloadAlignment - 1)) & ~std::uint64_t(kPayloadAlignment - 1);
}

// --- Geometry of one chunk of `elements` elements (the last chunk may be short) ---
//
// Residual words are bit-shuffled in blocks of 32 (the last block zero-padded) into `bits` planes
// of one 32-bit word per block, plane-major over the chunk: word (plane p, block b) sits at word
// index p * blocks + b of the shuffled data. Zero-byte elimination then keeps a bitmap of the
// nonzero bytes (level 0), a bitmap of the nonzero bytes of that bitmap (level 1) and of that one
// (level 2); only level 2 is stored whole.
struct ChunkLayout {
  std::uint32_t elements;        // elements in the chunk
  std::uint32_t raw_bytes;       // elements * element size: the chunk's size stored Raw
  std::uint32_t bits;            // planes per block: 16 (uint16) or 32 (float32, lossy bins)
  std::uint32_t blocks;          // ceil(elements / 32)
  std::uint32_t shuffled_bytes;  // blocks * bits * 4, a multiple of 64
  std::uint32_t level0_bytes;    // shuffled_bytes / 8: one bit per shuffled byte
  std::uint32_t level1_bytes;    // level0_bytes / 8
  std::uint32_t level2_bytes;    // ceil(level1_bytes / 8), stored verbatim
};

LIVEDRP_HD ChunkLayout chunk_layout(DType dtype, std::uint32_t elements) {
  ChunkLayout l{};
  l.elements = elements;
  l.raw_bytes = elements * element_bytes(dtype);
  l.bits = word_bits(dtype);
  l.blocks = (elements + 31) / 32;
  l.shuffled_bytes = l.blocks * l.bits * 4;
  l.level0_bytes = l.shuffled_bytes / 8;
  l.level1_bytes = l.level0_bytes / 8;
  l.level2_bytes = (l.level1_bytes + 7) / 8;
  return l;
}

// --- Sparse chunks (ChunkMode::Sparse, docs/formats.md) ---
//
// After the lossy prefix: u32 N (the chunk's nonzero Plain words z, i.e. nonzero bins), N gap
// bytes (elements skipped before each listed one; 255 escapes a gap of 255 or more), zero bytes
// to a multiple of 4, one u32 per escape (the gap itself), one u32 plane mask per group of 32
// listed values, then each group's plane words for the set bits of its mask, in plane order.
// Photon-sparse bins cost about a byte a photon this way, where zero-byte elimination of their
// bit planes spends about two (a nonzero plane byte carries one photon's bit in eight).
inline constexpr std::uint32_t kSparseGapEscape = 255;

LIVEDRP_HD std::uint32_t sparse_gap_byte(std::uint32_t gap) {
  return gap < kSparseGapEscape ? gap : kSparseGapEscape;
}
LIVEDRP_HD std::uint32_t sparse_groups(std::uint32_t nonzero) {
  return (nonzero + 31) / 32;
}
// Byte offsets inside a sparse chunk's body (from its count word): gap bytes, escapes, masks.
LIVEDRP_HD std::uint32_t sparse_gaps_at() {
  return 4;
}
LIVEDRP_HD std::uint64_t sparse_escapes_at(std::uint32_t nonzero) {
  return 4 + padded_size(nonzero);
}
LIVEDRP_HD std::uint64_t sparse_masks_at(std::uint32_t nonzero, std::uint32_t escapes) {
  return sparse_escapes_at(nonzero) + 4 * std::uint64_t(escapes);
}
// The body's size for `plane_words` words over all groups.
LIVEDRP_HD std::uint64_t sparse_body_bytes(std::uint32_t nonzero, std::uint32_t escapes,
                                           std::uint64_t plane_words) {
  return sparse_masks_at(nonzero, escapes) + 4 * std::uint64_t(sparse_groups(nonzero)) +
         4 * plane_words;
}
// No sparse body of N values is smaller: every listed value is nonzero, so each group has at
// least one plane word. An encoder that finds this bound no smaller than what it already has
// need not build the sparse form (it could not win).
LIVEDRP_HD std::uint64_t sparse_body_least(std::uint32_t nonzero) {
  return sparse_body_bytes(nonzero, 0, sparse_groups(nonzero));
}
// The encoder sizes the sparse form of a lossy chunk only when its first (Plain) pipeline needs no
// second one (second_mode_needed) and is below the raw bytes, i.e. below 7/8 of them; it then
// replaces Plain only when strictly smaller. (Where Plain is not that small the chunk is dense,
// and a listed value could not cost less than its share of the bit planes.)
LIVEDRP_HD bool sparse_considered(Codec codec, std::uint64_t first_stored,
                                  std::uint64_t raw_bytes) {
  return codec == Codec::Lossy && first_stored < raw_bytes - raw_bytes / 8;
}
LIVEDRP_HD bool sparse_wins(std::uint64_t sparse_stored, std::uint64_t plain_stored) {
  return sparse_stored < plain_stored;
}

// Is a chunk-table entry possible for a chunk of this layout in a stream of this codec? Raw
// chunks hold exactly their raw bytes; the others are smaller, Delta and Plain at least their
// level-2 bitmap and Sparse at least its count word, both after the lossy prefix's count.
LIVEDRP_HD bool entry_possible(Codec codec, const ChunkLayout& l, std::uint32_t entry) {
  const std::uint32_t mode = entry_mode_bits(entry), stored = entry_size(entry);
  const std::uint32_t prefix = codec == Codec::Lossy ? 4 : 0;
  if (mode == unsigned(ChunkMode::Raw)) return stored == l.raw_bytes;
  if (mode == unsigned(ChunkMode::Sparse) && codec != Codec::Lossy) return false;
  const std::uint32_t least = prefix + (mode == unsigned(ChunkMode::Sparse) ? 4 : l.level2_bytes);
  return stored < l.raw_bytes && stored >= least;
}

// Elements per full chunk, and the element count of chunk `index` of `count` elements.
LIVEDRP_HD std::uint32_t chunk_elements(DType dtype, std::uint32_t chunk_bytes) {
  return chunk_bytes / element_bytes(dtype);
}
LIVEDRP_HD std::uint32_t elements_in_chunk(std::uint64_t count, std::uint32_t per_chunk,
                                           std::uint64_t index) {
  const std::uint64_t first = index * per_chunk;
  const std::uint64_t left = count - first;
  return left < per_chunk ? std::uint32_t(left) : per_chunk;
}

}  // namespace livedrp::codec
