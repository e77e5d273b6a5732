// libFuzzer target: a message of a Dectris SIMPLON stream (version 2, CBOR; engine/stream/dectris),
// which must never throw: the CBOR reader, the start, image and end messages with their tags,
// compressed masks and tables, and then each image channel's data decoded (raw, bslz4, lz4).
#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "stream/dectris/simplon_messages.hpp"

namespace {

// Channels are decoded only up to this size: a message of a few bytes may declare a huge image,
// whose allocation would only measure the allocator; reads and writes out of bounds need no more
// than this to show.
constexpr std::uint64_t kMaxDecodedBytes = std::uint64_t(16) << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace livedrp::stream::dectris;
  const DecodeResult result =
      decode_message(std::span(reinterpret_cast<const std::byte*>(data), size));
  if (!result.message) {
    if (result.problem.reason.empty() || result.problem.what.empty()) __builtin_trap();
    return 0;
  }
  const auto* image = std::get_if<ImageMessage>(&*result.message);
  if (!image) return 0;
  for (const ImageChannel& channel : image->channels) {
    // Sized as the source sizes its image buffer: by what the array says it holds.
    const std::uint64_t bytes = channel.data.bytes();
    if (bytes > kMaxDecodedBytes) continue;
    std::vector<std::byte> out(bytes);
    const Problem problem = decode_array(channel.data, out);
    if (!problem.reason.empty() && problem.what.empty()) __builtin_trap();
  }
  return 0;
}
