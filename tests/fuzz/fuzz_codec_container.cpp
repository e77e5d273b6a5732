// libFuzzer target: the compressed-array container (docs/formats.md, "Compressed arrays"), as
// livedrp-codec and the HDF5 readers decode it: header, shape, chunk table, checksums, then every
// chunk's payload.
#include <cstddef>
#include <cstdint>

#include "codec/codec.hpp"
#include "fuzz_refusal.hpp"

namespace {

// Decoded sizes above this are not decoded here. A valid stream of a few bytes may announce
// gigabytes (a chunk of zeros compresses to almost nothing), and the decoder is right to allocate
// them up to input_allocation_limit() (tested in test_input_limits); the fuzzer looks for reads
// and writes out of bounds, which need no more than this to show.
constexpr std::uint64_t kMaxDecodedBytes = std::uint64_t(64) << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace livedrp;
  codec::StreamInfo info;
  if (!fuzz::accepted([&] { info = codec::read_header(data, size); })) return 0;
  if (info.raw_bytes > kMaxDecodedBytes) return 0;
  fuzz::accepted([&] {
    const codec::DecodedArray decoded = codec::decompress_cpu(data, size);
    // What was accepted must be what the header said.
    if (decoded.bytes.size() != info.raw_bytes) __builtin_trap();
  });
  return 0;
}
