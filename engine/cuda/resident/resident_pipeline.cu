// The device-resident source and its consumers (see resident_pipeline.hpp for the design).
//
// Memory ordering, in the PTX model's terms: the producer writes the slot's raw words and header,
// fences (gpu scope) and sets the doorbell with a release store; a consumer thread reads the
// doorbell with an acquire load, and the block's other threads are ordered after it by the
// barrier. The consumer finishing an event fences its tiles' writes, writes the result record to
// mapped host memory, fences at system scope and then sets the record's ready word, which the host
// reads with an acquire load. Only then is the slot re-armed: its doorbell cleared and its release
// word set to the event's sequence + 1 (release store), which the producer of the slot's next
// event (sequence + slots) waits for with an acquire load.
//
// Device graph launch needs the device runtime (cudaGraphLaunch from a kernel), so this folder is
// compiled as relocatable device code and device-linked on its own (engine/CMakeLists.txt).
#include "cuda/resident/resident_pipeline.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "cuda/device.hpp"
#include "cuda/resident/resident_kernels.cuh"
#include "cuda/resident/resident_lane_stages.cuh"

namespace livedrp::gpu {

using resident::u64;

namespace {

using namespace resident;

[[noreturn]] void fail(cudaError_t status, const std::string& call) {
  throw RuntimeFault(call + ": " + cudaGetErrorString(status) + " (" + cudaGetErrorName(status) +
                     ")");
}
void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) fail(status, call);
}

constexpr u64 kNoLimit = ~0ull;

// ---------------------------------------------------------------------------------------------
// Producer

struct ProducerParams {
  const char* pool = nullptr;  // pool events, raw_stride apart (Copy)
  int pool_events = 0;
  std::size_t raw_bytes = 0;  // per event, a multiple of 16
  bool copy = true;
  u64 limit = kNoLimit;  // events of the run
  u64 period_ns = 0;     // 0: flat out
  u64 first_pulse_id = 0;
  u64 pulses_per_event = 1;
};

__global__ void __launch_bounds__(kBlockThreads) producer_kernel(Ring ring, ProducerParams p) {
  __shared__ u64 s_sequence;
  __shared__ int s_go;
  if (threadIdx.x == 0) {
    atomicCAS(&ring.control->start_ns, 0ull, globaltimer_ns());
    if (atomicAdd(&ring.control->producers_started, 1u) == gridDim.x - 1) {
      __threadfence_system();
      *reinterpret_cast<volatile u64*>(&ring.host->producers_running) = 1;
    }
  }
  u64 host_consumed = 0;  // thread 0's last look at the host's count
  for (;;) {
    if (threadIdx.x == 0) {
      int go = 0;
      u64 sequence = 0;
      // Stop is looked at before a number is claimed: every claimed number below the limit is
      // produced, so the run's events are exactly [0, min(tickets, limit)).
      if (load_volatile(&ring.control->stop_producing) == 0) {
        sequence = atomicAdd(&ring.control->producer_ticket, 1ull);
        go = sequence < p.limit;
      }
      if (go) {
        const u64* abort = &ring.control->abort;
        if (p.period_ns > 0) {
          const u64 due = load_volatile(&ring.control->start_ns) + sequence * p.period_ns;
          for (u64 now = globaltimer_ns(); now < due && !load_volatile(abort);
               now = globaltimer_ns())
            __nanosleep(unsigned(min(due - now, 1000ull)));
        }
        // The slot's previous occupant (event sequence - slots) must be finished; the slot's
        // first event finds it free.
        if (sequence >= u64(ring.slots)) {
          const u64* released = ring.released + sequence % u64(ring.slots);
          const u64 previous_plus_one = sequence - u64(ring.slots) + 1;
          for (unsigned pause = 32;
               load_acquire(released) < previous_plus_one && !load_volatile(abort);
               pause = min(pause * 2, 1024u))
            __nanosleep(pause);
        }
        // Room in the host's result ring (a read across the bus, only when it may be full).
        while (sequence >= host_consumed + u64(ring.result_slots) && !load_volatile(abort)) {
          host_consumed = load_volatile(&ring.host->host_consumed);
          if (sequence >= host_consumed + u64(ring.result_slots)) __nanosleep(1000);
        }
        if (load_volatile(abort)) go = 0;
      }
      s_sequence = sequence;
      s_go = go;
    }
    __syncthreads();
    if (!s_go) break;
    const u64 sequence = s_sequence;
    const unsigned slot = unsigned(sequence % u64(ring.slots));
    if (p.copy) {
      const uint4* source = reinterpret_cast<const uint4*>(
          p.pool + std::size_t(sequence % u64(p.pool_events)) * ring.raw_stride);
      uint4* target = reinterpret_cast<uint4*>(ring.raw + std::size_t(slot) * ring.raw_stride);
      // Eight independent 16-byte loads in flight per thread: one at a time, a block's copy is
      // bound by memory latency (about 4 kB per round trip, some 7 GB/s per block).
      constexpr int kInFlight = 8;
      constexpr std::size_t kRound = std::size_t(kBlockThreads) * kInFlight;
      const std::size_t words = p.raw_bytes / sizeof(uint4);
      std::size_t base = 0;
      for (; base + kRound <= words; base += kRound) {
        uint4 staged[kInFlight];
#pragma unroll
        for (int k = 0; k < kInFlight; ++k)
          staged[k] = __ldcs(source + base + std::size_t(k) * kBlockThreads + threadIdx.x);
#pragma unroll
        for (int k = 0; k < kInFlight; ++k)
          target[base + std::size_t(k) * kBlockThreads + threadIdx.x] = staged[k];
      }
      for (std::size_t i = base + threadIdx.x; i < words; i += kBlockThreads)
        target[i] = __ldcs(source + i);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();  // the raw words before the header and the doorbell
      ring.header[slot] = {sequence, p.first_pulse_id + sequence * p.pulses_per_event,
                           globaltimer_ns()};
      __threadfence();
      store_release(ring.doorbell + slot, sequence + 1);
    }
    __syncthreads();  // s_sequence is rewritten only after every thread has read it
  }
  if (threadIdx.x == 0 && atomicAdd(&ring.control->producers_exited, 1u) == gridDim.x - 1) {
    // The last producer block: no number is claimed any more, so the count is final.
    const u64 count = min(load_volatile(&ring.control->producer_ticket), p.limit);
    __threadfence();
    store_release(&ring.control->consumer_limit, count);
    __threadfence_system();
    *reinterpret_cast<volatile u64*>(&ring.host->final_count_plus_one) = count + 1;
  }
}

// Consumer kernels are compiled for at least this many resident blocks per multiprocessor (at most
// 64 registers a thread). Left to itself the compiler gives the common-mode kernels 80-94
// registers, which leaves 2 blocks (512 threads) per multiprocessor for a kernel whose shuffles
// and sorts need many warps to hide their latency.
constexpr int kConsumerBlocksPerMultiprocessor = 4;

// ---------------------------------------------------------------------------------------------
// Persistent consumer: blocks take (event, tile) tickets in order.

template <RawEncoding E, bool kCommonMode, bool kChecksum>
__global__ void __launch_bounds__(kBlockThreads, kConsumerBlocksPerMultiprocessor)
    persistent_consumer_kernel(Ring ring, CalibrationWork work) {
  __shared__ u64 s_ticket;
  __shared__ int s_go;
  // Thread 0 claims the next ticket while the block calibrates the current tile, so the atomic's
  // round trip is off the critical path. A claimed ticket is abandoned only when the block leaves,
  // and then it is past the run's end.
  u64 next_ticket = 0;
  if (threadIdx.x == 0) next_ticket = atomicAdd(&ring.control->consumer_ticket, 1ull);
  for (;;) {
    if (threadIdx.x == 0) {
      s_ticket = next_ticket;
      s_go = wait_for_event(ring, next_ticket / work.tiles) ? 1 : 0;
      __threadfence();  // order the block's reads of the slot after the doorbell
    }
    __syncthreads();
    if (!s_go) return;
    if (threadIdx.x == 0) next_ticket = atomicAdd(&ring.control->consumer_ticket, 1ull);
    const u64 event = s_ticket / work.tiles;
    const unsigned tile = unsigned(s_ticket % work.tiles);
    const unsigned slot = unsigned(event % u64(ring.slots));
    u64 sum = calibrate_tile<E, kCommonMode, kChecksum>(
        work, ring.raw + std::size_t(slot) * ring.raw_stride,
        ring.out + std::size_t(slot) * ring.out_stride, tile);
    if constexpr (kChecksum) sum = block_sum(sum);
    __syncthreads();  // every thread's stores of the tile are issued
    if (threadIdx.x == 0) {
      if constexpr (kChecksum) atomicAdd(ring.checksum + slot, sum);
      __threadfence();
      if (atomicAdd(ring.tiles_done + slot, 1u) == work.tiles - 1) {
        ring.tiles_done[slot] = 0;
        __threadfence();  // the other tiles' writes (fenced before their counts) are visible
        finish_event(ring, event, 0);
      }
    }
    __syncthreads();
  }
}

// ---------------------------------------------------------------------------------------------
// Launched consumers: [wait -> calibrate -> finish] per event, per lane.

__global__ void wait_kernel(Ring ring, LaneState* state) {
  if (threadIdx.x != 0) return;
  state->skip = wait_for_event(ring, state->event) ? 0u : 1u;
  __threadfence();
}

// A launched lane calibrates into its own image buffer (`out`), a fixed address that the stages
// recorded behind it read.
template <RawEncoding E, bool kCommonMode, bool kChecksum>
__global__ void __launch_bounds__(kBlockThreads, kConsumerBlocksPerMultiprocessor)
    calibrate_slot_kernel(Ring ring, CalibrationWork work, const LaneState* state, float* out) {
  if (state->skip) return;
  const unsigned slot = unsigned(state->event % u64(ring.slots));
  u64 sum = calibrate_tile<E, kCommonMode, kChecksum>(
      work, ring.raw + std::size_t(slot) * ring.raw_stride, out, blockIdx.x);
  if constexpr (kChecksum) {
    sum = block_sum(sum);
    if (threadIdx.x == 0) atomicAdd(ring.checksum + slot, sum);
  }
}

// Publishes the lane's event and moves the lane on; true when the lane goes on with another event.
__device__ __forceinline__ bool finish_lane_event(const Ring& ring, LaneState* state,
                                                  unsigned lanes, u64 known_limit) {
  if (state->skip) return false;  // the run is over (or aborted)
  __threadfence();
  finish_event(ring, state->event, state->lane);
  state->event += lanes;
  return state->event < known_limit;
}

// Host-launched lanes (Graph, Plain): the host enqueues the next event's kernels.
__global__ void finish_kernel(Ring ring, LaneState* state, unsigned lanes, u64 known_limit) {
  if (threadIdx.x == 0) finish_lane_event(ring, state, lanes, known_limit);
}

// Device-graph lanes: the graph relaunches itself after this kernel (tail launch). Kept apart from
// finish_kernel so that only device-launched graphs hold a kernel that uses the device runtime.
__global__ void finish_and_relaunch_kernel(Ring ring, LaneState* state, unsigned lanes,
                                           u64 known_limit) {
  if (threadIdx.x != 0 || !finish_lane_event(ring, state, lanes, known_limit)) return;
  const cudaError_t status = cudaGraphLaunch(cudaGetCurrentGraphExec(), cudaStreamGraphTailLaunch);
  if (status != cudaSuccess) __trap();  // no way to go on; the host sees the fault
}

__global__ void globaltimer_probe_kernel(HostShared* host) {
  *reinterpret_cast<volatile u64*>(&host->globaltimer_probe) = globaltimer_ns();
  __threadfence_system();
}

// Kernel pointers for the detector's encoding and common-mode setting.
struct Kernels {
  void (*persistent)(Ring, CalibrationWork) = nullptr;
  void (*calibrate)(Ring, CalibrationWork, const LaneState*, float*) = nullptr;
};

// Only the ePix10ka and Jungfrau have common-mode banks here: float32 data is calibrated already
// and integer images have none (the description parser refuses bank_columns for them), so their
// common-mode kernels are not built.
template <RawEncoding E, bool kChecksum>
Kernels kernels_for(bool common_mode) {
  if constexpr (E == RawEncoding::Epix10ka || E == RawEncoding::Jungfrau)
    if (common_mode)
      return {persistent_consumer_kernel<E, true, kChecksum>,
              calibrate_slot_kernel<E, true, kChecksum>};
  return {persistent_consumer_kernel<E, false, kChecksum>,
          calibrate_slot_kernel<E, false, kChecksum>};
}

template <RawEncoding E>
Kernels kernels_for(bool common_mode, bool checksum) {
  return checksum ? kernels_for<E, true>(common_mode) : kernels_for<E, false>(common_mode);
}

Kernels kernels_for(RawEncoding encoding, bool common_mode, bool checksum) {
  switch (encoding) {
    case RawEncoding::Epix10ka:
      return kernels_for<RawEncoding::Epix10ka>(common_mode, checksum);
    case RawEncoding::Jungfrau:
      return kernels_for<RawEncoding::Jungfrau>(common_mode, checksum);
    case RawEncoding::Uint16:
      return kernels_for<RawEncoding::Uint16>(common_mode, checksum);
    case RawEncoding::Uint32:
      return kernels_for<RawEncoding::Uint32>(common_mode, checksum);
    case RawEncoding::Int32:
      return kernels_for<RawEncoding::Int32>(common_mode, checksum);
    case RawEncoding::Float32:
    default:
      return kernels_for<RawEncoding::Float32>(common_mode, checksum);
  }
}

std::size_t round_up(std::size_t value, std::size_t to) {
  return (value + to - 1) / to * to;
}

std::int64_t host_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string_view to_string(ProducerMode mode) {
  return mode == ProducerMode::Copy ? "copy" : "in_place";
}

// ---------------------------------------------------------------------------------------------

struct ResidentPipeline::State {
  DetectorDescription detector;
  DeviceBuffer pedestal_gain, status, pool, raw, out, doorbell, released, header, tiles_done,
      checksum;
  DeviceBuffer control, lane_state;
  MappedHostBuffer results_host, shared_host;
  // Stages (launched modes): the payload ring (one entry per result slot), the compressed arena
  // (likewise), its entry size, and each lane's stage buffers.
  MappedHostBuffer payload_host;
  DeviceBuffer arena, warm_up_state;
  std::size_t arena_stride = 0;
  PayloadLayout layout;
  std::vector<std::unique_ptr<LaneStages>> lane_stages;
  PinnedBuffer stop_word;
  ResultRecord* results = nullptr;  // host view
  HostShared* shared = nullptr;     // host view
  Ring ring;
  CalibrationWork work;
  Kernels kernels;
  ProducerParams producer;
  int producer_blocks = 0;
  std::unique_ptr<Stream> producer_stream, control_stream;
  std::vector<std::unique_ptr<Stream>> lane_streams;
  std::vector<cudaGraphExec_t> graphs;  // Graph / DeviceGraph: one per lane
  std::int64_t clock_offset_ns = 0;     // host steady ns - device globaltimer ns
  std::uint64_t enqueued = 0;           // Graph / Plain: events whose kernels are enqueued
  // Snapshots (request_snapshot): host copies of one event's raw words and calibrated image,
  // made on first request; the event they were enqueued for until its result is returned.
  PinnedBuffer snapshot_raw, snapshot_image;
  bool snapshot_wanted = false;
  std::optional<std::uint64_t> snapshot_event;
  bool stop_requested = false;
  bool finished = false;  // kernels done and synchronised
  bool aborted = false;
  bool hung = false;  // kernels did not leave after an abort: leak, never free

  ~State() {
    for (cudaGraphExec_t g : graphs) cudaGraphExecDestroy(g);
  }

  // A launched lane's calibrated image.
  float* lane_out(int lane) const {
    return const_cast<float*>(out.as<float>()) + std::size_t(lane) * ring.out_stride;
  }
  // Event `event`'s raw words (its slot) and calibrated image (the lane's) into the snapshot
  // buffers, on the lane's stream before its finish kernel releases the slot: the copies end
  // before the event's result is published.
  void enqueue_snapshot(int lane_index, std::uint64_t event, cudaStream_t stream) {
    const std::size_t slot = std::size_t(event % std::uint64_t(ring.slots));
    check(cudaMemcpyAsync(snapshot_raw.get(), ring.raw + slot * ring.raw_stride,
                          snapshot_raw.bytes(), cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync(snapshot raw words)");
    check(cudaMemcpyAsync(snapshot_image.get(), lane_out(lane_index), snapshot_image.bytes(),
                          cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync(snapshot image)");
  }
  // One event's work on a launched lane, enqueued (or captured) on `stream`: wait for the
  // doorbell, calibrate, the stages, then the finish kernel given.
  // `lane`: the lane's state words (another's for the warm-up, which waits for no doorbell).
  template <typename Finish>
  void record_lane(int lane_index, LaneState* lane, bool wait, const Stream& stream,
                   Finish&& finish, std::uint64_t trap_at_event) {
    if (wait) wait_kernel<<<1, 32, 0, stream.get()>>>(ring, lane);
    LaneStages* stages = lane_stages.empty() ? nullptr : lane_stages[std::size_t(lane_index)].get();
    if (stages) stages->record_start(lane, stream);
    kernels.calibrate<<<work.tiles, kBlockThreads, 0, stream.get()>>>(ring, work, lane,
                                                                      lane_out(lane_index));
    if (stages)
      stages->record_after_calibration(ring, lane, lane_out(lane_index), trap_at_event, stream);
    finish(lane, stream.get());
  }
};

ResidentPipeline::ResidentPipeline(const DetectorDescription& detector,
                                   const CalibrationConstants& constants,
                                   const std::vector<std::vector<std::uint8_t>>& pool,
                                   const ResidentConfig& config)
    : config_(config), state_(std::make_unique<State>()) {
  const std::size_t pixels = detector.pixels();
  const bool common_mode = config.params.common_mode && detector.bank_columns > 0;
  if (config.launch != LaunchMode::Persistent && config.launch != LaunchMode::DeviceGraph &&
      config.launch != LaunchMode::Graph && config.launch != LaunchMode::Plain)
    throw InputError("resident pipeline: unknown launch mode");
  if (config.lanes < 1 || config.lanes > 16)
    throw InputError("resident pipeline: lanes " + std::to_string(config.lanes) + " (1..16)");
  if (config.ring_slots < 2 || config.ring_slots > 1024)
    throw InputError("resident pipeline: ring_slots " + std::to_string(config.ring_slots) +
                     " (2..1024)");
  if (config.rate_hz < 0) throw InputError("resident pipeline: rate_hz must be >= 0");
  if (pool.empty()) throw InputError("resident pipeline: the event pool is empty");
  for (const auto& event : pool)
    if (event.size() != detector.raw_event_bytes())
      throw InputError("resident pipeline: a pool event of " + std::to_string(event.size()) +
                       " bytes for detector '" + detector.name + "' (" +
                       std::to_string(detector.raw_event_bytes()) + " bytes per event)");
  if (config.producer == ProducerMode::InPlace && config.ring_slots % int(pool.size()) != 0)
    throw InputError("resident pipeline: producer in_place needs ring_slots (" +
                     std::to_string(config.ring_slots) + ") to be a multiple of the pool size (" +
                     std::to_string(pool.size()) + ")");
  if (pixels == 0 || pixels % kLanePixels != 0 ||
      (common_mode && detector.bank_columns % kLanePixels != 0) ||
      detector.bank_columns > calib::kMaxBankColumns ||
      (common_mode && pixels % std::size_t(detector.bank_columns) != 0))
    throw InputError("resident pipeline: detector '" + detector.name +
                     "' does not fit the resident kernels (pixels and bank columns must be "
                     "multiples of 8, bank rows at most 64 wide)");
  if (constants.pixels != pixels || constants.modes != detector.modes())
    throw InputError("resident pipeline: calibration constants do not fit detector '" +
                     detector.name + "'");
  const bool staged = config.stages.any();
  if (staged && config.launch == LaunchMode::Persistent)
    throw InputError(
        "resident pipeline: the persistent consumer calibrates only (its blocks take tiles of "
        "any event, so no lane holds an event for the later stages); compression, integration "
        "and peak finding run with launch device_graph, graph or plain");

  State& s = *state_;
  s.detector = detector;
  use_device();
  const std::size_t raw_bytes = detector.raw_event_bytes();
  const std::size_t raw_stride = round_up(raw_bytes, 256);
  const std::size_t out_stride = round_up(pixels * sizeof(float), 256) / sizeof(float);
  const int slots = config.ring_slots;
  // With compression every result slot also holds a compressed stream on the device (up to the
  // codec's bound, megabytes), so fewer are kept: still two ring turns of results in flight.
  const int result_slots =
      config.stages.compression ? std::max(2 * slots, 64) : std::max(4 * slots, 256);
  const int lanes = config.launch == LaunchMode::Persistent ? 1 : config.lanes;

  s.pedestal_gain = DeviceBuffer(constants.pedestal_gain.size() * sizeof(calib::PedestalGain));
  s.status = DeviceBuffer(pixels);
  check(cudaMemcpy(s.pedestal_gain.get(), constants.pedestal_gain.data(), s.pedestal_gain.bytes(),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy(constants to the device)");
  check(cudaMemcpy(s.status.get(), constants.pixel_status.data(), pixels, cudaMemcpyHostToDevice),
        "cudaMemcpy(pixel status to the device)");

  s.raw = DeviceBuffer(std::size_t(slots) * raw_stride);
  // Persistent: an image per ring slot; launched lanes: one per lane (State::lane_out).
  const int images = config.launch == LaunchMode::Persistent ? slots : lanes;
  s.out = DeviceBuffer(std::size_t(images) * out_stride * sizeof(float));
  s.doorbell = DeviceBuffer(std::size_t(slots) * sizeof(u64));
  s.released = DeviceBuffer(std::size_t(slots) * sizeof(u64));
  s.header = DeviceBuffer(std::size_t(slots) * sizeof(SlotHeader));
  s.tiles_done = DeviceBuffer(std::size_t(slots) * sizeof(unsigned));
  s.checksum = DeviceBuffer(std::size_t(slots) * sizeof(u64));
  s.control = DeviceBuffer(sizeof(DeviceControl));
  s.lane_state = DeviceBuffer(std::size_t(lanes) * sizeof(LaneState));
  check(cudaMemset(s.doorbell.get(), 0, s.doorbell.bytes()), "cudaMemset(doorbells)");
  check(cudaMemset(s.released.get(), 0, s.released.bytes()), "cudaMemset(release words)");
  check(cudaMemset(s.tiles_done.get(), 0, s.tiles_done.bytes()), "cudaMemset(tile counts)");
  check(cudaMemset(s.checksum.get(), 0, s.checksum.bytes()), "cudaMemset(checksums)");
  DeviceControl control{};
  control.consumer_limit = kNoLimit;
  check(cudaMemcpy(s.control.get(), &control, sizeof control, cudaMemcpyHostToDevice),
        "cudaMemcpy(control words)");
  std::vector<LaneState> lane_states(static_cast<std::size_t>(lanes));
  for (int l = 0; l < lanes; ++l) lane_states[std::size_t(l)] = {u64(l), 0u, unsigned(l)};
  check(cudaMemcpy(s.lane_state.get(), lane_states.data(), s.lane_state.bytes(),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy(lane states)");

  // The pool: Copy reads from it per event; InPlace writes it into the slots once.
  const int pool_events = int(pool.size());
  if (config.producer == ProducerMode::Copy) {
    s.pool = DeviceBuffer(std::size_t(pool_events) * raw_stride);
    for (int i = 0; i < pool_events; ++i)
      check(cudaMemcpy(s.pool.as<char>() + std::size_t(i) * raw_stride, pool[std::size_t(i)].data(),
                       raw_bytes, cudaMemcpyHostToDevice),
            "cudaMemcpy(event pool to the device)");
  } else {
    for (int slot = 0; slot < slots; ++slot)
      check(cudaMemcpy(s.raw.as<char>() + std::size_t(slot) * raw_stride,
                       pool[std::size_t(slot % pool_events)].data(), raw_bytes,
                       cudaMemcpyHostToDevice),
            "cudaMemcpy(event pool into the ring slots)");
  }

  // Pinned, mapped host memory for the results and the shared words.
  s.results_host = MappedHostBuffer(std::size_t(result_slots) * sizeof(ResultRecord));
  s.shared_host = MappedHostBuffer(sizeof(HostShared));
  // Host words the control stream copies from and to: stop flag, announced(), abort flag.
  s.stop_word = PinnedBuffer(3 * sizeof(u64));
  s.results = static_cast<ResultRecord*>(s.results_host.host());
  s.shared = static_cast<HostShared*>(s.shared_host.host());
  void* device_results = s.results_host.device();
  void* device_shared = s.shared_host.device();

  Ring& ring = s.ring;
  ring.raw = s.raw.as<char>();
  ring.raw_stride = raw_stride;
  ring.out = s.out.as<float>();
  ring.out_stride = out_stride;
  ring.doorbell = s.doorbell.as<u64>();
  ring.released = s.released.as<u64>();
  ring.header = s.header.as<SlotHeader>();
  ring.tiles_done = s.tiles_done.as<unsigned>();
  ring.checksum = s.checksum.as<u64>();
  ring.slots = slots;
  ring.results = static_cast<ResultRecord*>(device_results);
  ring.result_slots = result_slots;
  ring.host = static_cast<HostShared*>(device_shared);
  ring.control = s.control.as<DeviceControl>();

  CalibrationWork& work = s.work;
  work.status = s.status.as<const std::uint8_t>();
  work.pedestal_gain = s.pedestal_gain.as<const PedestalGain>();
  work.pixels = pixels;
  work.bank_columns = detector.bank_columns;
  work.rows = detector.bank_columns > 0 ? pixels / std::size_t(detector.bank_columns) : 0;
  work.params = config.params;
  work.tiles = tiles_per_event(pixels, work.rows, common_mode);
  s.kernels = kernels_for(detector.encoding, common_mode, config.checksum);

  ProducerParams& p = s.producer;
  p.pool = s.pool.as<const char>();
  p.pool_events = pool_events;
  p.raw_bytes = round_up(raw_bytes, 16);
  p.copy = config.producer == ProducerMode::Copy;
  p.limit = config.events > 0 ? config.events : kNoLimit;
  p.period_ns = config.rate_hz > 0 ? u64(1e9 / config.rate_hz) : 0;
  p.first_pulse_id = config.first_pulse_id;
  p.pulses_per_event = config.pulses_per_event;
  s.producer_blocks = config.producer_blocks > 0 ? config.producer_blocks : (p.copy ? 32 : 16);

  // Lazy loading (the default since CUDA 12.2) loads a kernel at its first launch, and loading
  // waits for the device to be idle: launching a consumer while the producer already spins would
  // never return. Every kernel this pipeline launches is loaded here, before anything runs.
  {
    cudaFuncAttributes attributes{};
    const void* used[] = {reinterpret_cast<const void*>(producer_kernel),
                          reinterpret_cast<const void*>(s.kernels.persistent),
                          reinterpret_cast<const void*>(s.kernels.calibrate),
                          reinterpret_cast<const void*>(wait_kernel),
                          reinterpret_cast<const void*>(finish_kernel),
                          reinterpret_cast<const void*>(finish_and_relaunch_kernel),
                          reinterpret_cast<const void*>(globaltimer_probe_kernel)};
    for (const void* kernel : used)
      check(cudaFuncGetAttributes(&attributes, kernel),
            "cudaFuncGetAttributes (preloading kernels)");
  }

  s.producer_stream = std::make_unique<Stream>();
  s.control_stream = std::make_unique<Stream>();
  for (int l = 0; l < lanes; ++l) s.lane_streams.push_back(std::make_unique<Stream>());

  if (staged) {
    // The stages' rings and each lane's stage buffers. The payload ring is mapped host memory
    // the device writes and the host reads; the arena stays on the device.
    const std::size_t profile_doubles =
        config.stages.integrator
            ? DeviceIntegrator::result_doubles_for(config.stages.integrator->config().bins)
            : 0;
    const int peak_capacity =
        config.stages.peak_finder ? config.stages.peak_finder->params().max_num_peaks : 0;
    s.layout = payload_layout(config.stages, profile_doubles, peak_capacity);
    s.payload_host = MappedHostBuffer(std::size_t(result_slots) * s.layout.stride);
    std::memset(s.payload_host.host(), 0, std::size_t(result_slots) * s.layout.stride);
    if (config.stages.compression) {
      s.arena_stride = round_up(std::size_t(compressed_bound(detector, config.stages)), 256);
      s.arena = DeviceBuffer(std::size_t(result_slots) * s.arena_stride);
    }
    check(cudaMemset(s.out.get(), 0, s.out.bytes()), "cudaMemset(lane images)");
    std::optional<IntegrationPlan> plan;
    if (config.stages.integrator) {
      integrate::Integrator reference = *config.stages.integrator;
      plan = plan_from(reference);
    }
    for (int l = 0; l < lanes; ++l)
      s.lane_stages.push_back(std::make_unique<LaneStages>(
          detector, config.stages, plan ? &*plan : nullptr, s.layout,
          static_cast<char*>(s.payload_host.device()), s.arena.as<char>(), s.arena_stride,
          l == 0 ? nullptr : s.lane_stages.front()->finder()));
    // Warm-up: each lane's stages once on its zeroed image, with a state that skips the publish,
    // so that every kernel they launch is loaded now (see the lazy-loading note above).
    s.warm_up_state = DeviceBuffer(sizeof(LaneState));
    const LaneState skipping{0, 1u, 0};
    check(cudaMemcpy(s.warm_up_state.get(), &skipping, sizeof skipping, cudaMemcpyHostToDevice),
          "cudaMemcpy(warm-up lane state)");
    for (int l = 0; l < lanes; ++l)
      s.record_lane(
          l, s.warm_up_state.as<LaneState>(), false, *s.lane_streams[std::size_t(l)],
          [](LaneState*, cudaStream_t) {}, ~0ull);
    check(cudaDeviceSynchronize(), "warm-up of the resident stages");
  }

  // Graph / DeviceGraph: capture each lane's kernels once.
  if (config.launch == LaunchMode::Graph || config.launch == LaunchMode::DeviceGraph) {
    const bool device_launch = config.launch == LaunchMode::DeviceGraph;
    for (int l = 0; l < lanes; ++l) {
      const cudaStream_t stream = s.lane_streams[std::size_t(l)]->get();
      LaneState* lane = s.lane_state.as<LaneState>() + l;
      cudaGraph_t graph = nullptr;
      check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
            "cudaStreamBeginCapture");
      s.record_lane(
          l, lane, true, *s.lane_streams[std::size_t(l)],
          [&](LaneState* state, cudaStream_t st) {
            if (device_launch)
              finish_and_relaunch_kernel<<<1, 32, 0, st>>>(ring, state, unsigned(lanes), p.limit);
            else
              finish_kernel<<<1, 32, 0, st>>>(ring, state, unsigned(lanes), p.limit);
          },
          config.trap_at_event);
      check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture(resident lane)");
      cudaGraphExec_t exec = nullptr;
      const cudaError_t status = cudaGraphInstantiate(
          &exec, graph, device_launch ? cudaGraphInstantiateFlagDeviceLaunch : 0);
      cudaGraphDestroy(graph);
      if (status != cudaSuccess) fail(status, "cudaGraphInstantiate(resident lane)");
      s.graphs.push_back(exec);
      if (device_launch) check(cudaGraphUpload(exec, stream), "cudaGraphUpload(resident lane)");
    }
  }
  check(cudaDeviceSynchronize(), "set-up of the resident pipeline");
}

ResidentPipeline::~ResidentPipeline() {
  if (started_ && !state_->finished) {
    try {
      stop();
    } catch (...) {
      // A device fault or a stall while stopping: reported by whoever saw it first; the kernels
      // were told to abort (abort_and_wait) before the exception left next_result.
    }
  }
  if (state_->hung) {
    // Freeing device memory waits for the kernels that use it; they did not stop, so the memory
    // is left to the process's end rather than hanging here.
    (void)state_.release();
  }
}

std::string ResidentPipeline::diagnostics() const {
  State& s = *state_;
  DeviceControl control{};
  const int shown = std::min(s.ring.slots, 8);
  std::vector<u64> doorbells(std::size_t(shown), 0);
  cudaError_t status = cudaMemcpyAsync(&control, s.control.get(), sizeof control,
                                       cudaMemcpyDeviceToHost, s.control_stream->get());
  if (status == cudaSuccess)
    status = cudaMemcpyAsync(doorbells.data(), s.doorbell.get(), doorbells.size() * sizeof(u64),
                             cudaMemcpyDeviceToHost, s.control_stream->get());
  if (status == cudaSuccess) status = cudaStreamSynchronize(s.control_stream->get());
  if (status != cudaSuccess)
    return std::string("device state unavailable: ") + cudaGetErrorString(status);
  std::ostringstream text;
  text << "producer claimed " << control.producer_ticket << ", consumer ticket "
       << control.consumer_ticket << ", limit "
       << (control.consumer_limit == kNoLimit ? std::string("open")
                                              : std::to_string(control.consumer_limit))
       << ", producer blocks started " << control.producers_started << " exited "
       << control.producers_exited << ", host consumed "
       << std::atomic_ref<u64>(s.shared->host_consumed).load() << ", enqueued " << s.enqueued
       << ", doorbells";
  for (const u64 d : doorbells) text << " " << d;
  return text.str();
}

void ResidentPipeline::abort_and_wait() {
  State& s = *state_;
  if (s.aborted) return;
  s.aborted = true;
  u64* abort_word = static_cast<u64*>(s.stop_word.get()) + 2;
  *abort_word = 1;
  DeviceControl* control = s.control.as<DeviceControl>();
  if (cudaMemcpyAsync(&control->abort, abort_word, sizeof(u64), cudaMemcpyHostToDevice,
                      s.control_stream->get()) != cudaSuccess ||
      cudaStreamSynchronize(s.control_stream->get()) != cudaSuccess)
    return;  // the context is gone: the kernels are gone with it
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto busy = [&s] {
    if (cudaStreamQuery(s.producer_stream->get()) == cudaErrorNotReady) return true;
    for (const auto& stream : s.lane_streams)
      if (cudaStreamQuery(stream->get()) == cudaErrorNotReady) return true;
    return false;
  };
  while (busy()) {
    if (std::chrono::steady_clock::now() > deadline) {
      s.hung = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  s.finished = true;
}

std::size_t ResidentPipeline::device_bytes() const {
  const State& s = *state_;
  std::size_t stages = s.arena.bytes();
  for (const auto& lane : s.lane_stages) stages += lane->device_bytes();
  return s.pedestal_gain.bytes() + s.status.bytes() + s.pool.bytes() + s.raw.bytes() +
         s.out.bytes() + s.doorbell.bytes() + s.released.bytes() + s.header.bytes() +
         s.tiles_done.bytes() + s.checksum.bytes() + s.control.bytes() + s.lane_state.bytes() +
         stages;
}

integrate::Profile ResidentPipeline::profile(const ResidentResult& result) const {
  const State& s = *state_;
  if (s.lane_stages.empty() || !s.lane_stages.front()->integrator() || !result.payload)
    throw InputError("resident pipeline: integration is off");
  return s.lane_stages.front()->integrator()->profile_from(
      reinterpret_cast<const double*>(static_cast<const char*>(result.payload) + s.layout.profile));
}

peaks::PeakList ResidentPipeline::peaks(const ResidentResult& result) const {
  const State& s = *state_;
  if (s.lane_stages.empty() || !s.lane_stages.front()->finder() || !result.payload)
    throw InputError("resident pipeline: peak finding is off");
  return s.lane_stages.front()->finder()->list_from(static_cast<const char*>(result.payload) +
                                                    s.layout.peaks);
}

std::vector<std::uint8_t> ResidentPipeline::compressed(const ResidentResult& result) const {
  const State& s = *state_;
  if (!config_.stages.compression) throw InputError("resident pipeline: compression is off");
  if (result.compressed_bytes > s.arena_stride)
    throw RuntimeFault("resident pipeline: event " + std::to_string(result.sequence) +
                       " reports a compressed stream of " +
                       std::to_string(result.compressed_bytes) + " bytes, above its arena entry (" +
                       std::to_string(s.arena_stride) + ")");
  std::vector<std::uint8_t> bytes(result.compressed_bytes);
  const std::size_t entry = std::size_t(result.sequence % std::uint64_t(s.ring.result_slots));
  // On the control stream: a copy on the default stream would wait for the running kernels.
  check(cudaMemcpyAsync(bytes.data(), s.arena.as<const char>() + entry * s.arena_stride,
                        bytes.size(), cudaMemcpyDeviceToHost, s.control_stream->get()),
        "cudaMemcpyAsync(compressed stream from the arena)");
  s.control_stream->synchronize();
  return bytes;
}

std::string ResidentPipeline::describe() const {
  std::ostringstream text;
  text << to_string(config_.launch);
  if (config_.launch != LaunchMode::Persistent) text << " x" << config_.lanes;
  text << ", ring " << config_.ring_slots << ", producer " << to_string(config_.producer);
  if (config_.rate_hz > 0)
    text << " at " << config_.rate_hz << " Hz";
  else
    text << ", flat out";
  if (config_.stages.any()) {
    text << ", stages calibrate";
    if (config_.stages.compression)
      text << " -> compress " << codec::to_string(config_.stages.compression->codec);
    if (config_.stages.integrator) text << " -> integrate";
    if (config_.stages.peak_finder) text << " -> peakfinder8";
  }
  return text.str();
}

std::int64_t ResidentPipeline::to_host_ns(std::uint64_t device_ns) const {
  return std::int64_t(device_ns) + state_->clock_offset_ns;
}

std::optional<std::uint64_t> ResidentPipeline::final_count() const {
  const u64 plus_one =
      std::atomic_ref<u64>(state_->shared->final_count_plus_one).load(std::memory_order_acquire);
  if (plus_one == 0) return std::nullopt;
  return plus_one - 1;
}

std::uint64_t ResidentPipeline::announced() const {
  State& s = *state_;
  u64* word = static_cast<u64*>(s.stop_word.get()) + 1;
  DeviceControl* control = s.control.as<DeviceControl>();
  check(cudaMemcpyAsync(word, &control->producer_ticket, sizeof(u64), cudaMemcpyDeviceToHost,
                        s.control_stream->get()),
        "cudaMemcpyAsync(producer count)");
  s.control_stream->synchronize();
  return std::min<std::uint64_t>(*word, s.producer.limit);
}

void ResidentPipeline::start() {
  if (started_) throw InputError("resident pipeline: start() called twice");
  started_ = true;
  State& s = *state_;
  // Device clock -> host steady clock: a probe kernel between two host readings.
  {
    const std::int64_t before = host_now_ns();
    void* device_shared = s.ring.host;
    globaltimer_probe_kernel<<<1, 1, 0, s.control_stream->get()>>>(
        static_cast<HostShared*>(device_shared));
    check_launch("globaltimer_probe_kernel");
    s.control_stream->synchronize();
    const std::int64_t after = host_now_ns();
    const u64 device = std::atomic_ref<u64>(s.shared->globaltimer_probe).load();
    s.clock_offset_ns = (before + after) / 2 - std::int64_t(device);
  }
  // The producer first, and running, before any consumer can fill the multiprocessors.
  producer_kernel<<<s.producer_blocks, kBlockThreads, 0, s.producer_stream->get()>>>(s.ring,
                                                                                     s.producer);
  check_launch("producer_kernel");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::atomic_ref<u64>(s.shared->producers_running).load(std::memory_order_acquire) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      const std::string state = diagnostics();
      abort_and_wait();
      throw RuntimeFault("resident pipeline: the producer kernel did not start within 10 s (" +
                         state + ")");
    }
    if (const cudaError_t status = cudaStreamQuery(s.producer_stream->get());
        status != cudaErrorNotReady && status != cudaSuccess)
      fail(status, "producer_kernel");
    std::this_thread::yield();
  }

  switch (config_.launch) {
    case LaunchMode::Persistent: {
      int per_multiprocessor = 0;
      check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, s.kernels.persistent,
                                                          kBlockThreads, 0),
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
      const int multiprocessors = device_properties().multiprocessors;
      // Leave the producer's blocks their room; blocks that do not fit would only wait, harmless,
      // because work is handed out by ticket to blocks that run.
      const int blocks = std::max(1, per_multiprocessor * multiprocessors - s.producer_blocks);
      s.kernels.persistent<<<blocks, kBlockThreads, 0, s.lane_streams[0]->get()>>>(s.ring, s.work);
      check_launch("persistent_consumer_kernel");
      break;
    }
    case LaunchMode::DeviceGraph:
      for (std::size_t l = 0; l < s.graphs.size(); ++l)
        check(cudaGraphLaunch(s.graphs[l], s.lane_streams[l]->get()),
              "cudaGraphLaunch(device graph, first launch)");
      break;
    case LaunchMode::Graph:
    case LaunchMode::Plain:
      break;  // next_result keeps the queues filled
  }
}

std::optional<ResidentResult> ResidentPipeline::next_result(bool block, double stall_timeout_s) {
  if (!started_) throw InputError("resident pipeline: next_result before start()");
  State& s = *state_;
  if (s.aborted) throw RuntimeFault("resident pipeline: stopped after an earlier error");
  const int lanes = int(s.lane_streams.size());
  auto last_progress = std::chrono::steady_clock::now();
  // The results returned so far, the last one's payload included, are done with: their entries
  // may be reused by the producer from now on.
  std::atomic_ref<u64>(s.shared->host_consumed).store(returned_, std::memory_order_release);
  for (;;) {
    // Graph / Plain: keep up to ring_slots events' kernels enqueued ahead (they wait on the
    // device for their doorbells; the host never waits for an event here).
    if (config_.launch == LaunchMode::Graph || config_.launch == LaunchMode::Plain) {
      const std::optional<std::uint64_t> final = final_count();
      const std::uint64_t limit = final ? *final : (config_.events > 0 ? config_.events : kNoLimit);
      while (s.enqueued < returned_ + std::uint64_t(config_.ring_slots) && s.enqueued < limit &&
             !(s.stop_requested && final)) {
        const int l = int(s.enqueued % std::uint64_t(lanes));
        const cudaStream_t stream = s.lane_streams[std::size_t(l)]->get();
        // A snapshot's event runs its kernels plainly (its copies go before the finish kernel),
        // whichever the mode: the same kernels as the lane's graph.
        const bool snapshot = s.snapshot_wanted && !s.snapshot_event;
        if (config_.launch == LaunchMode::Graph && !snapshot) {
          check(cudaGraphLaunch(s.graphs[std::size_t(l)], stream),
                "cudaGraphLaunch(resident lane)");
        } else {
          const std::uint64_t event = s.enqueued;
          s.record_lane(
              l, s.lane_state.as<LaneState>() + l, true, *s.lane_streams[std::size_t(l)],
              [&](LaneState* state, cudaStream_t st) {
                if (snapshot) s.enqueue_snapshot(l, event, st);
                finish_kernel<<<1, 32, 0, st>>>(s.ring, state, unsigned(lanes), s.producer.limit);
              },
              config_.trap_at_event);
          check_launch("resident lane kernels");
          if (snapshot) {
            s.snapshot_wanted = false;
            s.snapshot_event = event;
          }
        }
        ++s.enqueued;
      }
    }
    ResultRecord& record = s.results[returned_ % std::uint64_t(s.ring.result_slots)];
    if (std::atomic_ref<u64>(record.ready).load(std::memory_order_acquire) == returned_ + 1) {
      ResidentResult result;
      result.sequence = record.sequence;
      result.pulse_id = record.pulse_id;
      result.doorbell_ns = record.doorbell_ns;
      result.done_ns = record.done_ns;
      result.checksum = record.checksum;
      result.slot = int(record.slot);
      result.lane = int(record.lane);
      result.seen_host_ns = host_now_ns();
      if (!s.lane_stages.empty()) {
        const char* payload =
            static_cast<const char*>(s.payload_host.host()) +
            std::size_t(returned_ % std::uint64_t(s.ring.result_slots)) * s.layout.stride;
        std::memcpy(result.stamps.data(), payload + s.layout.stamps, sizeof result.stamps);
        if (config_.stages.compression)
          std::memcpy(&result.compressed_bytes, payload + s.layout.compressed_size,
                      sizeof result.compressed_bytes);
        result.payload = payload;
      }
      if (s.snapshot_event && *s.snapshot_event == returned_) {
        result.snapshot_raw = s.snapshot_raw.as<std::uint8_t>();
        result.snapshot_image = s.snapshot_image.as<float>();
        s.snapshot_event.reset();
      }
      ++returned_;
      return result;
    }
    if (const auto final = final_count(); final && returned_ >= *final) return std::nullopt;
    if (!block) return std::nullopt;
    // Nothing yet: look for a device fault, and give up after a long stall.
    for (const auto& stream : s.lane_streams)
      if (const cudaError_t status = cudaStreamQuery(stream->get());
          status != cudaErrorNotReady && status != cudaSuccess)
        fail(status, "resident pipeline consumer");
    if (const cudaError_t status = cudaStreamQuery(s.producer_stream->get());
        status != cudaErrorNotReady && status != cudaSuccess)
      fail(status, "resident pipeline producer");
    if (std::chrono::steady_clock::now() - last_progress >
        std::chrono::duration<double>(stall_timeout_s)) {
      const std::string state = diagnostics();
      abort_and_wait();
      throw RuntimeFault("resident pipeline: no result for " + std::to_string(stall_timeout_s) +
                         " s while event " + std::to_string(returned_) + " was owed (" +
                         describe() + "; " + state + ")");
    }
    std::this_thread::yield();
  }
}

bool ResidentPipeline::request_snapshot() {
  if (config_.launch != LaunchMode::Graph && config_.launch != LaunchMode::Plain) return false;
  State& s = *state_;
  if (!s.snapshot_raw.get()) {
    s.snapshot_raw = PinnedBuffer(s.detector.raw_event_bytes());
    s.snapshot_image = PinnedBuffer(s.detector.pixels() * sizeof(float));
  }
  s.snapshot_wanted = true;
  return true;
}

void ResidentPipeline::request_stop() {
  if (!started_ || state_->stop_requested || state_->aborted) return;
  State& s = *state_;
  s.stop_requested = true;
  u64* stop = static_cast<u64*>(s.stop_word.get());
  *stop = 1;
  DeviceControl* control = s.control.as<DeviceControl>();
  check(cudaMemcpyAsync(&control->stop_producing, stop, sizeof(u64), cudaMemcpyHostToDevice,
                        s.control_stream->get()),
        "cudaMemcpyAsync(stop the producer)");
}

void ResidentPipeline::stop() {
  if (!started_ || state_->finished || state_->aborted) return;
  request_stop();
  while (next_result(true)) {
  }
  // Every event is back, so the kernels are leaving. A device-wide wait, because work launched
  // from the device (tail launches) is not tracked by the host's streams.
  check(cudaDeviceSynchronize(), "resident pipeline: finishing");
  state_->finished = true;
}

}  // namespace livedrp::gpu
