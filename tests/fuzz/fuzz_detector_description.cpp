// libFuzzer target: a detector description file (JSON, resources/detectors), parsed and validated,
// then placed as the live image assembles it (the path where a placement of 1e300 once read out of
// bounds, issue 35).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/detector.hpp"
#include "core/image_assembly.hpp"
#include "core/json_input.hpp"
#include "fuzz_refusal.hpp"

namespace {

// Images are assembled only for detectors up to this many pixels (ImageAssembly allows 16384 on
// a side, 268 Mpixel); out-of-bounds access shows on small detectors as well, and fast.
constexpr std::size_t kMaxPixels = std::size_t(1) << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace livedrp;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  DetectorDescription detector;
  if (!fuzz::accepted([&] {
        detector = parse_detector_description(parse_json_input(text, "fuzz.json"), "fuzz.json");
      }))
    return 0;
  if (detector.pixels() > kMaxPixels) return 0;
  fuzz::accepted([&] {
    const ImageAssembly assembly(detector, 2048);
    std::vector<float> pixels(detector.pixels(), 1.0f);
    std::vector<float> image(assembly.height() * assembly.width());
    assembly.assemble(pixels.data(), image.data());
  });
  return 0;
}
