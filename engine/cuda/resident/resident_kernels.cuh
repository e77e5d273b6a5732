#pragma once
// Device side of the resident pipeline (resident_pipeline.hpp): the ring's layout as the kernels
// see it, the memory-ordering primitives, and the per-tile calibration all consumers share.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "calib/output_checksum.hpp"
#include "cuda/calibration_lanes.cuh"

namespace livedrp::gpu::resident {

using u64 = unsigned long long;

// Written by the producer before the doorbell; read by the consumer that finishes the event.
struct SlotHeader {
  u64 sequence;
  u64 pulse_id;
  u64 doorbell_ns;
};

// One result in the pinned host ring (64 bytes, one record per cache line). `ready` is written
// last, after a system-scope fence: sequence + 1 once the record is complete.
struct alignas(64) ResultRecord {
  u64 sequence;
  u64 pulse_id;
  u64 doorbell_ns;
  u64 done_ns;
  u64 checksum;
  unsigned slot;
  unsigned lane;
  u64 ready;
  u64 reserved;
};
static_assert(sizeof(ResultRecord) == 64);

// Pinned host memory the device reads and writes (mapped). The device only loads and stores
// here, each word with a single writer: atomics on host memory need bus atomics the host's PCIe
// root may not have.
struct HostShared {
  u64 host_consumed;         // host -> device: results read so far
  u64 final_count_plus_one;  // device -> host: events of the run + 1, once the producer is done
  u64 globaltimer_probe;     // device -> host: %globaltimer for the clock offset
  u64 producers_running;     // device -> host: 1 once every producer block runs
};

// Device memory the kernels coordinate through.
struct DeviceControl {
  u64 producer_ticket;  // next sequence number a producer block claims
  u64 consumer_ticket;  // next (event, tile) ticket of the persistent consumer
  u64 consumer_limit;   // events of the run; ~0 until the producer is done
  u64 stop_producing;   // host -> device (set with a copy): claim no more sequence numbers
  u64 abort;            // host -> device (set with a copy): every kernel leaves its loops now
  u64 start_ns;         // the producer's time origin (pacing)
  unsigned producers_started;
  unsigned producers_exited;
};

// Per consumer lane of the launched modes (DeviceGraph, Graph, Plain).
struct LaneState {
  u64 event;      // the event this lane handles now: lane, lane + lanes, ...
  unsigned skip;  // the wait kernel found the run over: calibrate and finish do nothing
  unsigned lane;
};

struct Ring {
  char* raw = nullptr;  // slots x raw_stride bytes
  std::size_t raw_stride = 0;
  float* out = nullptr;  // slots x out_stride floats
  std::size_t out_stride = 0;
  u64* doorbell = nullptr;  // per slot: 0 free, sequence + 1 when the event is there
  // Per slot: sequence + 1 of the last event finished in it. The producer of event s waits for
  // s - slots + 1 here, not for a zero doorbell: producer blocks claim numbers a ring turn apart
  // (s and s + slots) while both see the same free slot, and a zero doorbell cannot tell them
  // which of them is next.
  u64* released = nullptr;
  SlotHeader* header = nullptr;  // per slot
  unsigned* tiles_done = nullptr;
  u64* checksum = nullptr;  // per slot, summed by the tiles
  int slots = 0;
  ResultRecord* results = nullptr;  // device pointer of the pinned result ring
  int result_slots = 0;
  HostShared* host = nullptr;  // device pointer of the pinned shared words
  DeviceControl* control = nullptr;
};

// What a consumer calibrates with (constants on the device, fixed for the run).
struct CalibrationWork {
  const std::uint8_t* status = nullptr;
  const PedestalGain* pedestal_gain = nullptr;
  std::size_t pixels = 0;
  int bank_columns = 0;
  std::size_t rows = 0;  // bank rows (common mode)
  CalibrationParams params;
  unsigned tiles = 0;  // tiles per event
};

// Rows of lanes one tile covers: kTileSteps block-wide steps.
constexpr int kTileSteps = 4;

__device__ __forceinline__ u64 load_acquire(const u64* address) {
  u64 value;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(value) : "l"(address) : "memory");
  return value;
}
__device__ __forceinline__ void store_release(u64* address, u64 value) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(address), "l"(value) : "memory");
}
__device__ __forceinline__ u64 load_volatile(const u64* address) {
  return *reinterpret_cast<const volatile u64*>(address);
}
__device__ __forceinline__ u64 globaltimer_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Tiles per event: kTileSteps block-wide steps of kLanePixels pixels per thread, or of bank-row
// groups with common mode.
inline unsigned tiles_per_event(std::size_t pixels, std::size_t rows, bool common_mode) {
  const std::size_t threads =
      common_mode ? rows * kGroupLanes : (pixels + kLanePixels - 1) / kLanePixels;
  const std::size_t per_tile = std::size_t(kBlockThreads) * kTileSteps;
  return unsigned((threads + per_tile - 1) / per_tile);
}

// Calibrates tile `tile` of one event (raw words at `raw`, image at `out`); returns this thread's
// part of the checksum (0 unless kChecksum). The checksum is a template parameter, not a run-time
// flag, because its 64-bit sums cost registers: compiled in, they halve the blocks per
// multiprocessor of the common-mode kernel. Every thread of the block calls it. The detector
// is checked at set-up to allow the vectorised loads (pixels and bank rows multiples of 8, slots
// 256-byte aligned).
template <RawEncoding E, bool kCommonMode, bool kChecksum>
__device__ __forceinline__ u64 calibrate_tile(const CalibrationWork& work, const void* raw,
                                              float* out, unsigned tile) {
  u64 sum = 0;
#pragma unroll 1
  for (int step = 0; step < kTileSteps; ++step) {
    const std::size_t thread =
        (std::size_t(tile) * kTileSteps + std::size_t(step)) * kBlockThreads + threadIdx.x;
    float values[kLanePixels];
    std::size_t first = 0;
    int count = 0;
    if constexpr (kCommonMode) {
      const BankRowLane where = calibrate_bank_row_lane<E, true>(
          raw, work.status, work.pedestal_gain, work.pixels, work.bank_columns, work.rows,
          thread / kGroupLanes, work.params, values);
      first = where.first;
      count = where.count;
    } else {
      first = thread * kLanePixels;
      if (first < work.pixels) {
        count = kLanePixels;
        calibrate_lane_pixels<E, true>(raw, work.status, work.pedestal_gain, work.pixels, first,
                                       count, values);
      }
    }
    if (count == kLanePixels) {
      store_lane<true>(out, first, count, values);
    } else if (count > 0) {
      store_lane<false>(out, first, count, values);
    }
    if (kChecksum && count > 0) {
#pragma unroll
      for (int i = 0; i < kLanePixels; ++i)
        if (i < count)
          sum += calib::checksum_term(__float_as_uint(values[i]), std::uint32_t(first + i));
    }
  }
  return sum;
}

// Sum of `value` over the block, in thread 0 (other threads get partial sums).
__device__ __forceinline__ u64 block_sum(u64 value) {
  __shared__ u64 warp_sums[kBlockThreads / 32];
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    value += __shfl_down_sync(kFullWarp, value, offset);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = value;
  __syncthreads();
  u64 total = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kBlockThreads / 32; ++w) total += warp_sums[w];
  __syncthreads();
  return total;
}

// Waits until event `event` is in its slot (returns true) or the run is known to end before it
// (false). One thread. Polls with a growing pause, up to 2 us, so that idle consumers leave the
// memory system alone without adding much latency.
__device__ __forceinline__ bool wait_for_event(const Ring& ring, u64 event) {
  const u64* doorbell = ring.doorbell + event % u64(ring.slots);
  unsigned pause_ns = 32;
  for (;;) {
    if (load_acquire(doorbell) == event + 1) return true;
    if (load_volatile(&ring.control->abort)) return false;
    if (event >= load_volatile(&ring.control->consumer_limit)) {
      // The limit is written after the last doorbell: look once more, then give up.
      return load_acquire(doorbell) == event + 1;
    }
    __nanosleep(pause_ns);
    pause_ns = pause_ns < 2048 ? pause_ns * 2 : pause_ns;
  }
}

// The event in `slot` is calibrated (all its writes fenced by the caller): publish its result to
// the host and give the slot back to the producer. One thread.
__device__ __forceinline__ void finish_event(const Ring& ring, u64 event, unsigned lane) {
  const unsigned slot = unsigned(event % u64(ring.slots));
  const u64 checksum = atomicExch(ring.checksum + slot, 0ull);
  const SlotHeader header = ring.header[slot];
  ResultRecord* record = ring.results + event % u64(ring.result_slots);
  record->sequence = header.sequence;
  record->pulse_id = header.pulse_id;
  record->doorbell_ns = header.doorbell_ns;
  record->done_ns = globaltimer_ns();
  record->checksum = checksum;
  record->slot = slot;
  record->lane = lane;
  __threadfence_system();  // the record's fields before its ready word
  *reinterpret_cast<volatile u64*>(&record->ready) = event + 1;
  __threadfence();
  *reinterpret_cast<volatile u64*>(ring.doorbell + slot) = 0;  // cleared before the release
  store_release(ring.released + slot, event + 1);  // re-arm: the producer of event + slots may go
}

}  // namespace livedrp::gpu::resident
