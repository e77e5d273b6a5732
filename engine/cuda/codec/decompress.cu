// Decompression on the GPU in three launches on one stream:
//   parse_stream   one block: every header field, the chunk table and the header checksum
//                  checked against the buffer (container.cpp's parse_stream, on the device), and
//                  the chunk offsets by an exclusive prefix over the table
//   decode_chunks  blocks striding over chunks: payload checksum terms, then the chunk decoded
//                  with every read checked against the chunk's bytes
//   close_decode   one thread: the payload checksum and the first damaged chunk into the status
// A damaged stream stops nothing on the host: the status word says what is wrong.
#include <cuda_runtime.h>

#include "codec/chunk_cpu.hpp"
#include "cuda/codec/codec_kernels.cuh"
#include "cuda/device.hpp"

namespace livedrp::gpu::codec_kernels {
namespace {

constexpr int T = kChunkThreads;
constexpr std::size_t kVersionAt = 8, kCodecAt = 10, kDTypeAt = 11, kNdimAt = 12, kReserved1At = 13,
                      kChunkBytesAt = 16, kReserved2At = 20, kCountAt = 24, kErrorBoundAt = 32,
                      kChunkCountAt = 40, kPayloadBytesAt = 48;
constexpr unsigned long long kNoFailure = ~0ull;
__constant__ std::uint8_t kExpectedMagic[8] = {0x89, 'L', 'D', 'R', 'P', 'Z', '\r', '\n'};

// The scalar checks of the fixed header and shape, in container.cpp's order; fills the plan.
__device__ DecodeStatus check_header(const DecompressArgs& a, DecodePlan& p, unsigned& ndim) {
  const std::uint8_t* b = a.in;
  const std::uint64_t size = a.size;
  for (std::uint64_t i = 0; i < 8 && i < size; ++i)
    if (b[i] != kExpectedMagic[i]) return DecodeStatus::NotLivedrp;
  if (size < kFixedHeaderBytes) return DecodeStatus::Truncated;
  if (load_le16(b + kVersionAt) != kFormatVersion) return DecodeStatus::Version;
  ndim = b[kNdimAt];
  if (ndim > kMaxNdim) return DecodeStatus::Ndim;
  const std::uint64_t shape_end = header_bytes(ndim);
  if (size < shape_end) return DecodeStatus::Truncated;
  p.chunks = load_le64(b + kChunkCountAt);
  if (p.chunks > (size - shape_end) / 4) return DecodeStatus::Truncated;
  if (size < payload_offset(ndim, p.chunks)) return DecodeStatus::Truncated;
  return DecodeStatus::Ok;
}

__device__ DecodeStatus check_fields(const DecompressArgs& a, DecodePlan& p, unsigned ndim) {
  const std::uint8_t* b = a.in;
  p.codec = b[kCodecAt];
  p.dtype = b[kDTypeAt];
  if (p.codec != unsigned(Codec::Lossless) && p.codec != unsigned(Codec::Lossy))
    return DecodeStatus::CodecId;
  if (p.dtype != unsigned(DType::UInt16) && p.dtype != unsigned(DType::Float32))
    return DecodeStatus::DTypeId;
  if (p.codec == unsigned(Codec::Lossy) && p.dtype != unsigned(DType::Float32))
    return DecodeStatus::LossyNotFloat;
  if (b[kReserved1At] || b[kReserved1At + 1] || b[kReserved1At + 2] || load_le32(b + kReserved2At))
    return DecodeStatus::Reserved;
  p.chunk_bytes = load_le32(b + kChunkBytesAt);
  if (p.chunk_bytes < kMinChunkBytes || p.chunk_bytes > kMaxChunkBytes ||
      p.chunk_bytes % kChunkBytesMultiple != 0)
    return DecodeStatus::ChunkBytes;
  const std::uint64_t eb_bits = load_le64(b + kErrorBoundAt);
  p.error_bound = __longlong_as_double(static_cast<long long>(eb_bits));
  if (p.codec == unsigned(Codec::Lossless)) {
    if (eb_bits != 0) return DecodeStatus::ErrorBound;
  } else {
    const double width = lossy_bin_width(p.error_bound);
    if (!(p.error_bound > 0 && p.error_bound <= 1.7976931348623157e308 &&
          width <= 1.7976931348623157e308))
      return DecodeStatus::ErrorBound;
  }
  const std::uint32_t esize = element_bytes(DType(p.dtype));
  p.count = load_le64(b + kCountAt);
  if (p.count > ~std::uint64_t(0) / 2 / esize) return DecodeStatus::Count;
  p.raw_bytes = p.count * esize;
  if (p.count > a.max_elements) return DecodeStatus::TooManyElements;
  if (ndim > 0) {
    std::uint64_t product = 1;
    bool overflow = false;
    for (unsigned d = 0; d < ndim; ++d) {
      const std::uint64_t n = load_le64(b + kFixedHeaderBytes + 8 * d);
      if (n != 0 && product > ~std::uint64_t(0) / n) overflow = true;
      product *= n;
    }
    if (overflow || product != p.count) return DecodeStatus::Shape;
  }
  const std::uint32_t per_chunk = chunk_elements(DType(p.dtype), p.chunk_bytes);
  if (p.chunks != p.count / per_chunk + (p.count % per_chunk != 0)) return DecodeStatus::ChunkCount;
  if (p.raw_bytes > a.capacity) return DecodeStatus::OutputCapacity;
  return DecodeStatus::Ok;
}

// Is a table entry's mode and size possible for its chunk? (container.cpp's table check.)
__device__ bool entry_valid(const DecodePlan& p, std::uint32_t entry, std::uint64_t c) {
  const std::uint32_t per_chunk = chunk_elements(DType(p.dtype), p.chunk_bytes);
  const ChunkLayout l = chunk_layout(DType(p.dtype), elements_in_chunk(p.count, per_chunk, c));
  const std::uint32_t mode = entry_mode_bits(entry), stored = entry_size(entry);
  if (mode == unsigned(ChunkMode::Raw)) return stored == l.raw_bytes;
  if (mode == unsigned(ChunkMode::Delta) || mode == unsigned(ChunkMode::Plain)) {
    const std::uint32_t least = l.level2_bytes + (p.codec == unsigned(Codec::Lossy) ? 4 : 0);
    return stored < l.raw_bytes && stored >= least;
  }
  return false;
}

__global__ void __launch_bounds__(kStreamThreads) parse_stream(DecompressArgs a) {
  __shared__ DecodePlan plan;
  __shared__ DecodeStatus status;
  __shared__ unsigned ndim;
  __shared__ bool bad_entry;
  if (threadIdx.x == 0) {
    plan = DecodePlan{};
    plan.first_failure = kNoFailure;
    unsigned n = 0;
    status = check_header(a, plan, n);
    ndim = n;
    bad_entry = false;
  }
  __syncthreads();
  // The header checksum next: fields are judged only once the header is known to be intact.
  if (status == DecodeStatus::Ok) {
    const std::uint64_t at = payload_offset(ndim, plan.chunks) - kChecksumBytes;
    const std::uint64_t words = (at + 8) / 4;
    std::uint64_t sum = 0;
    for (std::uint64_t w = threadIdx.x; w < words; w += kStreamThreads)
      sum += checksum_word_term(load_le32(a.in + 4 * w), w);
    const std::uint64_t total = block_sum<kStreamThreads, std::uint64_t>(sum);
    if (threadIdx.x == 0) {
      if (checksum_count_term(words) + total != load_le64(a.in + at + 8)) {
        status = DecodeStatus::HeaderChecksum;
      } else {
        plan.stored_payload_checksum = load_le64(a.in + at);
        status = check_fields(a, plan, ndim);
      }
    }
  }
  __syncthreads();
  if (status == DecodeStatus::Ok) {
    const std::uint8_t* table = a.in + header_bytes(ndim);
    const std::uint64_t payload = block_prefix_for<kStreamThreads, std::uint64_t>(
        plan.chunks,
        [&](std::uint64_t c) {
          const std::uint32_t e = load_le32(table + 4 * c);
          if (!entry_valid(plan, e, c)) bad_entry = true;
          return padded_size(entry_size(e));
        },
        [&](std::uint64_t c, std::uint64_t at, std::uint64_t) { a.scratch.offsets[c] = at; });
    __syncthreads();
    if (threadIdx.x == 0) {
      a.scratch.offsets[plan.chunks] = payload;
      plan.payload_at = payload_offset(ndim, plan.chunks);
      plan.payload_bytes = load_le64(a.in + kPayloadBytesAt);
      if (bad_entry) {
        status = DecodeStatus::TableEntry;
      } else if (plan.payload_bytes != payload) {
        status = DecodeStatus::PayloadBytes;
      } else if (a.size - plan.payload_at != payload) {
        status = DecodeStatus::PayloadSize;
      }
      plan.checksum = checksum_count_term(payload / 4);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    plan.status = std::uint32_t(status);
    *a.plan = plan;
  }
}

// Expands one bitmap level: out[8 g + j] is the next stored byte when bit j of flags[g] is set,
// else 0, for g < groups. Reads only in[*pos, available); returns the error found, if any.
__device__ ChunkError expand_level(const std::uint8_t* flags, std::uint32_t groups,
                                   const std::uint8_t* in, std::uint32_t available,
                                   std::uint32_t* pos, std::uint8_t* out) {
  __shared__ ChunkError error;
  if (threadIdx.x == 0) error = ChunkError::None;
  __syncthreads();
  const std::uint32_t start = *pos;
  const std::uint32_t used = block_prefix_for<T, std::uint32_t>(
      groups, [&](std::uint64_t g) { return popcount32(flags[g]); },
      [&](std::uint64_t g, std::uint32_t at, std::uint32_t) {
        const unsigned m = flags[g];
        std::uint32_t next = start + at;
        for (unsigned j = 0; j < 8; ++j) {
          std::uint8_t v = 0;
          if ((m >> j) & 1u) {
            if (next >= available) {
              error = ChunkError::Truncated;
            } else {
              v = in[next];
              if (v == 0) error = ChunkError::FlaggedByteIsZero;
            }
            ++next;
          }
          out[8 * g + j] = v;
        }
      });
  __syncthreads();
  const ChunkError result = start + used > available ? ChunkError::Truncated : error;
  __syncthreads();
  *pos = start + used;
  return result;
}

__device__ ChunkError decode_chunk(const DecodePlan& p, const Scratch& s, std::uint64_t c,
                                   ChunkMode mode, const std::uint8_t* in, std::uint32_t size,
                                   std::uint8_t* out) {
  const DType dtype = DType(p.dtype);
  const std::uint32_t per_chunk = chunk_elements(dtype, p.chunk_bytes);
  const ChunkLayout l = chunk_layout(dtype, elements_in_chunk(p.count, per_chunk, c));
  const Strides st = strides_for(dtype, p.chunk_bytes);
  if (mode == ChunkMode::Raw) {
    for (std::uint32_t i = threadIdx.x; i < l.raw_bytes; i += T) out[i] = in[i];
    return ChunkError::None;
  }
  __shared__ ChunkError error;
  if (threadIdx.x == 0) error = ChunkError::None;
  std::uint32_t pos = 0, outliers = 0;
  const bool lossy = p.codec == unsigned(Codec::Lossy);
  if (lossy) {
    if (size < 4) return ChunkError::Truncated;
    outliers = load_le32(in);
    if (outliers > l.elements) return ChunkError::OutlierCount;
    if ((size - 4) / 8 < outliers) return ChunkError::Truncated;
    pos = 4 + 8 * outliers;
  }
  __syncthreads();
  for (std::uint32_t k = threadIdx.x; k < outliers; k += T) {
    const std::uint32_t index = load_le32(in + 4 + 4 * std::size_t(k));
    if (index >= l.elements || (k > 0 && index <= load_le32(in + 4 * std::size_t(k))))
      error = ChunkError::OutlierOrder;
  }
  std::uint8_t* shuffled = s.shuffled + c * st.shuffled;
  std::uint8_t* level0 = s.level0 + c * st.level0;
  std::uint8_t* level1 = s.level1 + c * st.level1;
  const std::uint32_t n1 = l.level1_bytes, n2 = l.level2_bytes;
  const std::uint8_t* z = in + pos;
  const std::uint32_t available = size - pos;
  __syncthreads();
  if (error != ChunkError::None) return error;
  if (available < n2) return ChunkError::Truncated;
  if (n1 % 8 != 0 && (z[n2 - 1] >> (n1 % 8)) != 0) return ChunkError::BitmapPadding;
  std::uint32_t at = n2;
  ChunkError e = expand_level(z, n2, z, available, &at, level1);
  if (e == ChunkError::None)
    e = expand_level(level1, l.level0_bytes / 8, z, available, &at, level0);
  if (e == ChunkError::None) e = expand_level(level0, l.level0_bytes, z, available, &at, shuffled);
  if (e != ChunkError::None) return e;
  if (at != available) return ChunkError::TrailingBytes;

  // Unshuffle: lane p holds plane p of a block; lane i gathers bit i of every plane.
  std::uint32_t* values = s.values + c * st.values;
  const auto* words = reinterpret_cast<const std::uint32_t*>(shuffled);
  const unsigned lane = threadIdx.x % 32;
  for (std::uint32_t b = threadIdx.x / 32; b < l.blocks; b += T / 32) {
    const std::uint32_t plane_word = lane < l.bits ? words[plane_word_index(lane, b, l.blocks)] : 0;
    std::uint32_t v = 0;
    for (std::uint32_t q = 0; q < l.bits; ++q)
      v |= ((__shfl_sync(~0u, plane_word, int(q)) >> lane) & 1u) << q;
    const std::uint32_t i = 32 * b + lane;
    if (i < l.elements) {
      values[i] = l.bits == 16 ? std::uint32_t(unzigzag16(std::uint16_t(v))) : unzigzag32(v);
    } else if (v != 0) {
      error = ChunkError::PaddingNotZero;
    }
  }
  __syncthreads();
  if (error != ChunkError::None) return error;
  // Delta: each value is the running sum of the unzigzagged residuals, modulo 2^bits (truncated
  // at the store for 16 bits), which a block scan computes in any order.
  if (mode == ChunkMode::Delta) {
    block_prefix_for<T, std::uint32_t>(
        l.elements, [&](std::uint64_t i) { return values[i]; },
        [&](std::uint64_t i, std::uint32_t before, std::uint32_t mine) {
          values[i] = before + mine;
        });
  }
  __syncthreads();
  if (!lossy) {
    if (dtype == DType::UInt16) {
      auto* o = reinterpret_cast<std::uint16_t*>(out);
      for (std::uint32_t i = threadIdx.x; i < l.elements; i += T) o[i] = std::uint16_t(values[i]);
    } else {
      auto* o = reinterpret_cast<std::uint32_t*>(out);
      for (std::uint32_t i = threadIdx.x; i < l.elements; i += T)
        o[i] = order_float_bits(values[i]);
    }
    return ChunkError::None;
  }
  const double width = lossy_bin_width(p.error_bound);
  auto* o = reinterpret_cast<std::uint32_t*>(out);
  for (std::uint32_t i = threadIdx.x; i < l.elements; i += T) {
    const std::int32_t q = std::int32_t(values[i]);
    float r = 0;
    if (q > std::int32_t(kLossyMaxBin) || q < -std::int32_t(kLossyMaxBin) ||
        !lossy_reconstruct(q, width, &r))
      error = ChunkError::BinOutOfRange;
    o[i] = float_bits(r);
  }
  __syncthreads();
  for (std::uint32_t k = threadIdx.x; k < outliers; k += T) {
    const std::uint32_t index = load_le32(in + 4 + 4 * std::size_t(k));
    if (values[index] != 0) error = ChunkError::OutlierBinNotZero;
    o[index] = load_le32(in + 4 + 4 * std::size_t(outliers + k));
  }
  __syncthreads();
  return error;
}

__global__ void __launch_bounds__(T) decode_chunks(DecompressArgs a) {
  const DecodePlan& p = *a.plan;
  if (p.status != 0) return;
  const std::uint32_t per_chunk = chunk_elements(DType(p.dtype), p.chunk_bytes);
  const std::uint32_t esize = element_bytes(DType(p.dtype));
  const std::uint8_t* payload = a.in + p.payload_at;
  const std::uint8_t* table = a.in + header_bytes(a.in[kNdimAt]);
  for (std::uint64_t c = blockIdx.x; c < p.chunks; c += gridDim.x) {
    const std::uint64_t offset = a.scratch.offsets[c];
    const std::uint64_t padded = a.scratch.offsets[c + 1] - offset;
    const std::uint32_t entry = load_le32(table + 4 * c);
    const std::uint32_t size = entry_size(entry);
    const std::uint8_t* in = payload + offset;
    std::uint64_t sum = 0;
    bool pad_ok = true;
    for (std::uint64_t w = threadIdx.x; w < padded / 4; w += T) {
      const std::uint32_t word = load_le32(in + 4 * w);
      sum += checksum_word_term(word, offset / 4 + w);
      for (std::uint32_t k = 0; k < 4; ++k)
        if (4 * w + k >= size && ((word >> (8 * k)) & 0xFFu) != 0) pad_ok = false;
    }
    const std::uint64_t total = block_sum<T, std::uint64_t>(sum);
    const bool pads_clean = __syncthreads_and(pad_ok);
    if (threadIdx.x == 0) atomicAdd(&a.plan->checksum, static_cast<unsigned long long>(total));
    ChunkError e = ChunkError::TrailingBytes;
    if (pads_clean)
      e = decode_chunk(p, a.scratch, c, ChunkMode(entry_mode_bits(entry)), in, size,
                       a.out + c * std::uint64_t(per_chunk) * esize);
    if (e != ChunkError::None && threadIdx.x == 0)
      atomicMin(&a.plan->first_failure, (static_cast<unsigned long long>(c) << 8) | unsigned(e));
    __syncthreads();
  }
}

__global__ void close_decode(DecodePlan* plan) {
  if (plan->status != 0) return;
  if (plan->checksum != plan->stored_payload_checksum) {
    plan->status = std::uint32_t(DecodeStatus::PayloadChecksum);
  } else if (plan->first_failure != kNoFailure) {
    plan->status = std::uint32_t(DecodeStatus::ChunkDamaged);
  }
}

}  // namespace

void launch_decompress(const DecompressArgs& args, unsigned grid, void* stream) {
  auto* s = static_cast<cudaStream_t>(stream);
  parse_stream<<<1, kStreamThreads, 0, s>>>(args);
  check_launch("parse_stream");
  decode_chunks<<<grid, T, 0, s>>>(args);
  check_launch("decode_chunks");
  close_decode<<<1, 1, 0, s>>>(args.plan);
  check_launch("close_decode");
}

}  // namespace livedrp::gpu::codec_kernels
