#include <thread>

#include <spdlog/spdlog.h>

#include "core/thread_pool.hpp"
#include "exec/engine_impl.hpp"
#include "sim/simulator_settings.hpp"

namespace livedrp {
using namespace engine_detail;

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
    // rate_hz is the source's: under a share of a common source (engine/mpi) the events of the
    // other shares pass by in their time without being waited for, so this engine's come at
    // its share of the rate.
    const auto period = paced ? std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(1.0 / config.rate_hz))
                              : Clock::duration::zero();
    // A paced source that falls behind does not burst to catch up by more than this.
    const auto max_lag = std::chrono::milliseconds(100);
    auto next_time = Clock::now();
    // `i` is the event's index over the source (the run's, for a common source; this engine's
    // own, for an own input): config.events counts those.
    for (std::uint64_t i = 0, local = 0;
         (config.events == 0 || i < config.events) && !stop_requested; ++i) {
      EventHeader header = simulator->header_for(i);
      if (!share.takes(i, header.pulse_id)) {
        // The simulator's pulse ids step evenly, so which events a share takes repeats every
        // share.count events: none in the first count, none ever (a share by pulse id whose
        // residue the pulse ids never reach), and a run without end would spin here.
        if (local == 0 && i + 1 >= share.count) break;
        next_time += period;
        continue;
      }
      if (paced) {
        std::this_thread::sleep_until(next_time);
        next_time += period;
        if (Clock::now() - next_time > max_lag) next_time = Clock::now();
      }
      events_in.fetch_add(1, std::memory_order_relaxed);
      const HostEventBuffer& raw = event_pool[i % event_pool.size()];
      header.sequence = share.sequence(i, local++);
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

// A recording that fails (disk full, ...) stops; the run goes on: every event is still
// processed, and the failure is the recording's (record_status), not the run's.
void Engine::Impl::close_recorder(bool engine_thread) {
  // A hit-only recording takes events until the engine thread has accounted the last one.
  if (config.record.hits_only && !engine_thread) return;
  try {
    if (recorder) recorder->close();
  } catch (const std::exception& e) {
    std::lock_guard lock(mutex);
    record_error = std::string("record: ") + e.what();
    if (!record_failure_logged) spdlog::error("engine: {}", record_error);
  }
}

void Engine::Impl::record(const EventHeader& header, const void* raw, bool hit) {
  if (config.record.hits_only && !hit) return;
  if (!recorder || recorder->record(header, raw) || record_failure_logged) return;
  if (const std::string error = recorder->error(); !error.empty()) {
    record_failure_logged = true;
    spdlog::error("engine: record: {}; recording stops here, the run goes on", error);
  }
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
    // rate_hz is the source's: under a share of a common source the other shares' events pass
    // by in their time (as for the simulator).
    const auto period = by_rate ? std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(1.0 / config.rate_hz))
                                : Clock::duration::zero();
    const auto max_lag = std::chrono::milliseconds(100);
    auto next_time = Clock::now();
    Clock::time_point anchor_wall;
    std::int64_t anchor_ts = 0, previous_ts = 0;
    // `run_index` counts the events read over the whole source, every engine's share
    // (engine/mpi) included; without a share, or on an own input, it is `handed`.
    for (std::uint64_t handed = 0, run_index = 0;
         (config.events == 0 || run_index < config.events) && !stop_requested;) {
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
      if (!share.takes(run_index++, event.pulse_id)) {
        // Another engine's event: each reads the file, so that every one keeps its own pace.
        if (by_rate) next_time += period;
        source.release();
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
      const std::uint64_t admitted = events_in.fetch_add(1, std::memory_order_relaxed);
      // Under a share of a common source the sequence is the event's index over the run (one
      // identity on every engine); on an own input, this engine's index interleaved with the
      // other shares' (exec/event_share.hpp); without a share, run_index - 1 == admitted.
      const std::uint64_t sequence = share.sequence(run_index - 1, admitted);
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
      // An own input of one of several engines (mpi.inputs): this engine's index interleaved
      // with the other shares' (exec/event_share.hpp); a single engine's is its index.
      const std::uint64_t local = events_in.fetch_add(1, std::memory_order_relaxed);
      const std::uint64_t sequence = share.sequence(local, local);
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

}  // namespace livedrp
