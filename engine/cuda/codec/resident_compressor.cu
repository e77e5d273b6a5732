#include "cuda/codec/resident_compressor.hpp"

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "cuda/codec/codec_kernels.cuh"

namespace livedrp::gpu {

using namespace codec_kernels;

ResidentCompressor::ResidentCompressor(codec::DType dtype, std::vector<std::uint64_t> shape,
                                       const codec::CodecParams& params, int ring_slots) {
  std::uint64_t count = 1;
  for (std::uint64_t d : shape) count *= d;
  if (shape.empty() || count == 0)
    throw InputError("resident compressor: the shape must hold at least one element");
  capacity_ = codec::compressed_bound(dtype, count, unsigned(shape.size()), params);  // checks
  const std::uint32_t workspace = encode_layout(dtype, params.chunk_bytes, params.codec).bytes;
  if (workspace > kMaxSharedWorkspace)
    throw InputError("resident compressor: chunks of " + std::to_string(params.chunk_bytes) +
                     " bytes need a " + std::to_string(workspace) +
                     "-byte workspace, more than shared memory holds (" +
                     std::to_string(kMaxSharedWorkspace) + "); use smaller chunks");
  raw_bytes_ = std::size_t(count) * codec::element_bytes(dtype);

  ResidentCompressArgs args{};
  args.array = compress_args(dtype, count, shape, params);
  args.array.input_aligned16 = true;  // submit checks it

  queue_ = std::make_unique<ResidentQueue>("resident compressor", ring_slots);  // checks slots
  grid_ = resident_compress_grid(dtype, params.codec, params.chunk_bytes);
  if (grid_ < 2)
    throw RuntimeFault("resident compressor: the device holds one block at a time; it needs two");
  const auto slots = std::size_t(ring_slots);
  args.ring = queue_->ring();
  args.lookback =
      static_cast<unsigned long long*>(queue_->device_buffer(slots * args.array.chunks * 8));
  args.counters =
      static_cast<EncodeCounters*>(queue_->device_buffer(slots * sizeof(EncodeCounters)));
  args.size_words = static_cast<std::uint64_t*>(queue_->device_buffer(slots * 8));
  launch_compress_resident(args, grid_, queue_->stream().get());
  queue_->launched();
}

ResidentCompressor::~ResidentCompressor() = default;  // the queue stops the kernel

int ResidentCompressor::ring_slots() const {
  return queue_->work_slots();
}

ResidentTicket ResidentCompressor::submit(const void* device_in, void* device_out,
                                          std::size_t capacity, double timeout_s) {
  if (!device_in || !device_out || reinterpret_cast<std::uintptr_t>(device_in) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(device_out) % 4 != 0)
    throw InputError(
        "resident compressor: the input must be 16-byte and the output 4-byte aligned device "
        "memory");
  if (capacity < capacity_)
    throw InputError("resident compressor: an output of " + std::to_string(capacity) +
                     " bytes may be too small; compressed_bound says " + std::to_string(capacity_));
  return queue_->submit(device_in, device_out, raw_bytes_, capacity, timeout_s);
}

std::uint64_t ResidentCompressor::wait(const ResidentTicket& ticket, double timeout_s) {
  return queue_->wait(ticket, timeout_s).bytes;
}

void ResidentCompressor::stop() {
  queue_->stop();
}

std::string ResidentCompressor::diagnostics() const {
  return queue_->diagnostics();
}

}  // namespace livedrp::gpu
