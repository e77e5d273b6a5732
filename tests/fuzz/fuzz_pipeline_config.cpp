// libFuzzer target: a pipeline configuration file (JSON, docs/formats.md), read as
// load_engine_config_file reads it: the bounded JSON parse, then EngineConfig::from_json, which
// validates every field; an accepted configuration must write back to JSON that reads again.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/json_input.hpp"
#include "exec/engine.hpp"
#include "fuzz_refusal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace livedrp;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  EngineConfig config;
  if (!fuzz::accepted([&] {
        config = EngineConfig::from_json(parse_json_input(text, "fuzz.json"), "fuzz.json");
      }))
    return 0;
  // Its own output must never be refused: the GUI saves it and the control socket echoes it.
  if (!fuzz::accepted([&] { EngineConfig::from_json(config.to_json(), "round trip"); }))
    __builtin_trap();
  return 0;
}
