// libFuzzer target: a CrystFEL geometry file (.geom), parsed, then turned into what the engine
// makes of it (panel map, radius map, bad-pixel mask, the peak finder's ASICs).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/crystfel_geometry.hpp"
#include "fuzz_refusal.hpp"

namespace {

// Maps are made only for slabs up to this many pixels: an input may declare a 2^31 x 2^31 slab,
// whose maps would only measure the allocator. Out-of-bounds access shows on small slabs as well,
// and the bound keeps each input fast.
constexpr std::size_t kMaxSlabPixels = std::size_t(1) << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace livedrp;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  crystfel::Geometry geometry;
  if (!fuzz::accepted([&] { geometry = crystfel::parse_geometry(text, "fuzz.geom"); })) return 0;
  if (geometry.pixels() > kMaxSlabPixels) return 0;
  fuzz::accepted([&] {
    crystfel::panel_map(geometry);
    crystfel::radius_map(geometry);
    crystfel::bad_mask(geometry);
    crystfel::panel_asics(geometry);
  });
  return 0;
}
