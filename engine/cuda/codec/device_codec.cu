#include "cuda/codec/device_codec.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "codec/chunk_cpu.hpp"
#include "core/error.hpp"
#include "cuda/codec/codec_kernels.cuh"

namespace livedrp::gpu {

using namespace codec_kernels;

namespace {

// Chunks hold at least 256 elements (1 KiB of float32) and at most 512 Ki (1 MiB of uint16), so
// for any chunk size `slots` elements of scratch cover every chunk of max_elements, the last one
// whole; the few per-chunk roundings are bounded by 8 bytes times the chunk count.
struct ScratchSizes {
  std::uint64_t slots, max_chunks;
  std::uint64_t words, shuffled, level0, level1, level2, staging;

  explicit ScratchSizes(std::uint64_t max_elements)
      : slots(max_elements + kMaxChunkBytes / 2),
        max_chunks(max_elements / 256 + 2),
        words(4 * slots),
        shuffled(4 * slots),
        level0(slots / 2 + 8 * max_chunks),
        level1(slots / 16 + 8 * max_chunks),
        level2(slots / 128 + 8 * max_chunks),
        staging(4 * slots) {}
};

bool aligned4(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 4 == 0;
}

}  // namespace

struct DeviceCodec::Buffers {
  std::uint64_t max_elements;
  ScratchSizes sizes;
  int grid_limit;
  DeviceBuffer values, outlier_index, outlier_bits, shuffled[2], level0[2], level1[2], level2[2],
      staging, entries, offsets, words, plan;
  PinnedBuffer host_size, host_plan;
  Scratch scratch{};

  explicit Buffers(std::uint64_t max)
      : max_elements(max),
        sizes(max),
        grid_limit(8 * std::max(1, device_properties().multiprocessors)),
        values(sizes.words),
        outlier_index(sizes.words),
        outlier_bits(sizes.words),
        staging(sizes.staging),
        entries(4 * sizes.max_chunks),
        offsets(8 * (sizes.max_chunks + 1)),
        words(16),
        plan(sizeof(DecodePlan)),
        host_size(8),
        host_plan(sizeof(DecodePlan)) {
    for (int slot = 0; slot < 2; ++slot) {
      shuffled[slot] = DeviceBuffer(sizes.shuffled);
      level0[slot] = DeviceBuffer(sizes.level0);
      level1[slot] = DeviceBuffer(sizes.level1);
      level2[slot] = DeviceBuffer(sizes.level2);
      scratch.shuffled[slot] = shuffled[slot].as<std::uint8_t>();
      scratch.level0[slot] = level0[slot].as<std::uint8_t>();
      scratch.level1[slot] = level1[slot].as<std::uint8_t>();
      scratch.level2[slot] = level2[slot].as<std::uint8_t>();
    }
    scratch.values = values.as<std::uint32_t>();
    scratch.outlier_index = outlier_index.as<std::uint32_t>();
    scratch.outlier_bits = outlier_bits.as<std::uint32_t>();
    scratch.staging = staging.as<std::uint8_t>();
    scratch.entries = entries.as<std::uint32_t>();
    scratch.offsets = offsets.as<std::uint64_t>();
    scratch.checksum = words.as<unsigned long long>();
    scratch.size_word = words.as<std::uint64_t>() + 1;
  }

  // A guard on the bounds above: a chunk geometry that needs more scratch than was allocated is
  // refused rather than written past the end.
  void check_fits(codec::DType dtype, std::uint32_t chunk_bytes, std::uint64_t chunks) const {
    const Strides st = strides_for(dtype, chunk_bytes);
    const bool fits = chunks <= sizes.max_chunks && chunks * st.values * 4 <= sizes.words &&
                      chunks * st.shuffled <= sizes.shuffled &&
                      chunks * st.level0 <= sizes.level0 && chunks * st.level1 <= sizes.level1 &&
                      chunks * st.level2 <= sizes.level2 && chunks * st.staging <= sizes.staging;
    if (!fits)
      throw InputError("GPU codec: " + std::to_string(chunks) + " chunks of " +
                       std::to_string(chunk_bytes) + " bytes exceed the scratch sized for " +
                       std::to_string(max_elements) + " elements");
  }
};

DeviceCodec::DeviceCodec(std::uint64_t max_elements)
    : buffers_(std::make_unique<Buffers>(max_elements)) {}

DeviceCodec::~DeviceCodec() = default;

std::uint64_t DeviceCodec::max_elements() const {
  return buffers_->max_elements;
}

void DeviceCodec::compress(const void* device_in, codec::DType dtype, std::uint64_t count,
                           const std::vector<std::uint64_t>& shape,
                           const codec::CodecParams& params, void* device_out, std::size_t capacity,
                           const Stream& stream) {
  const std::uint64_t bound =
      codec::compressed_bound(dtype, count, unsigned(shape.size()), params);  // checks params
  if (count > buffers_->max_elements)
    throw InputError("GPU codec: " + std::to_string(count) +
                     " elements, more than the codec was sized for (" +
                     std::to_string(buffers_->max_elements) + ")");
  if (!shape.empty()) {
    std::uint64_t product = 1;
    for (std::uint64_t d : shape) product *= d;
    if (product != count)
      throw InputError("GPU codec: the shape does not hold " + std::to_string(count) + " elements");
  }
  if (capacity < bound)
    throw InputError("GPU codec: an output of " + std::to_string(capacity) +
                     " bytes may be too small; compressed_bound says " + std::to_string(bound));
  if ((count && !device_in) || !device_out || !aligned4(device_in) || !aligned4(device_out))
    throw InputError("GPU codec: input and output must be 4-byte aligned device memory");

  CompressArgs args{};
  args.in = static_cast<const std::uint8_t*>(device_in);
  args.out = static_cast<std::uint8_t*>(device_out);
  args.dtype = dtype;
  args.codec = params.codec;
  args.error_bound = params.codec == codec::Codec::Lossy ? params.error_bound : 0.0;
  args.chunk_bytes = params.chunk_bytes;
  args.count = count;
  const std::uint32_t per_chunk = codec::chunk_elements(dtype, params.chunk_bytes);
  args.chunks = count / per_chunk + (count % per_chunk != 0);
  args.shape.ndim = std::uint32_t(shape.size());
  std::copy(shape.begin(), shape.end(), args.shape.dims);
  args.scratch = buffers_->scratch;
  buffers_->check_fits(dtype, params.chunk_bytes, args.chunks);
  launch_compress(args, stream.get());
}

const std::uint64_t* DeviceCodec::device_size_word() const {
  return buffers_->scratch.size_word;
}

std::uint64_t DeviceCodec::compressed_size(const Stream& stream) {
  copy_async(buffers_->host_size.get(), buffers_->scratch.size_word, 8, stream,
             "compressed size to the host");
  stream.synchronize();
  return *buffers_->host_size.as<std::uint64_t>();
}

void DeviceCodec::decompress(const void* device_in, std::size_t size, void* device_out,
                             std::size_t capacity, const Stream& stream) {
  if ((size && !device_in) || !aligned4(device_in) || !aligned4(device_out) ||
      (capacity && !device_out))
    throw InputError("GPU codec: input and output must be 4-byte aligned device memory");
  DecompressArgs args{};
  args.in = static_cast<const std::uint8_t*>(device_in);
  args.size = size;
  args.out = static_cast<std::uint8_t*>(device_out);
  args.capacity = capacity;
  args.max_elements = buffers_->max_elements;
  args.plan = buffers_->plan.as<DecodePlan>();
  args.scratch = buffers_->scratch;
  const auto grid = unsigned(
      std::min<std::uint64_t>(buffers_->sizes.max_chunks, std::uint64_t(buffers_->grid_limit)));
  launch_decompress(args, grid, stream.get());
}

namespace {

const char* describe(DecodeStatus status) {
  switch (status) {
    case DecodeStatus::Ok:
      return "no error";
    case DecodeStatus::NotLivedrp:
      return "not a livedrp compressed stream (its first bytes are not 89 4C 44 52 50 5A 0D 0A)";
    case DecodeStatus::Truncated:
      return "truncated: the buffer ends inside the header, shape, chunk table or checksums";
    case DecodeStatus::Version:
      return "the format version is not supported";
    case DecodeStatus::Ndim:
      return "ndim exceeds 8 (corrupt header)";
    case DecodeStatus::HeaderChecksum:
      return "header checksum mismatch: the header or chunk table is corrupted";
    case DecodeStatus::CodecId:
      return "the codec id is not lossless (1) or lossy (2)";
    case DecodeStatus::DTypeId:
      return "the dtype id is not uint16 (1) or float32 (2)";
    case DecodeStatus::LossyNotFloat:
      return "the lossy codec is defined for float32 only, the header says uint16";
    case DecodeStatus::Reserved:
      return "reserved header bytes are not zero (a newer or foreign writer)";
    case DecodeStatus::ChunkBytes:
      return "the chunk size is not a multiple of 128 between 1024 and 1048576";
    case DecodeStatus::ErrorBound:
      return "the error bound is not valid for the codec";
    case DecodeStatus::Count:
      return "the element count is absurd (corrupt header)";
    case DecodeStatus::TooManyElements:
      return "more elements than this GPU codec was sized for";
    case DecodeStatus::Shape:
      return "the shape does not hold the elements the header counts";
    case DecodeStatus::ChunkCount:
      return "the chunk count does not match the element count and chunk size";
    case DecodeStatus::TableEntry:
      return "a chunk table entry has an impossible mode or size";
    case DecodeStatus::PayloadBytes:
      return "the payload size in the header differs from what the chunk table adds up to";
    case DecodeStatus::PayloadSize:
      return "the payload is truncated, or bytes follow it";
    case DecodeStatus::OutputCapacity:
      return "the output buffer is smaller than the decoded array";
    case DecodeStatus::PayloadChecksum:
      return "payload checksum mismatch: the chunk data is corrupted";
    case DecodeStatus::ChunkDamaged:
      return "a chunk cannot be decoded";
  }
  return "unknown error";
}

}  // namespace

std::uint64_t DeviceCodec::finish_decompress(const Stream& stream) {
  copy_async(buffers_->host_plan.get(), buffers_->plan.get(), sizeof(DecodePlan), stream,
             "decode status to the host");
  stream.synchronize();
  const auto& plan = *buffers_->host_plan.as<DecodePlan>();
  const auto status = DecodeStatus(plan.status);
  if (status == DecodeStatus::Ok) return plan.raw_bytes;
  std::string what = std::string("compressed stream: ") + describe(status);
  if (status == DecodeStatus::ChunkDamaged)
    what += " (chunk " + std::to_string(plan.first_failure >> 8) + ": " +
            codec::describe(codec::ChunkError(plan.first_failure & 0xFF)) + ")";
  throw InputError(what);
}

}  // namespace livedrp::gpu
