#pragma once
// A configuration change as the control socket's apply request gives it (docs/protocol.md): one
// engine's EngineController and an MPI run's collector read it the same way.
#include <string>

#include <nlohmann/json.hpp>

#include "exec/engine.hpp"

namespace livedrp {

// `partial` (a JSON object) merged into `in_force`'s JSON as a merge patch: only the given keys
// change, and the configuration's sections ("runtime", "calibration", "simulator", "compression",
// "replay", "record", "integration", "peak_finding" with its "params", "image") merge key by key;
// then read with EngineConfig::from_json (strict). Throws InputError naming the field.
EngineConfig merge_config_change(const EngineConfig& in_force, const nlohmann::json& partial);

// "publish" is fixed for the life of whatever publishes: `asked` must be the endpoint as `bound`
// or as first `requested`. Throws InputError saying so.
void check_publish_unchanged(const std::string& asked, const std::string& bound,
                             const std::string& requested);

}  // namespace livedrp
