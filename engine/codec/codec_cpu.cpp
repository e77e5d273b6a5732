// The CPU backend of the codecs. On one thread chunks are encoded in order straight behind the
// chunk table; with a pool, into a staging area (each into its own slot, so threads never share
// output), then packed at the offsets the chunk table's prefix sum gives. Checksums are sums of
// per-chunk partial sums, so they too split over threads. CpuCompressor keeps both buffers
// between calls; compress_cpu is one call of a fresh one.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>

#include "codec/chunk_cpu.hpp"
#include "codec/codec.hpp"
#include "codec/codec_math.hpp"
#include "codec/container.hpp"
#include "core/memory_limit.hpp"
#include "core/thread_pool.hpp"

namespace livedrp::codec {
namespace {

static_assert(
    std::endian::native == std::endian::little,
    "the CPU codec reads and writes element arrays in host order, which must be little-endian");

// Runs body(begin, end) over [0, count) on the pool (or here). An exception thrown on a worker is
// carried back and rethrown here rather than ending the process.
template <class Body>
void for_ranges(ThreadPool* pool, std::size_t count, Body&& body) {
  if (!pool) {
    if (count) body(std::size_t(0), count);
    return;
  }
  std::mutex mutex;
  std::exception_ptr failure;
  pool->parallel_for(count, [&](std::size_t begin, std::size_t end) {
    try {
      body(begin, end);
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!failure) failure = std::current_exception();
    }
  });
  if (failure) std::rethrow_exception(failure);
}

// Zeroes a chunk's padding (its bytes from `size` up to padded_size(size)) and returns the
// chunk's payload checksum terms, its first word being payload word `offset` / 4.
std::uint64_t pad_and_sum(std::uint8_t* chunk, std::uint32_t size, std::uint64_t offset) {
  const std::uint64_t padded = padded_size(size);
  std::memset(chunk + size, 0, std::size_t(padded - size));
  return checksum_terms(chunk, std::size_t(padded / 4), offset / 4);
}

}  // namespace

std::uint8_t* CpuCompressor::Bytes::reserve(std::size_t size) {
  if (size > capacity || !data) {
    data = std::make_unique_for_overwrite<std::uint8_t[]>(size ? size : 1);
    capacity = size;
  }
  return data.get();
}

std::span<const std::uint8_t> CpuCompressor::compress_array(const void* data, DType dtype,
                                                            const std::vector<std::uint64_t>& shape,
                                                            std::uint64_t count,
                                                            const CodecParams& params,
                                                            ThreadPool* pool) {
  check_params(dtype, params, shape.size());
  const std::uint32_t esize = element_bytes(dtype);
  if (count > std::numeric_limits<std::uint64_t>::max() / 2 / esize)
    fail("element count " + std::to_string(count) + " is too large");
  if (count != 0 && data == nullptr)
    fail("no input data for " + std::to_string(count) + " elements");

  StreamInfo info;
  info.codec = params.codec;
  info.dtype = dtype;
  info.shape = shape;
  info.element_count = count;
  info.chunk_bytes = params.chunk_bytes;
  info.error_bound = params.codec == Codec::Lossy ? params.error_bound : 0.0;
  const std::uint32_t per_chunk = chunk_elements(dtype, params.chunk_bytes);
  info.chunk_count = count / per_chunk + (count % per_chunk != 0);
  info.raw_bytes = count * esize;
  const std::size_t chunks = std::size_t(info.chunk_count);
  const unsigned ndim = unsigned(shape.size());
  const std::size_t payload_at = payload_offset(ndim, info.chunk_count);

  // Room for every chunk stored raw (compressed_bound): a chunk's encoding never exceeds its
  // input, and only the last chunk's padding can go past the input's size.
  std::uint8_t* const out =
      output_.reserve(payload_at + std::size_t(info.raw_bytes) + kPayloadAlignment);
  std::uint8_t* const payload = out + payload_at;
  entries_.resize(chunks);
  offsets_.resize(chunks + 1);
  partial_.resize(chunks);
  const auto* in = static_cast<const std::uint8_t*>(data);
  const auto chunk_input = [&](std::size_t c) { return in + c * params.chunk_bytes; };
  const auto chunk_count = [&](std::size_t c) {
    return elements_in_chunk(count, per_chunk, std::uint64_t(c));
  };
  if (!pool || pool->size() <= 1 || chunks <= 1) {
    // In order, straight to each chunk's place: its offset is known once its predecessors are
    // encoded, and its checksum is taken while its bytes are still in cache.
    ChunkEncoder encoder(info.codec, dtype, info.error_bound, per_chunk);
    std::uint64_t offset = 0;
    for (std::size_t c = 0; c < chunks; ++c) {
      const EncodedChunk e = encoder.encode(chunk_input(c), chunk_count(c), payload + offset);
      entries_[c] = make_table_entry(e.mode, e.bytes);
      offsets_[c] = offset;
      partial_[c] = pad_and_sum(payload + offset, e.bytes, offset);
      offset += padded_size(e.bytes);
    }
    offsets_[chunks] = offset;
  } else {
    // Each chunk into its own slot of the staging area (threads never share output), then
    // packed behind the table at the offsets the prefix sum gives.
    std::uint8_t* const staging = staging_.reserve(std::size_t(info.raw_bytes));
    for_ranges(pool, chunks, [&](std::size_t begin, std::size_t end) {
      ChunkEncoder encoder(info.codec, dtype, info.error_bound, per_chunk);
      for (std::size_t c = begin; c < end; ++c) {
        const EncodedChunk e =
            encoder.encode(chunk_input(c), chunk_count(c), staging + c * params.chunk_bytes);
        entries_[c] = make_table_entry(e.mode, e.bytes);
      }
    });
    offsets_[0] = 0;
    for (std::size_t c = 0; c < chunks; ++c)
      offsets_[c + 1] = offsets_[c] + padded_size(entry_size(entries_[c]));
    for_ranges(pool, chunks, [&](std::size_t begin, std::size_t end) {
      for (std::size_t c = begin; c < end; ++c) {
        const std::uint32_t size = entry_size(entries_[c]);
        std::memcpy(payload + offsets_[c], staging + c * params.chunk_bytes, size);
        partial_[c] = pad_and_sum(payload + offsets_[c], size, offsets_[c]);
      }
    });
  }

  info.payload_bytes = offsets_[chunks];
  info.stream_bytes = payload_at + info.payload_bytes;
  write_header(out, info);
  for (std::size_t c = 0; c < chunks; ++c)
    store_le32(out + header_bytes(ndim) + 4 * c, entries_[c]);
  std::uint64_t checksum = checksum_count_term(info.payload_bytes / 4);
  for (std::uint64_t p : partial_) checksum += p;
  write_checksums(out, ndim, info.chunk_count, checksum);
  return {out, std::size_t(info.stream_bytes)};
}

std::span<const std::uint8_t> CpuCompressor::compress(const void* data, DType dtype,
                                                      const std::vector<std::uint64_t>& shape,
                                                      const CodecParams& params, ThreadPool* pool) {
  if (shape.empty())
    fail("a shape needs at least one dimension (use compress_flat_cpu for a flat array)");
  std::uint64_t count = 1;
  for (std::uint64_t d : shape) {
    if (d != 0 && count > std::numeric_limits<std::uint64_t>::max() / d)
      fail("the shape's element count overflows 64 bits");
    count *= d;
  }
  return compress_array(data, dtype, shape, count, params, pool);
}

std::span<const std::uint8_t> CpuCompressor::compress_flat(const void* data, DType dtype,
                                                           std::uint64_t count,
                                                           const CodecParams& params,
                                                           ThreadPool* pool) {
  return compress_array(data, dtype, {}, count, params, pool);
}

namespace {

// Before anything is decoded or allocated for the output: a corrupted payload is refused for
// the price of reading it once.
void verify_payload(const ParsedStream& s, ThreadPool* pool) {
  const StreamInfo& info = s.info;
  const std::size_t chunks = std::size_t(info.chunk_count);
  std::vector<std::uint64_t> partial(chunks, 0);
  for_ranges(pool, chunks, [&](std::size_t begin, std::size_t end) {
    for (std::size_t c = begin; c < end; ++c)
      partial[c] = checksum_terms(s.payload + s.offsets[c], (s.offsets[c + 1] - s.offsets[c]) / 4,
                                  s.offsets[c] / 4);
  });
  std::uint64_t checksum = checksum_count_term(info.payload_bytes / 4);
  for (std::uint64_t p : partial) checksum += p;
  if (checksum != s.stored_payload_checksum) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "payload checksum mismatch (stored 0x%016llx, computed 0x%016llx): the chunk "
                  "data is corrupted",
                  static_cast<unsigned long long>(s.stored_payload_checksum),
                  static_cast<unsigned long long>(checksum));
    fail(text);
  }
}

StreamInfo decode_into(const ParsedStream& s, std::uint8_t* out, ThreadPool* pool) {
  const StreamInfo& info = s.info;
  const std::size_t chunks = std::size_t(info.chunk_count);
  const std::uint32_t per_chunk = chunk_elements(info.dtype, info.chunk_bytes);
  const std::uint32_t esize = element_bytes(info.dtype);
  std::mutex mutex;
  std::size_t failed_chunk = chunks;
  std::string failure;
  for_ranges(pool, chunks, [&](std::size_t begin, std::size_t end) {
    ChunkDecoder decoder(info.codec, info.dtype, info.error_bound, per_chunk);
    for (std::size_t c = begin; c < end; ++c) {
      const std::uint32_t entry = s.entry(c);
      const std::uint32_t size = entry_size(entry);
      const std::uint8_t* in = s.payload + s.offsets[c];
      ChunkError error = ChunkError::None;
      for (std::uint64_t pad = size; pad < s.offsets[c + 1] - s.offsets[c]; ++pad)
        if (in[pad] != 0) error = ChunkError::TrailingBytes;
      if (error == ChunkError::None)
        error = decoder.decode(ChunkMode(entry_mode_bits(entry)), in, size,
                               elements_in_chunk(info.element_count, per_chunk, c),
                               out + c * std::size_t(per_chunk) * esize);
      if (error != ChunkError::None) {
        // Report the first damaged chunk, whichever thread finds it.
        std::lock_guard lock(mutex);
        if (c < failed_chunk) {
          failed_chunk = c;
          failure = "chunk " + std::to_string(c) + " of " + std::to_string(chunks) + " (mode " +
                    std::to_string(entry_mode_bits(entry)) + ", " + std::to_string(size) +
                    " bytes at payload offset " + std::to_string(s.offsets[c]) +
                    ") cannot be decoded: " + describe(error);
        }
        return;
      }
    }
  });
  if (failed_chunk < chunks) fail(failure);
  return info;
}

}  // namespace

std::vector<std::uint8_t> compress_cpu(const void* data, DType dtype,
                                       const std::vector<std::uint64_t>& shape,
                                       const CodecParams& params, ThreadPool* pool) {
  CpuCompressor compressor;
  const std::span<const std::uint8_t> stream =
      compressor.compress(data, dtype, shape, params, pool);
  return {stream.begin(), stream.end()};
}

std::vector<std::uint8_t> compress_flat_cpu(const void* data, DType dtype, std::uint64_t count,
                                            const CodecParams& params, ThreadPool* pool) {
  CpuCompressor compressor;
  const std::span<const std::uint8_t> stream =
      compressor.compress_flat(data, dtype, count, params, pool);
  return {stream.begin(), stream.end()};
}

StreamInfo read_header(const std::uint8_t* bytes, std::size_t size) {
  return parse_stream(bytes, size).info;
}

DecodedArray decompress_cpu(const std::uint8_t* bytes, std::size_t size, ThreadPool* pool) {
  const ParsedStream s = parse_stream(bytes, size);
  verify_payload(s, pool);
  check_input_allocation(s.info.raw_bytes,
                         "a codec stream of " + std::to_string(s.info.element_count) + " elements");
  DecodedArray result;
  result.bytes.resize(std::size_t(s.info.raw_bytes));
  result.info = decode_into(s, result.bytes.data(), pool);
  return result;
}

StreamInfo decompress_cpu_into(const std::uint8_t* bytes, std::size_t size, void* out,
                               std::size_t out_bytes, ThreadPool* pool) {
  const ParsedStream s = parse_stream(bytes, size);
  if (out_bytes != s.info.raw_bytes)
    fail("the output buffer has " + std::to_string(out_bytes) + " bytes, the stream decodes to " +
         std::to_string(s.info.raw_bytes));
  if (out_bytes != 0 && out == nullptr) fail("no output buffer");
  verify_payload(s, pool);
  return decode_into(s, static_cast<std::uint8_t*>(out), pool);
}

std::uint64_t compressed_bound(DType dtype, std::uint64_t count, unsigned ndim,
                               const CodecParams& params) {
  check_params(dtype, params, ndim);
  const std::uint32_t per_chunk = chunk_elements(dtype, params.chunk_bytes);
  const std::uint64_t chunks = count / per_chunk + (count % per_chunk != 0);
  // Raw chunks: every full one is a multiple of 4 bytes, only the last may need padding.
  return payload_offset(ndim, chunks) + count * element_bytes(dtype) + kPayloadAlignment;
}

const char* to_string(Codec codec) {
  switch (codec) {
    case Codec::Lossless:
      return "lossless";
    case Codec::Lossy:
      return "lossy";
  }
  return "unknown";
}

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::UInt16:
      return "uint16";
    case DType::Float32:
      return "float32";
  }
  return "unknown";
}

}  // namespace livedrp::codec
