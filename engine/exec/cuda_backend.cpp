// The CUDA backend, driven by StreamConfig: `streams` lanes (one CUDA stream each), each owning
// `slots_per_stream` launch slots whose device raw and output buffers (K events each) and CUDA
// events are allocated when the backend is made. Events go to lanes round-robin in admission
// order, K consecutive events per launch. Per launch the host only enqueues work: the K
// host-to-device copies and the kernel(s) (plain launches, or a CUDA graph captured once per slot
// and replayed), then a CUDA event record; completions are found by asking CUDA events (never a
// device synchronisation), by the engine's thread across all lanes (host_threads one_for_all) or
// by one polling thread per lane that hands them over through a locked queue (per_stream). Every
// host wait is bounded: a device that stops answering is reported as a RuntimeFault.
//
// Live compression, integration and peak finding are stages of the contract (stages/compress,
// stages/integrate, stages/peaks): they run as the stage-contract stages below.
//
// Stage-contract stages (set_stages; stages/stage.hpp): each lane holds each stage's CUDA part
// (its device buffers) and pinned memory for one result per event position. After the
// calibration, a launch records each stage over its events on the lane's stream between two
// timing events: directly (plain launches, and stages that are not capturable) or as a graph
// captured once per slot, stage and fill and replayed (graph launches); then each stage's join()
// for its events (work a stage forked onto streams of its own, the peak searches, ends there).
// The results are read when the launch's end event has completed.
#include <memory>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "exec/backend.hpp"

#ifdef LIVEDRP_HAVE_CUDA

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda/cuda_calibrator.hpp"
#include "cuda/device.hpp"
#include "cuda/launch_graph.hpp"

namespace livedrp {
namespace {

using Clock = std::chrono::steady_clock;

// Longest a host wait for a completion may take before the device counts as hung: an ePix10ka2M
// launch takes ~10 us, a full lane of 64 slots x 64 events well under a second.
constexpr auto kCompletionTimeout = std::chrono::seconds(10);
// Polling: spin (yielding) this long after the last completion before sleeping between queries,
// so a steady stream of events is retired within microseconds and an idle lane costs no core.
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(200);
constexpr auto kPollSleep = std::chrono::microseconds(20);
// Per-event buffers are laid out at these strides so every event of a batch stays 16-byte
// aligned for the vectorised kernels (and 256-byte aligned like cudaMalloc).
constexpr std::size_t kStrideAlign = 256;

std::size_t round_up(std::size_t value, std::size_t align) {
  return (value + align - 1) / align * align;
}

void validate(const StreamConfig& c) {
  auto range = [](const char* field, int value, int lo, int hi) {
    if (value < lo || value > hi)
      throw InputError(std::string("cuda backend: runtime.") + field + " = " +
                       std::to_string(value) + " (allowed " + std::to_string(lo) + ".." +
                       std::to_string(hi) + ")");
  };
  range("streams", c.streams, 1, 16);
  range("slots_per_stream", c.slots_per_stream, 1, 64);
  range("batch", c.batch, 1, gpu::kMaxBatchEvents);
  if (c.launch == LaunchMode::DeviceGraph || c.launch == LaunchMode::Persistent)
    throw InputError(std::string("cuda backend: runtime.launch '") +
                     std::string(to_string(c.launch)) +
                     "' needs no host per event, so it goes only with runtime.source 'device' "
                     "(the engine then runs the device-resident pipeline); with source 'host' use "
                     "'plain' or 'graph'");
  if (c.source == SourcePlacement::Device)
    throw InputError(
        "cuda backend: runtime.source 'device' is run by the engine's device-resident pipeline, "
        "not by the host-fed backend");
}

struct PendingEvent {
  EventHeader header;
  int ring_slot = -1;
  std::uint64_t admission = 0;
};

// One launch slot of a lane: K events' device buffers, the events that are in it, its CUDA
// events and (graph mode) its captured graphs, one per batch fill 1..K, made when first needed.
struct LaunchSlot {
  gpu::Event start{true}, end{true};
  std::vector<PendingEvent> events;
  std::vector<const void*> sources;
  std::vector<gpu::PinnedBuffer> staging;  // per event position; only for pageable sources
  std::vector<std::unique_ptr<gpu::LaunchGraph>> graphs;  // [fill - 1]
  std::vector<std::uint64_t> graph_params_version;
  // Stage-contract stages of the last launch (made by set_stages): timing events around each
  // stage's work, and (graph launches) each stage's captured graphs, [stage][fill - 1].
  std::vector<std::unique_ptr<gpu::Event>> stage_begin, stage_end;
  std::vector<std::vector<std::unique_ptr<gpu::LaunchGraph>>> stage_graphs;
  int staged = 0;  // stages the last launch ran
  // Events of this slot retired but not yet returned by next_completed: the slot (its output
  // buffers above all) is released to new submissions only when this reaches 0.
  std::atomic<int> unreturned{0};
};

struct Lane {
  int index = 0;
  gpu::Stream stream;
  gpu::DeviceBuffer raw, out;
  std::vector<std::unique_ptr<LaunchSlot>> slots;
  // Stage-contract stages (made by set_stages): each stage's CUDA part for this lane and the
  // pinned memory its results come back to, one block of `result_stride` bytes per position.
  struct StagePart {
    std::unique_ptr<stages::CudaStageLane> part;
    gpu::PinnedBuffer results;
    std::size_t result_stride = 0;
  };
  std::vector<StagePart> stage_parts;
  // Launched slots form a FIFO [head, head + count) modulo slots (a stream completes in order);
  // the first `retired` of them are done, their events waiting in the ready queue or returned.
  mutable std::mutex mutex;
  std::condition_variable launched;  // per_stream: wakes the lane's poller
  int head = 0, count = 0, retired = 0;
  std::atomic<std::uint64_t> completed{0};
  std::thread poller;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(const DetectorDescription& detector, const CalibrationConstants& constants,
              const calib::CalibrationParams& params, const StreamConfig& config)
      : detector_(detector),
        config_(config),
        params_(params),
        device_name_(gpu::device_properties().name),
        calibrator_(detector, constants),
        raw_stride_(round_up(detector.raw_event_bytes(), kStrideAlign)),
        out_stride_floats_(round_up(detector.pixels() * sizeof(float), kStrideAlign) /
                           sizeof(float)) {
    const int K = config_.batch;
    for (int l = 0; l < config_.streams; ++l) {
      auto lane = std::make_unique<Lane>();
      lane->index = l;
      const std::size_t events = std::size_t(config_.slots_per_stream) * std::size_t(K);
      lane->raw = gpu::DeviceBuffer(events * raw_stride_);
      lane->out = gpu::DeviceBuffer(events * out_stride_floats_ * sizeof(float));
      // NaN in every output: a pixel no kernel wrote shows as NaN, never as a stale value.
      gpu::fill_async(lane->out.get(), 0xFF, lane->out.bytes(), lane->stream);
      for (int s = 0; s < config_.slots_per_stream; ++s) {
        auto slot = std::make_unique<LaunchSlot>();
        slot->events.reserve(std::size_t(K));
        slot->sources.reserve(std::size_t(K));
        slot->staging.resize(std::size_t(K));
        slot->graphs.resize(std::size_t(K));
        slot->graph_params_version.assign(std::size_t(K), 0);
        lane->slots.push_back(std::move(slot));
      }
      lanes_.push_back(std::move(lane));
    }
    for (auto& lane : lanes_) lane->stream.synchronize();  // set-up only
    if (config_.host_threads == HostThreadModel::PerStream)
      for (auto& lane : lanes_) lane->poller = std::thread([this, l = lane.get()] { poll(*l); });
  }

  ~CudaBackend() override {
    stop_.store(true);
    for (auto& lane : lanes_) {
      { std::lock_guard lock(lane->mutex); }
      lane->launched.notify_all();
      if (lane->poller.joinable()) lane->poller.join();
    }
    // The device buffers must not be freed under work still running on them.
    for (auto& lane : lanes_) {
      try {
        lane->stream.synchronize();
      } catch (const RuntimeFault&) {
        // A device fault was already reported (or never will be): nothing left to do here.
      }
    }
  }

  std::string name() const override { return "cuda"; }
  std::string device_name() const override { return device_name_; }
  StreamConfig stream_config() const override { return config_; }

  void* allocate_host(std::size_t bytes) override { return gpu::allocate_pinned(bytes); }
  void free_host(void* pointer) override { gpu::free_pinned(pointer); }

  void set_params(const calib::CalibrationParams& params) override {
    params_ = params;
    ++params_version_;  // graphs captured with the old parameters are captured again when used
  }

  // Configuration time: every lane gets each stage's CUDA part and pinned result memory, every
  // launch slot its timing events and room for its graphs. Refuses a stage without a CUDA part.
  void set_stages(const stages::StageList& stages) override {
    // Nothing may still run on what is about to be replaced (set-up only, never per event).
    for (auto& lane : lanes_) lane->stream.synchronize();
    const int positions = config_.slots_per_stream * config_.batch;
    for (auto& lane : lanes_) {
      lane->stage_parts.clear();
      for (const auto& stage : stages) {
        Lane::StagePart part;
        part.part = stage->make_cuda_lane({lane->index, positions, config_.streams});
        if (!part.part)
          throw InputError("cuda backend: stage '" + stage->name() +
                           "' has no CUDA part; run it with backend cpu");
        // Each position's block on its own cache lines, so results of events in flight never
        // share one with the host reading a neighbour's.
        part.result_stride = round_up(std::max<std::size_t>(1, part.part->result_bytes()), 64);
        part.results = gpu::PinnedBuffer(std::size_t(positions) * part.result_stride);
        std::memset(part.results.get(), 0, part.results.bytes());
        lane->stage_parts.push_back(std::move(part));
      }
      for (auto& slot : lane->slots) {
        slot->stage_begin.clear();
        slot->stage_end.clear();
        slot->stage_graphs.clear();
        slot->staged = 0;
        for (std::size_t k = 0; k < stages.size(); ++k) {
          slot->stage_begin.push_back(std::make_unique<gpu::Event>(true));
          slot->stage_end.push_back(std::make_unique<gpu::Event>(true));
          slot->stage_graphs.emplace_back(std::size_t(config_.batch));
        }
      }
    }
    stage_count_ = int(stages.size());
  }

  bool can_submit() const override {
    if (open_ > 0) return true;
    const Lane& lane = *lanes_[std::size_t(current_lane_)];
    std::lock_guard lock(lane.mutex);
    return lane.count < config_.slots_per_stream;
  }

  void submit(const BackendEvent& event) override {
    rethrow_poller_fault();
    Lane& lane = *lanes_[std::size_t(current_lane_)];
    if (open_ == 0) {
      std::lock_guard lock(lane.mutex);
      if (lane.count == config_.slots_per_stream)
        throw RuntimeFault("cuda backend: submit to lane " + std::to_string(lane.index) +
                           " with its " + std::to_string(config_.slots_per_stream) +
                           " launch slots in flight (call can_submit first)");
      open_slot_ = (lane.head + lane.count) % config_.slots_per_stream;
    }
    LaunchSlot& slot = *lane.slots[std::size_t(open_slot_)];
    if (open_ == 0) {
      slot.events.clear();
      slot.sources.clear();
    }
    const std::size_t bytes = detector_.raw_event_bytes();
    const void* source = event.raw;
    if (!gpu::is_pinned_host(source)) {
      // Not from allocate_host: a copy from pageable memory would stage through the driver and
      // block. Stage through this position's own pinned buffer (allocated on first need, then
      // reused); the slot is free, so nothing still reads it.
      gpu::PinnedBuffer& staging = slot.staging[std::size_t(open_)];
      if (!staging.get()) staging = gpu::PinnedBuffer(bytes);
      std::memcpy(staging.get(), source, bytes);
      source = staging.get();
    }
    // Plain launches: the copy starts now, overlapping the batch's filling.
    if (config_.launch == LaunchMode::Plain)
      gpu::copy_async(raw_of(lane, open_slot_, open_), source, bytes, lane.stream,
                      "raw event to a device slot");
    slot.events.push_back({event.header, event.ring_slot, event.admission});
    slot.sources.push_back(source);
    ++open_;
    ++submitted_;
    if (open_ == config_.batch) launch_open();
  }

  void flush() override {
    if (open_ > 0) launch_open();
  }

  std::optional<CompletedEvent> next_completed(bool block) override {
    rethrow_poller_fault();
    if (auto ready = pop_ready()) return ready;
    if (in_flight() == 0) return std::nullopt;
    // Waiting for an event that no launch holds yet would never end: launch its batch now.
    if (block && launched_in_flight() == 0) flush();
    const auto deadline = Clock::now() + kCompletionTimeout;
    if (config_.host_threads == HostThreadModel::PerStream) {
      std::unique_lock lock(ready_mutex_);
      if (!block) return take_ready_locked();
      while (ready_.empty() && !poller_fault_) {
        if (ready_cv_.wait_until(lock, deadline) == std::cv_status::timeout && ready_.empty() &&
            !poller_fault_)
          throw RuntimeFault(timeout_text());
      }
      lock.unlock();
      rethrow_poller_fault();
      return pop_ready();
    }
    auto last_progress = Clock::now();
    for (;;) {
      for (int i = 0; i < config_.streams; ++i) {
        Lane& lane = *lanes_[std::size_t((poll_start_ + i) % config_.streams)];
        if (retire_head(lane)) {
          poll_start_ = (lane.index + 1) % config_.streams;  // fairness across lanes
          return pop_ready();
        }
      }
      if (!block) return std::nullopt;
      const auto now = Clock::now();
      if (now > deadline) throw RuntimeFault(timeout_text());
      if (now - last_progress < kSpinBeforeSleep)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(kPollSleep);
    }
  }

  std::size_t in_flight() const override { return std::size_t(submitted_ - returned_); }

  std::vector<LaneOccupancy> lane_occupancy() const override {
    std::vector<LaneOccupancy> result;
    for (const auto& lane : lanes_) {
      std::lock_guard lock(lane->mutex);
      const bool open_here = open_ > 0 && lane->index == current_lane_;
      result.push_back({std::uint64_t(lane->count - lane->retired + (open_here ? 1 : 0)),
                        std::uint64_t(config_.slots_per_stream), lane->completed.load()});
    }
    return result;
  }

  void read_output(const CompletedEvent& event, float* host_out) override {
    const int per_lane = config_.slots_per_stream * config_.batch;
    if (event.output_slot < 0 || event.output_slot >= per_lane * config_.streams)
      throw RuntimeFault("cuda backend: read_output of an event with output slot " +
                         std::to_string(event.output_slot));
    const Lane& lane = *lanes_[std::size_t(event.output_slot / per_lane)];
    const std::size_t position = std::size_t(event.output_slot % per_lane);
    gpu::copy_async(host_out, lane.out.as<float>() + position * out_stride_floats_,
                    detector_.pixels() * sizeof(float), read_stream_,
                    "calibrated image to the host");
    read_stream_.synchronize();  // test and image path only
  }

 private:
  void* raw_of(const Lane& lane, int slot, int position) const {
    return lane.raw.as<char>() +
           (std::size_t(slot) * std::size_t(config_.batch) + std::size_t(position)) * raw_stride_;
  }
  float* out_of(const Lane& lane, int slot, int position) const {
    return lane.out.as<float>() +
           (std::size_t(slot) * std::size_t(config_.batch) + std::size_t(position)) *
               out_stride_floats_;
  }

  // The kernels of one launch: the whole detector at once, or one launch per segment.
  void enqueue_kernels(const Lane& lane, int slot, int fill, const gpu::Stream& stream) const {
    const void* raw = raw_of(lane, slot, 0);
    float* out = out_of(lane, slot, 0);
    if (config_.segments == SegmentsPerLaunch::All) {
      calibrator_.launch_batch(raw, out, params_, stream, fill, raw_stride_, out_stride_floats_,
                               -1);
    } else {
      for (int segment = 0; segment < detector_.segments; ++segment)
        calibrator_.launch_batch(raw, out, params_, stream, fill, raw_stride_, out_stride_floats_,
                                 segment);
    }
  }

  void launch_open() {
    Lane& lane = *lanes_[std::size_t(current_lane_)];
    LaunchSlot& slot = *lane.slots[std::size_t(open_slot_)];
    const int fill = open_;
    if (config_.launch == LaunchMode::Plain) {
      slot.start.record(lane.stream);
      enqueue_kernels(lane, open_slot_, fill, lane.stream);
    } else {
      auto& graph = slot.graphs[std::size_t(fill - 1)];
      if (!graph || slot.graph_params_version[std::size_t(fill - 1)] != params_version_) {
        graph.reset();
        std::vector<gpu::GraphCopy> copies;
        for (int i = 0; i < fill; ++i)
          copies.push_back({raw_of(lane, open_slot_, i), slot.sources[std::size_t(i)],
                            detector_.raw_event_bytes()});
        const int slot_index = open_slot_;
        graph = std::make_unique<gpu::LaunchGraph>(lane.stream, copies, [&](const gpu::Stream& s) {
          enqueue_kernels(lane, slot_index, fill, s);
        });
        slot.graph_params_version[std::size_t(fill - 1)] = params_version_;
      }
      for (int i = 0; i < fill; ++i) graph->set_source(i, slot.sources[std::size_t(i)]);
      slot.start.record(lane.stream);
      graph->launch(lane.stream);
    }
    slot.staged = stage_count_;
    if (stage_count_ > 0) enqueue_stages(lane, open_slot_, fill);
    slot.end.record(lane.stream);
    {
      std::lock_guard lock(lane.mutex);
      ++lane.count;
    }
    lane.launched.notify_one();
    open_ = 0;
    current_lane_ = (current_lane_ + 1) % config_.streams;
  }

  // After the launch's calibration, on the lane's stream: each stage-contract stage over the
  // launch's events between its two timing events, recorded directly (plain launches, and a
  // stage that is not capturable) or through the graph captured for this slot, stage and fill
  // (graph launches; the positions' pointers never change, so a captured recording stays
  // valid); then every stage's join() for each event. Only enqueues.
  void enqueue_stages(Lane& lane, int slot_index, int fill) {
    LaunchSlot& slot = *lane.slots[std::size_t(slot_index)];
    const auto event_of = [&](Lane::StagePart& part, int i) {
      const int position = slot_index * config_.batch + i;
      const PendingEvent& pending = slot.events[std::size_t(i)];
      return stages::CudaEvent{position,
                               &pending.header,
                               pending.admission,
                               raw_of(lane, slot_index, i),
                               out_of(lane, slot_index, i),
                               stage_result(part, position)};
    };
    for (int k = 0; k < stage_count_; ++k) {
      Lane::StagePart& part = lane.stage_parts[std::size_t(k)];
      const auto body = [&](const gpu::Stream& stream) {
        for (int i = 0; i < fill; ++i) part.part->record(event_of(part, i), stream);
      };
      slot.stage_begin[std::size_t(k)]->record(lane.stream);
      if (config_.launch == LaunchMode::Plain || !part.part->capturable()) {
        body(lane.stream);
      } else {
        auto& graph = slot.stage_graphs[std::size_t(k)][std::size_t(fill - 1)];
        if (!graph)
          graph =
              std::make_unique<gpu::LaunchGraph>(lane.stream, std::vector<gpu::GraphCopy>{}, body);
        graph->launch(lane.stream);
      }
      slot.stage_end[std::size_t(k)]->record(lane.stream);
    }
    for (int k = 0; k < stage_count_; ++k) {
      Lane::StagePart& part = lane.stage_parts[std::size_t(k)];
      for (int i = 0; i < fill; ++i) part.part->join(event_of(part, i), lane.stream);
    }
  }
  void* stage_result(const Lane::StagePart& part, int position) const {
    return part.results.as<char>() + std::size_t(position) * part.result_stride;
  }

  // Launches not yet retired, all lanes (the engine's thread).
  std::size_t launched_in_flight() const {
    std::size_t n = 0;
    for (const auto& lane : lanes_) {
      std::lock_guard lock(lane->mutex);
      n += std::size_t(lane->count - lane->retired);
    }
    return n;
  }

  // If the oldest launch of `lane` is done, moves its events to the ready queue. Either thread
  // model: only one thread retires a given lane.
  bool retire_head(Lane& lane) {
    int head = 0;
    {
      std::lock_guard lock(lane.mutex);
      if (lane.retired == lane.count) return false;
      head = (lane.head + lane.retired) % config_.slots_per_stream;
    }
    LaunchSlot& slot = *lane.slots[std::size_t(head)];
    if (!slot.end.query()) return false;
    // The calibration ends where the first stage begins.
    const gpu::Event& calibrated = slot.staged > 0 ? *slot.stage_begin[0] : slot.end;
    const double us = 1000.0 * double(calibrated.elapsed_ms_since(slot.start));
    const int per_lane = config_.slots_per_stream * config_.batch;
    std::vector<CompletedEvent> done;
    done.reserve(slot.events.size());
    for (std::size_t i = 0; i < slot.events.size(); ++i) {
      CompletedEvent c;
      c.header = slot.events[i].header;
      c.ring_slot = slot.events[i].ring_slot;
      c.admission = slot.events[i].admission;
      c.stream = lane.index;
      c.calibrate_us = us;
      c.output_slot = lane.index * per_lane + head * config_.batch + int(i);
      if (slot.staged > 0) collect_stages(lane, slot, head, int(i), c);
      done.push_back(c);
    }
    slot.unreturned.store(int(done.size()));
    {
      std::lock_guard lock(lane.mutex);
      ++lane.retired;
    }
    lane.completed.fetch_add(done.size());
    {
      std::lock_guard lock(ready_mutex_);
      for (const auto& c : done) ready_.push_back(c);
    }
    ready_cv_.notify_one();
    return true;
  }

  // A retired launch's event `i`: each stage's result from its pinned block, and its time (the
  // stage's time for the launch shared evenly among the launch's events).
  void collect_stages(const Lane& lane, const LaunchSlot& slot, int slot_index, int i,
                      CompletedEvent& c) const {
    const int position = slot_index * config_.batch + i;
    const double events = double(slot.events.size());
    c.stage_outputs.reserve(std::size_t(slot.staged));
    for (int k = 0; k < slot.staged; ++k) {
      const Lane::StagePart& part = lane.stage_parts[std::size_t(k)];
      const double us = 1000.0 *
                        double(slot.stage_end[std::size_t(k)]->elapsed_ms_since(
                            *slot.stage_begin[std::size_t(k)])) /
                        events;
      std::any result = part.part->collect(position, stage_result(part, position));
      // A stage that times its own work per event (the peak searches) says so.
      const double own_us = part.part->event_us(position);
      c.stage_outputs.push_back({std::move(result), own_us >= 0 ? own_us : us});
    }
  }

  // per_stream: one thread per lane follows that lane's launches.
  void poll(Lane& lane) {
    try {
      gpu::use_device();
      auto last_progress = Clock::now();
      while (!stop_.load()) {
        {
          std::unique_lock lock(lane.mutex);
          if (lane.retired == lane.count) {
            lane.launched.wait_for(lock, std::chrono::milliseconds(5),
                                   [&] { return lane.retired < lane.count || stop_.load(); });
            continue;
          }
        }
        if (retire_head(lane)) {
          last_progress = Clock::now();
          continue;
        }
        if (Clock::now() - last_progress < kSpinBeforeSleep)
          std::this_thread::yield();
        else
          std::this_thread::sleep_for(kPollSleep);
      }
    } catch (...) {
      std::lock_guard lock(ready_mutex_);
      if (!poller_fault_) poller_fault_ = std::current_exception();
      ready_cv_.notify_all();
    }
  }

  std::optional<CompletedEvent> take_ready_locked() {
    if (ready_.empty()) return std::nullopt;
    CompletedEvent c = ready_.front();
    ready_.pop_front();
    ++returned_;
    release_if_returned(c);
    return c;
  }
  // The last event of a launch slot was returned: the slot (the lane's oldest, since a lane's
  // events are retired and queued in order) may take new events.
  void release_if_returned(const CompletedEvent& c) {
    const int per_lane = config_.slots_per_stream * config_.batch;
    Lane& lane = *lanes_[std::size_t(c.output_slot / per_lane)];
    LaunchSlot& slot = *lane.slots[std::size_t(c.output_slot % per_lane / config_.batch)];
    if (slot.unreturned.fetch_sub(1) != 1) return;
    std::lock_guard lock(lane.mutex);
    lane.head = (lane.head + 1) % config_.slots_per_stream;
    --lane.count;
    --lane.retired;
  }
  std::optional<CompletedEvent> pop_ready() {
    std::lock_guard lock(ready_mutex_);
    return take_ready_locked();
  }
  void rethrow_poller_fault() {
    std::exception_ptr fault;
    {
      std::lock_guard lock(ready_mutex_);
      fault = poller_fault_;
    }
    if (fault) std::rethrow_exception(fault);
  }
  std::string timeout_text() const {
    return "cuda backend: no completion within " +
           std::to_string(
               std::chrono::duration_cast<std::chrono::seconds>(kCompletionTimeout).count()) +
           " s with " + std::to_string(in_flight()) + " events in flight (device hung?)";
  }

  DetectorDescription detector_;
  StreamConfig config_;
  calib::CalibrationParams params_;
  std::uint64_t params_version_ = 1;
  std::string device_name_;
  gpu::DeviceCalibrator calibrator_;
  std::size_t raw_stride_, out_stride_floats_;
  int stage_count_ = 0;  // stage-contract stages configured (set_stages)
  std::vector<std::unique_ptr<Lane>> lanes_;
  gpu::Stream read_stream_;
  // Submitting thread only.
  int current_lane_ = 0;  // lane of the batch being filled (or of the next one)
  int open_slot_ = 0;     // its slot
  int open_ = 0;          // events in it
  int poll_start_ = 0;
  std::uint64_t submitted_ = 0;
  std::atomic<std::uint64_t> returned_{0};
  // Completed events not yet returned, and a fault a poller thread met.
  std::mutex ready_mutex_;
  std::condition_variable ready_cv_;
  std::deque<CompletedEvent> ready_;
  std::exception_ptr poller_fault_;
  std::atomic<bool> stop_{false};
};

}  // namespace

std::optional<std::string> cuda_unavailable_reason() {
  return gpu::unavailable_reason();
}

std::unique_ptr<Backend> make_cuda_backend(const DetectorDescription& detector,
                                           const CalibrationConstants& constants,
                                           const calib::CalibrationParams& params,
                                           const StreamConfig& runtime) {
  validate(runtime);
  return std::make_unique<CudaBackend>(detector, constants, params, runtime);
}

}  // namespace livedrp

#else  // built without CUDA

namespace livedrp {

std::optional<std::string> cuda_unavailable_reason() {
  return std::string("built without CUDA (configure with a CUDA compiler)");
}

std::unique_ptr<Backend> make_cuda_backend(const DetectorDescription&, const CalibrationConstants&,
                                           const calib::CalibrationParams&, const StreamConfig&) {
  throw RuntimeFault("built without CUDA support");
}

}  // namespace livedrp

#endif
