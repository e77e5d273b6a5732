#pragma once
// One chunk through the codec pipelines on the CPU: the loops over codec_math.hpp that the CUDA
// backend runs as one thread block per chunk. An encoder or decoder object owns the scratch for
// chunks of up to a given size and is reused chunk after chunk (one per thread).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/codec_format.hpp"
#include "codec/codec_math.hpp"

namespace livedrp::codec {

// Why a chunk's bytes cannot be decoded. Every one means damaged or foreign data: the encoder
// never writes them.
enum class ChunkError : std::uint8_t {
  None = 0,
  Truncated,          // the chunk's bytes end before what its bitmaps or outlier count announce
  TrailingBytes,      // bytes left over after the last announced one
  FlaggedByteIsZero,  // a bitmap flags a byte as nonzero but the stored byte is 0
  BitmapPadding,      // bits of the level-2 bitmap beyond the level-1 bitmap are set
  PaddingNotZero,     // the zero padding of the last shuffle block decodes to nonzero words
  OutlierCount,       // more outliers than elements, or than the chunk's bytes can hold
  OutlierOrder,       // outlier indices not strictly increasing within the chunk
  OutlierBinNotZero,  // an outlier's bin is not 0 as the encoder writes it
  BinOutOfRange,      // a bin outside +-2^30, or one whose reconstruction is not a finite float
  BadMode,            // chunk-table mode 3 in a lossless stream
  // Sparse chunks (ChunkMode::Sparse):
  SparseCount,    // more listed values than elements
  SparsePadding,  // the pad bytes after the gap bytes are not zero
  SparseGap,      // an escaped gap below 255, or a position at or past the element count
  SparseValues,   // a plane word its mask announces is zero, a padding value of the last group
                  // is not zero, or a listed value is zero
};
const char* describe(ChunkError error);

// Stored form of one chunk, as written to `out` by ChunkEncoder::encode.
struct EncodedChunk {
  ChunkMode mode = ChunkMode::Raw;
  std::uint32_t bytes = 0;
};

class ChunkEncoder {
 public:
  ChunkEncoder(Codec codec, DType dtype, double error_bound, std::uint32_t max_elements);

  // `in`: `elements` values of the dtype, little-endian; `out`: room for their raw bytes. The
  // result never exceeds the raw size (a chunk that would is stored Raw).
  EncodedChunk encode(const std::uint8_t* in, std::uint32_t elements, std::uint8_t* out);

  // Outliers (values stored exactly) in the last lossy chunk encoded.
  std::uint32_t last_outliers() const { return std::uint32_t(outlier_index_.size()); }

 private:
  std::size_t prepare_pipeline(const ChunkLayout& layout, ChunkMode mode, int slot);

  Codec codec_;
  DType dtype_;
  LossyScale scale_;
  std::vector<std::uint32_t> values_;     // per element, before prediction
  std::vector<std::uint32_t> residuals_;  // per element of whole blocks, after zigzag
  std::vector<std::uint32_t> outlier_index_, outlier_bits_;
  std::vector<std::uint8_t> shuffled_[2], level0_[2], level1_[2], level2_[2];
  std::vector<std::uint32_t> listed_;  // a sparse chunk's listed elements
  std::vector<std::uint8_t> sparse_;   // its body
};

class ChunkDecoder {
 public:
  ChunkDecoder(Codec codec, DType dtype, double error_bound, std::uint32_t max_elements);

  // `in`: the chunk's `size` stored bytes; `out`: room for `elements` values. Reads only
  // in[0, size), writes only out[0, elements * element size).
  ChunkError decode(ChunkMode mode, const std::uint8_t* in, std::uint32_t size,
                    std::uint32_t elements, std::uint8_t* out);

 private:
  // Delta and Plain: zero-byte elimination and the bit shuffle, into values_ (the residuals).
  ChunkError decode_bit_planes(const ChunkLayout& layout, const std::uint8_t* in,
                               std::uint32_t size);
  // Undoes prediction and zigzag of values_ and writes the elements (and the outliers' bits).
  ChunkError restore_and_store(ChunkMode mode, std::uint32_t elements, std::uint32_t outliers,
                               const std::uint8_t* outlier_index, const std::uint8_t* outlier_bits,
                               std::uint8_t* out);

  Codec codec_;
  DType dtype_;
  double width_;
  SmallBins small_bins_;
  std::vector<std::uint32_t> values_;
  std::vector<std::uint8_t> shuffled_, level0_, level1_;
};

// Zero-byte elimination of `size` bytes (a multiple of 64), alone: level-2 bitmap, nonzero bytes
// of the level-1 bitmap, of the level-0 bitmap, of the data. Exposed for known-answer tests.
std::vector<std::uint8_t> zero_elimination_encode(const std::uint8_t* data, std::uint32_t size);
// The body of a sparse chunk (from its count word on) listing the nonzero words of
// z[0, elements), alone, whatever its size. Exposed for known-answer tests.
std::vector<std::uint8_t> sparse_encode(const std::uint32_t* z, std::uint32_t elements);
// Inverse: z[0, elements) from a body of exactly `size` bytes. Returns ChunkError::None on success.
ChunkError sparse_decode(const std::uint8_t* in, std::uint32_t size, std::uint32_t elements,
                         std::uint32_t* z);
// Inverse; `consumed` receives the number of bytes read. Returns ChunkError::None on success.
ChunkError zero_elimination_decode(const std::uint8_t* in, std::uint32_t size,
                                   std::uint32_t data_size, std::uint8_t* data,
                                   std::uint32_t* consumed);

}  // namespace livedrp::codec
