#include "codec/chunk_cpu.hpp"

#include <algorithm>
#include <cstring>

#include "codec/codec_math.hpp"

namespace livedrp::codec {
namespace {

struct Bitmaps {
  std::uint8_t* level0;
  std::uint8_t* level1;
  std::uint8_t* level2;
};

// The three bitmap levels of `data` (`size` bytes, a multiple of 64); returns the size of the
// eliminated form.
std::size_t build_bitmaps(const std::uint8_t* data, std::uint32_t size, const Bitmaps& maps) {
  const std::uint32_t n0 = size / 8, n1 = n0 / 8, n2 = (n1 + 7) / 8;
  std::size_t data_nonzero = 0, level0_nonzero = 0, level1_nonzero = 0;
  for (std::uint32_t i = 0; i < n0; ++i)
    maps.level0[i] = std::uint8_t(nonzero_byte_mask(load_le64(data + 8 * std::size_t(i))));
  for (std::uint32_t j = 0; j < n1; ++j) {
    const std::uint64_t group = load_le64(maps.level0 + 8 * std::size_t(j));
    maps.level1[j] = std::uint8_t(nonzero_byte_mask(group));
    data_nonzero += popcount64(group);
  }
  for (std::uint32_t k = 0; k < n2; ++k) {
    // The level-1 bitmap need not fill its last 8-byte group; missing bytes count as zero.
    std::uint8_t bytes[8] = {};
    const std::uint32_t first = 8 * k, count = n1 - first < 8 ? n1 - first : 8;
    std::memcpy(bytes, maps.level1 + first, count);
    const std::uint64_t group = load_le64(bytes);
    maps.level2[k] = std::uint8_t(nonzero_byte_mask(group));
    level0_nonzero += popcount64(group);
    level1_nonzero += popcount32(maps.level2[k]);
  }
  return n2 + level1_nonzero + level0_nonzero + data_nonzero;
}

// Writes the eliminated form (level 2, the nonzero level-1 and level-0 bitmap bytes, the nonzero
// data bytes) to `out`, which has room for exactly `total` bytes (build_bitmaps' size).
std::uint8_t* emit_eliminated(const std::uint8_t* data, std::uint32_t size, const Bitmaps& maps,
                              std::uint8_t* out, std::size_t total) {
  const std::uint32_t n0 = size / 8, n1 = n0 / 8, n2 = (n1 + 7) / 8;
  std::uint8_t* const end = out + total;
  std::memcpy(out, maps.level2, n2);
  out += n2;
  // Bitmap bytes: each is written, and kept by advancing past it only when it is nonzero (no
  // data-dependent branch to mispredict). Once `out` reaches the end every byte left is zero.
  for (std::uint32_t j = 0; j < n1 && out != end; ++j) {
    *out = maps.level1[j];
    out += maps.level1[j] != 0;
  }
  for (std::uint32_t i = 0; i < n0 && out != end; ++i) {
    *out = maps.level0[i];
    out += maps.level0[i] != 0;
  }
  for (std::uint32_t j = 0; j < n1; ++j) {
    if (!maps.level1[j]) continue;  // 64 zero data bytes
    for (std::uint32_t i = 8 * j; i < 8 * j + 8; ++i) {
      const unsigned m = maps.level0[i];
      const std::uint8_t* group = data + 8 * std::size_t(i);
      if (m == 0xFFu) {  // every byte kept: the common case of dense low planes
        std::memcpy(out, group, 8);
        out += 8;
      } else if (end - out >= 8) {
        // Each byte written, kept when its flag is set: 8 stores and no branch per byte.
        for (unsigned k = 0; k < 8; ++k) {
          out[0] = group[k];
          out += (m >> k) & 1u;
        }
      } else {
        for (unsigned f = m; f != 0; f &= f - 1) *out++ = group[__builtin_ctz(f)];
      }
    }
  }
  return out;
}

// Expands the level below `flags`: out[i] (i < count, a multiple of 8) is the next byte of `in`
// when bit i of the flags is set, else 0.
ChunkError expand_level(const std::uint8_t* flags, std::uint32_t count, const std::uint8_t* in,
                        std::uint32_t available, std::uint32_t* pos, std::uint8_t* out) {
  const std::uint32_t flag_bytes = count / 8;
  std::uint32_t needed = 0, k = 0;
  for (; k + 8 <= flag_bytes; k += 8) needed += popcount64(load_le64(flags + k));
  for (; k < flag_bytes; ++k) needed += popcount32(flags[k]);
  if (available - *pos < needed) return ChunkError::Truncated;
  const std::uint8_t* next = in + *pos;  // `needed` bytes from here are inside `in`
  for (std::uint32_t f = 0; f < flag_bytes; ++f) {
    std::uint8_t* o = out + 8 * std::size_t(f);
    const unsigned m = flags[f];
    if (m == 0xFFu) {  // eight stored bytes in a row: the dense low planes
      if (nonzero_byte_mask(load_le64(next)) != 0xFFu) return ChunkError::FlaggedByteIsZero;
      std::memcpy(o, next, 8);
      next += 8;
      continue;
    }
    // The group as one little-endian word: zero bytes where the flags are clear.
    std::uint64_t group = 0;
    for (unsigned bits = m; bits != 0; bits &= bits - 1) {
      if (*next == 0) return ChunkError::FlaggedByteIsZero;
      group |= std::uint64_t(*next++) << (8 * unsigned(__builtin_ctz(bits)));
    }
    store_le64(o, group);
  }
  *pos += needed;
  return ChunkError::None;
}

ChunkError eliminate_decode(const std::uint8_t* in, std::uint32_t size, std::uint32_t data_size,
                            std::uint8_t* data, std::uint8_t* level0, std::uint8_t* level1,
                            std::uint32_t* consumed) {
  const std::uint32_t n0 = data_size / 8, n1 = n0 / 8, n2 = (n1 + 7) / 8;
  if (size < n2) return ChunkError::Truncated;
  if (n1 % 8 != 0 && (in[n2 - 1] >> (n1 % 8)) != 0) return ChunkError::BitmapPadding;
  // The level-1 bitmap is expanded in whole groups of 8 flags; the padding flags are zero.
  std::uint32_t pos = n2;
  ChunkError e = expand_level(in, 8 * n2, in, size, &pos, level1);
  if (e == ChunkError::None) e = expand_level(level1, n0, in, size, &pos, level0);
  if (e == ChunkError::None) e = expand_level(level0, data_size, in, size, &pos, data);
  *consumed = pos;
  return e;
}

// The sparse form (docs/formats.md, "Sparse chunks") of `elements` Plain words z, when it is
// smaller than `limit` bytes: writes its body (from the count word on) to `out` (room for `limit`
// bytes) and returns its size; returns `limit` (writing nothing useful) when it cannot be smaller.
std::size_t encode_sparse(const std::uint32_t* z, std::uint32_t elements, std::size_t limit,
                          std::vector<std::uint32_t>& listed, std::uint8_t* out) {
  std::uint32_t nonzero = 0;
  for (std::uint32_t i = 0; i < elements; ++i) nonzero += z[i] != 0;
  if (sparse_body_least(nonzero) >= limit) return limit;
  listed.clear();
  std::uint32_t escapes = 0, previous = ~0u;  // i_{-1} = -1
  for (std::uint32_t i = 0; i < elements; ++i) {
    if (z[i] == 0) continue;
    escapes += i - previous - 1 >= kSparseGapEscape;
    listed.push_back(i);
    previous = i;
  }
  const std::uint32_t groups = sparse_groups(nonzero);
  std::uint64_t plane_words = 0;
  for (std::uint32_t g = 0; g < groups; ++g) {
    std::uint32_t mask = 0;
    for (std::uint32_t k = 32 * g; k < nonzero && k < 32 * g + 32; ++k) mask |= z[listed[k]];
    plane_words += popcount32(mask);
  }
  const std::uint64_t size = sparse_body_bytes(nonzero, escapes, plane_words);
  if (size >= limit) return limit;

  std::memset(out, 0, std::size_t(size));
  store_le32(out, nonzero);
  std::uint8_t* gaps = out + sparse_gaps_at();
  std::uint8_t* escaped = out + sparse_escapes_at(nonzero);
  previous = ~0u;
  for (std::uint32_t k = 0; k < nonzero; ++k) {
    const std::uint32_t gap = listed[k] - previous - 1;
    gaps[k] = std::uint8_t(sparse_gap_byte(gap));
    if (gap >= kSparseGapEscape) {
      store_le32(escaped, gap);
      escaped += 4;
    }
    previous = listed[k];
  }
  std::uint8_t* masks = out + sparse_masks_at(nonzero, escapes);
  std::uint8_t* words = masks + 4 * std::size_t(groups);
  for (std::uint32_t g = 0; g < groups; ++g) {
    std::uint32_t group[32] = {};
    for (std::uint32_t t = 0; t < 32 && 32 * g + t < nonzero; ++t) group[t] = z[listed[32 * g + t]];
    std::uint32_t mask = 0;
    for (const std::uint32_t value : group) mask |= value;
    store_le32(masks + 4 * std::size_t(g), mask);
    transpose32(group);  // group[p]: bit t is bit p of value t
    for (std::uint32_t m = mask; m != 0; m &= m - 1) {
      store_le32(words, group[__builtin_ctz(m)]);
      words += 4;
    }
  }
  return std::size_t(size);
}

// Reads a sparse body of `size` bytes into z[0, elements) (unlisted elements 0).
ChunkError decode_sparse(const std::uint8_t* in, std::uint32_t size, std::uint32_t elements,
                         std::uint32_t* z) {
  if (size < 4) return ChunkError::Truncated;
  const std::uint32_t nonzero = load_le32(in);
  if (nonzero > elements) return ChunkError::SparseCount;
  if (size < sparse_escapes_at(nonzero)) return ChunkError::Truncated;
  const std::uint8_t* gaps = in + sparse_gaps_at();
  for (std::uint64_t b = sparse_gaps_at() + nonzero; b < sparse_escapes_at(nonzero); ++b)
    if (in[b] != 0) return ChunkError::SparsePadding;
  std::uint32_t escapes = 0;
  for (std::uint32_t k = 0; k < nonzero; ++k) escapes += gaps[k] == kSparseGapEscape;
  const std::uint32_t groups = sparse_groups(nonzero);
  const std::uint64_t masks_at = sparse_masks_at(nonzero, escapes);
  if (size < masks_at + 4 * std::uint64_t(groups)) return ChunkError::Truncated;
  std::uint64_t plane_words = 0;
  for (std::uint32_t g = 0; g < groups; ++g)
    plane_words += popcount32(load_le32(in + masks_at + 4 * std::size_t(g)));
  const std::uint64_t expected = sparse_body_bytes(nonzero, escapes, plane_words);
  if (size < expected) return ChunkError::Truncated;
  if (size > expected) return ChunkError::TrailingBytes;

  std::fill(z, z + elements, 0u);
  const std::uint8_t* escaped = in + sparse_escapes_at(nonzero);
  const std::uint8_t* words = in + masks_at + 4 * std::size_t(groups);
  std::uint64_t position = 0;  // i_{k-1} + 1
  for (std::uint32_t g = 0; g < groups; ++g) {
    const std::uint32_t mask = load_le32(in + masks_at + 4 * std::size_t(g));
    std::uint32_t group[32] = {};
    for (std::uint32_t m = mask; m != 0; m &= m - 1) {
      const std::uint32_t word = load_le32(words);
      words += 4;
      if (word == 0) return ChunkError::SparseValues;
      group[__builtin_ctz(m)] = word;
    }
    transpose32(group);  // group[t]: value t
    for (std::uint32_t t = 0; t < 32; ++t) {
      const std::uint32_t k = 32 * g + t;
      if (k >= nonzero) {
        if (group[t] != 0) return ChunkError::SparseValues;  // padding of the last group
        continue;
      }
      if (group[t] == 0) return ChunkError::SparseValues;
      std::uint32_t gap = gaps[k];
      if (gap == kSparseGapEscape) {
        gap = load_le32(escaped);
        escaped += 4;
        if (gap < kSparseGapEscape) return ChunkError::SparseGap;
      }
      position += gap;
      if (position >= elements) return ChunkError::SparseGap;
      z[position++] = group[t];
    }
  }
  return ChunkError::None;
}

}  // namespace

const char* describe(ChunkError error) {
  switch (error) {
    case ChunkError::None:
      return "no error";
    case ChunkError::Truncated:
      return "its bytes end before the data its bitmaps or outlier count announce";
    case ChunkError::TrailingBytes:
      return "bytes are left over after the last one its bitmaps announce";
    case ChunkError::FlaggedByteIsZero:
      return "a byte its bitmap flags as nonzero is zero";
    case ChunkError::BitmapPadding:
      return "padding bits of its level-2 bitmap are set";
    case ChunkError::PaddingNotZero:
      return "the zero padding of its last shuffle block decodes to nonzero words";
    case ChunkError::OutlierCount:
      return "its outlier count exceeds its element count";
    case ChunkError::OutlierOrder:
      return "its outlier indices are not strictly increasing and below its element count";
    case ChunkError::OutlierBinNotZero:
      return "an outlier's bin is not 0";
    case ChunkError::BinOutOfRange:
      return "a bin number is outside +-2^30 or reconstructs to no finite float";
    case ChunkError::BadMode:
      return "its chunk-table mode is sparse (3) in a lossless stream";
    case ChunkError::SparseCount:
      return "its count of listed values exceeds its element count";
    case ChunkError::SparsePadding:
      return "the pad bytes after its gap bytes are not zero";
    case ChunkError::SparseGap:
      return "an escaped gap is below 255, or its positions run past its element count";
    case ChunkError::SparseValues:
      return "a plane word its mask announces is zero, a padding value of its last group is not "
             "zero, or a listed value is zero";
  }
  return "unknown error";
}

ChunkEncoder::ChunkEncoder(Codec codec, DType dtype, double error_bound, std::uint32_t max_elements)
    : codec_(codec), dtype_(dtype), scale_(lossy_scale(error_bound)), values_(max_elements) {
  const ChunkLayout layout = chunk_layout(dtype, max_elements);
  residuals_.resize(32 * std::size_t(layout.blocks));
  for (int slot = 0; slot < 2; ++slot) {
    shuffled_[slot].resize(layout.shuffled_bytes);
    level0_[slot].resize(layout.level0_bytes);
    level1_[slot].resize(layout.level1_bytes);
    level2_[slot].resize(layout.level2_bytes);
  }
  if (codec == Codec::Lossy) {
    outlier_index_.reserve(max_elements);
    outlier_bits_.reserve(max_elements);
    listed_.reserve(max_elements);
    sparse_.resize(layout.raw_bytes);  // a sparse body is kept only below the raw size
  }
}

std::size_t ChunkEncoder::prepare_pipeline(const ChunkLayout& layout, ChunkMode mode, int slot) {
  const std::uint32_t n = layout.elements;
  std::uint32_t* r = residuals_.data();
  const std::uint32_t* v = values_.data();
  // Literal widths and hoisted predictors keep these loops branch-free.
  const bool delta = mode == ChunkMode::Delta;
  if (layout.bits == 16) {
    r[0] = residual_word(v[0], 0, 16);
    for (std::uint32_t i = 1; i < n; ++i) r[i] = residual_word(v[i], delta ? v[i - 1] : 0, 16);
  } else {
    r[0] = residual_word(v[0], 0, 32);
    for (std::uint32_t i = 1; i < n; ++i) r[i] = residual_word(v[i], delta ? v[i - 1] : 0, 32);
  }
  for (std::uint32_t i = n; i < 32 * layout.blocks; ++i) r[i] = 0;

  // The layout's fields in locals: stores through the byte pointer below may alias anything,
  // and would otherwise make the compiler reload them at every plane word.
  const std::uint32_t blocks = layout.blocks, bits = layout.bits;
  std::uint8_t* shuffled = shuffled_[slot].data();
  for (std::uint32_t b = 0; b < blocks; ++b) {
    std::uint32_t block[32];
    std::memcpy(block, r + 32 * std::size_t(b), sizeof block);
    if (bits == 16) {
      transpose32_values16(block);  // zigzagged 16-bit residuals are below 2^16
      for (std::uint32_t p = 0; p < 16; ++p)
        store_le32(shuffled + 4 * std::size_t(plane_word_index(p, b, blocks)), block[p]);
    } else {
      transpose32(block);
      for (std::uint32_t p = 0; p < 32; ++p)
        store_le32(shuffled + 4 * std::size_t(plane_word_index(p, b, blocks)), block[p]);
    }
  }
  return build_bitmaps(shuffled, layout.shuffled_bytes,
                       {level0_[slot].data(), level1_[slot].data(), level2_[slot].data()});
}

EncodedChunk ChunkEncoder::encode(const std::uint8_t* in, std::uint32_t elements,
                                  std::uint8_t* out) {
  const ChunkLayout layout = chunk_layout(dtype_, elements);
  outlier_index_.clear();
  outlier_bits_.clear();
  if (codec_ == Codec::Lossy) {
    for (std::uint32_t i = 0; i < elements; ++i) {
      const std::uint32_t bits = load_le32(in + 4 * std::size_t(i));
      std::int32_t q = 0;
      if (lossy_quantize(bits_float(bits), scale_, &q)) {
        values_[i] = std::uint32_t(q);
      } else {
        values_[i] = 0;
        outlier_index_.push_back(i);
        outlier_bits_.push_back(bits);
      }
    }
  } else if (dtype_ == DType::UInt16) {
    for (std::uint32_t i = 0; i < elements; ++i) values_[i] = load_le16(in + 2 * std::size_t(i));
  } else {
    for (std::uint32_t i = 0; i < elements; ++i)
      values_[i] = order_float_bits(load_le32(in + 4 * std::size_t(i)));
  }

  const std::size_t prefix = codec_ == Codec::Lossy ? 4 + 8 * outlier_index_.size() : 0;
  // Slot 0 holds Delta, slot 1 Plain; the second mode only when the first is not enough.
  const ChunkMode first = first_mode(codec_);
  const int first_slot = first == ChunkMode::Plain ? 1 : 0;
  std::size_t size[2] = {};
  size[first_slot] = prepare_pipeline(layout, first, first_slot);
  int slot = first_slot;
  if (second_mode_needed(prefix + size[first_slot], layout.raw_bytes)) {
    size[1 - first_slot] =
        prepare_pipeline(layout, first_slot ? ChunkMode::Delta : ChunkMode::Plain, 1 - first_slot);
    slot = size[1] < size[0] ? 1 : 0;  // ties go to Delta
  }
  std::size_t total = prefix + size[slot];
  // Sparse replaces Plain only where Plain alone is already well below the raw size
  // (codec_format.hpp); then no second mode was built, and residuals_ holds Plain's words.
  std::size_t sparse_size = 0;
  if (sparse_considered(codec_, prefix + size[first_slot], layout.raw_bytes)) {
    const std::size_t body =
        encode_sparse(residuals_.data(), layout.elements, size[slot], listed_, sparse_.data());
    if (sparse_wins(prefix + body, total)) {
      sparse_size = body;
      total = prefix + body;
    }
  }
  if (total >= layout.raw_bytes) {
    std::memcpy(out, in, layout.raw_bytes);
    return {ChunkMode::Raw, layout.raw_bytes};
  }

  std::uint8_t* o = out;
  if (codec_ == Codec::Lossy) {
    const std::size_t count = outlier_index_.size();
    store_le32(o, std::uint32_t(count));
    o += 4;
    for (std::size_t k = 0; k < count; ++k) store_le32(o + 4 * k, outlier_index_[k]);
    o += 4 * count;
    for (std::size_t k = 0; k < count; ++k) store_le32(o + 4 * k, outlier_bits_[k]);
    o += 4 * count;
  }
  if (sparse_size != 0) {
    std::memcpy(o, sparse_.data(), sparse_size);
    return {ChunkMode::Sparse, std::uint32_t(o + sparse_size - out)};
  }
  o = emit_eliminated(shuffled_[slot].data(), layout.shuffled_bytes,
                      {level0_[slot].data(), level1_[slot].data(), level2_[slot].data()}, o,
                      size[slot]);
  return {slot ? ChunkMode::Plain : ChunkMode::Delta, std::uint32_t(o - out)};
}

ChunkDecoder::ChunkDecoder(Codec codec, DType dtype, double error_bound, std::uint32_t max_elements)
    : codec_(codec),
      dtype_(dtype),
      width_(lossy_bin_width(error_bound)),
      small_bins_(small_bins(width_)),
      values_(max_elements) {
  const ChunkLayout layout = chunk_layout(dtype, max_elements);
  shuffled_.resize(layout.shuffled_bytes);
  level0_.resize(layout.level0_bytes);
  level1_.resize(8 * std::size_t(layout.level2_bytes));  // expanded in whole groups of 8
}

ChunkError ChunkDecoder::decode(ChunkMode mode, const std::uint8_t* in, std::uint32_t size,
                                std::uint32_t elements, std::uint8_t* out) {
  const ChunkLayout layout = chunk_layout(dtype_, elements);
  if (mode == ChunkMode::Raw) {
    if (size != layout.raw_bytes)
      return size < layout.raw_bytes ? ChunkError::Truncated : ChunkError::TrailingBytes;
    std::memcpy(out, in, size);
    return ChunkError::None;
  }
  if (mode == ChunkMode::Sparse && codec_ != Codec::Lossy) return ChunkError::BadMode;

  std::uint32_t pos = 0, outliers = 0;
  const std::uint8_t* outlier_index = nullptr;
  const std::uint8_t* outlier_bits = nullptr;
  if (codec_ == Codec::Lossy) {
    if (size < 4) return ChunkError::Truncated;
    outliers = load_le32(in);
    if (outliers > elements) return ChunkError::OutlierCount;
    if ((size - 4) / 8 < outliers) return ChunkError::Truncated;
    outlier_index = in + 4;
    outlier_bits = outlier_index + 4 * std::size_t(outliers);
    for (std::uint32_t k = 0; k < outliers; ++k) {
      const std::uint32_t index = load_le32(outlier_index + 4 * std::size_t(k));
      if (index >= elements ||
          (k > 0 && index <= load_le32(outlier_index + 4 * std::size_t(k - 1))))
        return ChunkError::OutlierOrder;
    }
    pos = 4 + 8 * outliers;
  }

  if (mode == ChunkMode::Sparse) {
    const ChunkError e = decode_sparse(in + pos, size - pos, elements, values_.data());
    if (e != ChunkError::None) return e;
  } else {
    const ChunkError e = decode_bit_planes(layout, in + pos, size - pos);
    if (e != ChunkError::None) return e;
  }
  return restore_and_store(mode, elements, outliers, outlier_index, outlier_bits, out);
}

ChunkError ChunkDecoder::decode_bit_planes(const ChunkLayout& layout, const std::uint8_t* in,
                                           std::uint32_t size) {
  std::uint32_t consumed = 0;
  const ChunkError e = eliminate_decode(in, size, layout.shuffled_bytes, shuffled_.data(),
                                        level0_.data(), level1_.data(), &consumed);
  if (e != ChunkError::None) return e;
  if (consumed != size) return ChunkError::TrailingBytes;

  // Locals for the layout and the buffers: the compiler cannot keep members in registers
  // across stores it cannot prove apart from them.
  const std::uint32_t elements = layout.elements, blocks = layout.blocks;
  const std::uint32_t full_blocks = elements / 32;
  const std::uint8_t* shuffled = shuffled_.data();
  std::uint32_t* values = values_.data();
  const auto plane = [&](std::uint32_t p, std::uint32_t b) {
    return load_le32(shuffled + 4 * std::size_t(plane_word_index(p, b, blocks)));
  };
  for (std::uint32_t b = 0; b < blocks; ++b) {
    std::uint32_t block[32];
    if (layout.bits == 16) {
      for (std::uint32_t p = 0; p < 16; ++p) block[p] = plane(p, b);
      transpose32_planes16(block);  // reads planes 0-15 only, writes all 32 values
    } else {
      for (std::uint32_t p = 0; p < 32; ++p) block[p] = plane(p, b);
      transpose32(block);
    }
    if (b < full_blocks) {
      std::memcpy(values + 32 * std::size_t(b), block, sizeof block);
      continue;
    }
    for (std::uint32_t i = 0; i < 32; ++i) {  // the last, partial block: its padding is zero
      const std::uint32_t index = 32 * b + i;
      if (index < elements) {
        values[index] = block[i];
      } else if (block[i] != 0) {
        return ChunkError::PaddingNotZero;
      }
    }
  }
  return ChunkError::None;
}

ChunkError ChunkDecoder::restore_and_store(ChunkMode mode, std::uint32_t elements,
                                           std::uint32_t outliers,
                                           const std::uint8_t* outlier_index,
                                           const std::uint8_t* outlier_bits, std::uint8_t* out) {
  const std::uint32_t bits = word_bits(dtype_);
  const bool delta = mode == ChunkMode::Delta;
  // A local pointer: stores through `out` may alias the vector's own, which would be reloaded
  // at every element (and keep the store loops from being vectorised).
  std::uint32_t* const values = values_.data();
  std::uint32_t previous = 0;
  if (bits == 16) {
    for (std::uint32_t i = 0; i < elements; ++i)
      values[i] = previous = restore_word(values[i], delta ? previous : 0, 16);
  } else {
    for (std::uint32_t i = 0; i < elements; ++i)
      values[i] = previous = restore_word(values[i], delta ? previous : 0, 32);
  }

  if (codec_ == Codec::Lossless) {
    if (dtype_ == DType::UInt16) {
      for (std::uint32_t i = 0; i < elements; ++i)
        store_le16(out + 2 * std::size_t(i), std::uint16_t(values[i]));
    } else {
      for (std::uint32_t i = 0; i < elements; ++i)
        store_le32(out + 4 * std::size_t(i), order_float_bits(values[i]));
    }
    return ChunkError::None;
  }

  std::uint32_t next_outlier = 0;
  std::uint32_t next_index = outliers ? load_le32(outlier_index) : elements;
  for (std::uint32_t i = 0; i < elements; ++i) {
    const std::int32_t q = std::int32_t(values[i]);
    if (i == next_index) {
      if (q != 0) return ChunkError::OutlierBinNotZero;
      store_le32(out + 4 * std::size_t(i), load_le32(outlier_bits + 4 * std::size_t(next_outlier)));
      ++next_outlier;
      next_index = next_outlier < outliers
                       ? load_le32(outlier_index + 4 * std::size_t(next_outlier))
                       : elements;
      continue;
    }
    float r;
    if (small_bins_.float_width && q >= -kSmallBinMax && q <= kSmallBinMax) {
      r = reconstruct_small_bin(q, small_bins_.width_float);  // the GPU decoder's path
    } else if (q > std::int32_t(kLossyMaxBin) || q < -std::int32_t(kLossyMaxBin) ||
               !lossy_reconstruct(q, width_, &r)) {
      return ChunkError::BinOutOfRange;
    }
    store_le32(out + 4 * std::size_t(i), float_bits(r));
  }
  return ChunkError::None;
}

std::vector<std::uint8_t> zero_elimination_encode(const std::uint8_t* data, std::uint32_t size) {
  std::vector<std::uint8_t> level0(size / 8), level1(size / 64), level2((size / 64 + 7) / 8);
  const Bitmaps maps{level0.data(), level1.data(), level2.data()};
  std::vector<std::uint8_t> out(build_bitmaps(data, size, maps));
  emit_eliminated(data, size, maps, out.data(), out.size());
  return out;
}

std::vector<std::uint8_t> sparse_encode(const std::uint32_t* z, std::uint32_t elements) {
  // A limit no body reaches: 4 + elements gap bytes (plus pad) + 8 bytes an escape, mask and
  // words a value at most.
  const std::size_t limit = 4 + 4 + 8 * std::size_t(elements) + 4 * std::size_t(elements) * 34;
  std::vector<std::uint8_t> out(limit);
  std::vector<std::uint32_t> listed;
  out.resize(encode_sparse(z, elements, limit, listed, out.data()));
  return out;
}

ChunkError sparse_decode(const std::uint8_t* in, std::uint32_t size, std::uint32_t elements,
                         std::uint32_t* z) {
  return decode_sparse(in, size, elements, z);
}

ChunkError zero_elimination_decode(const std::uint8_t* in, std::uint32_t size,
                                   std::uint32_t data_size, std::uint8_t* data,
                                   std::uint32_t* consumed) {
  std::vector<std::uint8_t> level0(data_size / 8), level1((data_size / 64 + 7) / 8 * 8);
  return eliminate_decode(in, size, data_size, data, level0.data(), level1.data(), consumed);
}

}  // namespace livedrp::codec
