// libFuzzer target: a pyFAI PONI file (versions 1, 2 and 2.1, with Detector_config JSON), as the
// integration stage and livedrp-engine integrate read it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_refusal.hpp"
#include "integrate/poni.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace livedrp;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::accepted([&] { integrate::parse_poni(text, "fuzz.poni"); });
  return 0;
}
