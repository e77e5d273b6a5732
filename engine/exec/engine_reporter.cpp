#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <thread>

#include <spdlog/spdlog.h>

#include "exec/engine_impl.hpp"
#include "exec/rate_bound.hpp"
#include "exec/stream_input.hpp"

namespace livedrp {
using namespace engine_detail;
namespace {

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

}  // namespace

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
  if (peak_stage) {
    // The parameters in force: changed by set_peak_params without a new configuration.
    status.config["peak_finding"]["params"] = peaks::to_json(peak_stage->params().current());
  }
  protocol::Message message = protocol::make_status_message(status);
  message.run = config.run;
  message.sequence = last_sequence.load();
  message.pulse_id = last_pulse_id.load();
  publisher->publish(message);
}

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
  if (device_source) {
    // The device ring; the host ring stands unused beside it.
    stats.ring_slots = std::size_t(config.ring_slots);
    stats.ring_occupancy = device_ring_occupancy.load();
  } else if (ring) {
    stats.ring_slots = ring->slot_count();
    stats.ring_occupancy = ring->occupancy();
  }
  {
    std::lock_guard lock(mutex);
    stats.backend = backend_label;
    stats.device = device_label;
  }
  return stats;
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
  for (bool last_round = false; !last_round;) {
    last_round = consumer_done.load();
    if (!last_round) {
      // Sleep in small steps so a finished run reports at once.
      const auto wake = last_time + interval;
      while (Clock::now() < wake && !consumer_done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (stage_books && stage_sink)
          stage_books->publish_due(stage_sink, config.run, Clock::now());
      }
      last_round = consumer_done.load();
    }
    // The last image handed over, the last profile and the last hit waiting for its turn go out
    // before the final stats, so a run always ends with them (the stages' books, at every report
    // tick and once more at the end).
    if (stage_books && stage_sink) stage_books->publish(stage_sink, config.run, last_round);
    const auto now = Clock::now();
    protocol::StatsPayload stats = cumulative_stats();
    {
      std::lock_guard lock(mutex);
      stats.elapsed_s = run_start == Clock::time_point{}
                            ? 0.0
                            : std::chrono::duration<double>(now - run_start).count();
      stats.stages.push_back(calibrate_timer->take_interval());
      fill_latency(stats, interval_latencies_us);
      interval_latencies_us.clear();
      stats.recent_events.assign(std::make_move_iterator(recent_events.begin()),
                                 std::make_move_iterator(recent_events.end()));
      recent_events.clear();
      for (std::size_t i = 0; i < lanes.size(); ++i)
        stats.streams.push_back({i, lanes[i].in_flight, lanes[i].capacity, lanes[i].completed});
      stats.reorder_depth = reorder_depth;
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
    if (stats.rate_bound->by != "idle") {
      std::lock_guard lock(mutex);
      running_rate_bound = stats.rate_bound;
    }
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
  summary.stats.stages.push_back(d.calibrate_timer->totals());
  summary.stats.rate_bound = d.running_rate_bound;  // under d.mutex, held above
  if (d.stage_books) d.stage_books->add_totals(summary.stats);
  return summary;
}

}  // namespace livedrp
