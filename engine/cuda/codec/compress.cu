// Compression on the GPU in four launches on one stream, none waiting for the host:
//   encode_chunks  one block per chunk: both pipelines, the smaller kept (or Raw), into the
//                  chunk's staging slot; its table entry
//   plan_stream    one block: exclusive prefix over the padded chunk sizes, header and table
//   pack_chunks    one block per chunk: staging slot to its payload offset, checksum terms
//   seal_stream    one block: payload and header checksums
// The math per element and per word is codec_math.hpp's, as on the CPU, so the bytes are the
// CPU's.
#include <cuda_runtime.h>

#include "cuda/codec/codec_kernels.cuh"
#include "cuda/device.hpp"

namespace livedrp::gpu::codec_kernels {
namespace {

constexpr int T = kChunkThreads;

struct PipelineSizes {
  std::uint32_t bytes[2];
};

__device__ std::uint64_t load64(const std::uint8_t* p) {
  return *reinterpret_cast<const std::uint64_t*>(p);
}

// Residuals of one pipeline, bit-shuffled by warp ballots, then the three bitmap levels; returns
// the eliminated size (codec_math.hpp and chunk_cpu.cpp's build_bitmaps define every byte).
__device__ std::uint32_t prepare_pipeline(const ChunkLayout& l, bool delta,
                                          const std::uint32_t* values, std::uint8_t* shuffled,
                                          std::uint8_t* level0, std::uint8_t* level1,
                                          std::uint8_t* level2) {
  __shared__ unsigned nonzero;
  if (threadIdx.x == 0) nonzero = 0;
  const unsigned lane = threadIdx.x % 32, warps = T / 32;
  auto* words = reinterpret_cast<std::uint32_t*>(shuffled);
  for (std::uint32_t b = threadIdx.x / 32; b < l.blocks; b += warps) {
    const std::uint32_t i = 32 * b + lane;
    std::uint32_t r = 0;
    if (i < l.elements) r = residual_word(values[i], delta && i > 0 ? values[i - 1] : 0, l.bits);
    std::uint32_t mine = 0;
    for (std::uint32_t p = 0; p < l.bits; ++p) {
      const std::uint32_t plane = __ballot_sync(~0u, (r >> p) & 1u);
      if (lane == p) mine = plane;
    }
    if (lane < l.bits) words[plane_word_index(lane, b, l.blocks)] = mine;
  }
  __syncthreads();
  const std::uint32_t n0 = l.level0_bytes, n1 = l.level1_bytes, n2 = l.level2_bytes;
  unsigned count = 0;
  for (std::uint32_t i = threadIdx.x; i < n0; i += T) {
    const std::uint32_t m = nonzero_byte_mask(load64(shuffled + 8 * std::size_t(i)));
    level0[i] = std::uint8_t(m);
    count += popcount32(m);
  }
  __syncthreads();
  for (std::uint32_t j = threadIdx.x; j < n1; j += T) {
    const std::uint32_t m = nonzero_byte_mask(load64(level0 + 8 * std::size_t(j)));
    level1[j] = std::uint8_t(m);
    count += popcount32(m);
  }
  __syncthreads();
  for (std::uint32_t k = threadIdx.x; k < n2; k += T) {
    // The level-1 bitmap need not fill its last group of 8; missing bytes count as zero.
    std::uint64_t group = 0;
    for (std::uint32_t j = 8 * k; j < 8 * k + 8 && j < n1; ++j)
      group |= std::uint64_t(level1[j]) << (8 * (j - 8 * k));
    const std::uint32_t m = nonzero_byte_mask(group);
    level2[k] = std::uint8_t(m);
    count += popcount32(m);
  }
  atomicAdd(&nonzero, count);
  __syncthreads();
  const std::uint32_t total = n2 + nonzero;
  __syncthreads();
  return total;
}

// Zero-byte elimination's output: level 2 whole, then the nonzero bytes of level 1, level 0 and
// the shuffled data, each in order.
__device__ void emit_eliminated(const ChunkLayout& l, const std::uint8_t* shuffled,
                                const std::uint8_t* level0, const std::uint8_t* level1,
                                const std::uint8_t* level2, std::uint8_t* out) {
  const std::uint32_t n0 = l.level0_bytes, n1 = l.level1_bytes, n2 = l.level2_bytes;
  for (std::uint32_t k = threadIdx.x; k < n2; k += T) out[k] = level2[k];
  out += n2;
  const std::uint32_t kept1 = block_prefix_for<T, std::uint32_t>(
      n1, [&](std::uint64_t j) { return std::uint32_t(level1[j] != 0); },
      [&](std::uint64_t j, std::uint32_t at, std::uint32_t) {
        if (level1[j]) out[at] = level1[j];
      });
  out += kept1;
  const std::uint32_t kept0 = block_prefix_for<T, std::uint32_t>(
      n0, [&](std::uint64_t i) { return std::uint32_t(level0[i] != 0); },
      [&](std::uint64_t i, std::uint32_t at, std::uint32_t) {
        if (level0[i]) out[at] = level0[i];
      });
  out += kept0;
  block_prefix_for<T, std::uint32_t>(
      n0, [&](std::uint64_t i) { return popcount32(level0[i]); },
      [&](std::uint64_t i, std::uint32_t at, std::uint32_t) {
        for (std::uint32_t m = level0[i]; m != 0; m &= m - 1)
          out[at++] = shuffled[8 * i + unsigned(__ffs(int(m)) - 1)];
      });
}

__global__ void __launch_bounds__(T) encode_chunks(CompressArgs a) {
  const std::uint64_t c = blockIdx.x;
  const Scratch& s = a.scratch;
  const Strides st = strides_for(a.dtype, a.chunk_bytes);
  const std::uint32_t per_chunk = chunk_elements(a.dtype, a.chunk_bytes);
  const ChunkLayout l = chunk_layout(a.dtype, elements_in_chunk(a.count, per_chunk, c));
  const std::uint8_t* in = a.in + c * a.chunk_bytes;
  std::uint32_t* values = s.values + c * st.values;
  std::uint32_t* outlier_index = s.outlier_index + c * st.values;
  std::uint32_t* outlier_bits = s.outlier_bits + c * st.values;

  std::uint32_t outliers = 0;
  if (a.codec == Codec::Lossy) {
    const double width = lossy_bin_width(a.error_bound);
    outliers = block_prefix_for<T, std::uint32_t>(
        l.elements,
        [&](std::uint64_t i) {
          const std::uint32_t bits = reinterpret_cast<const std::uint32_t*>(in)[i];
          std::int32_t q = 0;
          const bool binned = lossy_quantize(bits_float(bits), a.error_bound, width, &q);
          values[i] = binned ? std::uint32_t(q) : 0u;
          return std::uint32_t(!binned);
        },
        [&](std::uint64_t i, std::uint32_t at, std::uint32_t outlier) {
          if (outlier) {
            outlier_index[at] = std::uint32_t(i);
            outlier_bits[at] = reinterpret_cast<const std::uint32_t*>(in)[i];
          }
        });
  } else if (a.dtype == DType::UInt16) {
    const auto* in16 = reinterpret_cast<const std::uint16_t*>(in);
    for (std::uint32_t i = threadIdx.x; i < l.elements; i += T) values[i] = in16[i];
  } else {
    const auto* in32 = reinterpret_cast<const std::uint32_t*>(in);
    for (std::uint32_t i = threadIdx.x; i < l.elements; i += T)
      values[i] = order_float_bits(in32[i]);
  }
  __syncthreads();

  std::uint32_t sizes[2];
  for (int slot = 0; slot < 2; ++slot) {
    sizes[slot] = prepare_pipeline(l, slot == 0, values, s.shuffled[slot] + c * st.shuffled,
                                   s.level0[slot] + c * st.level0, s.level1[slot] + c * st.level1,
                                   s.level2[slot] + c * st.level2);
  }
  const std::uint64_t prefix = a.codec == Codec::Lossy ? 4 + 8 * std::uint64_t(outliers) : 0;
  const int slot = sizes[1] < sizes[0] ? 1 : 0;  // ties go to Delta, as on the CPU
  const std::uint64_t total = prefix + sizes[slot];
  std::uint8_t* out = s.staging + c * st.staging;
  if (total >= l.raw_bytes) {
    for (std::uint32_t i = threadIdx.x; i < l.raw_bytes; i += T) out[i] = in[i];
    if (threadIdx.x == 0) s.entries[c] = make_table_entry(ChunkMode::Raw, l.raw_bytes);
    return;
  }
  if (a.codec == Codec::Lossy) {
    if (threadIdx.x == 0) store_le32(out, outliers);
    for (std::uint32_t k = threadIdx.x; k < outliers; k += T) {
      store_le32(out + 4 + 4 * std::size_t(k), outlier_index[k]);
      store_le32(out + 4 + 4 * std::size_t(outliers + k), outlier_bits[k]);
    }
  }
  emit_eliminated(l, s.shuffled[slot] + c * st.shuffled, s.level0[slot] + c * st.level0,
                  s.level1[slot] + c * st.level1, s.level2[slot] + c * st.level2, out + prefix);
  if (threadIdx.x == 0)
    s.entries[c] =
        make_table_entry(slot ? ChunkMode::Plain : ChunkMode::Delta, std::uint32_t(total));
}

// Header field offsets (docs/formats.md, container.cpp).
constexpr std::size_t kVersionAt = 8, kCodecAt = 10, kDTypeAt = 11, kNdimAt = 12,
                      kChunkBytesAt = 16, kCountAt = 24, kErrorBoundAt = 32, kChunkCountAt = 40,
                      kPayloadBytesAt = 48;
__constant__ std::uint8_t kMagicBytes[8] = {0x89, 'L', 'D', 'R', 'P', 'Z', '\r', '\n'};

__global__ void __launch_bounds__(kStreamThreads) plan_stream(CompressArgs a) {
  const Scratch& s = a.scratch;
  const std::size_t table_at = header_bytes(a.shape.ndim);
  const std::uint64_t payload_bytes = block_prefix_for<kStreamThreads, std::uint64_t>(
      a.chunks, [&](std::uint64_t c) { return padded_size(entry_size(s.entries[c])); },
      [&](std::uint64_t c, std::uint64_t at, std::uint64_t) {
        s.offsets[c] = at;
        store_le32(a.out + table_at + 4 * c, s.entries[c]);
      });
  if (threadIdx.x != 0) return;
  s.offsets[a.chunks] = payload_bytes;
  std::uint8_t* h = a.out;
  for (std::size_t i = 0; i < table_at; ++i) h[i] = 0;
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
  *s.checksum = checksum_count_term(payload_bytes / 4);
  *s.size_word = payload_offset(a.shape.ndim, a.chunks) + payload_bytes;
}

__global__ void __launch_bounds__(T) pack_chunks(CompressArgs a) {
  const std::uint64_t c = blockIdx.x;
  const Scratch& s = a.scratch;
  const std::uint64_t offset = s.offsets[c];
  const std::uint32_t words = std::uint32_t((s.offsets[c + 1] - offset) / 4);
  const std::uint32_t size = entry_size(s.entries[c]);
  const Strides st = strides_for(a.dtype, a.chunk_bytes);
  const std::uint8_t* from = s.staging + c * st.staging;
  auto* to =
      reinterpret_cast<std::uint32_t*>(a.out + payload_offset(a.shape.ndim, a.chunks) + offset);
  std::uint64_t sum = 0;
  for (std::uint32_t w = threadIdx.x; w < words; w += T) {
    std::uint32_t word;
    if (4 * w + 4 <= size) {
      word = reinterpret_cast<const std::uint32_t*>(from)[w];
    } else {
      std::uint8_t bytes[4] = {};
      for (std::uint32_t k = 0; k < 4 && 4 * w + k < size; ++k) bytes[k] = from[4 * w + k];
      word = load_le32(bytes);
    }
    to[w] = word;
    sum += checksum_word_term(word, offset / 4 + w);
  }
  const std::uint64_t total = block_sum<T, std::uint64_t>(sum);
  if (threadIdx.x == 0) atomicAdd(s.checksum, static_cast<unsigned long long>(total));
}

__global__ void __launch_bounds__(kStreamThreads) seal_stream(CompressArgs a) {
  const std::size_t at = payload_offset(a.shape.ndim, a.chunks) - kChecksumBytes;
  if (threadIdx.x == 0) store_le64(a.out + at, *a.scratch.checksum);
  __syncthreads();
  const std::uint64_t words = (at + 8) / 4;
  std::uint64_t sum = 0;
  for (std::uint64_t w = threadIdx.x; w < words; w += kStreamThreads)
    sum += checksum_word_term(load_le32(a.out + 4 * w), w);
  const std::uint64_t total = block_sum<kStreamThreads, std::uint64_t>(sum);
  if (threadIdx.x == 0) store_le64(a.out + at + 8, checksum_count_term(words) + total);
}

}  // namespace

void launch_compress(const CompressArgs& args, void* stream) {
  auto* s = static_cast<cudaStream_t>(stream);
  if (args.chunks) {
    encode_chunks<<<unsigned(args.chunks), T, 0, s>>>(args);
    check_launch("encode_chunks");
  }
  plan_stream<<<1, kStreamThreads, 0, s>>>(args);
  check_launch("plan_stream");
  if (args.chunks) {
    pack_chunks<<<unsigned(args.chunks), T, 0, s>>>(args);
    check_launch("pack_chunks");
  }
  seal_stream<<<1, kStreamThreads, 0, s>>>(args);
  check_launch("seal_stream");
}

}  // namespace livedrp::gpu::codec_kernels
