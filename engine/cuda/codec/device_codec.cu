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

// The encoder needs a global workspace only for chunks whose workspace exceeds
// kMaxSharedWorkspace (chunks of more than about 40 KiB), the decoder one slot per thread block
// for chunks above 16 KiB. An encoder workspace is at most 3.37 times its chunk's bytes (two
// shuffled copies, the bitmaps and outlier flags, each rounded to 16 bytes, and the lossy bins),
// and the chunks cover at most the raw bytes plus one chunk, so 4 (4 max_elements + the largest
// chunk) bytes hold any of them (check_fits verifies it for every call); a decoder slot is under
// 1.4 times its chunk, so that space holds at least two.
struct ScratchSizes {
  std::uint64_t max_chunks, workspace;

  explicit ScratchSizes(std::uint64_t max_elements)
      : max_chunks(max_elements / 256 + 2), workspace(4 * (4 * max_elements + kMaxChunkBytes)) {}
};

bool aligned4(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 4 == 0;
}

}  // namespace

struct DeviceCodec::Buffers {
  std::uint64_t max_elements;
  ScratchSizes sizes;
  unsigned decode_grid[kDecodeKinds];  // by DecodeKind
  DecodeKind asked = DecodeKind::Any;  // of the last decode enqueued
  DeviceBuffer workspace, lookback, words, plan;
  PinnedBuffer host_size, host_plan;
  Scratch scratch{};

  explicit Buffers(std::uint64_t max)
      : max_elements(max),
        sizes(max),
        decode_grid{},
        workspace(sizes.workspace),
        lookback(8 * sizes.max_chunks),
        words(sizeof(EncodeCounters) + sizeof(DecodeCounters) + 8),
        plan(sizeof(DecodePlan)),
        host_size(8),
        host_plan(sizeof(DecodePlan)) {
    // Look-back words are published as 4-byte units in 62 bits and chunk counts index the grid.
    if (max_elements > (std::uint64_t(1) << 40) / 4)
      throw InputError("GPU codec: " + std::to_string(max_elements) +
                       " elements exceed the 2^38 one codec can hold");
    scratch.workspace = workspace.as<std::uint8_t>();
    scratch.workspace_bytes = workspace.bytes();
    scratch.lookback = lookback.as<unsigned long long>();
    scratch.counters = words.as<EncodeCounters>();
    scratch.decode_counters = reinterpret_cast<DecodeCounters*>(scratch.counters + 1);
    scratch.size_word = reinterpret_cast<std::uint64_t*>(scratch.decode_counters + 1);
    // The counters and look-back words start at zero; each launch leaves them so.
    const Stream stream;
    fill_async(lookback.get(), 0, lookback.bytes(), stream);
    fill_async(words.get(), 0, words.bytes(), stream);
    stream.synchronize();
    prepare_compress_kernels();
    prepare_decompress_kernels();
    for (int k = 0; k < kDecodeKinds; ++k) decode_grid[k] = decompress_grid(DecodeKind(k));
  }

  // A guard on the bounds above: a chunk geometry that needs more scratch than was allocated is
  // refused rather than written past the end.
  void check_fits(codec::DType dtype, const codec::CodecParams& params,
                  std::uint64_t chunks) const {
    const std::uint32_t chunk_bytes = params.chunk_bytes;
    const std::uint32_t workspace_bytes = encode_layout(dtype, chunk_bytes, params.codec).bytes;
    const bool fits = chunks <= sizes.max_chunks && (workspace_bytes <= kMaxSharedWorkspace ||
                                                     chunks * workspace_bytes <= sizes.workspace);
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

  CompressArgs args = compress_args(dtype, count, shape, params);
  args.in = static_cast<const std::uint8_t*>(device_in);
  args.out = static_cast<std::uint8_t*>(device_out);
  args.input_aligned16 = reinterpret_cast<std::uintptr_t>(device_in) % 16 == 0;
  args.scratch = buffers_->scratch;
  buffers_->check_fits(dtype, params, args.chunks);
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

namespace {

std::string kind_name(DecodeKind kind) {
  if (kind == DecodeKind::Any) return "any";
  return std::string(codec::to_string(kind_dtype(kind))) + ", " +
         codec::to_string(kind_codec(kind));
}

}  // namespace

void DeviceCodec::decompress(const void* device_in, std::size_t size, void* device_out,
                             std::size_t capacity, const Stream& stream, codec::DType dtype,
                             codec::Codec codec) {
  launch_decode(device_in, size, device_out, capacity, stream, int(decode_kind(dtype, codec)));
}

void DeviceCodec::decompress(const void* device_in, std::size_t size, void* device_out,
                             std::size_t capacity, const Stream& stream) {
  launch_decode(device_in, size, device_out, capacity, stream, int(DecodeKind::Any));
}

void DeviceCodec::launch_decode(const void* device_in, std::size_t size, void* device_out,
                                std::size_t capacity, const Stream& stream, int kind) {
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
  args.output_aligned16 = reinterpret_cast<std::uintptr_t>(device_out) % 16 == 0;
  args.bulk_copies = hopper_features();
  args.scratch = buffers_->scratch;
  buffers_->asked = DecodeKind(kind);
  // Blocks claim chunks in a loop, so any number decodes the stream. No more than the device
  // holds, and no more than a stream of default-size chunks that fills the output has chunks: a
  // segment's 17-33 chunks then do not launch hundreds of blocks that find no work.
  const std::uint64_t chunks_at_default = std::max<std::uint64_t>(
      1, (capacity + codec::kDefaultChunkBytes - 1) / codec::kDefaultChunkBytes);
  const auto grid =
      unsigned(std::min<std::uint64_t>(buffers_->decode_grid[kind], chunks_at_default));
  launch_decompress(args, DecodeKind(kind), grid, stream.get());
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
    case DecodeStatus::KindNotAsked:
      return "the header's dtype and codec are not the ones the decode was asked for";
    case DecodeStatus::ResidentGeometry:
      return "more chunks, or larger ones, than the resident decoder was set up for";
  }
  return "unknown error";
}

}  // namespace

namespace codec_kernels {

CompressArgs compress_args(DType dtype, std::uint64_t count,
                           const std::vector<std::uint64_t>& shape, const CodecParams& params) {
  CompressArgs args{};
  args.dtype = dtype;
  args.codec = params.codec;
  args.error_bound = params.codec == codec::Codec::Lossy ? params.error_bound : 0.0;
  if (params.codec == codec::Codec::Lossy) {
    const codec::LossyScale scale = codec::lossy_scale(args.error_bound);
    args.lossy_inverse_width_float = scale.inverse_width_float;
    args.lossy_float_path_limit = scale.float_path_limit;
  }
  args.chunk_bytes = params.chunk_bytes;
  args.count = count;
  const std::uint32_t per_chunk = codec::chunk_elements(dtype, params.chunk_bytes);
  args.chunks = count / per_chunk + (count % per_chunk != 0);
  args.shape.ndim = std::uint32_t(shape.size());
  std::copy(shape.begin(), shape.end(), args.shape.dims);
  return args;
}

DecodeKind decode_kind(codec::DType dtype, codec::Codec codec) {
  if (dtype == codec::DType::UInt16 && codec == codec::Codec::Lossless)
    return DecodeKind::UInt16Lossless;
  if (dtype == codec::DType::Float32)
    return codec == codec::Codec::Lossy ? DecodeKind::Float32Lossy : DecodeKind::Float32Lossless;
  throw InputError("GPU codec: no decoder for " + std::string(codec::to_string(dtype)) +
                   " under the " + codec::to_string(codec) + " codec");
}

std::string decode_failure(DecodeStatus status, unsigned long long first_failure,
                           std::uint32_t header_dtype, std::uint32_t header_codec,
                           DecodeKind asked) {
  std::string what = std::string("compressed stream: ") + describe(status);
  if (status == DecodeStatus::ChunkDamaged)
    what += " (chunk " + std::to_string(first_failure >> 8) + ": " +
            codec::describe(codec::ChunkError(first_failure & 0xFF)) + ")";
  if (status == DecodeStatus::KindNotAsked)
    what += " (the header says " + std::string(codec::to_string(codec::DType(header_dtype))) +
            ", " + codec::to_string(codec::Codec(header_codec)) + "; asked for " +
            kind_name(asked) + ")";
  return what;
}

}  // namespace codec_kernels

std::uint64_t DeviceCodec::finish_decompress(const Stream& stream) {
  copy_async(buffers_->host_plan.get(), buffers_->plan.get(), sizeof(DecodePlan), stream,
             "decode status to the host");
  stream.synchronize();
  const auto& plan = *buffers_->host_plan.as<DecodePlan>();
  const auto status = DecodeStatus(plan.status);
  if (status == DecodeStatus::Ok) return plan.raw_bytes;
  throw InputError(
      decode_failure(status, plan.first_failure, plan.dtype, plan.codec, buffers_->asked));
}

}  // namespace livedrp::gpu
