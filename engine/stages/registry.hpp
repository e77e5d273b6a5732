#pragma once
// The stages a pipeline configuration may name, in registration order, and the run's ordered
// list built from a configuration. Adding a stage is one call: register_stage({name, parse,
// build}) before the configuration is read (a tool's main, a test's set-up).
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "stages/stage.hpp"

namespace livedrp::stages {

// Throws InputError for a name that is not [a-z0-9_]+, one of the engine's own configuration
// sections, or already registered; for a type without parse or build.
void register_stage(StageType type);

// Registered names, in registration order (the order the stages run in).
std::vector<std::string> registered_stage_names();
bool is_registered(std::string_view name);

// Reads a stage's section: {"enabled": bool (default false), the stage's own fields}. Returns
// it with every default filled in. Throws InputError naming "<name>.<field>" and `origin`.
nlohmann::json parse_stage_section(std::string_view name, const nlohmann::json& section,
                                   const std::string& origin);

// The run's stages: every registered stage whose section (as parse_stage_section returned it)
// is enabled, in registration order. Throws InputError for a section no stage is registered
// under, or what a stage's build refuses (its text prefixed with the stage's name).
StageList build_stages(const std::map<std::string, nlohmann::json>& sections,
                       const StageContext& context);

}  // namespace livedrp::stages
