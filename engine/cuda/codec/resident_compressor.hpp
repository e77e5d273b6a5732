#pragma once
// A resident compressor: one persistent kernel that compresses arrays of one fixed shape, dtype
// and codec (a detector segment, say) as the host posts them, with no kernel launch per array.
// Each array becomes its own stream, byte for byte what compress_cpu and DeviceCodec::compress
// produce for it.
//
// Why: a 352x384 uint16 segment is 270 KB, 17 chunks. Launched one per call it costs a kernel
// launch (about 5 us of host time on the benchmark machine), so several host threads launching
// segments together stop at 600,000-700,000 launches a second whatever the kernel does. Here the
// host only writes a 64-byte job into pinned memory and later reads a 64-byte result.
//
//   host       submit() takes a free work slot (the job's scratch and result record), claims a
//              sequence number and writes the job (input and output device pointers) into the
//              pinned post ring (resident_queue.hpp, resident_ring.hpp).
//   block 0    one warp copies posted jobs in sequence order into a device ring (one poller of
//              host memory, however many blocks wait).
//   blocks 1.. claim (job, chunk) tickets in order, wait for the job on the device ring, encode
//              the chunk into the job's output (compress.cu's chunk encoder; the job's work slot
//              holds its look-back words and counters); the block of the job's last chunk writes
//              the header and publishes the stream's size into the slot's pinned result record.
//   host       wait() polls that record, returns the size and frees the work slot.
//
// The kernel occupies every multiprocessor it can for as long as the compressor lives: it is for
// a device (or a benchmark) dedicated to compression. Kernels launched meanwhile (memsets
// included) wait until it stops; copies on other streams do not. Thread-safe: any number of host
// threads may submit and wait; a job holds its work slot until collected, so submit waits (up to
// its timeout) while ring_slots() jobs are uncollected.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codec/codec.hpp"
#include "cuda/codec/resident_queue.hpp"

namespace livedrp::gpu {

class ResidentCompressor {
 public:
  // Arrays of `shape` (C order, at least one element) and `dtype`, compressed with `params`,
  // whose chunk workspace must fit in shared memory (the default 16 KiB chunks do); up to
  // `ring_slots` jobs uncollected at once (32..4096). Throws InputError for parameters
  // compress_cpu would refuse or the limits above, RuntimeFault on a CUDA error. The kernel runs
  // from here on.
  ResidentCompressor(codec::DType dtype, std::vector<std::uint64_t> shape,
                     const codec::CodecParams& params, int ring_slots = 256);
  ~ResidentCompressor();  // stop(), or abandons the kernel (see stop) if it does not finish
  ResidentCompressor(const ResidentCompressor&) = delete;
  ResidentCompressor& operator=(const ResidentCompressor&) = delete;

  // Bytes an output needs: codec::compressed_bound for the shape.
  std::size_t output_capacity() const { return capacity_; }
  std::size_t raw_bytes() const { return raw_bytes_; }
  int ring_slots() const;
  unsigned blocks() const { return grid_; }  // thread blocks of the kernel (one dispatches)

  // Posts the compression of the array at `device_in` (device memory, 16-byte aligned,
  // raw_bytes()) into `device_out` (4-byte aligned, `capacity` >= output_capacity()). Neither
  // buffer may be touched until wait() has returned the ticket. Throws InputError for a null,
  // misaligned or too small buffer (nothing posted), RuntimeFault after stop(), on a kernel
  // failure or when no work slot came free within `timeout_s`.
  ResidentTicket submit(const void* device_in, void* device_out, std::size_t capacity,
                        double timeout_s = 10.0);
  // Waits until the job is compressed and returns its stream's byte size; each ticket is
  // collected once (InputError otherwise). RuntimeFault on a kernel failure or after `timeout_s`.
  std::uint64_t wait(const ResidentTicket& ticket, double timeout_s = 10.0);

  // Every job submitted so far is compressed, then the kernel leaves (their results can still be
  // collected). Call once no thread is inside submit(). Waits up to 10 s, then aborts; a kernel
  // still running 10 s later is abandoned with its memory and RuntimeFault thrown.
  void stop();
  std::string diagnostics() const;  // the queue's counts and device words

 private:
  std::size_t capacity_ = 0, raw_bytes_ = 0;
  unsigned grid_ = 0;
  std::unique_ptr<ResidentQueue> queue_;
};

}  // namespace livedrp::gpu
