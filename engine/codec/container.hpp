#pragma once
// The container around the chunks: header, shape, chunk table and checksums (docs/formats.md,
// "Compressed arrays"). Writing is split so that chunk payloads can be produced by any backend;
// parsing validates everything that can be validated without the payload, in an order that names
// the most likely cause (foreign data, then truncation, then corruption, then bad fields).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codec/codec.hpp"

namespace livedrp::codec {

inline constexpr std::uint8_t kMagic[8] = {0x89, 'L', 'D', 'R', 'P', 'Z', '\r', '\n'};

// Throws InputError("compressed stream: " + what).
[[noreturn]] void fail(const std::string& what);

// Throws InputError for parameters compress_cpu cannot use.
void check_params(DType dtype, const CodecParams& params, std::size_t ndim);

// A stream whose header and chunk table passed validation.
struct ParsedStream {
  StreamInfo info;
  const std::uint8_t* table = nullptr;    // chunk_count little-endian u32 entries
  const std::uint8_t* payload = nullptr;  // info.payload_bytes bytes
  std::vector<std::uint64_t> offsets;     // chunk_count + 1 payload offsets (prefix sum)
  std::uint64_t stored_payload_checksum = 0;

  std::uint32_t entry(std::uint64_t chunk) const;
};

ParsedStream parse_stream(const std::uint8_t* bytes, std::size_t size);

// Sum of checksum_word_term over the `words` little-endian words at `p`, the first having index
// `first_index` (the caller adds checksum_count_term once for the whole range).
std::uint64_t checksum_terms(const std::uint8_t* p, std::size_t words, std::uint64_t first_index);

// Writes the fixed header and the shape (header_bytes(ndim) bytes) for `info`; the table follows.
void write_header(std::uint8_t* out, const StreamInfo& info);
// Writes the payload checksum, then the header checksum over everything before it.
void write_checksums(std::uint8_t* out, unsigned ndim, std::uint64_t chunk_count,
                     std::uint64_t payload_checksum);

}  // namespace livedrp::codec
