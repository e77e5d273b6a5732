#include "exec/engine.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>

#include "calib/constants.hpp"
#include "codec/compression_input.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "exec/backend.hpp"
#include "exec/host_event_buffer.hpp"
#include "exec/latency_histogram.hpp"
#include "exec/live_image.hpp"
#include "exec/live_peaks.hpp"
#include "exec/rate_bound.hpp"
#include "exec/reorder_buffer.hpp"
#include "exec/stage_books.hpp"
#include "exec/stream_input.hpp"
#include "integrate/array_values.hpp"
#include "integrate/layout.hpp"
#include "integrate/poni.hpp"
#include "integrate/shipped_geometry.hpp"
#include "io/array_file.hpp"
#include "protocol/profile_topic.hpp"
#include "publish/publisher.hpp"
#include "replay/recorder.hpp"
#include "replay/replay_source.hpp"
#include "ring/doorbell_ring.hpp"
#include "sim/simulator.hpp"
#include "sim/simulator_settings.hpp"
#include "stages/registry.hpp"
#include "stream/stream_source.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/device.hpp"
#include "cuda/resident/resident_pipeline.hpp"
#endif

namespace livedrp {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t wall_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// p50, p99 and maximum of the latencies (reorders `latencies`); NaN when there are none.
void fill_latency(protocol::StatsPayload& stats, std::vector<double>& latencies) {
  if (latencies.empty()) {
    stats.latency_p50_us = stats.latency_p99_us = stats.latency_max_us =
        std::numeric_limits<double>::quiet_NaN();
    return;
  }
  auto at_quantile = [&](double q) {
    const std::size_t rank =
        std::min(latencies.size() - 1, std::size_t(q * double(latencies.size())));
    std::nth_element(latencies.begin(), latencies.begin() + std::ptrdiff_t(rank), latencies.end());
    return latencies[rank];
  };
  stats.latency_p50_us = at_quantile(0.50);
  stats.latency_p99_us = at_quantile(0.99);
  stats.latency_max_us = *std::max_element(latencies.begin(), latencies.end());
}

std::optional<codec::CodecParams> compression_params(const CompressionConfig& config) {
  if (!config.enabled()) return std::nullopt;
  codec::CodecParams params;
  params.codec = config.codec == "lossy" ? codec::Codec::Lossy : codec::Codec::Lossless;
  params.error_bound = params.codec == codec::Codec::Lossy ? config.error_bound : 0.0;
  params.chunk_bytes = config.chunk_bytes;
  return params;
}

// The integrator the configuration describes, for the detector's segment placement. Its mask is the
// configured mask file's and the calibration constants' bad pixels (which calibrate to 0 and would
// otherwise pull the profile down). Throws InputError naming the field.
integrate::Integrator make_integrator(const LiveIntegrationConfig& config,
                                      const DetectorDescription& detector,
                                      const CalibrationConstants& constants) {
  integrate::IntegrationConfig c;
  if (const auto unit = integrate::radial_unit_from_name(config.unit))
    c.unit = *unit;
  else
    throw InputError("integration.unit: unknown unit '" + config.unit + "'");
  c.splitting = config.method == "bbox" ? integrate::Splitting::BBox : integrate::Splitting::None;
  c.bins = config.npt;
  c.radial_range = config.radial_range;
  c.azimuth_range = config.azimuth_range;
  c.solid_angle = config.solid_angle;
  c.polarization = config.polarization;
  c.error_model = config.error_model == "azimuthal" ? integrate::ErrorModel::Azimuthal
                                                    : integrate::ErrorModel::Poisson;
  try {
    integrate::validate(c);
  } catch (const InputError& e) {
    throw InputError(std::string("integration: ") + e.what());
  }
  integrate::PoniGeometry poni;
  try {
    poni = integrate::load_poni(config.poni);
  } catch (const InputError& e) {
    throw InputError(std::string("integration.poni: ") + e.what());
  }
  std::vector<std::uint8_t> mask(detector.pixels(), 0);
  if (!config.mask.empty()) {
    io::Array array;
    try {
      array = io::read_array(io::parse_array_location(config.mask));
    } catch (const InputError& e) {
      throw InputError(std::string("integration.mask: ") + e.what());
    }
    // Any shape of the event's pixel count in segment, row, column order: [segments, rows,
    // cols] or the stacked [segments * rows, cols].
    if (array.elements() != detector.pixels())
      throw InputError("integration.mask: '" + config.mask + "' has shape " +
                       io::shape_text(array.shape) + " (" + std::to_string(array.elements()) +
                       " values); the detector " + detector.name + " has " +
                       std::to_string(detector.pixels()) + " pixels");
    mask = integrate::mask_values(array);
  }
  for (std::size_t k = 0; k < mask.size(); ++k)
    if (constants.masked(k)) mask[k] = 1;
  try {
    integrate::Integrator integrator(poni, integrate::layout_from_detector(detector), c);
    integrator.set_mask(std::move(mask));
    return integrator;
  } catch (const InputError& e) {
    throw InputError(std::string("integration: ") + e.what());
  }
}

constexpr const char* kDropRingFull = "ring_full";
constexpr const char* kDropBackendFault = "backend_fault";
constexpr const char* kDropReadError = "read_error";  // a replayed event that could not be read

}  // namespace

struct Engine::Impl {
  EngineConfig config;
  DetectorDescription detector;
  std::unique_ptr<DetectorSimulator> simulator;
  CalibrationConstants constants;
  // A backend that failed during the run (runtime.on_fault = fallback_cpu): kept until the ring,
  // whose slot memory it allocated, is gone.
  std::unique_ptr<Backend> failed_backend;
  std::unique_ptr<Backend> backend;
  std::string backend_note;
  std::string backend_label, device_label;  // guarded by `mutex`: the backend may be replaced
  std::shared_ptr<Publisher> publisher;
  std::unique_ptr<DoorbellRing> ring;  // host source only
  // runtime.source = device: the simulated detector writes into a ring in GPU memory and the
  // consumers follow its doorbells on the device (cuda/resident); no host ring, no Backend.
  bool device_source = false;
  // Simulated events, generated ahead into the backend's host memory (pinned for CUDA) and
  // cycled by the source: ring slots are lent these buffers, so no event is copied on the host.
  std::vector<HostEventBuffer> event_pool;
  bool drop_when_full = false;
  std::unique_ptr<replay::ReplaySource> replay_source;  // source "replay:..."
  std::unique_ptr<stream::StreamSource> stream_source;  // sources "sls:...", "dectris:..."
  std::string replay_pace, replay_pace_note;
  std::unique_ptr<replay::Recorder> recorder;  // config.record; used by the producer thread only
  // Replay controls (set by any thread, read by the producer).
  std::atomic<bool> paused{false};
  std::atomic<int> step_budget{0};     // events still to hand on while paused
  std::atomic<bool> pace_reset{true};  // re-anchor "recorded" pacing (after seek, pause, start)
  std::atomic<std::uint64_t> replay_position{0}, replay_handed{0};
  std::atomic<std::int64_t> ring_wait_ns{0};  // producer waiting for a free ring slot

  std::thread producer_thread, consumer_thread, reporter_thread;
  std::atomic<bool> started{false}, stop_requested{false}, producer_done{false},
      consumer_done{false}, finished{false};

  // Accounting: events_in = processed + dropped + in flight, always.
  std::atomic<std::uint64_t> events_in{0}, processed{0}, dropped_ring_full{0},
      dropped_backend_fault{0}, dropped_read_error{0}, order_errors{0}, last_sequence{0},
      last_pulse_id{0};

  mutable std::mutex mutex;  // guards the fields below
  std::condition_variable finished_signal;
  std::string error;
  std::string state = "idle";
  Clock::time_point run_start{};
  Clock::time_point run_end{};       // set when the last event is accounted
  Clock::time_point producer_end{};  // replay: when the source handed on its last event
  double interval_calibrate_us_sum = 0, interval_calibrate_us_max = 0;
  std::uint64_t interval_calibrate_count = 0;
  double total_calibrate_us = 0;
  std::vector<double> interval_latencies_us;  // doorbell to release, this stats interval
  LatencyHistogram run_latencies;             // the same, over the whole run (the summary's)
  // Live compression: per stats interval (reset by report) and since the run started.
  std::uint64_t interval_compress_in = 0, interval_compress_out = 0, interval_compress_events = 0;
  double interval_compress_us = 0, interval_compress_us_max = 0;
  std::array<std::uint64_t, protocol::kRatioHistogramBins> interval_ratio_histogram{};
  std::uint64_t total_compress_in = 0, total_compress_out = 0, total_compress_events = 0;
  double total_compress_us = 0;
  // Live integration (config.integration): per stats interval and since the run started.
  double interval_integrate_us_sum = 0, interval_integrate_us_max = 0;
  std::uint64_t interval_integrate_count = 0;
  double total_integrate_us = 0;
  std::uint64_t total_integrate_count = 0;
  std::vector<LaneOccupancy> lanes;  // snapshot taken by the consumer thread
  std::uint64_t reorder_depth = 0;
  std::function<void(const protocol::StatsPayload&)> progress;

  // Live integration: the integrator as configured (kept for a fallback backend), the `profile`
  // topic's fixed part, and the profiles of the last average_events events. The window's sums
  // are kept per bin over the finite values (a NaN bin has no pixels in that event) and summed
  // again from the window each time it has turned over, so rounding cannot build up over a run.
  std::optional<integrate::Integrator> integrator;
  protocol::RadialUnit profile_unit = protocol::RadialUnit::QInverseNm;
  std::vector<double> profile_centres;
  std::mutex profile_mutex;  // guards the fields below
  std::deque<std::vector<double>> profile_window;
  std::vector<double> profile_sum;
  std::vector<std::uint64_t> profile_finite;
  std::uint64_t profile_added = 0;  // since the sums were last summed from the window
  std::vector<double> profile_latest;
  std::uint64_t profile_sequence = 0, profile_pulse_id = 0;
  bool profile_fresh = false;  // an event came since the last profile message

  void add_profile(const CompletedEvent& done);
  void publish_profile();  // when a profile came since the last one published

  // The stage-contract stages of the run (config.stages, in registration order; kept for a
  // fallback backend) and their books (null when there are none).
  stages::StageList stages;
  std::unique_ptr<StageBooks> stage_books;

  // Live peak finding (config.peak_finding) and the `image` topic (config.image): see
  // live_peaks.hpp and live_image.hpp. The parameters in force and their history (version v is
  // peak_param_history[v - 1]) are guarded by peak_mutex; peak_change_mutex serialises changes.
  std::optional<LivePeakGeometry> peak_geometry;
  std::unique_ptr<ImageAssembly> assembly;  // null when the detector has no placement
  std::unique_ptr<LivePeakBook> peak_book;
  std::unique_ptr<LiveImage> live_image;
  std::mutex peak_change_mutex;  // held while engine-thread work runs (see run_on_engine_thread)
  std::mutex peak_set_mutex;     // serialises set_peak_params calls
  // The backend a control thread may prepare parameters for (replaced by a fallback; the failed
  // one stays alive in failed_backend, so the pointer never dangles).
  std::atomic<Backend*> active_backend{nullptr};
  mutable std::mutex peak_mutex;
  std::vector<peaks::PeakFinderParams> peak_param_history;
  // Work the engine thread runs between events (it owns the backend): parameter changes and
  // re-runs from control threads. While no consumer thread runs, the caller runs it itself.
  std::mutex task_mutex;
  std::deque<std::packaged_task<void()>> engine_tasks;
  std::atomic<bool> tasks_waiting{false};
  bool consumer_active = false;  // guarded by task_mutex
  bool output_readable = false;  // consumer thread: the backend's output of the event accounted
  void run_on_engine_thread(std::function<void()> work);
  void run_engine_tasks();  // consumer thread
  void account_peaks(const CompletedEvent& done);
  void publish_peaks(const protocol::EventPeaks& peaks);
  void publish_image();  // when an event was handed over since the last image

  void set_state(const std::string& new_state, const std::string& message = {});
  void publish_status();
  void produce();
  void produce_replay();
  void produce_stream();
  // Claims a ring slot (waiting or dropping per policy), puts the event in it without a host copy
  // and rings the doorbell; false when the event was dropped because the ring was full.
  // `exchange`: the source can give the buffer `raw` is in for the slot's own (a replay's read
  // buffer, a live stream's assembled event): called with the slot's buffer, it returns the
  // event's, which goes into the slot in its place; nullptr: it could not, and `raw` is copied
  // into the slot. Without it `raw` outlives the event (a generated event of event_pool) and the
  // slot is lent it, as a DMA engine's event is written once and announced.
  using BufferExchange = std::function<void*(void* slot_buffer)>;
  bool admit(const void* raw, const EventHeader& header, const BufferExchange& exchange = {});
  void record(const EventHeader& header, const void* raw);
  void close_recorder();  // flushes the last file; a failure fails the run
  void consume();
  void run_device_source();
#ifdef LIVEDRP_HAVE_CUDA
  // A device-resident result's stage outputs and times, as the host-fed backends report them.
  void fill_stage_results(const gpu::ResidentPipeline& pipeline, const gpu::ResidentResult& result,
                          CompletedEvent& done) const;
#endif
  void report();
  void account_completed(const CompletedEvent& done);
  protocol::StatsPayload cumulative_stats() const;
  // The interval's compression block, then starts the next interval; nullopt when off. Called
  // with `mutex` held.
  std::optional<protocol::CompressionStats> take_compression_interval();
  void fail(const std::string& what);
};

void Engine::Impl::fail(const std::string& what) {
  {
    std::lock_guard lock(mutex);
    if (error.empty()) error = what;
  }
  spdlog::error("engine: {}", what);
  stop_requested = true;
}

void Engine::Impl::set_state(const std::string& new_state, const std::string& message) {
  {
    std::lock_guard lock(mutex);
    state = new_state;
  }
  spdlog::debug("engine state: {} {}", new_state, message);
  publish_status();
}

void Engine::Impl::publish_status() {
  if (!publisher) return;
  protocol::StatusPayload status;
  {
    std::lock_guard lock(mutex);
    status.state = state;
    status.message = error.empty() ? backend_note : error;
  }
  status.source = config.source;
  status.detector = detector.name;
  {
    std::lock_guard lock(mutex);
    status.backend = backend_label;
    status.device = device_label;
  }
  status.config = config.to_json();
  if (peak_geometry) {
    // The parameters in force: changed by set_peak_params without a new configuration.
    std::lock_guard lock(peak_mutex);
    status.config["peak_finding"]["params"] = peaks::to_json(peak_param_history.back());
  }
  protocol::Message message = protocol::make_status_message(status);
  message.run = config.run;
  message.sequence = last_sequence.load();
  message.pulse_id = last_pulse_id.load();
  publisher->publish(message);
}

void Engine::Impl::produce() {
  try {
    // Simulated events are generated once, ahead of the run, and cycled: generating a 2-Mpixel
    // event with Poisson photons costs far more than a real detector's DMA, and the pipeline
    // under test must not be limited by the simulator.
    {
      ThreadPool pool(config.cpu_threads == 0 ? std::thread::hardware_concurrency()
                                              : config.cpu_threads);
      event_pool.clear();
      const std::vector<std::uint64_t> indices = simulator_pool_indices(
          *simulator, std::size_t(config.simulator_pool), config.simulator_pool_selection);
      for (std::size_t i = 0; i < indices.size() && !stop_requested; ++i) {
        event_pool.emplace_back(*active_backend.load(), detector.raw_event_bytes());
        simulator->generate(indices[i], event_pool.back().data(), nullptr, &pool);
      }
    }
    {
      std::lock_guard lock(mutex);
      run_start = Clock::now();
    }
    set_state("running");
    const bool paced = config.rate_hz > 0;
    const auto period = paced ? std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(1.0 / config.rate_hz))
                              : Clock::duration::zero();
    // A paced source that falls behind does not burst to catch up by more than this.
    const auto max_lag = std::chrono::milliseconds(100);
    auto next_time = Clock::now();
    for (std::uint64_t i = 0; (config.events == 0 || i < config.events) && !stop_requested; ++i) {
      if (paced) {
        std::this_thread::sleep_until(next_time);
        next_time += period;
        if (Clock::now() - next_time > max_lag) next_time = Clock::now();
      }
      events_in.fetch_add(1, std::memory_order_relaxed);
      const HostEventBuffer& raw = event_pool[i % event_pool.size()];
      EventHeader header = simulator->header_for(i);
      header.timestamp_ns = wall_clock_ns();
      // Recorded whether or not the ring takes it: the recording is what the source produced.
      record(header, raw.data());
      admit(raw.data(), header);
    }
  } catch (const std::exception& e) {
    fail(std::string("source: ") + e.what());
  }
  close_recorder();
  producer_done = true;
}

void Engine::Impl::close_recorder() {
  try {
    if (recorder) recorder->close();
  } catch (const std::exception& e) {
    fail(std::string("record: ") + e.what());
  }
}

void Engine::Impl::record(const EventHeader& header, const void* raw) {
  if (recorder) recorder->record(header, raw);
}

bool Engine::Impl::admit(const void* raw, const EventHeader& header,
                         const BufferExchange& exchange) {
  int slot = ring->producer_claim();
  if (slot < 0 && !drop_when_full) {
    const auto start = Clock::now();
    while (slot < 0 && !stop_requested) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      slot = ring->producer_claim();
    }
    ring_wait_ns.fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
  }
  if (slot < 0) {
    dropped_ring_full.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (!exchange)
    ring->lend_slot_data(slot, raw);
  else if (void* event_buffer = exchange(ring->slot_data(slot)))
    ring->exchange_slot_data(slot, event_buffer);
  else
    ring->copy_into_slot(slot, raw);
  ring->slot_header(slot) = header;
  ring->ring_doorbell(slot);
  return true;
}

void Engine::Impl::produce_replay() {
  try {
    replay::ReplaySource& source = *replay_source;
    {
      std::lock_guard lock(mutex);
      run_start = Clock::now();
    }
    set_state("running", replay_pace_note);
    const bool by_rate = replay_pace == "rate", by_time = replay_pace == "recorded";
    const auto period = by_rate ? std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(1.0 / config.rate_hz))
                                : Clock::duration::zero();
    const auto max_lag = std::chrono::milliseconds(100);
    auto next_time = Clock::now();
    Clock::time_point anchor_wall;
    std::int64_t anchor_ts = 0, previous_ts = 0;
    for (std::uint64_t handed = 0;
         (config.events == 0 || handed < config.events) && !stop_requested;) {
      if (paused && step_budget.load() <= 0) {
        // Held at the source: nothing enters, nothing is dropped; pacing restarts on resume.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        pace_reset = true;
        next_time = Clock::now();
        continue;
      }
      replay::ReplayEvent event;
      if (!source.acquire(event)) {
        // The end of the files (no loop), or stopped. Paused at the end, the run stays: a step
        // back or a seek may follow.
        if (stop_requested || !paused) break;
        step_budget = 0;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        continue;
      }
      if (paused) step_budget.fetch_sub(1);
      if (by_rate) {
        std::this_thread::sleep_until(next_time);
        next_time += period;
        if (Clock::now() - next_time > max_lag) next_time = Clock::now();
      } else if (by_time) {
        // As recorded: the wall-clock gap between events is the gap between their timestamps.
        // A step back in time (loop, seek) or a gap over a second re-anchors instead of waiting.
        const std::int64_t ts = event.timestamp_ns;
        if (pace_reset.exchange(false) || ts < previous_ts || ts - previous_ts > 1'000'000'000) {
          anchor_wall = Clock::now();
          anchor_ts = ts;
        }
        previous_ts = ts;
        std::this_thread::sleep_until(anchor_wall + std::chrono::nanoseconds(ts - anchor_ts));
      }
      const std::uint64_t sequence = events_in.fetch_add(1, std::memory_order_relaxed);
      ++handed;
      replay_position = event.index;
      replay_handed = handed;
      if (!event.data) {
        dropped_read_error.fetch_add(1, std::memory_order_relaxed);
        spdlog::warn("replay: {} (counted as dropped: {})", event.error, kDropReadError);
        source.release();
        continue;
      }
      // The file's timestamp is what a recording of this replay keeps; the ring carries the
      // admission time, from which the pipeline measures latency.
      EventHeader header{sequence, event.pulse_id, event.timestamp_ns};
      record(header, event.data);
      header.timestamp_ns = wall_clock_ns();
      admit(event.data, header,
            [&source](void* slot_buffer) { return source.exchange_acquired_buffer(slot_buffer); });
      source.release();
    }
  } catch (const std::exception& e) {
    fail(std::string("replay source: ") + e.what());
  }
  close_recorder();
  {
    std::lock_guard lock(mutex);
    producer_end = Clock::now();
  }
  producer_done = true;
}

void Engine::Impl::produce_stream() {
  try {
    stream::StreamSource& source = *stream_source;
    source.start();
    set_state("running", source.describe());
    for (std::uint64_t handed = 0;
         (config.events == 0 || handed < config.events) && !stop_requested;) {
      const std::optional<stream::StreamEvent> event = source.next(std::chrono::milliseconds(20));
      if (!event) continue;
      if (handed == 0) {
        // A live run begins with its data: the time before the detector sends is not the
        // pipeline's, so rates are over the time since the first event.
        std::lock_guard lock(mutex);
        run_start = Clock::now();
      }
      const std::uint64_t sequence = events_in.fetch_add(1, std::memory_order_relaxed);
      ++handed;
      // The detector's time is what a recording keeps; the ring carries the admission time, from
      // which the pipeline measures latency.
      const std::int64_t now = wall_clock_ns();
      EventHeader header{sequence, event->frame_number,
                         event->timestamp_ns ? event->timestamp_ns : now};
      record(header, event->data);
      header.timestamp_ns = now;
      admit(event->data, header,
            [&source](void* slot_buffer) { return source.exchange_event_buffer(slot_buffer); });
    }
  } catch (const std::exception& e) {
    fail(std::string("stream source: ") + e.what());
  }
  if (stream_source) stream_source->stop();
  close_recorder();
  {
    std::lock_guard lock(mutex);
    producer_end = Clock::now();
  }
  producer_done = true;
}

void Engine::Impl::account_completed(const CompletedEvent& done) {
  const std::uint64_t count = processed.load(std::memory_order_relaxed);
  // A replay may loop, seek or step back, and a detector's frame numbers start again with each
  // acquisition, so their pulse ids may fall: order there is the sequence.
  if (count > 0 &&
      (done.header.sequence <= last_sequence.load() ||
       (!replay_source && !stream_source && done.header.pulse_id <= last_pulse_id.load())))
    order_errors.fetch_add(1, std::memory_order_relaxed);
  last_sequence = done.header.sequence;
  last_pulse_id = done.header.pulse_id;
  const double latency_us = double(wall_clock_ns() - done.header.timestamp_ns) / 1e3;
  {
    std::lock_guard lock(mutex);
    interval_latencies_us.push_back(latency_us);
    run_latencies.add(latency_us);
    interval_calibrate_us_sum += done.calibrate_us;
    interval_calibrate_us_max = std::max(interval_calibrate_us_max, done.calibrate_us);
    ++interval_calibrate_count;
    total_calibrate_us += done.calibrate_us;
    if (done.compress_bytes_out > 0) {
      interval_compress_in += done.compress_bytes_in;
      interval_compress_out += done.compress_bytes_out;
      interval_compress_us += done.compress_us;
      interval_compress_us_max = std::max(interval_compress_us_max, done.compress_us);
      ++interval_compress_events;
      ++total_compress_events;
      total_compress_in += done.compress_bytes_in;
      total_compress_out += done.compress_bytes_out;
      total_compress_us += done.compress_us;
      ++interval_ratio_histogram[protocol::ratio_histogram_bin(double(done.compress_bytes_in) /
                                                               double(done.compress_bytes_out))];
    }
  }
  if (!done.profile.empty()) {
    {
      std::lock_guard lock(mutex);
      interval_integrate_us_sum += done.integrate_us;
      interval_integrate_us_max = std::max(interval_integrate_us_max, done.integrate_us);
      ++interval_integrate_count;
      total_integrate_us += done.integrate_us;
      ++total_integrate_count;
    }
    add_profile(done);
  }
  account_peaks(done);
  if (stage_books) stage_books->add(done);
  if (ring) ring->rearm(done.ring_slot);
  processed.fetch_add(1, std::memory_order_release);
}

void Engine::Impl::add_profile(const CompletedEvent& done) {
  const std::size_t bins = profile_centres.size();
  if (done.profile.size() != bins)
    throw RuntimeFault("integration: an event's profile has " +
                       std::to_string(done.profile.size()) + " bins, the integrator " +
                       std::to_string(bins));
  const std::size_t window = std::size_t(config.integration.average_events);
  std::lock_guard lock(profile_mutex);
  if (profile_sum.size() != bins) {
    profile_sum.assign(bins, 0.0);
    profile_finite.assign(bins, 0);
  }
  auto add = [&](const std::vector<double>& p, double sign, int step) {
    for (std::size_t b = 0; b < bins; ++b)
      if (std::isfinite(p[b])) {
        profile_sum[b] += sign * p[b];
        profile_finite[b] = std::uint64_t(std::int64_t(profile_finite[b]) + step);
      }
  };
  profile_window.push_back(done.profile);
  add(profile_window.back(), 1.0, 1);
  if (profile_window.size() > window) {
    add(profile_window.front(), -1.0, -1);
    profile_window.pop_front();
  }
  if (++profile_added >= window) {
    profile_sum.assign(bins, 0.0);
    profile_finite.assign(bins, 0);
    for (const auto& p : profile_window) add(p, 1.0, 1);
    profile_added = 0;
  }
  profile_latest = done.profile;
  profile_sequence = done.header.sequence;
  profile_pulse_id = done.header.pulse_id;
  profile_fresh = true;
}

void Engine::Impl::publish_profile() {
  if (!publisher || !integrator) return;
  protocol::RadialProfile profile;
  {
    std::lock_guard lock(profile_mutex);
    if (!profile_fresh) return;
    profile_fresh = false;
    profile.latest = profile_latest;
    profile.sequence = profile_sequence;
    profile.pulse_id = profile_pulse_id;
    profile.average_events = profile_window.size();
    profile.average.resize(profile_sum.size());
    for (std::size_t b = 0; b < profile_sum.size(); ++b)
      profile.average[b] = profile_finite[b] > 0 ? profile_sum[b] / double(profile_finite[b])
                                                 : std::numeric_limits<double>::quiet_NaN();
  }
  profile.unit = profile_unit;
  profile.average_window = std::uint64_t(config.integration.average_events);
  profile.centres = profile_centres;
  // A profile the protocol refuses (an infinite intensity from an event's corrupt pixels) is
  // not sent: subscribers would drop it anyway, and the run goes on.
  try {
    protocol::Message message = protocol::make_profile_message(profile);
    message.run = config.run;
    publisher->publish(message);
  } catch (const protocol::ProtocolError& e) {
    spdlog::warn("engine: profile of event {} not published: {}", profile.sequence, e.what());
  }
}

// Longest a control thread waits for the engine thread to take its work: the engine thread looks
// between any two events, so only a hung device makes this pass.
constexpr auto kEngineTaskTimeout = std::chrono::seconds(20);

void Engine::Impl::run_on_engine_thread(std::function<void()> work) {
  std::packaged_task<void()> task(std::move(work));
  std::future<void> done = task.get_future();
  {
    std::lock_guard lock(task_mutex);
    if (consumer_active) {
      engine_tasks.push_back(std::move(task));
      tasks_waiting.store(true, std::memory_order_release);
    }
  }
  if (task.valid()) {
    // No engine thread: nothing else touches the backend but another such task.
    std::lock_guard lock(peak_change_mutex);
    task();
  } else if (done.wait_for(kEngineTaskTimeout) != std::future_status::ready) {
    throw RuntimeFault("the engine thread did not take the request within " +
                       std::to_string(kEngineTaskTimeout.count()) + " s (device hung?)");
  }
  done.get();  // rethrows what the work threw
}

void Engine::Impl::run_engine_tasks() {
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::lock_guard lock(task_mutex);
      if (engine_tasks.empty()) {
        tasks_waiting.store(false, std::memory_order_release);
        return;
      }
      task = std::move(engine_tasks.front());
      engine_tasks.pop_front();
    }
    std::lock_guard run_lock(peak_change_mutex);
    task();  // a packaged task keeps what it throws for its caller
  }
}

void Engine::Impl::account_peaks(const CompletedEvent& done) {
  std::optional<protocol::EventPeaks> message;
  const bool image_due = live_image && live_image->due(Clock::now());
  if (done.searched && peak_book) {
    peak_book->add(std::uint64_t(std::max(0, done.peaks.found)), done.peaks.hit, done.peaks_us);
    if (done.peaks.hit || image_due) {
      peaks::PeakFinderParams params;
      {
        std::lock_guard lock(peak_mutex);
        const std::size_t v = std::size_t(done.params_version);
        params = peak_param_history.at(v >= 1 && v <= peak_param_history.size() ? v - 1 : 0);
      }
      message =
          event_peaks(done.header, done.peaks, params, done.params_version, false, assembly.get());
      if (done.peaks.hit) peak_book->offer_hit(*message);
    }
  }
  if (image_due && ring && output_readable) {
    // The raw words now, while the ring slot is still this event's; the calibrated pixels while
    // the backend's output is (until the next submit).
    live_image->capture(
        done.header,
        [&](std::byte* raw, float* calibrated) {
          std::memcpy(raw, ring->slot_data(done.ring_slot), detector.raw_event_bytes());
          backend->read_output(done, calibrated);
        },
        message);
  }
}

void Engine::Impl::publish_peaks(const protocol::EventPeaks& peaks) {
  if (!publisher) return;
  try {
    protocol::Message message = protocol::make_peaks_message(peaks);
    message.run = config.run;
    publisher->publish(message);
  } catch (const protocol::ProtocolError& e) {
    // A list the protocol refuses (a non-finite value from corrupt pixels) is not sent.
    spdlog::warn("engine: peaks of event {} not published: {}", peaks.sequence, e.what());
  }
}

void Engine::Impl::publish_image() {
  if (!publisher || !live_image) return;
  std::optional<protocol::ImageFrame> image;
  try {
    image = live_image->take();
    if (!image) return;
    protocol::Message message = protocol::make_image_message(*image);
    message.run = config.run;
    publisher->publish(message);
  } catch (const std::exception& e) {
    // An infinite pixel from corrupt data, say: that image is skipped, the run goes on.
    spdlog::warn("engine: image of event {} not published: {}", image ? image->sequence : 0,
                 e.what());
  }
}

void Engine::Impl::consume() {
  // Completions may arrive out of order (several lanes); the reorder stage releases them in
  // admission order, and only then is a ring slot re-armed, so slots are re-armed in order.
  ReorderBuffer<CompletedEvent> reorder;
  std::uint64_t next_admission = 0;
  auto last_snapshot = Clock::now();
  constexpr auto kSnapshotPeriod = std::chrono::milliseconds(20);
  // Submitted and not yet returned by the backend: what a fallback must run again.
  std::map<std::uint64_t, BackendEvent> unreturned;
  auto retire = [&](const CompletedEvent& done) {
    unreturned.erase(done.admission);
    reorder.insert(done.admission, done);
    while (auto ready = reorder.pop_ready()) {
      // An event released now but returned earlier may have had its backend output reused by
      // a later submit: only the event just returned is read back for the image.
      output_readable = ready->admission == done.admission;
      account_completed(*ready);
    }
    output_readable = false;
  };
  for (bool running = true; running;) {
    try {
      for (;;) {
        if (tasks_waiting.load(std::memory_order_acquire)) run_engine_tasks();
        bool progressed = false;
        while (auto done = backend->next_completed(false)) {
          retire(*done);
          progressed = true;
        }
        if (const auto now = Clock::now(); now - last_snapshot >= kSnapshotPeriod) {
          last_snapshot = now;
          std::lock_guard lock(mutex);
          lanes = backend->lane_occupancy();
          reorder_depth = reorder.depth();
        }
        if (backend->can_submit()) {
          if (int slot = ring->consumer_peek(); slot >= 0) {
            const BackendEvent event{ring->slot_header(slot), ring->slot_data(slot), slot,
                                     next_admission++};
            // Taken from the ring before submit: if submit throws, `unreturned` still answers
            // for the event (a fallback runs it again) and the ring does not offer it twice.
            unreturned.emplace(event.admission, event);
            ring->consumer_advance();
            backend->submit(event);
            continue;
          }
          // Nothing more in the ring: a partly filled batch goes now rather than waiting.
          backend->flush();
        }
        if (producer_done && ring->occupancy() == 0) break;
        if (progressed) continue;
        if (backend->in_flight() > 0 && !backend->can_submit()) {
          if (auto done = backend->next_completed(true)) retire(*done);
        } else {
          // With events in flight on a device, come back soon to retire them; an idle pipeline
          // can wait longer for the next doorbell.
          const auto wait = backend->in_flight() > 0 ? std::chrono::microseconds(50)
                                                     : std::chrono::microseconds(2000);
          ring->consumer_wait(wait, [] { return true; });
        }
      }
      running = false;
    } catch (const std::exception& e) {
      if (config.runtime.on_fault == FaultPolicy::FallbackCpu && backend->name() != "cpu" &&
          !failed_backend) {
        // Fall back once: the events the failed backend still held run again on the CPU, in
        // admission order, so nothing is lost and the reorder stage sees each exactly once.
        const std::string what = std::string("backend ") + backend->name() + " failed (" +
                                 e.what() + "); falling back to the CPU backend";
        spdlog::warn("engine: {}", what);
        try {
          auto cpu = make_cpu_backend(detector, constants, config.calibration, config.cpu_threads);
          cpu->set_compression(compression_params(config.compression));
          cpu->set_integration(integrator);
          cpu->set_stages(stages);
          if (peak_geometry) {
            std::lock_guard lock(peak_mutex);
            cpu->set_peak_finding(peak_geometry->finder(peak_param_history.front()),
                                  config.peak_finding.recent_frames);
            if (peak_param_history.size() > 1)
              cpu->set_peak_params(peak_geometry->finder(peak_param_history.back()),
                                   peak_param_history.size());
          }
          failed_backend = std::move(backend);
          backend = std::move(cpu);
          active_backend = backend.get();
          {
            std::lock_guard lock(mutex);
            backend_note = what;
            backend_label = backend->name();
            device_label = backend->device_name();
          }
          publish_status();
          // A copy: retiring an event erases it from `unreturned`.
          const std::map<std::uint64_t, BackendEvent> pending = unreturned;
          for (const auto& [admission, event] : pending) {
            backend->submit(event);
            while (auto done = backend->next_completed(true)) retire(*done);
          }
          continue;
        } catch (const std::exception& again) {
          fail(what + ", and the CPU backend failed too: " + again.what());
        }
      } else {
        fail(std::string("backend ") + backend->name() + ": " + e.what());
      }
      // Whatever entered and was not processed is dropped, with the reason.
      while (!producer_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const std::uint64_t lost = events_in.load() - processed.load() - dropped_ring_full.load();
      dropped_backend_fault.fetch_add(lost);
      running = false;
    }
  }
  {
    std::lock_guard lock(mutex);
    lanes = backend->lane_occupancy();
    reorder_depth = reorder.depth();
  }
  {
    // From here on a control thread runs its work itself; what is queued runs now.
    std::lock_guard lock(task_mutex);
    consumer_active = false;
  }
  run_engine_tasks();
  consumer_done = true;
}

void Engine::Impl::run_device_source() {
#ifdef LIVEDRP_HAVE_CUDA
  try {
    std::vector<std::vector<std::uint8_t>> pool(std::size_t(config.simulator_pool));
    {
      ThreadPool threads(config.cpu_threads == 0 ? std::thread::hardware_concurrency()
                                                 : config.cpu_threads);
      const std::vector<std::uint64_t> indices = simulator_pool_indices(
          *simulator, std::size_t(config.simulator_pool), config.simulator_pool_selection);
      for (std::size_t i = 0; i < pool.size() && !stop_requested; ++i) {
        pool[i].resize(detector.raw_event_bytes());
        simulator->generate(indices[i], pool[i].data(), nullptr, &threads);
      }
    }
    gpu::ResidentConfig resident;
    resident.launch = config.runtime.launch;
    resident.lanes = config.runtime.streams;
    resident.ring_slots = config.ring_slots;
    resident.producer = gpu::ProducerMode::Copy;  // the simulator writes every event's data
    resident.rate_hz = config.rate_hz;
    resident.events = config.events;
    resident.params = config.calibration;
    const SimulatorConfig& sim = simulator->config();
    resident.first_pulse_id = sim.first_pulse_id;
    resident.pulses_per_event = sim.pulses_per_event;
    resident.stages.compression = compression_params(config.compression);
    resident.stages.integrator = integrator;
    if (peak_geometry)
      resident.stages.peak_finder = peak_geometry->finder(peak_param_history.front());
    gpu::ResidentPipeline pipeline(detector, constants, pool, resident);
    {
      std::lock_guard lock(mutex);
      run_start = Clock::now();
      backend_note = "cuda, device-resident source: " + pipeline.describe();
    }
    set_state("running", pipeline.describe());
    pipeline.start();
    const int lane_count =
        config.runtime.launch == LaunchMode::Persistent ? 1 : config.runtime.streams;
    std::vector<LaneOccupancy> per_lane(static_cast<std::size_t>(lane_count));
    for (auto& lane : per_lane) lane.capacity = std::uint64_t(config.ring_slots / lane_count);
    auto last_snapshot = Clock::now();
    auto last_result = Clock::now();
    constexpr auto kStallLimit = std::chrono::seconds(10);
    bool stop_sent = false;
    const std::int64_t wall_minus_steady =
        wall_clock_ns() -
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
            .count();
    for (;;) {
      if (stop_requested && !stop_sent) {
        pipeline.request_stop();
        stop_sent = true;
      }
      auto result = pipeline.next_result(false);
      if (!result) {
        if (const auto final = pipeline.final_count();
            final && pipeline.results_returned() >= *final)
          break;
      } else {
        last_result = Clock::now();
        CompletedEvent done;
        done.header.sequence = result->sequence;
        done.header.pulse_id = result->pulse_id;
        // Source time: the doorbell, on the host's wall clock; latency = doorbell -> seen here.
        done.header.timestamp_ns = pipeline.to_host_ns(result->doorbell_ns) + wall_minus_steady;
        done.ring_slot = result->slot;
        done.admission = result->sequence;
        done.stream = result->lane;
        if (resident.stages.any())
          fill_stage_results(pipeline, *result, done);
        else
          done.calibrate_us = double(result->done_ns - result->doorbell_ns) * 1e-3;
        events_in.store(std::max(events_in.load(), result->sequence + 1));
        account_completed(done);
        ++per_lane[std::size_t(result->lane % lane_count)].completed;
      }
      if (const auto now = Clock::now(); now - last_snapshot >= std::chrono::milliseconds(20)) {
        last_snapshot = now;
        const std::uint64_t announced = pipeline.announced();
        events_in.store(std::max(events_in.load(), announced));
        // Events announced and nothing back for a long time: the device is stuck. Fail with what
        // its coordination words say (the pipeline's destructor then aborts its kernels).
        if (announced > processed.load() && now - last_result > kStallLimit)
          throw RuntimeFault("no result for " + std::to_string(kStallLimit.count()) +
                             " s with events in flight (" + pipeline.diagnostics() + ")");
        const std::uint64_t in_flight = announced - std::min(announced, processed.load());
        std::lock_guard lock(mutex);
        for (std::size_t l = 0; l < per_lane.size(); ++l)
          per_lane[l].in_flight =
              in_flight / per_lane.size() + (l < in_flight % per_lane.size() ? 1 : 0);
        lanes = per_lane;
      }
      if (!result) std::this_thread::yield();
    }
    pipeline.stop();
    std::lock_guard lock(mutex);
    for (auto& lane : per_lane) lane.in_flight = 0;
    lanes = per_lane;
  } catch (const std::exception& e) {
    fail(std::string("device-resident source: ") + e.what());
    const std::uint64_t lost = events_in.load() - processed.load();
    dropped_backend_fault.fetch_add(lost);
  }
#endif
  producer_done = true;
  consumer_done = true;
}

#ifdef LIVEDRP_HAVE_CUDA
void Engine::Impl::fill_stage_results(const gpu::ResidentPipeline& pipeline,
                                      const gpu::ResidentResult& result,
                                      CompletedEvent& done) const {
  done.calibrate_us = result.stage_us(gpu::kStampCalibrated);
  if (config.compression.enabled()) {
    const codec::DType dtype =
        codec::compression_input(detector.encoding, compression_params(config.compression)->codec)
            .dtype;
    done.compress_bytes_in =
        std::uint64_t(detector.pixels()) * (dtype == codec::DType::Float32 ? 4 : 2);
    done.compress_bytes_out = result.compressed_bytes;
    done.compress_us = result.stage_us(gpu::kStampCompressed);
    if (result.compressed_bytes == 0)
      throw RuntimeFault("device-resident codec reported an empty stream for event " +
                         std::to_string(result.sequence));
  }
  if (integrator) {
    done.profile = profile_intensities(pipeline.profile(result));
    done.integrate_us = result.stage_us(gpu::kStampIntegrated);
  }
  if (peak_geometry) {
    done.peaks = pipeline.peaks(result);
    done.searched = true;
    done.params_version = 1;
    done.peaks_us = result.stage_us(gpu::kStampSearched);
  }
}
#endif

protocol::StatsPayload Engine::Impl::cumulative_stats() const {
  protocol::StatsPayload stats;
  // Read processed before events_in so that in_flight never comes out negative.
  stats.events_processed = processed.load(std::memory_order_acquire);
  stats.drops_by_reason[kDropRingFull] = dropped_ring_full.load();
  if (const auto faults = dropped_backend_fault.load())
    stats.drops_by_reason[kDropBackendFault] = faults;
  if (const auto unreadable = dropped_read_error.load())
    stats.drops_by_reason[kDropReadError] = unreadable;
  std::uint64_t dropped_at_source = 0;  // events a live stream began but could not hand on
  if (stream_source) dropped_at_source = add_stream_stats(*stream_source, config.source, stats);
  for (const auto& [reason, count] : stats.drops_by_reason) stats.events_dropped += count;
  stats.events_in = events_in.load() + dropped_at_source;
  stats.events_in_flight =
      stats.events_in - std::min(stats.events_in, stats.events_processed + stats.events_dropped);
  stats.order_errors = order_errors.load();
  if (ring) {
    stats.ring_slots = ring->slot_count();
    stats.ring_occupancy = ring->occupancy();
  } else {
    stats.ring_slots = std::size_t(config.ring_slots);  // the device ring
    stats.ring_occupancy = stats.events_in_flight;
  }
  {
    std::lock_guard lock(mutex);
    stats.backend = backend_label;
    stats.device = device_label;
  }
  return stats;
}

std::optional<protocol::CompressionStats> Engine::Impl::take_compression_interval() {
  if (!config.compression.enabled()) return std::nullopt;
  protocol::CompressionStats block;
  block.codec = config.compression.codec;
  block.error_bound = config.compression.codec == "lossy" ? config.compression.error_bound : 0.0;
  block.interval_bytes_in = interval_compress_in;
  block.interval_bytes_out = interval_compress_out;
  block.total_bytes_in = total_compress_in;
  block.total_bytes_out = total_compress_out;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  block.interval_ratio = interval_compress_out > 0
                             ? double(interval_compress_in) / double(interval_compress_out)
                             : nan;
  block.gbps = interval_compress_us > 0
                   ? double(interval_compress_in) / (interval_compress_us * 1e-6) / 1e9
                   : nan;
  block.ratio_histogram = interval_ratio_histogram;
  interval_compress_in = interval_compress_out = 0;
  interval_compress_us = 0;
  interval_ratio_histogram.fill(0);
  return block;
}

void Engine::Impl::report() {
  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(config.stats_interval_s));
  const auto status_period = std::chrono::seconds(1);
  auto last_time = Clock::now();
  auto last_status = last_time;
  // Rates are taken over the last second (at least one interval): over a single 0.25 s interval
  // a 10 Hz source counts 2 or 3 events and the rate would jump between 8 and 12 Hz.
  const auto rate_window =
      std::max(std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(1)), interval);
  std::deque<std::pair<Clock::time_point, std::uint64_t>> processed_history{{last_time, 0}};
  const double event_bytes = double(detector.raw_event_bytes());
  const auto profile_period = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(1.0 / config.integration.publish_hz));
  auto next_profile = last_time;
  for (bool last_round = false; !last_round;) {
    last_round = consumer_done.load();
    if (!last_round) {
      // Sleep in small steps so a finished run reports at once.
      const auto wake = last_time + interval;
      while (Clock::now() < wake && !consumer_done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (integrator && Clock::now() >= next_profile) {
          publish_profile();
          next_profile = Clock::now() + profile_period;
        }
        if (peak_book)
          if (auto due = peak_book->take_due(Clock::now(), false)) publish_peaks(*due);
        if (live_image) publish_image();
      }
      last_round = consumer_done.load();
    }
    // The last event's profile goes out before the final stats, so a run always ends with it;
    // so do the last hit waiting for its turn and the last image handed over.
    if (last_round) {
      publish_profile();
      if (peak_book)
        if (auto due = peak_book->take_due(Clock::now(), true)) publish_peaks(*due);
      if (live_image) publish_image();
    }
    // The stage-contract books publish at every report tick, and once more at the end.
    if (stage_books && publisher) stage_books->publish(*publisher, config.run, last_round);
    const auto now = Clock::now();
    protocol::StatsPayload stats = cumulative_stats();
    protocol::StageTiming calibrate{"calibrate"};
    protocol::StageTiming integrate_stage{"integrate"};
    protocol::StageTiming compress_stage{"compress"};
    {
      std::lock_guard lock(mutex);
      if (interval_integrate_count > 0) {
        integrate_stage.mean_us = interval_integrate_us_sum / double(interval_integrate_count);
        integrate_stage.max_us = interval_integrate_us_max;
        integrate_stage.gbps =
            double(detector.pixels() * sizeof(float)) / (integrate_stage.mean_us * 1e-6) / 1e9;
      }
      interval_integrate_us_sum = interval_integrate_us_max = 0;
      interval_integrate_count = 0;
      stats.elapsed_s = run_start == Clock::time_point{}
                            ? 0.0
                            : std::chrono::duration<double>(now - run_start).count();
      if (interval_calibrate_count > 0) {
        calibrate.mean_us = interval_calibrate_us_sum / double(interval_calibrate_count);
        calibrate.max_us = interval_calibrate_us_max;
        calibrate.gbps = event_bytes / (calibrate.mean_us * 1e-6) / 1e9;
      }
      interval_calibrate_us_sum = interval_calibrate_us_max = 0;
      interval_calibrate_count = 0;
      fill_latency(stats, interval_latencies_us);
      interval_latencies_us.clear();
      for (std::size_t i = 0; i < lanes.size(); ++i)
        stats.streams.push_back({i, lanes[i].in_flight, lanes[i].capacity, lanes[i].completed});
      stats.reorder_depth = reorder_depth;
      if (interval_compress_events > 0) {
        compress_stage.mean_us = interval_compress_us / double(interval_compress_events);
        compress_stage.max_us = interval_compress_us_max;
        compress_stage.gbps = double(interval_compress_in) / (interval_compress_us * 1e-6) / 1e9;
      }
      interval_compress_events = 0;
      interval_compress_us_max = 0;
      stats.compression = take_compression_interval();
    }
    stats.stages.push_back(calibrate);
    if (config.compression.enabled()) stats.stages.push_back(compress_stage);
    if (integrator) stats.stages.push_back(integrate_stage);
    if (peak_book) {
      protocol::StageTiming peak_stage{"peak"};
      stats.peak_finding = peak_book->take_interval(peak_stage.mean_us, peak_stage.max_us);
      if (peak_stage.mean_us > 0)
        peak_stage.gbps =
            double(detector.pixels() * sizeof(float)) / (peak_stage.mean_us * 1e-6) / 1e9;
      stats.stages.push_back(peak_stage);
    }
    if (stage_books) stage_books->take_interval(stats);
    // Drop samples older than the window, keeping the newest of those as the window's start.
    while (processed_history.size() > 1 && now - processed_history[1].first >= rate_window)
      processed_history.pop_front();
    const auto [window_start, processed_then] = processed_history.front();
    const double dt = std::chrono::duration<double>(now - window_start).count();
    if (dt > 0) {
      const double delta = double(stats.events_processed - processed_then);
      stats.event_rate_hz = delta / dt;
      stats.input_gbps = delta * event_bytes / dt / 1e9;
    }
    processed_history.emplace_back(now, stats.events_processed);
    last_time = now;
    RateBoundFacts facts;
    facts.paced_rate_hz = config.rate_hz;
    facts.lanes = stats.backend == "cpu" ? 1 : std::uint64_t(std::max(1, config.runtime.streams));
    facts.device_resident = device_source;
    facts.event_bytes = detector.raw_event_bytes();
    stats.rate_bound = rate_bound(stats, facts);
    if (publisher) {
      protocol::Message message = protocol::make_stats_message(stats);
      message.run = config.run;
      message.sequence = last_sequence.load();
      message.pulse_id = last_pulse_id.load();
      publisher->publish(message);
    }
    std::function<void(const protocol::StatsPayload&)> callback;
    {
      std::lock_guard lock(mutex);
      callback = progress;
    }
    if (callback) callback(stats);
    if (now - last_status >= status_period) {
      publish_status();
      last_status = now;
    }
  }
  bool failed;
  {
    std::lock_guard lock(mutex);
    failed = !error.empty();
  }
  {
    std::lock_guard lock(mutex);
    run_end = Clock::now();
  }
  set_state(failed ? "error" : "finished");
  {
    std::lock_guard lock(mutex);
    finished = true;
  }
  finished_signal.notify_all();
}

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
      const auto json = nlohmann::json::parse(recorded, nullptr, false);
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
  else if (!c.publish.empty())
    d.publisher = std::make_shared<Publisher>(c.publish);

  // The device-resident pipeline's persistent consumer calibrates only (resident_pipeline.hpp).
  const bool later_stages =
      c.compression.enabled() || c.integration.enabled || c.peak_finding.enabled;
  if (later_stages && c.runtime.source == SourcePlacement::Device &&
      c.runtime.launch == LaunchMode::Persistent)
    throw InputError(
        "runtime.launch 'persistent' with runtime.source 'device' calibrates only (its blocks take "
        "tiles of any event, so no lane holds an event for later stages); compression, "
        "integration and peak finding run with launch 'device_graph', 'graph' or 'plain'");
  if (c.integration.enabled) {
    d.integrator.emplace(make_integrator(c.integration, d.detector, d.constants));
    d.profile_unit = protocol::radial_unit_from_string(c.integration.unit);
    // The centres as the integrator reports them (the device backends report the same).
    d.profile_centres =
        d.integrator->integrate(std::vector<float>(d.detector.pixels(), 0.0f)).radial;
  }

  if (c.peak_finding.enabled) {
    if (const std::string problem = peaks::validate(c.peak_finding.params); !problem.empty())
      throw InputError("peak_finding.params: " + problem);
    d.peak_geometry.emplace(c.peak_finding, d.detector, d.constants);
    d.peak_param_history = {c.peak_finding.params};
    d.peak_book = std::make_unique<LivePeakBook>(c.peak_finding.peaks_hz);
  }
  // Peak positions in image pixels and the `image` topic need the segment placement; a detector
  // without one gets slab coordinates and no image (said in the log).
  if (c.peak_finding.enabled || (c.image.publish_hz > 0 && d.publisher)) {
    try {
      d.assembly = std::make_unique<ImageAssembly>(d.detector);
    } catch (const InputError& e) {
      spdlog::warn(
          "engine: no assembled image for detector {} ({}): `peaks` x/y are slab "
          "fs/ss and no `image` is published",
          d.detector.name, e.what());
    }
  }

  d.stages = stages::build_stages(c.stages, {d.detector, d.constants});
  if (!d.stages.empty()) d.stage_books = std::make_unique<StageBooks>(d.stages);

  if (c.runtime.source == SourcePlacement::Device) {
    // The device-resident source: no host ring and no Backend; run_device_source does it all.
    if (!d.stages.empty())
      throw InputError("stage '" + d.stages.front()->name() +
                       "' runs on the host-fed backends only, not yet with runtime.source "
                       "'device'; use runtime.source 'host'");
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
  d.backend->set_compression(compression_params(c.compression));
  d.backend->set_integration(d.integrator);
  d.backend->set_stages(d.stages);
  if (d.peak_geometry)
    d.backend->set_peak_finding(d.peak_geometry->finder(c.peak_finding.params),
                                c.peak_finding.recent_frames);
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
  if (c.record.enabled()) {
    replay::RecordOptions options;
    options.directory = c.record.directory;
    options.max_file_bytes = c.record.max_file_bytes;
    options.layout.dataset = c.record.dataset;
    options.layout.stacked = c.record.layout == "stacked";
    options.layout.deflate = c.record.deflate;
    options.run = c.run;
    options.queue_events = std::size_t(c.record.queue_events);
    // "auto": a live source must not stall for the disk; a replay can wait (files are not live).
    const bool wait = c.record.when_full == "wait" || (c.record.when_full == "auto" && replaying);
    options.when_full = wait ? replay::RecordWhenFull::Wait : replay::RecordWhenFull::Drop;
    d.recorder = std::make_unique<replay::Recorder>(options, d.detector, c.to_json().dump());
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

RunSummary Engine::summary() const {
  const Impl& d = *impl_;
  RunSummary summary;
  summary.stats = d.cumulative_stats();
  std::lock_guard lock(d.mutex);
  summary.finished = d.finished;
  summary.error = d.error;
  if (d.run_start != Clock::time_point{}) {
    const auto end = d.run_end != Clock::time_point{} ? d.run_end : Clock::now();
    summary.stats.elapsed_s = std::chrono::duration<double>(end - d.run_start).count();
    if (summary.stats.elapsed_s > 0) {
      summary.stats.event_rate_hz =
          double(summary.stats.events_processed) / summary.stats.elapsed_s;
      summary.stats.input_gbps =
          summary.stats.event_rate_hz * double(d.detector.raw_event_bytes()) / 1e9;
    }
  }
  summary.stats.latency_p50_us = d.run_latencies.quantile_us(0.50);
  summary.stats.latency_p99_us = d.run_latencies.quantile_us(0.99);
  summary.stats.latency_max_us = d.run_latencies.max_us();
  protocol::StageTiming calibrate{"calibrate"};
  if (summary.stats.events_processed > 0) {
    calibrate.mean_us = d.total_calibrate_us / double(summary.stats.events_processed);
    calibrate.gbps = double(d.detector.raw_event_bytes()) / (calibrate.mean_us * 1e-6) / 1e9;
  }
  summary.stats.stages.push_back(calibrate);
  if (d.config.compression.enabled()) {
    protocol::StageTiming stage{"compress"};
    if (d.total_compress_events > 0 && d.total_compress_us > 0) {
      stage.mean_us = d.total_compress_us / double(d.total_compress_events);
      stage.gbps = double(d.total_compress_in) / (d.total_compress_us * 1e-6) / 1e9;
    }
    summary.stats.stages.push_back(stage);
  }
  if (d.integrator) {
    protocol::StageTiming stage{"integrate"};
    if (d.total_integrate_count > 0) {
      stage.mean_us = d.total_integrate_us / double(d.total_integrate_count);
      stage.gbps = double(d.detector.pixels() * sizeof(float)) / (stage.mean_us * 1e-6) / 1e9;
    }
    summary.stats.stages.push_back(stage);
  }
  if (d.peak_book) {
    protocol::StageTiming stage{"peak"};
    summary.stats.peak_finding = d.peak_book->totals(stage.mean_us);
    if (stage.mean_us > 0)
      stage.gbps = double(d.detector.pixels() * sizeof(float)) / (stage.mean_us * 1e-6) / 1e9;
    summary.stats.stages.push_back(stage);
  }
  if (d.config.compression.enabled()) {
    // The whole run is the summary's interval; per-event ratios are binned per interval only.
    protocol::CompressionStats block;
    block.codec = d.config.compression.codec;
    block.error_bound =
        d.config.compression.codec == "lossy" ? d.config.compression.error_bound : 0;
    block.interval_bytes_in = block.total_bytes_in = d.total_compress_in;
    block.interval_bytes_out = block.total_bytes_out = d.total_compress_out;
    block.interval_ratio = d.total_compress_out > 0
                               ? double(d.total_compress_in) / double(d.total_compress_out)
                               : std::numeric_limits<double>::quiet_NaN();
    block.gbps = d.total_compress_us > 0
                     ? double(d.total_compress_in) / (d.total_compress_us * 1e-6) / 1e9
                     : std::numeric_limits<double>::quiet_NaN();
    summary.stats.compression = block;
  }
  if (d.stage_books) d.stage_books->add_totals(summary.stats);
  return summary;
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
namespace {
replay::ReplaySource& replay_of(const std::unique_ptr<replay::ReplaySource>& source,
                                const char* what) {
  if (!source) throw InputError(std::string(what) + " needs a replay source (replay:FILE.h5)");
  return *source;
}
}  // namespace

void Engine::pause() {
  replay_of(impl_->replay_source, "pause");
  impl_->paused = true;
}

void Engine::resume() {
  replay_of(impl_->replay_source, "resume");
  impl_->step_budget = 0;
  impl_->paused = false;
}

void Engine::step(std::int64_t delta) {
  Impl& d = *impl_;
  replay::ReplaySource& source = replay_of(d.replay_source, "step");
  d.paused = true;
  if (delta != 1) {
    // Anything but "the next one" is a seek relative to the last event handed on.
    const std::int64_t last =
        d.replay_handed.load() > 0 ? std::int64_t(d.replay_position.load()) : -1;
    const std::int64_t target =
        std::clamp<std::int64_t>(last + delta, 0, std::int64_t(source.total_events()) - 1);
    source.seek(std::uint64_t(target));
    d.pace_reset = true;
  }
  d.step_budget = 1;
}

void Engine::seek(std::uint64_t index) {
  Impl& d = *impl_;
  replay::ReplaySource& source = replay_of(d.replay_source, "seek");
  if (index >= source.total_events())
    throw InputError("seek to event " + std::to_string(index) + ": the replay has " +
                     std::to_string(source.total_events()) + " events (0.." +
                     std::to_string(source.total_events() - 1) + ")");
  source.seek(index);
  d.pace_reset = true;
}

ReplayStatus Engine::replay_status() const {
  const Impl& d = *impl_;
  ReplayStatus status;
  if (!d.replay_source) return status;
  const replay::ReplaySource& source = *d.replay_source;
  status.active = true;
  status.position = d.replay_position.load();
  status.handed = d.replay_handed.load();
  status.total_events = source.total_events();
  status.loops = source.loops();
  status.paused = d.paused.load();
  status.pace = d.replay_pace;
  status.pace_note = d.replay_pace_note;
  status.skipped_files = d.replay_source->skipped_files();
  status.disk_wait_s = source.disk_wait_s();
  status.pipeline_wait_s = double(d.ring_wait_ns.load()) * 1e-9;
  {
    // Once the source is done, the time the pipeline still takes to drain is pipeline time too:
    // with fewer events than ring slots the producer never waits for a slot, yet the pipeline
    // is what the run waits for.
    std::lock_guard lock(d.mutex);
    if (d.producer_end != Clock::time_point{}) {
      const auto end = d.run_end != Clock::time_point{} ? d.run_end : Clock::now();
      status.pipeline_wait_s +=
          std::max(0.0, std::chrono::duration<double>(end - d.producer_end).count());
    }
  }
  status.read_gbps = source.read_s() > 0 ? double(source.bytes_read()) / source.read_s() / 1e9 : 0;
  status.read_errors = d.dropped_read_error.load();
  // Flat out, the producer waits on whichever of the two is slower; paced, on the clock.
  if (d.replay_pace != "flat_out")
    status.limited_by = "pacing";
  else if (status.disk_wait_s > 0 || status.pipeline_wait_s > 0)
    status.limited_by = std::max(status.disk_wait_s, status.pipeline_wait_s) < 1e-3 ? ""
                        : status.disk_wait_s > status.pipeline_wait_s               ? "disk"
                                                                                    : "pipeline";
  return status;
}

RecordStatus Engine::record_status() const {
  // The recorder's counters and file list may be read while its writer thread runs.
  const Impl& d = *impl_;
  RecordStatus status;
  if (!d.recorder) return status;
  status.active = true;
  status.events = d.recorder->events();
  status.dropped = d.recorder->dropped();
  for (const auto& path : d.recorder->files()) status.files.push_back(path.string());
  return status;
}

PeakParamsState Engine::peak_params() const {
  const Impl& d = *impl_;
  PeakParamsState state;
  state.enabled = d.peak_geometry.has_value();
  if (!state.enabled) {
    state.params = d.config.peak_finding.params;
    return state;
  }
  std::lock_guard lock(d.peak_mutex);
  state.params = d.peak_param_history.back();
  state.version = d.peak_param_history.size();
  return state;
}

namespace {
InputError peak_finding_off() {
  return InputError(
      "peak finding is off in this configuration; turn it on with an apply request, "
      "{\"peak_finding\": {\"enabled\": true}} (the run restarts with it)");
}
// The device-resident lanes' finders are recorded into their graphs at set-up, and no calibrated
// frame is kept on the host side of that path.
InputError fixed_on_device(const char* what) {
  return InputError(std::string(what) +
                    " is not available with runtime.source 'device': the device-resident lanes "
                    "search with the finders recorded at the run's start and keep no frames; "
                    "apply {\"peak_finding\": {\"params\": ...}} (the run restarts with them) "
                    "or use runtime.source 'host'");
}
}  // namespace

std::uint64_t Engine::set_peak_params(const peaks::PeakFinderParams& params) {
  Impl& d = *impl_;
  if (!d.peak_geometry) throw peak_finding_off();
  if (const std::string problem = peaks::validate(params); !problem.empty())
    throw InputError(problem);
  if (d.device_source) throw fixed_on_device("changing the peak finder's parameters in a run");
  // One change at a time, so that the version prepared is the version applied.
  std::lock_guard serial(d.peak_set_mutex);
  std::uint64_t version = 0;
  {
    std::lock_guard lock(d.peak_mutex);
    version = d.peak_param_history.size() + 1;
  }
  // The finder's tables (and the CUDA backend's device finders) are built here, on the caller's
  // thread; the engine thread only swaps them in, so the events keep flowing meanwhile.
  const peaks::PeakFinder8 finder = d.peak_geometry->finder(params);
  Backend* prepared_for = d.active_backend.load();
  std::shared_ptr<Backend::PreparedPeakParams> prepared;
  try {
    prepared = prepared_for->prepare_peak_params(finder, version);
  } catch (const RuntimeFault& e) {
    // E.g. no device memory for another set of finders: the engine thread builds them instead.
    spdlog::warn(
        "engine: preparing peak-finder parameters off the engine thread failed ({}); "
        "the engine thread builds them",
        e.what());
  }
  d.run_on_engine_thread([&] {
    // The backend may have been replaced (fallback to the CPU) since the preparation.
    if (prepared && d.backend.get() == prepared_for)
      d.backend->set_prepared_peak_params(std::move(prepared));
    else
      d.backend->set_peak_params(finder, version);
    std::lock_guard lock(d.peak_mutex);
    d.peak_param_history.push_back(params);
  });
  d.peak_book->set_params_version(version);
  spdlog::info("engine: peak-finder parameters version {} in force", version);
  return version;
}

PeakRerun Engine::rerun_peaks(std::optional<std::uint64_t> frames) {
  Impl& d = *impl_;
  if (!d.peak_geometry) throw peak_finding_off();
  if (d.device_source) throw fixed_on_device("re-running the peak finder over kept frames");
  const int kept = d.config.peak_finding.recent_frames;
  if (kept == 0)
    throw InputError(
        "no frames are kept for re-runs: peak_finding.recent_frames is 0 (set it to 1..256)");
  if (frames && (*frames == 0 || *frames > std::uint64_t(kept)))
    throw InputError("frames must be 1.." + std::to_string(kept) +
                     " (peak_finding.recent_frames), got " + std::to_string(*frames));
  std::vector<RerunFrame> lists;
  peaks::PeakFinderParams params;
  PeakRerun result;
  d.run_on_engine_thread([&] {
    lists = d.backend->rerun_peaks(std::size_t(frames.value_or(std::uint64_t(kept))));
    std::lock_guard lock(d.peak_mutex);
    params = d.peak_param_history.back();
    result.params_version = d.peak_param_history.size();
  });
  for (const RerunFrame& frame : lists) {
    result.sequences.push_back(frame.header.sequence);
    result.peaks_found.push_back(std::uint64_t(std::max(0, frame.peaks.found)));
    result.hits += frame.peaks.hit ? 1 : 0;
    d.publish_peaks(event_peaks(frame.header, frame.peaks, params, result.params_version, true,
                                d.assembly.get()));
    d.peak_book->count_sent_rerun();
  }
  return result;
}

void Engine::set_progress_callback(std::function<void(const protocol::StatsPayload&)> callback) {
  std::lock_guard lock(impl_->mutex);
  impl_->progress = std::move(callback);
}

}  // namespace livedrp
