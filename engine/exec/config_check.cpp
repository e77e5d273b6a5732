#include "exec/config_check.hpp"

#include <optional>

#include "core/error.hpp"
#include "exec/run_setup.hpp"
#include "exec/stream_input.hpp"

namespace livedrp {

using namespace engine_detail;

void check_engine_config(const EngineConfig& c) {
  const SourceKind kind = check_source_name(c);
  std::optional<DetectorDescription> detector;
  std::uint64_t constants_seed = c.seed;
  std::vector<std::string> constants_gain_configs = c.simulator_gain_configs;
  std::string replay_pace;
  if (kind.replaying) {
    const ReplaySetup replay = open_configured_replay(c);
    detector = replay.source->detector();
    replay_pace = replay.pace;
    constants_seed = replay.constants_seed;
    constants_gain_configs = replay.constants_gain_configs;
  } else if (kind.streaming) {
    detector = configured_stream_detector(c);
  } else {
    detector = find_detector(c.source.substr(4));
  }
  if (!detector) return;  // a stream that describes its detector when it starts
  check_run_settings(c, *detector, kind, replay_pace);

  // The built-in stages read only the constants' status words (bad pixels, ePix10ka gain
  // configurations): without a registered stage, which may read any of them, those alone are
  // made, without the pedestals, gains and powder pattern that take most of the simulator's time.
  bool registered_stage = false;
  for (const auto& [name, section] : c.stages)
    registered_stage = registered_stage || section.value("enabled", false);
  CalibrationConstants constants;
  if (!c.constants_file.empty()) {
    constants = load_constants_hdf5(c.constants_file, *detector);
  } else if (!registered_stage) {
    constants.modes = detector->modes();
    constants.pixels = detector->pixels();
    constants.pixel_status = simulated_pixel_status(
        *detector, constants_simulator_config(c, constants_seed, constants_gain_configs));
  } else {
    constants =
        make_constants_simulator(c, *detector, constants_seed, constants_gain_configs)->constants();
  }

  check_persistent_launch(c);
  // No assembly: it only places found peaks in the image.
  const RunStages stages = build_run_stages(c, *detector, constants, nullptr);
  if (c.runtime.source == SourcePlacement::Device) {
    check_device_source(c, stages);
    return;
  }
  check_record_settings(c, *detector, stages);
  check_write_settings(c, *detector, stages);
}

}  // namespace livedrp
