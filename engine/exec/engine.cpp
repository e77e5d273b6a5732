#include "exec/engine.hpp"

#include <algorithm>
#include <thread>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/json_input.hpp"
#include "core/memory_limit.hpp"
#include "core/thread_pool.hpp"
#include "exec/engine_impl.hpp"
#include "exec/stream_input.hpp"
#include "protocol/profile_topic.hpp"
#include "sim/simulator_settings.hpp"
#include "stages/compress/compress_stage.hpp"
#include "stages/fidelity/fidelity_stage.hpp"
#include "stages/integrate/integrate_stage.hpp"
#include "stages/peaks/peak_stage.hpp"
#include "stages/registry.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/device.hpp"
#endif

namespace livedrp {
using namespace engine_detail;

namespace {

// A setting that makes the engine hold `events` whole events at once must fit in memory, or the
// run would never start (or take the machine's memory for a short run): refused naming the most
// that fits.
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

}  // namespace

Engine::Engine(EngineConfig config) : Engine(config, nullptr) {}

Engine::Engine(EngineConfig config, std::shared_ptr<Publisher> publisher)
    : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.config = std::move(config);
  const EngineConfig& c = d.config;
  const bool replaying = c.source.rfind("replay:", 0) == 0;
  const bool streaming = stream::is_stream_source(c.source);
  if (c.source.rfind("sim:", 0) != 0 && !replaying && !streaming)
    throw InputError("unknown source '" + c.source +
                     "' (expected sim:DETECTOR, e.g. sim:epix10ka2m, replay:FILE.h5[:/dataset], "
                     "sls:tcp://HOST:PORT[,...] or dectris:tcp://HOST:PORT)");
  std::uint64_t constants_seed = c.seed;
  std::vector<std::string> constants_gain_configs = c.simulator_gain_configs;
  if (replaying) {
    const replay::ReplaySpec spec = replay::parse_replay_source(c.source);
    replay::ReplayOptions options;
    options.files = spec.files;
    // Empty: the replay source finds the dataset in the file (NeXus, CXI, livedrp's own).
    options.dataset = !spec.dataset.empty() ? spec.dataset : c.replay.dataset;
    options.detector = c.replay.detector;
    options.loop = c.replay.loop;
    options.prefetch_events = std::size_t(std::max(1, c.replay.prefetch_events));
    options.readers = std::size_t(std::max(0, c.replay.readers));
    d.replay_source = std::make_unique<replay::ReplaySource>(options);
    d.detector = d.replay_source->detector();
    d.replay_pace = c.replay.pace;
    if (d.replay_pace == "rate" && !(c.rate_hz > 0))
      throw InputError("replay pace 'rate' needs a rate > 0 Hz");
    if (d.replay_pace == "recorded" && !d.replay_source->has_timestamps()) {
      d.replay_pace = "flat_out";
      d.replay_pace_note = "pace 'recorded' asked, but a file has no timestamp dataset: flat out";
    }
    // A file recorded from the simulator is calibrated with the simulator's constants of the
    // recording's seed (from its pipeline_config attribute) unless a constants file is given.
    const std::string& recorded = d.replay_source->files().front().pipeline_config;
    if (c.constants_file.empty() && !recorded.empty()) {
      std::string unreadable;
      const auto json = try_parse_json(recorded, unreadable).value_or(nlohmann::json());
      if (json.is_object() && json.contains("simulator") && json["simulator"].is_object() &&
          json["simulator"].value("seed", nlohmann::json()).is_number_unsigned())
        constants_seed = json["simulator"]["seed"].get<std::uint64_t>();
      if (json.is_object() && json.contains("simulator") && json["simulator"].is_object())
        constants_gain_configs = recorded_gain_configs(json["simulator"]);
    }
  } else if (streaming) {
    d.stream_source = open_configured_stream(c);
    d.detector = d.stream_source->detector();
  } else {
    d.detector = find_detector(c.source.substr(4));
  }
  if (c.ring_slots < 1) throw InputError("ring_slots must be at least 1");
  if (c.simulator_pool < 1) throw InputError("simulator pool_events must be at least 1");
  if (!replaying && !streaming)
    check_buffered_events(c.simulator_pool, d.detector, "simulator.pool_events");
  if (streaming) check_buffered_events(c.stream.queue_events, d.detector, "stream.queue_events");
  if (!(c.rate_hz >= 0)) throw InputError("rate must be >= 0 Hz (0 = as fast as possible)");
  if (c.full_ring != "auto" && c.full_ring != "drop" && c.full_ring != "wait")
    throw InputError("full_ring must be auto, drop or wait, got '" + c.full_ring + "'");
  // Files are not live: a replay waits for the pipeline unless paced at a rate.
  // A live stream cannot wait: under "auto" it drops what the ring cannot take.
  d.drop_when_full = c.full_ring == "drop" ||
                     (c.full_ring == "auto" &&
                      (streaming || (c.rate_hz > 0 && (!replaying || d.replay_pace == "rate"))));
  if (replaying && c.runtime.source == SourcePlacement::Device)
    throw InputError(
        "runtime.source 'device' runs the simulated detector on the GPU; a replay "
        "source is host-fed: use runtime.source 'host'");

  SimulatorConfig simulator_config;
  simulator_config.seed = constants_seed;
  simulator_config.hit_fraction = c.hit_fraction;
  simulator_config.epix10ka_asic_configs = epix10ka_configs_from_names(constants_gain_configs);
  {
    ThreadPool pool(c.cpu_threads == 0 ? std::thread::hardware_concurrency() : c.cpu_threads);
    d.simulator = std::make_unique<DetectorSimulator>(d.detector, simulator_config, &pool);
  }
  d.constants = c.constants_file.empty() ? d.simulator->constants()
                                         : load_constants_hdf5(c.constants_file, d.detector);
  // The detector's own mask (a Dectris start message's): its pixels are bad whatever the
  // constants say.
  if (d.stream_source)
    if (const std::size_t masked = mask_detector_bad_pixels(*d.stream_source, d.constants))
      spdlog::info("{}: {} pixels masked by the detector's pixel mask", c.source, masked);
  if (streaming && c.constants_file.empty())
    spdlog::warn(
        "{}: no constants_file given: calibrating with the simulator's constants (seed {}), "
        "which are not this detector's; take a pedestal run (livedrp-engine pedestal)",
        c.source, constants_seed);
  if (replaying && c.constants_file.empty())
    spdlog::info(
        "replay: calibration constants are the simulator's (seed {}); give "
        "constants_file for real detector data",
        constants_seed);

  // Bind first: a bad endpoint is the user's to fix, and is reported before any heavy set-up.
  if (publisher)
    d.publisher = std::move(publisher);
  else if (!c.publish.empty()) {
    d.publisher = std::make_shared<Publisher>(c.publish);
    d.publisher->forward_log();  // the engine's own endpoint carries its warnings too
  }
  if (d.publisher)
    d.stage_sink = [publisher = d.publisher.get()](const protocol::Message& message) {
      publisher->publish(message);
    };

  // The device-resident pipeline's persistent consumer calibrates only (resident_pipeline.hpp).
  const bool later_stages =
      c.compression.enabled() || c.integration.enabled || c.peak_finding.enabled;
  if (later_stages && c.runtime.source == SourcePlacement::Device &&
      c.runtime.launch == LaunchMode::Persistent)
    throw InputError(
        "runtime.launch 'persistent' with runtime.source 'device' calibrates only (its blocks take "
        "tiles of any event, so no lane holds an event for later stages); compression, "
        "integration and peak finding run with launch 'device_graph', 'graph' or 'plain'");
  d.calibrate_timer.emplace("calibrate", double(d.detector.raw_event_bytes()));
  // Compression and integration are stages of the contract (stages/compress, stages/integrate),
  // in the run's list after peak finding, in that order.
  d.compress_stage = stages::make_compress_stage(c.compression, d.detector);
  if (c.integration.enabled)
    d.integrate_stage = stages::make_integrate_stage(c.integration, d.detector, d.constants);

  // Peak positions in image pixels and the `image` topic need the segment placement; a detector
  // without one gets slab coordinates and no image (said in the log).
  if (c.peak_finding.enabled || (c.image.publish_hz > 0 && d.publisher)) {
    try {
      d.assembly = std::make_shared<ImageAssembly>(d.detector);
    } catch (const InputError& e) {
      spdlog::warn(
          "engine: no assembled image for detector {} ({}): `peaks` x/y are slab "
          "fs/ss and no `image` is published",
          d.detector.name, e.what());
    }
  }
  // Peak finding is a stage of the contract too (stages/peaks), first in the run's list.
  d.peak_stage = stages::make_peak_stage(c.peak_finding, d.detector, d.constants, d.assembly);

  // Compression fidelity (stages/fidelity) compares the three on sampled events, after them.
  const auto fidelity_stage = stages::make_fidelity_stage(
      c.fidelity,
      {d.detector, d.constants, c.calibration, d.compress_stage, d.integrate_stage, d.peak_stage});

  d.stages = stages::build_stages(c.stages, {d.detector, d.constants});
  if (fidelity_stage) d.stages.insert(d.stages.begin(), fidelity_stage);
  if (d.integrate_stage) d.stages.insert(d.stages.begin(), d.integrate_stage);
  if (d.compress_stage) d.stages.insert(d.stages.begin(), d.compress_stage);
  if (d.peak_stage) d.stages.insert(d.stages.begin(), d.peak_stage);
  if (!d.stages.empty()) d.stage_books = std::make_unique<StageBooks>(d.stages);

  if (c.runtime.source == SourcePlacement::Device) {
    // The device-resident source: no host ring and no Backend; run_device_source does it all.
    // The device-resident lanes run peak finding, compression and integration themselves
    // (cuda/resident); other stages of the contract not yet.
    if (fidelity_stage)
      throw InputError(
          "fidelity.enabled: not available with runtime.source 'device': its lanes write each "
          "event's stream into a device arena that no step copies back to the host for a "
          "sample (the host-fed CUDA backend does); use runtime.source 'host' or set "
          "fidelity.enabled false");
    for (const auto& stage : d.stages)
      if (stage != d.integrate_stage && stage != d.compress_stage && stage != d.peak_stage)
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
#ifdef LIVEDRP_HAVE_CUDA
    // The `image` topic: the host asks for a sampled event's image when its kernels are
    // enqueued, which it does per event only with launch 'graph' and 'plain'.
    if (c.image.publish_hz > 0 && d.publisher && d.assembly) {
      if (c.runtime.launch == LaunchMode::Graph || c.runtime.launch == LaunchMode::Plain)
        d.live_image =
            std::make_unique<LiveImage>(d.detector, d.constants, *d.assembly, c.image.publish_hz);
      else
        spdlog::warn(
            "engine: runtime.source 'device' with launch '{}' publishes no `image` topic: the "
            "host never enqueues an event's kernels, so nothing copies a sampled image back "
            "(launch 'graph' or 'plain' publishes it)",
            to_string(c.runtime.launch));
    }
    d.device_source = true;
    d.backend_label = "cuda";
    d.device_label = gpu::device_properties().name;
    d.backend_note = "cuda, device-resident source";
    d.state = "idle";
    return;
#endif
  }
  BackendChoice choice =
      make_backend(c.backend, d.detector, d.constants, c.calibration, c.cpu_threads, c.runtime);
  d.backend = std::move(choice.backend);
  d.active_backend = d.backend.get();
  d.backend->set_stages(d.stages);
  if (c.image.publish_hz > 0 && d.publisher && d.assembly)
    d.live_image =
        std::make_unique<LiveImage>(d.detector, d.constants, *d.assembly, c.image.publish_hz);
  d.backend_note = choice.note;
  d.backend_label = d.backend->name();
  d.device_label = d.backend->device_name();
  spdlog::info("engine: {}", d.backend_note);
  Backend* backend = d.backend.get();
  // One host allocator (pinned memory on CUDA) for the ring's slots and the sources' buffers: a
  // replay's read buffer or a stream's assembled event becomes a ring slot as it is.
  const stream::BufferAllocator host_buffers{
      [backend](std::size_t bytes) { return backend->allocate_host(bytes); },
      [backend](void* pointer) { backend->free_host(pointer); }};
  d.ring = std::make_unique<DoorbellRing>(std::size_t(c.ring_slots), d.detector.raw_event_bytes(),
                                          host_buffers.allocate, host_buffers.free);
  if (d.replay_source)
    d.replay_source->set_buffer_allocator(host_buffers.allocate, host_buffers.free);
  if (d.stream_source) d.stream_source->set_buffer_allocator(host_buffers);
  if (c.record.enabled())
    check_buffered_events(c.record.queue_events, d.detector, "record.queue_events");
  if (c.record.enabled() && c.record.hits_only && !d.peak_stage)
    throw InputError(
        "record.hits_only (--record-hits-only) needs live peak finding: its hits are "
        "peakfinder8's; set peak_finding.enabled in the configuration");
  if (c.record.enabled()) {
    replay::RecordOptions options;
    options.directory = c.record.directory;
    options.max_file_bytes = c.record.max_file_bytes;
    options.layout.dataset = c.record.dataset;
    options.layout.stacked = c.record.layout == "stacked";
    options.layout.deflate = c.record.deflate;
    if (c.record.codec != "off") {
      codec::CodecParams codec;
      codec.codec = c.record.codec == "lossy" ? codec::Codec::Lossy : codec::Codec::Lossless;
      codec.error_bound = c.record.codec == "lossy" ? c.record.error_bound : 0;
      options.layout.codec = codec;
    }
    options.run = c.run;
    options.queue_events = std::size_t(c.record.queue_events);
    // "auto": a live source must not stall for the disk; a replay can wait (files are not live).
    const bool wait = c.record.when_full == "wait" || (c.record.when_full == "auto" && replaying);
    options.when_full = wait ? replay::RecordWhenFull::Wait : replay::RecordWhenFull::Drop;
    d.recorder = std::make_unique<replay::Recorder>(options, d.detector, c.to_json().dump());
  }
  if (c.write.enabled()) {
    if (c.write.copies_images())
      check_buffered_events(c.write.queue_events, d.detector, "write.queue_events");
    d.live_writers = std::make_unique<LiveWriters>(
        c, d.detector, d.stages,
        LiveWriters::waits_when_full(c.write, streaming, replaying, c.rate_hz, d.replay_pace));
  }
  // No status message yet: with a shared publisher an engine built to replace a running one must
  // not announce itself before the old run has finished; start() announces "starting".
  d.state = "idle";
}

Engine::~Engine() {
  request_stop();
  if (impl_->started) wait();
  // The ring's memory belongs to the backend's allocator: free it first.
  impl_->ring.reset();
}

void Engine::start() {
  Impl& d = *impl_;
  if (d.started.exchange(true)) return;
  d.set_state("starting");
  d.reporter_thread = std::thread([&d] { d.report(); });
  if (d.device_source) {
    d.producer_thread = std::thread([&d] { d.run_device_source(); });
    return;
  }
  {
    // After any work a control thread runs itself (it holds peak_change_mutex while it does).
    std::lock_guard run_lock(d.peak_change_mutex);
    std::lock_guard lock(d.task_mutex);
    d.consumer_active = true;
  }
  d.consumer_thread = std::thread([&d] { d.consume(); });
  if (d.replay_source)
    d.producer_thread = std::thread([&d] { d.produce_replay(); });
  else if (d.stream_source)
    d.producer_thread = std::thread([&d] { d.produce_stream(); });
  else
    d.producer_thread = std::thread([&d] { d.produce(); });
}

void Engine::request_stop() {
  Impl& d = *impl_;
  if (d.started && !d.stop_requested.exchange(true) && !d.finished) d.set_state("stopping");
  d.stop_requested = true;
  if (d.replay_source) d.replay_source->stop();  // wakes a producer waiting for the disk
}

void Engine::wait() {
  Impl& d = *impl_;
  if (!d.started) return;
  {
    std::unique_lock lock(d.mutex);
    d.finished_signal.wait(lock, [&d] { return d.finished.load(); });
  }
  for (std::thread* t : {&d.producer_thread, &d.consumer_thread, &d.reporter_thread})
    if (t->joinable()) t->join();
}

bool Engine::finished() const {
  return impl_->finished;
}

const EngineConfig& Engine::config() const {
  return impl_->config;
}
std::string Engine::backend_name() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->backend_label;
}
std::string Engine::device_name() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->device_label;
}
std::string Engine::backend_note() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->backend_note;
}
std::string Engine::publish_endpoint() const {
  return impl_->publisher ? impl_->publisher->endpoint() : std::string();
}

void Engine::set_progress_callback(std::function<void(const protocol::StatsPayload&)> callback) {
  std::lock_guard lock(impl_->mutex);
  impl_->progress = std::move(callback);
}

void Engine::set_event_share(EventShare share) {
  Impl& d = *impl_;
  if (d.started) throw InputError("the event share is set before the run starts");
  if (share.count == 0 || share.index >= share.count)
    throw InputError("event share " + std::to_string(share.index) + " of " +
                     std::to_string(share.count) + " is not one (index must be below count)");
  if (share.count > 1 && (d.stream_source || d.device_source))
    throw InputError("source '" + d.config.source + "'" +
                     (d.device_source ? " with runtime.source device" : "") +
                     " cannot be shared among engines by event index (only the simulator on the "
                     "host and a replay can)");
  d.share = share;
}

void Engine::set_event_observer(EventObserver observer) {
  Impl& d = *impl_;
  if (d.started) throw InputError("the event observer is set before the run starts");
  d.event_observer = std::move(observer);
}

void Engine::keep_images() {
  Impl& d = *impl_;
  if (d.started) throw InputError("images are kept from before the run starts");
  if (d.live_image || d.device_source || !(d.config.image.publish_hz > 0) || !d.assembly) return;
  d.live_image =
      std::make_unique<LiveImage>(d.detector, d.constants, *d.assembly, d.config.image.publish_hz);
}

void Engine::forward_stage_messages(std::function<void(const protocol::Message&)> sink) {
  Impl& d = *impl_;
  if (d.started) throw InputError("stage messages are forwarded from before the run starts");
  if (!d.publisher) d.stage_sink = std::move(sink);
}

std::optional<protocol::ImageFrame> Engine::take_image() {
  return impl_->live_image ? impl_->live_image->take() : std::nullopt;
}

LatencyHistogram Engine::latency_histogram() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->run_latencies;
}

}  // namespace livedrp
