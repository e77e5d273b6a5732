#include "stages/registry.hpp"

#include <algorithm>
#include <array>
#include <mutex>

#include "core/error.hpp"

namespace livedrp::stages {
namespace {

// Keys the engine's configuration already uses (EngineConfig::from_json), the names its
// built-in stages take in stats.stages, and the protocol's topics: a stage's name is all three
// of those for it, so it may be none of these.
constexpr std::array<std::string_view, 30> kReserved = {
    "schema_version", "source",       "events",
    "rate_hz",        "full_ring",    "run",
    "backend",        "cpu_threads",  "publish",
    "constants_file", "ring_slots",   "stats_interval_s",
    "calibration",    "runtime",      "simulator",
    "compression",    "replay",       "record",
    "integration",    "peak_finding", "image",
    "calibrate",      "compress",     "integrate",
    "peak",           "stats",        "status",
    "peaks",          "write",        "fidelity"};

struct Registry {
  std::mutex mutex;
  std::vector<StageType> types;  // registration order
};

Registry& registry() {
  static Registry instance;
  return instance;
}

const StageType* find_locked(Registry& r, std::string_view name) {
  for (const StageType& type : r.types)
    if (type.name == name) return &type;
  return nullptr;
}

bool valid_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

void register_stage(StageType type) {
  if (!valid_name(type.name))
    throw InputError("stage registry: name '" + type.name +
                     "' must be lower-case letters, digits and '_'");
  if (std::find(kReserved.begin(), kReserved.end(), type.name) != kReserved.end())
    throw InputError("stage registry: '" + type.name +
                     "' is a name the engine's configuration, stats or protocol already uses");
  if (!type.parse || !type.build)
    throw InputError("stage registry: stage '" + type.name + "' needs both parse and build");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (find_locked(r, type.name))
    throw InputError("stage registry: a stage named '" + type.name + "' is registered already");
  r.types.push_back(std::move(type));
}

std::vector<std::string> registered_stage_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const StageType& type : r.types) names.push_back(type.name);
  return names;
}

bool is_registered(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return find_locked(r, name) != nullptr;
}

nlohmann::json parse_stage_section(std::string_view name, const nlohmann::json& section,
                                   const std::string& origin) {
  StageType type;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    const StageType* found = find_locked(r, name);
    if (!found)
      throw InputError("configuration " + origin + ": no stage named '" + std::string(name) +
                       "' is registered");
    type = *found;  // a copy: the stage's parse runs without the registry's lock
  }
  FieldReader reader(section, origin, type.name);
  bool enabled = false;
  reader.read("enabled", enabled);
  nlohmann::json settings = type.parse(reader);
  reader.reject_unknown_keys();
  if (settings.is_null()) settings = nlohmann::json::object();
  if (!settings.is_object())
    throw RuntimeFault("stage '" + type.name + "': parse returned " + settings.dump() +
                       ", not a JSON object");
  settings["enabled"] = enabled;
  return settings;
}

StageList build_stages(const std::map<std::string, nlohmann::json>& sections,
                       const StageContext& context) {
  std::vector<StageType> types;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    types = r.types;
  }
  // The key is named outside the binding: clang before 16 cannot capture a structured binding.
  for (const auto& entry : sections) {
    const std::string& name = entry.first;
    if (std::none_of(types.begin(), types.end(),
                     [&](const StageType& t) { return t.name == name; }))
      throw InputError("configuration: section '" + name + "' names no registered stage");
  }
  StageList list;
  for (const StageType& type : types) {
    const auto it = sections.find(type.name);
    if (it == sections.end() || !it->second.value("enabled", false)) continue;
    try {
      std::unique_ptr<Stage> stage = type.build(it->second, context);
      if (!stage || stage->name() != type.name)
        throw RuntimeFault("stage '" + type.name + "': build returned " +
                           (stage ? "a stage named '" + stage->name() + "'" : "nothing"));
      list.push_back(std::move(stage));
    } catch (const InputError& e) {
      throw InputError(type.name + ": " + e.what());
    }
  }
  return list;
}

}  // namespace livedrp::stages
