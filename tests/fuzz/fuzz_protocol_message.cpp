// libFuzzer target: a message from the publish socket as every subscriber decodes it
// (docs/protocol.md): the parts' envelope (protocol::decode), then the topic's own payload and
// frames (stats, status, profile, peaks, image), as the GUI's models read them.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fuzz_refusal.hpp"
#include "protocol/message.hpp"
#include "protocol/peaks_topic.hpp"
#include "protocol/profile_topic.hpp"
#include "protocol/topics.hpp"

namespace {

// The input is the message's parts, each ended by this separator (the last part by the end of
// the input), so that the fuzzer varies the part count and each part independently. It is a byte
// sequence no JSON header contains, so a seed is the parts joined with it.
constexpr std::string_view kPartSeparator = "\n--part--\n";

std::vector<std::string_view> split_parts(std::string_view input) {
  std::vector<std::string_view> parts;
  for (;;) {
    const std::size_t end = input.find(kPartSeparator);
    parts.push_back(input.substr(0, end));
    if (end == std::string_view::npos) return parts;
    input.remove_prefix(end + kPartSeparator.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace livedrp;
  const std::vector<std::string_view> parts =
      split_parts({reinterpret_cast<const char*>(data), size});
  protocol::Message message;
  if (!fuzz::accepted([&] { message = protocol::decode(parts); })) return 0;
  fuzz::accepted([&] {
    if (message.topic == "stats") protocol::stats_from_json(message.payload);
    if (message.topic == "status") protocol::status_from_json(message.payload);
    if (message.topic == "profile") protocol::profile_from_message(message);
    if (message.topic == "peaks") protocol::peaks_from_message(message);
    if (message.topic == "image") protocol::image_from_message(message);
  });
  // What was decoded encodes again, as a client that relays messages would do.
  protocol::encode(message);
  return 0;
}
