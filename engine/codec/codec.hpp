#pragma once
// Compression of detector arrays into self-describing, per-event-separable streams (the container
// of docs/formats.md, "Compressed arrays"), and back, on the CPU.
//
//   Codec::Lossless  uint16 or float32, bit-exact (NaN payloads, -0.0, denormals, infinities).
//   Codec::Lossy     float32 with an absolute error bound eb: every decoded value is within eb of
//                    the original, and NaN, infinities and any value the bins cannot hold within
//                    eb come back bit-exact.
//
// The input is cut into chunks of `chunk_bytes` that are compressed independently (in parallel
// when a ThreadPool is given); the bytes of a stream depend only on the input and the parameters,
// never on the pool or the backend. Decoders validate every field, size and offset against the
// buffer before reading, verify both checksums, and throw InputError naming what is wrong.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "codec/codec_format.hpp"

namespace livedrp {
class ThreadPool;
}

namespace livedrp::codec {

struct CodecParams {
  Codec codec = Codec::Lossless;
  // Absolute error bound, in the data's unit: finite and > 0 for Codec::Lossy, ignored (stored as
  // 0) for Codec::Lossless.
  double error_bound = 0;
  // Bytes of input per chunk: a multiple of 128 in [1024, 1 MiB]. Smaller chunks give more
  // parallelism and finer random access; larger ones amortise the per-chunk bitmaps and table.
  std::uint32_t chunk_bytes = kDefaultChunkBytes;
};

// What a stream's header and chunk table say, after validation.
struct StreamInfo {
  std::uint16_t format_version = kFormatVersion;
  Codec codec = Codec::Lossless;
  DType dtype = DType::UInt16;
  std::vector<std::uint64_t> shape;  // C order; empty: a flat array of element_count elements
  std::uint64_t element_count = 0;
  std::uint32_t chunk_bytes = kDefaultChunkBytes;
  double error_bound = 0;  // 0 for lossless streams
  std::uint64_t chunk_count = 0;
  std::uint64_t raw_chunks = 0;     // chunks stored uncompressed (not compressible)
  std::uint64_t sparse_chunks = 0;  // lossy chunks stored as a list of their nonzero bins
  std::uint64_t raw_bytes = 0;      // element_count * element size
  std::uint64_t payload_bytes = 0;  // chunk data, including the padding between chunks
  std::uint64_t stream_bytes = 0;   // the whole stream: header, table, checksums, payload

  // raw_bytes / stream_bytes (0 for an empty array).
  double ratio() const {
    return stream_bytes && raw_bytes ? double(raw_bytes) / double(stream_bytes) : 0.0;
  }
};

struct DecodedArray {
  StreamInfo info;
  std::vector<std::uint8_t> bytes;  // info.raw_bytes bytes: the elements, little-endian, C order
};

// Compresses `shape` (1 to 8 dimensions, C order) elements of `dtype` at `data` (host byte order,
// which must be little-endian). Throws InputError for unusable parameters: a chunk size out of
// range, a lossy codec on uint16 data, a bound that is not finite and positive, too many
// dimensions.
std::vector<std::uint8_t> compress_cpu(const void* data, DType dtype,
                                       const std::vector<std::uint64_t>& shape,
                                       const CodecParams& params, ThreadPool* pool = nullptr);
// The same for a flat array of `count` elements (stored with ndim 0).
std::vector<std::uint8_t> compress_flat_cpu(const void* data, DType dtype, std::uint64_t count,
                                            const CodecParams& params, ThreadPool* pool = nullptr);

// Compresses array after array (as compress_cpu does, to the same bytes) into memory it keeps:
// after the first call of a size nothing is allocated, cleared or faulted in again. compress_cpu
// allocates its output and working memory on every call, which for a float32 event of 8.6 MB
// cost more than its encoding. Without a pool (or with one thread) chunks are encoded straight
// into the output; with one, into a staging area that threads fill side by side, then packed.
class CpuCompressor {
 public:
  // As compress_cpu and compress_flat_cpu; the stream stays valid until the next call.
  std::span<const std::uint8_t> compress(const void* data, DType dtype,
                                         const std::vector<std::uint64_t>& shape,
                                         const CodecParams& params, ThreadPool* pool = nullptr);
  std::span<const std::uint8_t> compress_flat(const void* data, DType dtype, std::uint64_t count,
                                              const CodecParams& params,
                                              ThreadPool* pool = nullptr);

 private:
  // Bytes that are written before they are read: grown without being cleared.
  struct Bytes {
    std::unique_ptr<std::uint8_t[]> data;
    std::size_t capacity = 0;
    std::uint8_t* reserve(std::size_t size);
  };
  std::span<const std::uint8_t> compress_array(const void* data, DType dtype,
                                               const std::vector<std::uint64_t>& shape,
                                               std::uint64_t count, const CodecParams& params,
                                               ThreadPool* pool);

  Bytes output_, staging_;
  std::vector<std::uint32_t> entries_;
  std::vector<std::uint64_t> offsets_, partial_;
};

// Validates the header, the chunk table and every size against `size`, without reading the
// payload (its checksum is verified by the decoders). Throws InputError.
StreamInfo read_header(const std::uint8_t* bytes, std::size_t size);

// Decodes a whole stream. Throws InputError for damaged, truncated or foreign input; in that
// case nothing is returned.
DecodedArray decompress_cpu(const std::uint8_t* bytes, std::size_t size,
                            ThreadPool* pool = nullptr);
// Decodes into `out` (exactly read_header(...).raw_bytes bytes; InputError otherwise). `out` may
// hold partial output when an error is thrown.
StreamInfo decompress_cpu_into(const std::uint8_t* bytes, std::size_t size, void* out,
                               std::size_t out_bytes, ThreadPool* pool = nullptr);

// Largest stream compress_cpu can produce for these arguments (every chunk stored raw): the size
// to reserve for an output buffer filled by any backend.
std::uint64_t compressed_bound(DType dtype, std::uint64_t count, unsigned ndim,
                               const CodecParams& params);

const char* to_string(Codec codec);  // "lossless", "lossy"
const char* to_string(DType dtype);  // "uint16", "float32"

}  // namespace livedrp::codec
