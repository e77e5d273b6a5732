#include <algorithm>
#include <cstring>
#include <thread>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "exec/engine_impl.hpp"
#include "exec/produced_share.hpp"
#include "sim/simulator_settings.hpp"

namespace livedrp {
using namespace engine_detail;

void Engine::Impl::run_device_source() {
#ifdef LIVEDRP_HAVE_CUDA
  try {
    const SimulatorConfig& sim = simulator->config();
    // One engine of many (engine/mpi): the producer makes only this engine's share of the run,
    // with the run's pulse ids, data and sequences (exec/produced_share.hpp).
    const ProducedShare produced =
        produced_share(share, config.events, config.rate_hz, sim.first_pulse_id,
                       sim.pulses_per_event, std::size_t(config.simulator_pool));
    if (produced.none) {
      {
        std::lock_guard lock(mutex);
        run_start = Clock::now();
      }
      set_state("running", "no event of the run falls to this engine's share");
      producer_done = true;
      consumer_done = true;
      return;
    }
    std::vector<std::vector<std::uint8_t>> pool(std::size_t(config.simulator_pool));
    {
      ThreadPool threads(config.cpu_threads == 0 ? std::thread::hardware_concurrency()
                                                 : config.cpu_threads);
      const std::vector<std::uint64_t> indices = simulator_pool_indices(
          *simulator, std::size_t(config.simulator_pool), config.simulator_pool_selection);
      for (std::size_t i = 0; i < pool.size() && !stop_requested; ++i) {
        pool[i].resize(detector.raw_event_bytes());
        simulator->generate(indices[produced.pool_order[i]], pool[i].data(), nullptr, &threads);
      }
    }
    gpu::ResidentConfig resident;
    resident.launch = config.runtime.launch;
    resident.lanes = config.runtime.streams;
    resident.ring_slots = config.ring_slots;
    resident.producer = gpu::ProducerMode::Copy;  // the simulator writes every event's data
    resident.rate_hz = produced.rate_hz;
    resident.events = produced.events;
    resident.params = config.calibration;
    resident.first_pulse_id = produced.first_pulse_id;
    resident.pulses_per_event = produced.pulses_per_event;
    if (compress_stage) resident.stages.compression = compress_stage->params();
    if (integrate_stage) resident.stages.integrator = integrate_stage->integrator();
    if (peak_stage) resident.stages.peak_finder = peak_stage->first_finder();
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
        // The producer counts its own events; the run's sequence of its j-th is the share's.
        done.header.sequence = produced.sequence(result->sequence);
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
        if (image_stage) {
          // The image stage's result: the snapshot the pipeline copied back for this event, the
          // one a request_snapshot was granted to; none for the others.
          stages::ImageResult sample;
          if (result->snapshot_image) {
            sample = image_stage->sample(done.header, result->snapshot_raw, result->snapshot_image);
            image_stage->sampler().taken(Clock::now());
          }
          done.stage_outputs.push_back({std::move(sample), 0.0});
        }
        events_in.store(std::max(events_in.load(), result->sequence + 1));
        account_completed(done);
        ++per_lane[std::size_t(result->lane % lane_count)].completed;
      }
      if (image_stage && image_stage->sampler().due(Clock::now())) pipeline.request_snapshot();
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
        device_ring_occupancy.store(in_flight);
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
  // The stage list is peak finding, compression and integration here, in that order, and the
  // image stage last (its result is added by the caller; the engine refuses other stages with
  // this source).
  if (peak_stage)
    done.stage_outputs.push_back(
        {stages::PeakResult{pipeline.peaks(result), 1, result.stage_us(gpu::kStampSearched)},
         result.stage_us(gpu::kStampSearched)});
  if (compress_stage) {
    if (result.compressed_bytes == 0)
      throw RuntimeFault("device-resident codec reported an empty stream for event " +
                         std::to_string(result.sequence));
    done.stage_outputs.push_back(
        {stages::CompressedSize{compress_stage->input_bytes(), result.compressed_bytes},
         result.stage_us(gpu::kStampCompressed)});
  }
  if (integrate_stage)
    done.stage_outputs.push_back(
        {stages::ProfileResult(profile_intensities(pipeline.profile(result))),
         result.stage_us(gpu::kStampIntegrated)});
}
#endif

}  // namespace livedrp
