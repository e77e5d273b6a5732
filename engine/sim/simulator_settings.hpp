#pragma once
// How the engine's simulator settings (the pipeline configuration's "simulator" section, or the
// one a recording kept in its pipeline_config) become a SimulatorConfig and a pool of events.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/simulator.hpp"

namespace livedrp {

// The ePix10ka gain configurations a simulator recording was made with, from the "simulator"
// section of its pipeline_config: its gain_configs, or, for a recording from before that field,
// all five in turn (the simulator's layout then), so old recordings calibrate as they were made.
// Throws InputError when gain_configs is not a list of names.
std::vector<std::string> recorded_gain_configs(const nlohmann::json& simulator_section);

// Names ("FH", "FM", "FL", "AHL", "AML") -> SimulatorConfig::epix10ka_asic_configs. Throws
// InputError naming a name that is not one.
std::vector<std::uint8_t> epix10ka_configs_from_names(const std::vector<std::string>& names);

// The simulator events that fill a simulated source's pool of `count`: "first" (indices 0 ..
// count - 1) or "hit_fraction" (DetectorSimulator::representative_indices).
std::vector<std::uint64_t> simulator_pool_indices(const DetectorSimulator& simulator,
                                                  std::size_t count, const std::string& selection);

}  // namespace livedrp
