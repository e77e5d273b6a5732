#pragma once
// Host side of a resident codec kernel (resident_ring.hpp): the pinned rings, the device words the
// kernel coordinates through, the free list of work slots, and submit / wait / stop. The
// compressor and decompressor (resident_compressor.hpp) each own one and launch their kernel on its
// stream with its ring().
//
// The queue owns every device buffer the kernel uses (device_buffer()), so that a kernel that does
// not stop can be abandoned with its memory: freeing memory a running kernel uses would wait for
// it forever.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/codec/resident_ring.hpp"
#include "cuda/device.hpp"

namespace livedrp::gpu {

// A submitted job: its sequence number and the work slot it holds until collected.
struct ResidentTicket {
  std::uint64_t sequence = 0;
  int work_slot = -1;
};

class ResidentQueue {
 public:
  // `name` prefixes error messages ("resident compressor"). `work_slots` jobs may be uncollected
  // at once (32..4096); the post ring has as many entries.
  ResidentQueue(std::string name, int work_slots);
  ~ResidentQueue();  // stop(); abandons the kernel's memory if it does not finish
  ResidentQueue(const ResidentQueue&) = delete;
  ResidentQueue& operator=(const ResidentQueue&) = delete;

  // Zeroed device memory the queue owns (set-up only, before launched()).
  void* device_buffer(std::size_t bytes);
  codec_kernels::ResidentRing ring() const;
  const Stream& stream() const;
  int work_slots() const { return slots_; }
  // The kernel has been launched on stream(): stop() and the destructor wait for it from now on.
  void launched();

  // Takes a free work slot (waiting up to `timeout_s` for one), claims the next sequence number
  // and posts the job once its post entry is free. Throws RuntimeFault after stop(), on a kernel
  // failure, or when no work slot came free in time (the queue is aborted then: nothing can run
  // past a sequence number that is never posted).
  ResidentTicket submit(const void* in, void* out, std::uint64_t in_bytes,
                        std::uint64_t out_capacity, double timeout_s);
  // Waits for the job's result and frees its work slot. Throws InputError for a ticket this queue
  // did not give (or gave and already collected), RuntimeFault on a kernel failure or timeout.
  codec_kernels::ResidentResult wait(const ResidentTicket& ticket, double timeout_s);

  // Every job submitted is finished, then the kernel leaves (results can still be collected).
  // Call when no thread is inside submit(). Waits up to 10 s, then aborts and waits 10 s more;
  // a kernel still running after that is abandoned with its memory and RuntimeFault thrown.
  void stop();
  // The device words and counts, for error messages.
  std::string diagnostics() const;

 private:
  struct State;
  void check_kernel() const;  // throws RuntimeFault when the kernel failed

  std::string name_;
  int slots_;
  std::unique_ptr<State> state_;
};

}  // namespace livedrp::gpu
