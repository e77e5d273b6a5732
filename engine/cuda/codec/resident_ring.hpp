#pragma once
// The words a resident codec kernel (one persistent kernel fed without launches) and its host
// share. Plain C++: kernels and the host-side queue (resident_queue.hpp) both include it.
//
// Host memory (pinned, mapped into the device's address space):
//   post ring     the host writes job s into entry s % post_slots (its fields, then `ready` =
//                 s + 1) once the device has dispatched job s - post_slots (`dispatched`);
//   results       one record per work slot, written by the device (fields, a system-scope
//                 fence, then `ready` = s + 1) when job s, which held that work slot, is done;
//   control       stop and abort requests (host), the dispatched count (device).
// Device memory:
//   device jobs   the dispatcher's copy of each posted job (entry s % post_slots), read by every
//                 block of the job from L2 instead of over PCIe; overwritten for job s + post_slots
//                 only after job s is done (`device_done`), so no block of job s can miss it;
//   ticket, limit (job, chunk) pairs claimed; jobs the run has, once known (~0 until then).
// A work slot (the job's look-back words, counters and result record) is taken from a host free
// list at submit and returned when the host collects the result, so a job nobody has collected
// yet holds its slot however many jobs come after it.
#include <cstdint>

namespace livedrp::gpu::codec_kernels {

struct alignas(64) ResidentJob {
  const std::uint8_t* in;
  std::uint8_t* out;
  unsigned long long in_bytes;      // the stream's bytes (decoding)
  unsigned long long out_capacity;  // the output's bytes (decoding)
  unsigned long long work_slot;
  unsigned long long ready;  // sequence + 1 once the fields above are written
  unsigned long long reserved[2];
};
static_assert(sizeof(ResidentJob) == 64);

struct alignas(64) ResidentResult {
  unsigned long long bytes;          // compressed stream's size, or decoded bytes
  unsigned long long first_failure;  // decoding: DecodePlan::first_failure
  std::uint32_t status;              // decoding: a DecodeStatus (0: Ok)
  std::uint32_t dtype, codec;        // decoding: the header's (when it was readable)
  std::uint32_t reserved0;
  unsigned long long ready;  // sequence + 1 once the fields above are written
  unsigned long long reserved[3];
};
static_assert(sizeof(ResidentResult) == 64);

struct ResidentHostControl {
  alignas(64) unsigned long long stop_after;  // host: ~0 while running, else the jobs the run has
  unsigned long long abort;                   // host: nonzero = dispatch nothing more
  alignas(64) unsigned long long dispatched;  // device: jobs copied to the device ring so far
};

// The kernel's view of one resident queue.
struct ResidentRing {
  const ResidentJob* host_jobs;  // post_slots entries
  ResidentHostControl* host_control;
  ResidentResult* host_results;     // per work slot
  ResidentJob* device_jobs;         // post_slots entries
  unsigned long long* device_done;  // per post entry: sequence + 1 of the last job done there
  unsigned long long* ticket;
  unsigned long long* limit;
  unsigned post_slots;
};

}  // namespace livedrp::gpu::codec_kernels
