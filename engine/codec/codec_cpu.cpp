// The CPU backend of the codecs: chunks are encoded into a staging area (each into its own slot,
// so threads never share output), then packed behind the header at the offsets the chunk table's
// prefix sum gives; checksums are sums of per-chunk partial sums, so they too split over threads.
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

std::vector<std::uint8_t> compress_impl(const void* data, DType dtype,
                                        const std::vector<std::uint64_t>& shape,
                                        std::uint64_t count, const CodecParams& params,
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

  const auto* in = static_cast<const std::uint8_t*>(data);
  std::vector<std::uint8_t> staging(std::size_t(info.raw_bytes));
  std::vector<std::uint32_t> entries(chunks);
  for_ranges(pool, chunks, [&](std::size_t begin, std::size_t end) {
    ChunkEncoder encoder(info.codec, dtype, info.error_bound, per_chunk);
    for (std::size_t c = begin; c < end; ++c) {
      const std::size_t at = c * params.chunk_bytes;
      const EncodedChunk e =
          encoder.encode(in + at, elements_in_chunk(count, per_chunk, c), staging.data() + at);
      entries[c] = make_table_entry(e.mode, e.bytes);
    }
  });

  std::vector<std::uint64_t> offsets(chunks + 1, 0);
  for (std::size_t c = 0; c < chunks; ++c)
    offsets[c + 1] = offsets[c] + padded_size(entry_size(entries[c]));
  info.payload_bytes = offsets[chunks];
  const unsigned ndim = unsigned(shape.size());
  const std::size_t payload_at = payload_offset(ndim, info.chunk_count);
  info.stream_bytes = payload_at + info.payload_bytes;
  for (std::uint32_t e : entries) {
    info.raw_chunks += entry_mode_bits(e) == unsigned(ChunkMode::Raw);
    info.sparse_chunks += entry_mode_bits(e) == unsigned(ChunkMode::Sparse);
  }

  std::vector<std::uint8_t> out(std::size_t(info.stream_bytes), 0);
  write_header(out.data(), info);
  for (std::size_t c = 0; c < chunks; ++c)
    store_le32(out.data() + header_bytes(ndim) + 4 * c, entries[c]);
  std::vector<std::uint64_t> partial(chunks, 0);
  std::uint8_t* payload = out.data() + payload_at;
  for_ranges(pool, chunks, [&](std::size_t begin, std::size_t end) {
    for (std::size_t c = begin; c < end; ++c) {
      std::memcpy(payload + offsets[c], staging.data() + c * params.chunk_bytes,
                  entry_size(entries[c]));
      partial[c] =
          checksum_terms(payload + offsets[c], (offsets[c + 1] - offsets[c]) / 4, offsets[c] / 4);
    }
  });
  std::uint64_t checksum = checksum_count_term(info.payload_bytes / 4);
  for (std::uint64_t p : partial) checksum += p;
  write_checksums(out.data(), ndim, info.chunk_count, checksum);
  return out;
}

StreamInfo decode_into(const ParsedStream& s, std::uint8_t* out, ThreadPool* pool) {
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
  if (shape.empty())
    fail("a shape needs at least one dimension (use compress_flat_cpu for a flat array)");
  std::uint64_t count = 1;
  for (std::uint64_t d : shape) {
    if (d != 0 && count > std::numeric_limits<std::uint64_t>::max() / d)
      fail("the shape's element count overflows 64 bits");
    count *= d;
  }
  return compress_impl(data, dtype, shape, count, params, pool);
}

std::vector<std::uint8_t> compress_flat_cpu(const void* data, DType dtype, std::uint64_t count,
                                            const CodecParams& params, ThreadPool* pool) {
  return compress_impl(data, dtype, {}, count, params, pool);
}

StreamInfo read_header(const std::uint8_t* bytes, std::size_t size) {
  return parse_stream(bytes, size).info;
}

DecodedArray decompress_cpu(const std::uint8_t* bytes, std::size_t size, ThreadPool* pool) {
  const ParsedStream s = parse_stream(bytes, size);
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
