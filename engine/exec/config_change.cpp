#include "exec/config_change.hpp"

#include "core/error.hpp"

namespace livedrp {
namespace {

// The nested objects of the configuration JSON that a partial change merges key by key; any
// other key given replaces the value.
constexpr const char* kMergedObjects[] = {"runtime",      "calibration", "simulator", "compression",
                                          "fidelity",     "replay",      "record",    "integration",
                                          "peak_finding", "image",       "write"};

bool is_merged_object(const std::string& key) {
  for (const char* name : kMergedObjects)
    if (key == name) return true;
  return false;
}

}  // namespace

EngineConfig merge_config_change(const EngineConfig& in_force, const nlohmann::json& partial) {
  if (!partial.is_object())
    throw InputError("configuration change must be a JSON object, got " +
                     std::string(partial.type_name()));
  nlohmann::json merged = in_force.to_json();
  for (const auto& [key, value] : partial.items()) {
    auto target = merged.find(key);
    if (is_merged_object(key) && value.is_object() && target != merged.end() &&
        target->is_object()) {
      for (const auto& [inner_key, inner_value] : value.items()) {
        // peak_finding.params merges by parameter name too: one changed parameter keeps the rest.
        auto inner = target->find(inner_key);
        if (key == "peak_finding" && inner_key == "params" && inner_value.is_object() &&
            inner != target->end() && inner->is_object())
          inner->update(inner_value);
        else
          (*target)[inner_key] = inner_value;
      }
    } else {
      merged[key] = value;  // unknown keys and ill-typed values are from_json's to name
    }
  }
  return EngineConfig::from_json(merged, "change");
}

void check_publish_unchanged(const std::string& asked, const std::string& bound,
                             const std::string& requested) {
  if (asked != bound && asked != requested)
    throw InputError(
        "configuration change: field 'publish' cannot change while the engine "
        "runs (it is \"" +
        bound + "\", asked for \"" + asked +
        "\"); subscribers stay connected to one endpoint for the engine's life, "
        "so restart the engine to publish elsewhere");
}

}  // namespace livedrp
