#pragma once
// A resident decompressor: one persistent kernel that decodes streams of one dtype and codec as
// the host posts them, with no kernel launch per stream: the decoding counterpart of
// resident_compressor.hpp, with the same queue (resident_queue.hpp). Each stream is validated as
// DeviceCodec::decompress validates it (header, table, both checksums, every chunk, nothing read
// or written out of bounds) and decodes to what decompress_cpu gives.
//
// The kernel's blocks claim (job, chunk) tickets, a fixed number a job: the chunks of the largest
// stream it was set up for (max_elements at chunk_bytes). A stream with more chunks than that
// (smaller chunks) or chunks above 16 KiB is refused (its workspace would not fit in shared
// memory); smaller streams decode, their surplus tickets idle.
//
// Like the compressor, the kernel holds the device's blocks while it lives: kernels launched
// meanwhile wait until it stops.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "codec/codec.hpp"
#include "cuda/codec/resident_queue.hpp"

namespace livedrp::gpu {

class ResidentDecompressor {
 public:
  // Streams of `dtype` under `codec` (uint16 lossless, float32 lossless or lossy) holding up to
  // `max_elements` elements in chunks of `chunk_bytes` or more (up to 16 KiB); up to `ring_slots`
  // jobs uncollected at once (32..4096). Throws InputError for a pair no decoder takes, a bad
  // chunk size or count, RuntimeFault on a CUDA error. The kernel runs from here on.
  ResidentDecompressor(codec::DType dtype, codec::Codec codec, std::uint64_t max_elements,
                       std::uint32_t chunk_bytes = codec::kDefaultChunkBytes, int ring_slots = 256);
  ~ResidentDecompressor();  // stops the kernel, or abandons it (see ResidentQueue::stop)
  ResidentDecompressor(const ResidentDecompressor&) = delete;
  ResidentDecompressor& operator=(const ResidentDecompressor&) = delete;

  int ring_slots() const;
  unsigned blocks() const { return grid_; }

  // Posts the decoding of the `size`-byte stream at `device_stream` (4-byte aligned device
  // memory) into `device_out` (4-byte aligned, `capacity` bytes). Neither may be touched until
  // wait() has returned the ticket. Throws InputError for a null or misaligned buffer (nothing
  // posted), RuntimeFault after stop(), on a kernel failure or when no work slot came free within
  // `timeout_s`.
  ResidentTicket submit(const void* device_stream, std::size_t size, void* device_out,
                        std::size_t capacity, double timeout_s = 10.0);
  // Waits for the job: the decoded array's byte count, or InputError naming what is wrong with
  // the stream (the words of DeviceCodec::finish_decompress; the output is then undefined).
  // RuntimeFault on a kernel failure or after `timeout_s`.
  std::uint64_t wait(const ResidentTicket& ticket, double timeout_s = 10.0);

  void stop();  // as ResidentCompressor::stop
  std::string diagnostics() const;

 private:
  unsigned grid_ = 0;
  int kind_ = 0;  // codec_kernels::DecodeKind
  std::unique_ptr<ResidentQueue> queue_;
};

}  // namespace livedrp::gpu
