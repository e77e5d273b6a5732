#include "exec/engine.hpp"

#include <algorithm>
#include <thread>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/json_input.hpp"
#include "core/memory_limit.hpp"
#include "core/thread_pool.hpp"
#include "exec/engine_impl.hpp"
#include "exec/run_setup.hpp"
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

Engine::Engine(EngineConfig config) : Engine(config, nullptr) {}

Engine::Engine(EngineConfig config, std::shared_ptr<Publisher> publisher)
    : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.config = std::move(config);
  const EngineConfig& c = d.config;
  const SourceKind kind = check_source_name(c);
  const bool replaying = kind.replaying;
  const bool streaming = kind.streaming;
  std::uint64_t constants_seed = c.seed;
  std::vector<std::string> constants_gain_configs = c.simulator_gain_configs;
  if (replaying) {
    ReplaySetup replay = open_configured_replay(c);
    d.replay_source = std::move(replay.source);
    d.detector = d.replay_source->detector();
    d.replay_pace = replay.pace;
    d.replay_pace_note = replay.pace_note;
    constants_seed = replay.constants_seed;
    constants_gain_configs = replay.constants_gain_configs;
  } else if (streaming) {
    d.stream_source = open_configured_stream(c);
    d.detector = d.stream_source->detector();
  } else {
    d.detector = find_detector(c.source.substr(4));
  }
  d.drop_when_full = check_run_settings(c, d.detector, kind, d.replay_pace);

  d.simulator = make_constants_simulator(c, d.detector, constants_seed, constants_gain_configs);
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

  check_persistent_launch(c);
  d.calibrate_timer.emplace("calibrate", double(d.detector.raw_event_bytes()));
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
  RunStages stages = build_run_stages(c, d.detector, d.constants, d.assembly);
  // The `image` topic's stage, last in the list, when there is a publisher. The device-resident
  // source's host asks for a sampled event's image when it enqueues the event's kernels, which it
  // does per event only with launch 'graph' and 'plain'.
  const bool device_source = c.runtime.source == SourcePlacement::Device;
  if (d.publisher) {
    if (!device_source || c.runtime.launch == LaunchMode::Graph ||
        c.runtime.launch == LaunchMode::Plain)
      add_image_stage(stages, c, d.detector, d.constants, d.assembly);
    else if (c.image.publish_hz > 0 && d.assembly)
      spdlog::warn(
          "engine: runtime.source 'device' with launch '{}' publishes no `image` topic: the "
          "host never enqueues an event's kernels, so nothing copies a sampled image back "
          "(launch 'graph' or 'plain' publishes it)",
          to_string(c.runtime.launch));
  }
  d.compress_stage = stages.compress;
  d.integrate_stage = stages.integrate;
  d.peak_stage = stages.peaks;
  d.image_stage = stages.image;
  d.stages = stages.list;
  if (!d.stages.empty()) d.stage_books = std::make_unique<StageBooks>(d.stages);

  if (device_source) {
    // The device-resident source: no host ring and no Backend; run_device_source does it all.
    check_device_source(c, stages);
#ifdef LIVEDRP_HAVE_CUDA
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
  check_record_settings(c, d.detector, stages);
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
    options.rank = c.mpi.rank;
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
  // The device-resident source makes only its share (exec/produced_share.hpp).
  if (share.splits_a_common_source() && d.stream_source)
    throw InputError("source '" + d.config.source + "' cannot be shared among engines by " +
                     (share.by == EventShare::By::PulseId ? "pulse id" : "event index") +
                     " (a live stream hands each event to one reader only; only the simulator "
                     "on the host and a replay can be shared); give each processing rank its own "
                     "stream endpoint with mpi.inputs");
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
  if (!d.image_stage && !d.device_source) {
    RunStages stages;
    stages.peaks = d.peak_stage;
    stages.list = d.stages;
    if (!add_image_stage(stages, d.config, d.detector, d.constants, d.assembly)) return;
    // Before the run: the books and the backend's lanes are made again with the longer list.
    d.image_stage = stages.image;
    d.stages = stages.list;
    d.stage_books = std::make_unique<StageBooks>(d.stages);
    d.backend->set_stages(d.stages);
  }
  if (d.image_stage) d.image_stage->keep_for_taking();
}

void Engine::forward_stage_messages(std::function<void(const protocol::Message&)> sink) {
  Impl& d = *impl_;
  if (d.started) throw InputError("stage messages are forwarded from before the run starts");
  if (!d.publisher) d.stage_sink = std::move(sink);
}

std::optional<protocol::ImageFrame> Engine::take_image() {
  return impl_->image_stage ? impl_->image_stage->take() : std::nullopt;
}

LatencyHistogram Engine::latency_histogram() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->run_latencies;
}

}  // namespace livedrp
