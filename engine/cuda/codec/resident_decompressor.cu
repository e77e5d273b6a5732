#include "cuda/codec/resident_decompressor.hpp"

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "cuda/codec/codec_kernels.cuh"

namespace livedrp::gpu {

using namespace codec_kernels;

ResidentDecompressor::ResidentDecompressor(codec::DType dtype, codec::Codec codec,
                                           std::uint64_t max_elements, std::uint32_t chunk_bytes,
                                           int ring_slots) {
  const DecodeKind kind = decode_kind(dtype, codec);  // InputError for a pair no decoder takes
  kind_ = int(kind);
  if (max_elements == 0 || max_elements > (std::uint64_t(1) << 38))
    throw InputError("resident decompressor: max_elements must be in [1, 2^38], got " +
                     std::to_string(max_elements));
  if (chunk_bytes < codec::kMinChunkBytes || chunk_bytes > kDecodeSharedChunkBytes ||
      chunk_bytes % codec::kChunkBytesMultiple != 0)
    throw InputError("resident decompressor: chunk_bytes must be a multiple of " +
                     std::to_string(codec::kChunkBytesMultiple) + " in [" +
                     std::to_string(codec::kMinChunkBytes) + ", " +
                     std::to_string(kDecodeSharedChunkBytes) +
                     "] (the workspace of larger "
                     "chunks does not fit in shared memory), got " +
                     std::to_string(chunk_bytes));
  const std::uint32_t per_chunk = codec::chunk_elements(dtype, chunk_bytes);
  const std::uint64_t tickets = max_elements / per_chunk + (max_elements % per_chunk != 0);

  queue_ = std::make_unique<ResidentQueue>("resident decompressor", ring_slots);  // checks slots
  grid_ = resident_decompress_grid(kind);
  if (grid_ < 2)
    throw RuntimeFault("resident decompressor: the device holds one block at a time; it needs two");
  const auto slots = std::size_t(ring_slots);
  ResidentDecompressArgs args{};
  args.array.max_elements = max_elements;
  args.array.bulk_copies = hopper_features();
  args.ring = queue_->ring();
  args.lookback = static_cast<unsigned long long*>(queue_->device_buffer(slots * tickets * 8));
  args.counters =
      static_cast<DecodeCounters*>(queue_->device_buffer(slots * sizeof(DecodeCounters)));
  args.plans = static_cast<DecodePlan*>(queue_->device_buffer(slots * sizeof(DecodePlan)));
  args.chunks = tickets;
  launch_decompress_resident(args, kind, grid_, queue_->stream().get());
  queue_->launched();
}

ResidentDecompressor::~ResidentDecompressor() = default;  // the queue stops the kernel

int ResidentDecompressor::ring_slots() const {
  return queue_->work_slots();
}

ResidentTicket ResidentDecompressor::submit(const void* device_stream, std::size_t size,
                                            void* device_out, std::size_t capacity,
                                            double timeout_s) {
  const auto aligned4 = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 4 == 0; };
  if ((size && !device_stream) || (capacity && !device_out) || !aligned4(device_stream) ||
      !aligned4(device_out))
    throw InputError(
        "resident decompressor: the stream and the output must be 4-byte aligned device memory");
  return queue_->submit(device_stream, device_out, size, capacity, timeout_s);
}

std::uint64_t ResidentDecompressor::wait(const ResidentTicket& ticket, double timeout_s) {
  const ResidentResult result = queue_->wait(ticket, timeout_s);
  const auto status = DecodeStatus(result.status);
  if (status == DecodeStatus::Ok) return result.bytes;
  throw InputError(
      decode_failure(status, result.first_failure, result.dtype, result.codec, DecodeKind(kind_)));
}

void ResidentDecompressor::stop() {
  queue_->stop();
}

std::string ResidentDecompressor::diagnostics() const {
  return queue_->diagnostics();
}

}  // namespace livedrp::gpu
