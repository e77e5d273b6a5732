#include "exec/run_setup.hpp"

#include <algorithm>
#include <thread>

#include "core/error.hpp"
#include "core/json_input.hpp"
#include "core/memory_limit.hpp"
#include "core/thread_pool.hpp"
#include "exec/backend.hpp"
#include "exec/live_writers.hpp"
#include "sim/simulator_settings.hpp"
#include "stages/registry.hpp"
#include "stream/stream_source.hpp"

namespace livedrp::engine_detail {

SourceKind check_source_name(const EngineConfig& c) {
  SourceKind kind;
  kind.replaying = c.source.rfind("replay:", 0) == 0;
  kind.streaming = stream::is_stream_source(c.source);
  if (c.source.rfind("sim:", 0) != 0 && !kind.replaying && !kind.streaming)
    throw InputError("unknown source '" + c.source +
                     "' (expected sim:DETECTOR, e.g. sim:epix10ka2m, replay:FILE.h5[:/dataset], "
                     "sls:tcp://HOST:PORT[,...] or dectris:tcp://HOST:PORT)");
  return kind;
}

void check_buffered_events(std::int64_t events, const DetectorDescription& detector,
                           const std::string& field) {
  const std::uint64_t event_bytes = detector.raw_event_bytes();
  const std::uint64_t limit = input_allocation_limit();
  if (events > 0 && std::uint64_t(events) > limit / event_bytes)
    throw InputError(
        field + " " + std::to_string(events) + ": that many " + detector.name + " events of " +
        std::to_string(event_bytes) + " bytes need more than half of " + "this machine's memory (" +
        std::to_string(limit) + " bytes); at most " + std::to_string(limit / event_bytes) + " fit");
}

ReplaySetup open_configured_replay(const EngineConfig& c) {
  ReplaySetup r;
  r.constants_seed = c.seed;
  r.constants_gain_configs = c.simulator_gain_configs;
  const replay::ReplaySpec spec = replay::parse_replay_source(c.source);
  replay::ReplayOptions options;
  options.files = spec.files;
  // Empty: the replay source finds the dataset in the file (NeXus, CXI, livedrp's own).
  options.dataset = !spec.dataset.empty() ? spec.dataset : c.replay.dataset;
  options.detector = c.replay.detector;
  options.loop = c.replay.loop;
  options.prefetch_events = std::size_t(std::max(1, c.replay.prefetch_events));
  options.readers = std::size_t(std::max(0, c.replay.readers));
  r.source = std::make_unique<replay::ReplaySource>(options);
  r.pace = c.replay.pace;
  if (r.pace == "rate" && !(c.rate_hz > 0))
    throw InputError("replay pace 'rate' needs a rate > 0 Hz");
  if (r.pace == "recorded" && !r.source->has_timestamps()) {
    r.pace = "flat_out";
    r.pace_note = "pace 'recorded' asked, but a file has no timestamp dataset: flat out";
  }
  // A file recorded from the simulator is calibrated with the simulator's constants of the
  // recording's seed (from its pipeline_config attribute) unless a constants file is given.
  const std::string& recorded = r.source->files().front().pipeline_config;
  if (c.constants_file.empty() && !recorded.empty()) {
    std::string unreadable;
    const auto json = try_parse_json(recorded, unreadable).value_or(nlohmann::json());
    if (json.is_object() && json.contains("simulator") && json["simulator"].is_object() &&
        json["simulator"].value("seed", nlohmann::json()).is_number_unsigned())
      r.constants_seed = json["simulator"]["seed"].get<std::uint64_t>();
    if (json.is_object() && json.contains("simulator") && json["simulator"].is_object())
      r.constants_gain_configs = recorded_gain_configs(json["simulator"]);
  }
  return r;
}

bool check_run_settings(const EngineConfig& c, const DetectorDescription& detector, SourceKind kind,
                        const std::string& replay_pace) {
  if (c.ring_slots < 1) throw InputError("ring_slots must be at least 1");
  if (c.simulator_pool < 1) throw InputError("simulator pool_events must be at least 1");
  if (!kind.replaying && !kind.streaming)
    check_buffered_events(c.simulator_pool, detector, "simulator.pool_events");
  if (kind.streaming) check_buffered_events(c.stream.queue_events, detector, "stream.queue_events");
  if (!(c.rate_hz >= 0)) throw InputError("rate must be >= 0 Hz (0 = as fast as possible)");
  if (c.full_ring != "auto" && c.full_ring != "drop" && c.full_ring != "wait")
    throw InputError("full_ring must be auto, drop or wait, got '" + c.full_ring + "'");
  // Files are not live: a replay waits for the pipeline unless paced at a rate.
  // A live stream cannot wait: under "auto" it drops what the ring cannot take.
  const bool drop_when_full =
      c.full_ring == "drop" ||
      (c.full_ring == "auto" &&
       (kind.streaming || (c.rate_hz > 0 && (!kind.replaying || replay_pace == "rate"))));
  if (kind.replaying && c.runtime.source == SourcePlacement::Device)
    throw InputError(
        "runtime.source 'device' runs the simulated detector on the GPU; a replay "
        "source is host-fed: use runtime.source 'host'");
  return drop_when_full;
}

SimulatorConfig constants_simulator_config(const EngineConfig& c, std::uint64_t seed,
                                           const std::vector<std::string>& gain_configs) {
  SimulatorConfig simulator_config;
  simulator_config.seed = seed;
  simulator_config.hit_fraction = c.hit_fraction;
  simulator_config.epix10ka_asic_configs = epix10ka_configs_from_names(gain_configs);
  return simulator_config;
}

std::unique_ptr<DetectorSimulator> make_constants_simulator(
    const EngineConfig& c, const DetectorDescription& detector, std::uint64_t seed,
    const std::vector<std::string>& gain_configs) {
  const SimulatorConfig simulator_config = constants_simulator_config(c, seed, gain_configs);
  ThreadPool pool(c.cpu_threads == 0 ? std::thread::hardware_concurrency() : c.cpu_threads);
  return std::make_unique<DetectorSimulator>(detector, simulator_config, &pool);
}

void check_persistent_launch(const EngineConfig& c) {
  // The device-resident pipeline's persistent consumer calibrates only (resident_pipeline.hpp).
  const bool later_stages =
      c.compression.enabled() || c.integration.enabled || c.peak_finding.enabled;
  if (later_stages && c.runtime.source == SourcePlacement::Device &&
      c.runtime.launch == LaunchMode::Persistent)
    throw InputError(
        "runtime.launch 'persistent' with runtime.source 'device' calibrates only (its blocks take "
        "tiles of any event, so no lane holds an event for later stages); compression, "
        "integration and peak finding run with launch 'device_graph', 'graph' or 'plain'");
}

RunStages build_run_stages(const EngineConfig& c, const DetectorDescription& detector,
                           const CalibrationConstants& constants,
                           std::shared_ptr<const ImageAssembly> assembly) {
  RunStages s;
  // Compression and integration are stages of the contract (stages/compress, stages/integrate),
  // in the run's list after peak finding, in that order.
  s.compress = stages::make_compress_stage(c.compression, detector);
  if (c.integration.enabled)
    s.integrate = stages::make_integrate_stage(c.integration, detector, constants);
  // Peak finding is a stage of the contract too (stages/peaks), first in the run's list.
  s.peaks = stages::make_peak_stage(c.peak_finding, detector, constants, std::move(assembly));
  // Compression fidelity (stages/fidelity) compares the three on sampled events, after them.
  s.fidelity = stages::make_fidelity_stage(
      c.fidelity, {detector, constants, c.calibration, s.compress, s.integrate, s.peaks});

  s.list = stages::build_stages(c.stages, {detector, constants});
  if (s.fidelity) s.list.insert(s.list.begin(), s.fidelity);
  if (s.integrate) s.list.insert(s.list.begin(), s.integrate);
  if (s.compress) s.list.insert(s.list.begin(), s.compress);
  if (s.peaks) s.list.insert(s.list.begin(), s.peaks);
  return s;
}

bool add_image_stage(RunStages& s, const EngineConfig& c, const DetectorDescription& detector,
                     const CalibrationConstants& constants,
                     std::shared_ptr<const ImageAssembly> assembly) {
  if (s.image || !(c.image.publish_hz > 0) || !assembly) return false;
  s.image = std::make_shared<stages::ImageStage>(detector, constants, std::move(assembly), s.peaks,
                                                 c.image.publish_hz);
  s.list.push_back(s.image);
  return true;
}

void check_device_source(const EngineConfig& c, const RunStages& s) {
  // The device-resident lanes run peak finding, compression and integration themselves
  // (cuda/resident); other stages of the contract not yet.
  if (s.fidelity)
    throw InputError(
        "fidelity.enabled: not available with runtime.source 'device': its lanes write each "
        "event's stream into a device arena that no step copies back to the host for a "
        "sample (the host-fed CUDA backend does); use runtime.source 'host' or set "
        "fidelity.enabled false");
  for (const auto& stage : s.list)
    if (stage != s.integrate && stage != s.compress && stage != s.peaks && stage != s.image)
      throw InputError("stage '" + stage->name() +
                       "' runs on the host-fed backends only, not yet with runtime.source "
                       "'device'; use runtime.source 'host'");
  if (c.write.enabled())
    throw InputError(
        "--write-hits, --write-profiles and --write-average (write.*) are not available with "
        "runtime.source "
        "'device' yet: its results reach the host without the calibrated image; use "
        "runtime.source 'host'");
  if (c.backend == "cpu")
    throw InputError("runtime.source 'device' needs the CUDA backend (backend is 'cpu')");
  if (const auto reason = cuda_unavailable_reason())
    throw InputError("runtime.source 'device' needs a usable CUDA device: " + *reason);
  if (c.runtime.on_fault == FaultPolicy::FallbackCpu)
    throw InputError(
        "runtime.on_fault 'fallback_cpu' cannot go with runtime.source 'device': "
        "the events live in GPU memory; use on_fault 'stop'");
  if (c.runtime.batch != 1 || c.runtime.segments != SegmentsPerLaunch::All)
    throw InputError(
        "runtime.source 'device' runs one whole event per launch: batch must be 1 "
        "and segments_per_launch 'all'");
  if (c.ring_slots < 2 || c.ring_slots > 1024)
    throw InputError("runtime.source 'device': ring_slots must be 2..1024, got " +
                     std::to_string(c.ring_slots));
}

void check_record_settings(const EngineConfig& c, const DetectorDescription& detector,
                           const RunStages& s) {
  if (c.record.enabled())
    check_buffered_events(c.record.queue_events, detector, "record.queue_events");
  if (c.record.enabled() && c.record.hits_only && !s.peaks)
    throw InputError(
        "record.hits_only (--record-hits-only) needs live peak finding: its hits are "
        "peakfinder8's; set peak_finding.enabled in the configuration");
}

void check_write_settings(const EngineConfig& c, const DetectorDescription& detector,
                          const RunStages& s) {
  if (!c.write.enabled()) return;
  if (c.write.copies_images())
    check_buffered_events(c.write.queue_events, detector, "write.queue_events");
  LiveWriters::check(c, detector, s.list);
}

}  // namespace livedrp::engine_detail
