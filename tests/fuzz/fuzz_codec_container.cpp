// libFuzzer target: the compressed-array container (docs/formats.md, "Compressed arrays"), as
// livedrp-codec and the HDF5 readers decode it: header, shape, chunk table, checksums, then every
// chunk's payload. Each input is decoded twice: as it is, and with its two checksums made right
// again, because a mutation almost always breaks a checksum first and the chunk decoders behind
// the checks would otherwise see almost nothing of the fuzzer's work.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/codec.hpp"
#include "codec/codec_format.hpp"
#include "codec/codec_math.hpp"
#include "codec/container.hpp"
#include "fuzz_refusal.hpp"

namespace {

using namespace livedrp;

// Decoded sizes above this are not decoded here. A valid stream of a few bytes may announce
// gigabytes (a chunk of zeros compresses to almost nothing), and the decoder is right to allocate
// them up to input_allocation_limit() (tested in test_input_limits); the fuzzer looks for reads
// and writes out of bounds, which need no more than this to show.
constexpr std::uint64_t kMaxDecodedBytes = std::uint64_t(64) << 20;

// Header fields the repair reads (docs/formats.md, "Container").
constexpr std::size_t kNdimAt = 12, kChunkCountAt = 40, kPayloadBytesAt = 48;

std::uint64_t load_u64(const std::uint8_t* p) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = value << 8 | p[i];
  return value;
}

void decode(const std::uint8_t* data, std::size_t size) {
  codec::StreamInfo info;
  if (!fuzz::accepted([&] { info = codec::read_header(data, size); })) return;
  if (info.raw_bytes > kMaxDecodedBytes) return;
  fuzz::accepted([&] {
    const codec::DecodedArray decoded = codec::decompress_cpu(data, size);
    // What was accepted must be what the header said.
    if (decoded.bytes.size() != info.raw_bytes) __builtin_trap();
  });
}

// A copy of the input with the payload checksum (over the payload it declares, as far as the
// input holds it) and the header checksum written as an encoder would; empty when the input is
// too short or its ndim and chunk count place the checksums outside it.
std::vector<std::uint8_t> with_checksums_repaired(const std::uint8_t* data, std::size_t size) {
  if (size < codec::kFixedHeaderBytes) return {};
  const unsigned ndim = data[kNdimAt];
  const std::uint64_t chunks = load_u64(data + kChunkCountAt);
  if (ndim > codec::kMaxNdim || chunks > size) return {};
  const std::size_t payload_at = codec::payload_offset(ndim, chunks);
  if (payload_at > size) return {};
  std::vector<std::uint8_t> copy(data, data + size);
  const std::uint64_t declared = load_u64(data + kPayloadBytesAt);
  const std::uint64_t held = size - payload_at;
  const std::uint64_t words = (declared < held ? declared : held) / 4;
  const std::uint64_t payload_checksum =
      codec::checksum_count_term(words) + codec::checksum_terms(copy.data() + payload_at, words, 0);
  codec::write_checksums(copy.data(), ndim, chunks, payload_checksum);
  return copy;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  decode(data, size);
  const std::vector<std::uint8_t> repaired = with_checksums_repaired(data, size);
  if (!repaired.empty()) decode(repaired.data(), repaired.size());
  return 0;
}
