// libFuzzer target: the JSON header that leads every message of an slsDetectorPackage receiver's
// ZeroMQ stream (engine/stream/sls), which must never throw: a refused header is counted by
// reason ("foreign", "malformed", "unsupported") and named.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "stream/sls/sls_header.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace livedrp::stream::sls;
  const SlsHeaderResult result = parse_sls_header({reinterpret_cast<const char*>(data), size});
  if (result.header) {
    epoch_timestamp_ns(*result.header);
  } else if (result.reason.empty() || result.problem.empty()) {
    __builtin_trap();  // a refusal that says neither its reason nor the problem
  }
  return 0;
}
