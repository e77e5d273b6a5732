#include "codec/chunk_cpu.hpp"

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

std::uint8_t* emit_eliminated(const std::uint8_t* data, std::uint32_t size, const Bitmaps& maps,
                              std::uint8_t* out) {
  const std::uint32_t n0 = size / 8, n1 = n0 / 8, n2 = (n1 + 7) / 8;
  std::memcpy(out, maps.level2, n2);
  out += n2;
  for (std::uint32_t j = 0; j < n1; ++j)
    if (maps.level1[j]) *out++ = maps.level1[j];
  for (std::uint32_t i = 0; i < n0; ++i)
    if (maps.level0[i]) *out++ = maps.level0[i];
  for (std::uint32_t j = 0; j < n1; ++j) {
    if (!maps.level1[j]) continue;  // 64 zero data bytes
    for (std::uint32_t i = 8 * j; i < 8 * j + 8; ++i) {
      for (std::uint32_t m = maps.level0[i]; m != 0; m &= m - 1)
        *out++ = data[8 * std::size_t(i) + unsigned(__builtin_ctz(m))];
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
  const std::uint8_t* next = in + *pos;
  for (std::uint32_t f = 0; f < flag_bytes; ++f) {
    std::uint8_t* o = out + 8 * std::size_t(f);
    const unsigned m = flags[f];
    if (m == 0) {
      std::memset(o, 0, 8);
      continue;
    }
    for (unsigned j = 0; j < 8; ++j) {
      if ((m >> j) & 1u) {
        if (*next == 0) return ChunkError::FlaggedByteIsZero;
        o[j] = *next++;
      } else {
        o[j] = 0;
      }
    }
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
      return "its chunk-table mode is not 0, 1 or 2";
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

  std::uint8_t* shuffled = shuffled_[slot].data();
  for (std::uint32_t b = 0; b < layout.blocks; ++b) {
    std::uint32_t block[32];
    std::memcpy(block, r + 32 * std::size_t(b), sizeof block);
    if (layout.bits == 16) {
      transpose32_values16(block);  // zigzagged 16-bit residuals are below 2^16
    } else {
      transpose32(block);
    }
    for (std::uint32_t p = 0; p < layout.bits; ++p)
      store_le32(shuffled + 4 * std::size_t(plane_word_index(p, b, layout.blocks)), block[p]);
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
  const std::size_t total = prefix + size[slot];
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
  o = emit_eliminated(shuffled_[slot].data(), layout.shuffled_bytes,
                      {level0_[slot].data(), level1_[slot].data(), level2_[slot].data()}, o);
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
  if (mode != ChunkMode::Delta && mode != ChunkMode::Plain) return ChunkError::BadMode;

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

  std::uint32_t consumed = 0;
  const ChunkError e =
      eliminate_decode(in + pos, size - pos, layout.shuffled_bytes, shuffled_.data(),
                       level0_.data(), level1_.data(), &consumed);
  if (e != ChunkError::None) return e;
  if (pos + consumed != size) return ChunkError::TrailingBytes;

  for (std::uint32_t b = 0; b < layout.blocks; ++b) {
    std::uint32_t block[32] = {};
    for (std::uint32_t p = 0; p < layout.bits; ++p)
      block[p] =
          load_le32(shuffled_.data() + 4 * std::size_t(plane_word_index(p, b, layout.blocks)));
    if (layout.bits == 16) {
      transpose32_planes16(block);
    } else {
      transpose32(block);
    }
    for (std::uint32_t i = 0; i < 32; ++i) {
      const std::uint32_t index = 32 * b + i;
      if (index < elements) {
        values_[index] = block[i];
      } else if (block[i] != 0) {
        return ChunkError::PaddingNotZero;
      }
    }
  }

  const bool delta = mode == ChunkMode::Delta;
  std::uint32_t previous = 0;
  if (layout.bits == 16) {
    for (std::uint32_t i = 0; i < elements; ++i)
      values_[i] = previous = restore_word(values_[i], delta ? previous : 0, 16);
  } else {
    for (std::uint32_t i = 0; i < elements; ++i)
      values_[i] = previous = restore_word(values_[i], delta ? previous : 0, 32);
  }

  if (codec_ == Codec::Lossless) {
    if (dtype_ == DType::UInt16) {
      for (std::uint32_t i = 0; i < elements; ++i)
        store_le16(out + 2 * std::size_t(i), std::uint16_t(values_[i]));
    } else {
      for (std::uint32_t i = 0; i < elements; ++i)
        store_le32(out + 4 * std::size_t(i), order_float_bits(values_[i]));
    }
    return ChunkError::None;
  }

  std::uint32_t next_outlier = 0;
  std::uint32_t next_index = outliers ? load_le32(outlier_index) : elements;
  for (std::uint32_t i = 0; i < elements; ++i) {
    const std::int32_t q = std::int32_t(values_[i]);
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
  emit_eliminated(data, size, maps, out.data());
  return out;
}

ChunkError zero_elimination_decode(const std::uint8_t* in, std::uint32_t size,
                                   std::uint32_t data_size, std::uint8_t* data,
                                   std::uint32_t* consumed) {
  std::vector<std::uint8_t> level0(data_size / 8), level1((data_size / 64 + 7) / 8 * 8);
  return eliminate_decode(in, size, data_size, data, level0.data(), level1.data(), consumed);
}

}  // namespace livedrp::codec
