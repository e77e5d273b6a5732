#pragma once
// The engine's state, shared by the files that make it up (internal to the engine library):
//   engine.cpp                 building a run from its configuration; start, stop, wait
//   engine_sources.cpp         the host-fed sources: simulator, replay, live streams; admission
//                              into the ring; the recorder
//   engine_consumer.cpp        the engine thread: ring -> backend -> reorder -> books; fallback
//   engine_device_source.cpp   runtime.source "device": the device-resident pipeline's results
//   engine_reporter.cpp        stats, status and the books' topics; the run summary
//   engine_peaks.cpp           peak-finder parameter changes and re-runs
//   engine_replay_control.cpp  pause, step, seek; replay and record status
// What the stages keep per event lives in their books (exec/stage_books.hpp, stages/*/).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "calib/constants.hpp"
#include "codec/codec.hpp"
#include "core/detector.hpp"
#include "exec/backend.hpp"
#include "exec/engine.hpp"
#include "exec/host_event_buffer.hpp"
#include "exec/latency_histogram.hpp"
#include "exec/live_writers.hpp"
#include "exec/stage_books.hpp"
#include "exec/stage_timer.hpp"
#include "integrate/integrator.hpp"
#include "protocol/topics.hpp"
#include "publish/publisher.hpp"
#include "replay/recorder.hpp"
#include "replay/replay_source.hpp"
#include "ring/doorbell_ring.hpp"
#include "sim/simulator.hpp"
#include "stages/compress/compress_stage.hpp"
#include "stages/image/image_stage.hpp"
#include "stages/integrate/integrate_stage.hpp"
#include "stages/peaks/peak_stage.hpp"
#include "stages/stage.hpp"
#include "stream/stream_source.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/resident/resident_pipeline.hpp"
#endif

namespace livedrp {
namespace engine_detail {

using Clock = std::chrono::steady_clock;

inline std::int64_t wall_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline constexpr const char* kDropRingFull = "ring_full";
inline constexpr const char* kDropBackendFault = "backend_fault";
inline constexpr const char* kDropReadError = "read_error";  // a replayed event not read

}  // namespace engine_detail

using engine_detail::Clock;

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
  bool record_failure_logged = false;          // producer thread
  std::string record_error;                    // guarded by `mutex`: closing the recording failed
  // The live writers (config.write; null when none): fed by the consumer thread, closed by it
  // when the last event is accounted (their status keeps any error).
  std::unique_ptr<LiveWriters> live_writers;
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
  // The device-resident source's ring: events announced by its producer and not yet processed,
  // both read at one moment (events_in alone may be a snapshot older than the ring's turnover).
  std::atomic<std::uint64_t> device_ring_occupancy{0};

  mutable std::mutex mutex;  // guards the fields below
  std::condition_variable finished_signal;
  std::string error;
  std::string state = "idle";
  Clock::time_point run_start{};
  Clock::time_point run_end{};                // set when the last event is accounted
  Clock::time_point producer_end{};           // replay: when the source handed on its last event
  std::optional<StageTimer> calibrate_timer;  // set with the detector
  std::vector<double> interval_latencies_us;  // doorbell to release, this stats interval
  // The newest events of this stats interval, for the per-pulse latency view (at most
  // kRecentEventsSent, oldest dropped first).
  std::deque<protocol::RecentEvent> recent_events;
  static constexpr std::size_t kRecentEventsSent = 16;
  LatencyHistogram run_latencies;  // the same, over the whole run (the summary's)
  // The last interval's rate_bound that saw events processed (not "idle"): what bounded the rate
  // while the run ran, for the summary (the last interval of a finished run is its drain).
  std::optional<protocol::RateBound> running_rate_bound;
  std::vector<LaneOccupancy> lanes;  // snapshot taken by the consumer thread
  std::uint64_t reorder_depth = 0;
  std::function<void(const protocol::StatsPayload&)> progress;
  EventShare share;              // set before start (Engine::set_event_share)
  EventObserver event_observer;  // set before start; called in account_completed

  // Live compression and integration, the first stages of `stages` when on, in that order
  // (the device-resident source runs their codec and integrator itself).
  std::shared_ptr<stages::CompressStage> compress_stage;
  std::shared_ptr<stages::IntegrateStage> integrate_stage;

  // The stage-contract stages of the run (config.stages, in registration order; kept for a
  // fallback backend) and their books (null when there are none).
  stages::StageList stages;
  std::unique_ptr<StageBooks> stage_books;
  // Where the books' messages go: the publisher, or forward_stage_messages()'s sink (none: the
  // books are not asked for messages).
  StageMessageSink stage_sink;

  // Live peak finding (config.peak_finding, a stage of `stages`; null when off), the assembly
  // that places its peaks and the image (null when the detector has no placement) and the
  // `image` topic (config.image, a stage of `stages`, the last; null when off or nothing
  // publishes it). peak_change_mutex is held while engine-thread work runs (see
  // run_on_engine_thread); peak_set_mutex serialises parameter changes.
  std::shared_ptr<stages::PeakStage> peak_stage;
  std::shared_ptr<ImageAssembly> assembly;
  std::shared_ptr<stages::ImageStage> image_stage;
  std::mutex peak_change_mutex;
  std::mutex peak_set_mutex;
  // The backend running now (replaced by a fallback; the failed one stays alive in
  // failed_backend, so the pointer never dangles): a control thread prepares device finders
  // only for a CUDA backend.
  std::atomic<Backend*> active_backend{nullptr};
  // Work the engine thread runs between events (it owns the backend): parameter changes and
  // re-runs from control threads. While no consumer thread runs, the caller runs it itself.
  std::mutex task_mutex;
  std::deque<std::packaged_task<void()>> engine_tasks;
  std::atomic<bool> tasks_waiting{false};
  bool consumer_active = false;  // guarded by task_mutex
  bool output_readable = false;  // consumer thread: the backend's output of the event accounted
  void run_on_engine_thread(std::function<void()> work);
  void run_engine_tasks();  // consumer thread
  void publish_peaks(const protocol::EventPeaks& peaks);

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
  // The source's events; with record.hits_only only hit events, from the engine thread
  // (`hit` true), and the recording is closed by the engine thread (`engine_thread` true) after
  // the last event instead of by the source.
  void record(const EventHeader& header, const void* raw, bool hit = false);
  void close_recorder(bool engine_thread = false);  // flushes the last file
  void consume();
  void run_device_source();
#ifdef LIVEDRP_HAVE_CUDA
  // A device-resident result's stage outputs and times, as the host-fed backends report them.
  void fill_stage_results(const gpu::ResidentPipeline& pipeline, const gpu::ResidentResult& result,
                          CompletedEvent& done) const;
#endif
  void report();
  void account_completed(CompletedEvent& done);
  protocol::StatsPayload cumulative_stats() const;
  void fail(const std::string& what);
};

}  // namespace livedrp
