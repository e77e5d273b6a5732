#include "sim/simulator_settings.hpp"

#include <optional>

#include "calib/constants.hpp"
#include "core/error.hpp"

namespace livedrp {

std::vector<std::string> recorded_gain_configs(const nlohmann::json& simulator_section) {
  const auto configs = simulator_section.find("gain_configs");
  std::vector<std::string> names;
  if (configs == simulator_section.end()) {
    for (std::uint8_t value : every_epix10ka_config())
      names.push_back(epix10ka_config_names()[value]);
    return names;
  }
  if (configs->is_array())
    for (const nlohmann::json& name : *configs)
      if (name.is_string()) names.push_back(name.get<std::string>());
  if (names.empty() || names.size() != configs->size())
    throw InputError("replay: the recording's pipeline_config has simulator.gain_configs " +
                     configs->dump() + "; expected a list of ePix10ka gain-configuration names");
  return names;
}

std::vector<std::uint8_t> epix10ka_configs_from_names(const std::vector<std::string>& names) {
  std::vector<std::uint8_t> values;
  for (const std::string& name : names) {
    const std::optional<std::uint8_t> value = epix10ka_config_value(name);
    if (!value)
      throw InputError("simulator.gain_configs: \"" + name +
                       "\" is not an ePix10ka gain configuration (FH, FM, FL, AHL, AML)");
    values.push_back(*value);
  }
  return values;
}

std::vector<std::uint64_t> simulator_pool_indices(const DetectorSimulator& simulator,
                                                  std::size_t count, const std::string& selection) {
  if (selection == "hit_fraction") return simulator.representative_indices(count);
  std::vector<std::uint64_t> indices(count);
  for (std::size_t i = 0; i < count; ++i) indices[i] = i;
  return indices;
}

}  // namespace livedrp
