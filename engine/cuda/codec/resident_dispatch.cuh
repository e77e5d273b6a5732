#pragma once
// Device side of a resident codec queue (resident_ring.hpp): block 0's dispatcher, a worker
// block's wait for its job, and the publication of a finished job. The compressor and the
// decompressor kernels share them.
#include <cuda/atomic>

#include "cuda/codec/resident_ring.hpp"

namespace livedrp::gpu::codec_kernels {

using ResidentWord = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>;

__device__ inline unsigned long long load_acquire_system(const unsigned long long* address) {
  unsigned long long value;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(value) : "l"(address) : "memory");
  return value;
}
__device__ inline unsigned long long load_volatile(const unsigned long long* address) {
  return *reinterpret_cast<const volatile unsigned long long*>(address);
}
__device__ inline void store_volatile(unsigned long long* address, unsigned long long value) {
  *reinterpret_cast<volatile unsigned long long*>(address) = value;
}

// Warp 0 of block 0: copies the jobs the host posts, in sequence order, from the pinned post ring
// to the device ring, so that host memory is polled by one warp however many blocks wait. While
// the next job is missing only lane 0 looks (one PCIe read a pause); once it is there the warp
// reads up to 32 entries at a time and dispatches the run posted from the first. A device entry
// is reused only once the job that held it is done. Once the host has set stop_after and every job
// before it is dispatched (or on abort) it publishes the limit, which sends the waiting blocks
// away, and returns.
__device__ inline void dispatch_jobs(const ResidentRing& r) {
  const unsigned lane = threadIdx.x;
  const unsigned width = r.post_slots < 32 ? r.post_slots : 32;
  unsigned long long next = 0;
  unsigned pause_ns = 32;
  for (;;) {
    unsigned long long first = 0;
    if (lane == 0) first = load_acquire_system(&r.host_jobs[next % r.post_slots].ready);
    if (__shfl_sync(~0u, first, 0) != next + 1) {
      bool leave = false;
      if (lane == 0) {
        // stop_after is written after the last job's ready word: read after the miss above, it
        // is either still ~0 or counts every job posted.
        const unsigned long long stop_after = load_acquire_system(&r.host_control->stop_after);
        leave = next >= stop_after || load_volatile(&r.host_control->abort) != 0;
        if (leave) ResidentWord(*r.limit).store(next, cuda::memory_order_release);
      }
      if (__shfl_sync(~0u, leave, 0)) return;
      __nanosleep(pause_ns);
      pause_ns = pause_ns < 1024 ? 2 * pause_ns : pause_ns;
      continue;
    }
    pause_ns = 32;
    const unsigned long long job = next + lane;
    const unsigned entry = unsigned(job % r.post_slots);
    bool posted = false;
    ResidentJob copy{};
    if (lane < width) {
      const ResidentJob& posting = r.host_jobs[entry];
      posted = load_acquire_system(&posting.ready) == job + 1;
      if (posted) {
        const auto* words = reinterpret_cast<const unsigned long long*>(&posting);
        copy.in = reinterpret_cast<const std::uint8_t*>(load_volatile(words + 0));
        copy.out = reinterpret_cast<std::uint8_t*>(load_volatile(words + 1));
        copy.in_bytes = load_volatile(words + 2);
        copy.out_capacity = load_volatile(words + 3);
        copy.work_slot = load_volatile(words + 4);
      }
    }
    const unsigned missing = ~__ballot_sync(~0u, posted);
    const unsigned run = missing ? unsigned(__ffs(int(missing)) - 1) : 32u;  // >= 1: lane 0 saw it
    if (lane < run) {
      // The entry's previous job (job - post_slots) must be done: its blocks have read it.
      if (job >= r.post_slots)
        while (ResidentWord(r.device_done[entry]).load(cuda::memory_order_acquire) <
               job - r.post_slots + 1)
          __nanosleep(64);
      copy.ready = job + 1;
      ResidentJob& to = r.device_jobs[entry];
      to.in = copy.in;
      to.out = copy.out;
      to.in_bytes = copy.in_bytes;
      to.out_capacity = copy.out_capacity;
      to.work_slot = copy.work_slot;
      ResidentWord(to.ready).store(job + 1, cuda::memory_order_release);
    }
    __syncwarp();
    next += run;
    // Tells the host these post entries may be written again.
    if (lane == 0) store_volatile(&r.host_control->dispatched, next);
  }
}

// Thread 0 of a worker block: waits until `job` is dispatched and copies it into `job_out`
// (true), or learns that the run ends before it (false).
__device__ inline bool wait_for_job(const ResidentRing& r, unsigned long long job,
                                    ResidentJob& job_out) {
  const ResidentJob& entry = r.device_jobs[job % r.post_slots];
  unsigned long long* ready = const_cast<unsigned long long*>(&entry.ready);
  unsigned pause_ns = 32;
  for (;;) {
    if (ResidentWord(*ready).load(cuda::memory_order_acquire) == job + 1) {
      job_out = entry;
      return true;
    }
    // The limit is published after the last job is dispatched: look once more, then give up.
    if (job >= ResidentWord(*r.limit).load(cuda::memory_order_acquire)) {
      if (ResidentWord(*ready).load(cuda::memory_order_acquire) != job + 1) return false;
      job_out = entry;
      return true;
    }
    __nanosleep(pause_ns);
    pause_ns = pause_ns < 1024 ? 2 * pause_ns : pause_ns;
  }
}

// A worker block's ticket: chunk `chunk` of the job with sequence number `sequence`, as posted.
struct ClaimedTicket {
  unsigned long long sequence, chunk;
  ResidentJob job;
};

// Thread 0 of a worker block: claims the next (job, chunk) ticket, `chunks_per_job` a job, and
// waits for its job (true), or learns that the run ends before it (false).
__device__ inline bool claim_ticket(const ResidentRing& r, unsigned long long chunks_per_job,
                                    ClaimedTicket& claimed) {
  const unsigned long long ticket = atomicAdd(r.ticket, 1ull);
  claimed.sequence = ticket / chunks_per_job;
  claimed.chunk = ticket - claimed.sequence * chunks_per_job;
  return wait_for_job(r, claimed.sequence, claimed.job);
}

// Thread 0 of the block that finished `job` (after the job's words and the work slot's scratch
// are final): the result goes to the host, then the device entry is released to the dispatcher.
// The system-scope fence orders every write of the job's blocks that this thread has seen
// (through their done count) before the ready word the host waits for.
__device__ inline void publish_result(const ResidentRing& r, unsigned long long job,
                                      unsigned long long work_slot, const ResidentResult& result) {
  ResidentResult& to = r.host_results[work_slot];
  to.bytes = result.bytes;
  to.first_failure = result.first_failure;
  to.status = result.status;
  to.dtype = result.dtype;
  to.codec = result.codec;
  __threadfence_system();
  store_volatile(&to.ready, job + 1);
  ResidentWord(r.device_done[job % r.post_slots]).store(job + 1, cuda::memory_order_release);
}

}  // namespace livedrp::gpu::codec_kernels
