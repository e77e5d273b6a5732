#include <map>
#include <thread>

#include <spdlog/spdlog.h>

#include "exec/engine_impl.hpp"
#include "exec/reorder_buffer.hpp"

namespace livedrp {
using namespace engine_detail;

void Engine::Impl::account_completed(CompletedEvent& done) {
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
    calibrate_timer->add(done.calibrate_us);
    protocol::RecentEvent recent;
    recent.sequence = done.header.sequence;
    recent.pulse_id = done.header.pulse_id;
    recent.source_time_ns = done.header.timestamp_ns;
    recent.latency_us = latency_us;
    recent.stage_us.emplace_back("calibrate", done.calibrate_us);
    for (std::size_t k = 0; k < done.stage_outputs.size() && k < stages.size(); ++k)
      recent.stage_us.emplace_back(stages[k]->name(), done.stage_outputs[k].us);
    if (recent_events.size() == kRecentEventsSent) recent_events.pop_front();
    recent_events.push_back(std::move(recent));
  }
  if (stage_books) stage_books->add(done);
  // A hit-only recording: the raw words while the ring slot is still the event's.
  if (recorder && config.record.hits_only && ring && peak_stage && !done.stage_outputs.empty() &&
      std::any_cast<const stages::PeakResult&>(done.stage_outputs[0].result).peaks.hit)
    record(done.header, ring->slot_data(done.ring_slot), true);
  if (live_writers)
    live_writers->add(done, ring && output_readable, [this](const CompletedEvent& e, float* out) {
      backend->read_output(e, out);
    });
  if (event_observer) event_observer(done.header, stages, done.stage_outputs);
  if (ring) ring->rearm(done.ring_slot);
  processed.fetch_add(1, std::memory_order_release);
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
    // A hit held back by the reorder stage: its image now, while the backend's output is its.
    if (live_writers && done.admission != reorder.next_admission())
      live_writers->keep_held(
          done, [this](const CompletedEvent& e, float* out) { backend->read_output(e, out); });
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
          // The stages keep their own state (the peak finder's parameters in force among it).
          cpu->set_stages(stages);
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
  if (config.record.hits_only) close_recorder(true);
  if (live_writers) {
    // Every event is accounted: the files are completed before the run counts as finished.
    try {
      live_writers->close();
    } catch (const std::exception& e) {
      spdlog::error("engine: writing the run's outputs failed: {}", e.what());
    }
  }
  consumer_done = true;
}

}  // namespace livedrp
