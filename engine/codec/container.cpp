#include "codec/container.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "codec/codec_math.hpp"
#include "core/error.hpp"

namespace livedrp::codec {
namespace {

// Fixed-header field offsets (docs/formats.md).
constexpr std::size_t kVersionAt = 8, kCodecAt = 10, kDTypeAt = 11, kNdimAt = 12, kReserved1At = 13,
                      kChunkBytesAt = 16, kReserved2At = 20, kCountAt = 24, kErrorBoundAt = 32,
                      kChunkCountAt = 40, kPayloadBytesAt = 48;

std::string hex64(std::uint64_t v) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(v));
  return text;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

std::uint64_t header_checksum(const std::uint8_t* bytes, std::size_t covered) {
  return checksum_count_term(covered / 4) + checksum_terms(bytes, covered / 4, 0);
}

double load_f64(const std::uint8_t* p) {
  const std::uint64_t bits = load_le64(p);
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

void check_error_bound(Codec codec, double eb, std::uint64_t bits, const char* where) {
  if (codec == Codec::Lossless) {
    if (bits != 0)
      fail(std::string(where) + "error bound " + number(eb) + " must be 0 for the lossless codec");
    return;
  }
  if (!(std::isfinite(eb) && eb > 0 && std::isfinite(lossy_bin_width(eb))))
    fail(std::string(where) + "error bound " + number(eb) +
         " must be finite and > 0 (and twice it finite) for the lossy codec");
}

void check_chunk_bytes(std::uint32_t chunk_bytes, const char* where) {
  if (chunk_bytes < kMinChunkBytes || chunk_bytes > kMaxChunkBytes ||
      chunk_bytes % kChunkBytesMultiple != 0)
    fail(std::string(where) + "chunk size " + std::to_string(chunk_bytes) +
         " bytes must be a multiple of 128 between 1024 and 1048576");
}

}  // namespace

void fail(const std::string& what) {
  throw InputError("compressed stream: " + what);
}

void check_params(DType dtype, const CodecParams& params, std::size_t ndim) {
  if (dtype != DType::UInt16 && dtype != DType::Float32)
    fail("dtype id " + std::to_string(int(dtype)) + " is not uint16 (1) or float32 (2)");
  if (params.codec != Codec::Lossless && params.codec != Codec::Lossy)
    fail("codec id " + std::to_string(int(params.codec)) + " is not lossless (1) or lossy (2)");
  if (params.codec == Codec::Lossy && dtype != DType::Float32)
    fail("the lossy codec takes float32 data, not " + std::string(to_string(dtype)));
  if (params.codec == Codec::Lossy) check_error_bound(Codec::Lossy, params.error_bound, 1, "");
  check_chunk_bytes(params.chunk_bytes, "");
  if (ndim > kMaxNdim)
    fail(std::to_string(ndim) + " dimensions; at most " + std::to_string(kMaxNdim) + " are stored");
}

std::uint32_t ParsedStream::entry(std::uint64_t chunk) const {
  return load_le32(table + 4 * std::size_t(chunk));
}

std::uint64_t checksum_terms(const std::uint8_t* p, std::size_t words, std::uint64_t first_index) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < words; ++i)
    sum += checksum_word_term(load_le32(p + 4 * i), first_index + i);
  return sum;
}

void write_header(std::uint8_t* out, const StreamInfo& info) {
  std::memset(out, 0, header_bytes(unsigned(info.shape.size())));
  std::memcpy(out, kMagic, sizeof kMagic);
  store_le16(out + kVersionAt, kFormatVersion);
  out[kCodecAt] = std::uint8_t(info.codec);
  out[kDTypeAt] = std::uint8_t(info.dtype);
  out[kNdimAt] = std::uint8_t(info.shape.size());
  store_le32(out + kChunkBytesAt, info.chunk_bytes);
  store_le64(out + kCountAt, info.element_count);
  std::uint64_t eb_bits;
  std::memcpy(&eb_bits, &info.error_bound, sizeof eb_bits);
  store_le64(out + kErrorBoundAt, eb_bits);
  store_le64(out + kChunkCountAt, info.chunk_count);
  store_le64(out + kPayloadBytesAt, info.payload_bytes);
  for (std::size_t d = 0; d < info.shape.size(); ++d)
    store_le64(out + kFixedHeaderBytes + 8 * d, info.shape[d]);
}

void write_checksums(std::uint8_t* out, unsigned ndim, std::uint64_t chunk_count,
                     std::uint64_t payload_checksum) {
  const std::size_t at = payload_offset(ndim, chunk_count) - kChecksumBytes;
  store_le64(out + at, payload_checksum);
  store_le64(out + at + 8, header_checksum(out, at + 8));
}

ParsedStream parse_stream(const std::uint8_t* bytes, std::size_t size) {
  // Foreign data first, so that a file of another kind is named as such.
  const std::size_t magic_bytes = size < sizeof kMagic ? size : sizeof kMagic;
  if (bytes == nullptr && size != 0) fail("no buffer");
  if (magic_bytes != 0 && std::memcmp(bytes, kMagic, magic_bytes) != 0)
    fail("not a livedrp compressed stream (its first bytes are not 89 4C 44 52 50 5A 0D 0A)");
  if (size < kFixedHeaderBytes)
    fail("truncated: " + std::to_string(size) + " bytes, the fixed header alone has " +
         std::to_string(kFixedHeaderBytes));
  const unsigned version = load_le16(bytes + kVersionAt);
  if (!version_readable(version))
    fail("format version " + std::to_string(version) + " is not supported (this build reads " +
         std::to_string(kOldestReadableVersion) + " to " + std::to_string(kFormatVersion) + ")");
  const unsigned ndim = bytes[kNdimAt];
  if (ndim > kMaxNdim)
    fail("ndim " + std::to_string(ndim) + " exceeds " + std::to_string(kMaxNdim) +
         " (corrupt header)");
  const std::size_t shape_end = header_bytes(ndim);
  if (size < shape_end)
    fail("truncated: " + std::to_string(size) + " bytes, the header with its " +
         std::to_string(ndim) + " dimensions has " + std::to_string(shape_end));
  // The table size is checked against the buffer before anything is sized from it.
  const std::uint64_t chunk_count = load_le64(bytes + kChunkCountAt);
  if (chunk_count > (size - shape_end) / 4)
    fail("truncated or corrupt: a table of " + std::to_string(chunk_count) +
         " chunks does not fit in the " + std::to_string(size) + "-byte buffer");
  const std::size_t payload_at = payload_offset(ndim, chunk_count);
  if (size < payload_at)
    fail("truncated: " + std::to_string(size) +
         " bytes, the header, chunk table and checksums have " + std::to_string(payload_at));
  const std::size_t checksum_at = payload_at - kChecksumBytes;
  const std::uint64_t stored_header_checksum = load_le64(bytes + checksum_at + 8);
  const std::uint64_t computed_header_checksum = header_checksum(bytes, checksum_at + 8);
  if (stored_header_checksum != computed_header_checksum)
    fail("header checksum mismatch (stored " + hex64(stored_header_checksum) + ", computed " +
         hex64(computed_header_checksum) + "): the header or chunk table is corrupted");

  ParsedStream s;
  StreamInfo& info = s.info;
  info.format_version = std::uint16_t(version);
  const unsigned codec = bytes[kCodecAt], dtype = bytes[kDTypeAt];
  if (codec != unsigned(Codec::Lossless) && codec != unsigned(Codec::Lossy))
    fail("codec id " + std::to_string(codec) + " is not lossless (1) or lossy (2)");
  if (dtype != unsigned(DType::UInt16) && dtype != unsigned(DType::Float32))
    fail("dtype id " + std::to_string(dtype) + " is not uint16 (1) or float32 (2)");
  info.codec = Codec(codec);
  info.dtype = DType(dtype);
  if (info.codec == Codec::Lossy && info.dtype != DType::Float32)
    fail("the lossy codec is defined for float32 only, the header says uint16");
  if (bytes[kReserved1At] || bytes[kReserved1At + 1] || bytes[kReserved1At + 2] ||
      load_le32(bytes + kReserved2At))
    fail("reserved header bytes are not zero (a newer or foreign writer)");
  info.chunk_bytes = load_le32(bytes + kChunkBytesAt);
  check_chunk_bytes(info.chunk_bytes, "header: ");
  info.error_bound = load_f64(bytes + kErrorBoundAt);
  check_error_bound(info.codec, info.error_bound, load_le64(bytes + kErrorBoundAt), "header: ");

  const std::uint32_t esize = element_bytes(info.dtype);
  info.element_count = load_le64(bytes + kCountAt);
  if (info.element_count > std::numeric_limits<std::uint64_t>::max() / 2 / esize)
    fail("element count " + std::to_string(info.element_count) + " is absurd (corrupt header)");
  info.raw_bytes = info.element_count * esize;
  if (ndim > 0) {
    std::uint64_t product = 1;
    bool overflow = false;
    info.shape.resize(ndim);
    for (unsigned d = 0; d < ndim; ++d) {
      info.shape[d] = load_le64(bytes + kFixedHeaderBytes + 8 * d);
      if (info.shape[d] != 0 && product > std::numeric_limits<std::uint64_t>::max() / info.shape[d])
        overflow = true;
      product *= info.shape[d];
    }
    if (overflow || product != info.element_count) {
      std::string dims;
      for (unsigned d = 0; d < ndim; ++d) dims += (d ? " x " : "") + std::to_string(info.shape[d]);
      fail("shape " + dims + " does not hold the " + std::to_string(info.element_count) +
           " elements the header counts");
    }
  }
  const std::uint32_t per_chunk = chunk_elements(info.dtype, info.chunk_bytes);
  const std::uint64_t expected_chunks =
      info.element_count / per_chunk + (info.element_count % per_chunk != 0);
  if (chunk_count != expected_chunks)
    fail("chunk count " + std::to_string(chunk_count) + " does not match " +
         std::to_string(info.element_count) + " elements in chunks of " +
         std::to_string(info.chunk_bytes) + " bytes (" + std::to_string(expected_chunks) + ")");
  info.chunk_count = chunk_count;

  s.table = bytes + shape_end;
  s.offsets.resize(chunk_count + 1);
  std::uint64_t offset = 0;
  for (std::uint64_t c = 0; c < chunk_count; ++c) {
    const std::uint32_t e = s.entry(c);
    const std::uint32_t mode = entry_mode_bits(e), stored = entry_size(e);
    const ChunkLayout layout =
        chunk_layout(info.dtype, elements_in_chunk(info.element_count, per_chunk, c));
    const std::string which = "chunk table entry " + std::to_string(c) + ": ";
    // entry_possible (codec_format.hpp) is the GPU decoder's verdict too; the branches only
    // say why an entry fails it.
    if (!entry_possible(info.codec, layout, e)) {
      if (mode == unsigned(ChunkMode::Raw))
        fail(which + "a raw chunk of " + std::to_string(layout.raw_bytes) +
             " bytes is said to store " + std::to_string(stored));
      if (mode == unsigned(ChunkMode::Sparse) && info.codec != Codec::Lossy)
        fail(which + "mode 3 (sparse) is for lossy streams only");
      const std::uint32_t least = (info.codec == Codec::Lossy ? 4 : 0) +
                                  (mode == unsigned(ChunkMode::Sparse) ? 4 : layout.level2_bytes);
      fail(which + "compressed size " + std::to_string(stored) + " is outside [" +
           std::to_string(least) + ", " + std::to_string(layout.raw_bytes) + ") for a chunk of " +
           std::to_string(layout.elements) + " elements");
    }
    info.raw_chunks += mode == unsigned(ChunkMode::Raw);
    info.sparse_chunks += mode == unsigned(ChunkMode::Sparse);
    s.offsets[c] = offset;
    offset += padded_size(stored);
  }
  s.offsets[chunk_count] = offset;
  info.payload_bytes = load_le64(bytes + kPayloadBytesAt);
  if (info.payload_bytes != offset)
    fail("payload size " + std::to_string(info.payload_bytes) + " in the header differs from the " +
         std::to_string(offset) + " bytes the chunk table adds up to");
  const std::uint64_t available = size - payload_at;
  if (available < offset)
    fail("truncated: the payload has " + std::to_string(available) + " of its " +
         std::to_string(offset) + " bytes");
  if (available > offset)
    fail(std::to_string(available - offset) + " unexpected bytes after the payload");
  info.stream_bytes = size;
  s.payload = bytes + payload_at;
  s.stored_payload_checksum = load_le64(bytes + checksum_at);
  return s;
}

}  // namespace livedrp::codec
