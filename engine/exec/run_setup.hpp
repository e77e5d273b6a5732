#pragma once
// The parts of building a run that only read its configuration, detector and constants, shared by
// the Engine constructor (engine.cpp) and check_engine_config (config_check.hpp), so that a check
// refuses what the engine refuses, with the same words and in the same order. Nothing here
// allocates a backend, touches a device, creates a file or binds a socket. Internal to the engine
// library.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "core/image_assembly.hpp"
#include "exec/engine.hpp"
#include "replay/replay_source.hpp"
#include "sim/simulator.hpp"
#include "stages/compress/compress_stage.hpp"
#include "stages/fidelity/fidelity_stage.hpp"
#include "stages/image/image_stage.hpp"
#include "stages/integrate/integrate_stage.hpp"
#include "stages/peaks/peak_stage.hpp"
#include "stages/stage.hpp"

namespace livedrp::engine_detail {

// Which kind of source `config.source` names; throws InputError for none of them.
struct SourceKind {
  bool replaying = false;
  bool streaming = false;
};
SourceKind check_source_name(const EngineConfig& config);

// A setting that makes the engine hold `events` whole events at once must fit in memory, or the
// run would never start (or take the machine's memory for a short run): refused naming the most
// that fits.
void check_buffered_events(std::int64_t events, const DetectorDescription& detector,
                           const std::string& field);

// A replay source opened as the engine opens it (its files read; no reader started), the pace it
// resolves to, and the simulator seed and gain configurations whose constants calibrate it when no
// constants file is given (a recording from the simulator names its own).
struct ReplaySetup {
  std::unique_ptr<replay::ReplaySource> source;
  std::string pace;
  std::string pace_note;  // why the pace is not the one asked, if it is not
  std::uint64_t constants_seed = 0;
  std::vector<std::string> constants_gain_configs;
};
ReplaySetup open_configured_replay(const EngineConfig& config);

// Once the detector is known: ring and pool sizes, queues, rate, full_ring, and a replay asked to
// run device-resident. `replay_pace`: the replay's pace as resolved (a file without timestamps
// turns "recorded" into "flat_out"). Returns whether the ring drops what it cannot take.
bool check_run_settings(const EngineConfig& config, const DetectorDescription& detector,
                        SourceKind kind, const std::string& replay_pace);

// The simulator whose constants calibrate the run when no constants file is given (and which
// makes the simulated events), with `seed` and gain configurations by name (a replay recorded
// from the simulator gives its recording's).
SimulatorConfig constants_simulator_config(const EngineConfig& config, std::uint64_t seed,
                                           const std::vector<std::string>& gain_configs);
std::unique_ptr<DetectorSimulator> make_constants_simulator(
    const EngineConfig& config, const DetectorDescription& detector, std::uint64_t seed,
    const std::vector<std::string>& gain_configs);

// runtime.launch 'persistent' with a device-resident source calibrates only.
void check_persistent_launch(const EngineConfig& config);

// The run's stages, built against the detector and constants (masks, radius maps, PONI and
// integrator tables, peak finder parameters and gain configurations, codec parameters,
// fidelity), in the run's order: peaks, compress, integrate, fidelity, then the registered ones.
// `assembly` (may be null) places peaks in the image. `constants` must outlive the stages.
struct RunStages {
  std::shared_ptr<stages::CompressStage> compress;
  std::shared_ptr<stages::IntegrateStage> integrate;
  std::shared_ptr<stages::PeakStage> peaks;
  std::shared_ptr<stages::FidelityStage> fidelity;
  std::shared_ptr<stages::ImageStage> image;  // add_image_stage; last in the list
  stages::StageList list;
};
RunStages build_run_stages(const EngineConfig& config, const DetectorDescription& detector,
                           const CalibrationConstants& constants,
                           std::shared_ptr<const ImageAssembly> assembly);

// The `image` topic's stage (stages/image) appended to the run's list: when image.publish_hz is
// above 0 and `assembly` places the image. False (nothing added) otherwise.
bool add_image_stage(RunStages& stages, const EngineConfig& config,
                     const DetectorDescription& detector, const CalibrationConstants& constants,
                     std::shared_ptr<const ImageAssembly> assembly);

// runtime.source 'device': what its lanes cannot run, and the settings it needs (a CUDA backend
// and a usable device among them).
void check_device_source(const EngineConfig& config, const RunStages& stages);

// "record" and "write" as far as they are checked before a file is created: queue sizes, hits
// only with peak finding, the writers' stages and the detector's placement.
void check_record_settings(const EngineConfig& config, const DetectorDescription& detector,
                           const RunStages& stages);
void check_write_settings(const EngineConfig& config, const DetectorDescription& detector,
                          const RunStages& stages);

}  // namespace livedrp::engine_detail
