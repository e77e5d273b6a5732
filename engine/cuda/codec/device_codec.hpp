#pragma once
// The codecs of codec/codec.hpp on the GPU, producing the very bytes compress_cpu produces for the
// same input and parameters, and decoding any stream compress_cpu can decode. Plain C++ (no CUDA
// header), so tools, tests and the engine use it as they use cuda/device.hpp.
//
// A DeviceCodec owns every buffer it needs, sized once for arrays of up to `max_elements`
// elements: compress and decompress only enqueue kernels on the given stream (no allocation, no
// host wait, no copy back). The host learns the stream's size, or whether a decode succeeded, by
// asking for it (compressed_size, finish_decompress), which waits for the stream. One object
// serves one stream at a time: use one per stream for concurrent work.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "codec/codec.hpp"
#include "cuda/device.hpp"

namespace livedrp::gpu {

class DeviceCodec {
 public:
  explicit DeviceCodec(std::uint64_t max_elements);
  ~DeviceCodec();
  DeviceCodec(const DeviceCodec&) = delete;
  DeviceCodec& operator=(const DeviceCodec&) = delete;

  std::uint64_t max_elements() const;

  // Enqueues the compression of the array at `device_in` (C order `shape`, or a flat array when
  // `shape` is empty, as compress_flat_cpu stores it) into `device_out`, whose `capacity` must be
  // at least codec::compressed_bound(...). Both pointers must be 4-byte aligned device memory.
  // Throws InputError for parameters compress_cpu would refuse, too many elements or too little
  // capacity; nothing is enqueued then.
  void compress(const void* device_in, codec::DType dtype, std::uint64_t count,
                const std::vector<std::uint64_t>& shape, const codec::CodecParams& params,
                void* device_out, std::size_t capacity, const Stream& stream);

  // Device word holding the byte size of the last stream compressed (valid once the stream has
  // run the compression), for kernels or copies that follow it.
  const std::uint64_t* device_size_word() const;
  // Waits for `stream` and returns that size.
  std::uint64_t compressed_size(const Stream& stream);

  // Enqueues the decoding of the `size`-byte stream at `device_in` into `device_out`
  // (`capacity` bytes, at least the stream's raw size). The header, the chunk table, both
  // checksums and every chunk are validated on the device; nothing is read or written out of
  // bounds whatever the input.
  void decompress(const void* device_in, std::size_t size, void* device_out, std::size_t capacity,
                  const Stream& stream);
  // The same for a stream the caller knows to hold `dtype` under `codec` (it compressed it, or read
  // its header): the decoder for that pair alone runs, which is faster. A header that says
  // otherwise fails the decode (finish_decompress names both).
  void decompress(const void* device_in, std::size_t size, void* device_out, std::size_t capacity,
                  const Stream& stream, codec::DType dtype, codec::Codec codec);
  // Waits for `stream`; returns the decoded array's raw byte count, or throws InputError naming
  // what is wrong with the stream (the output is then undefined).
  std::uint64_t finish_decompress(const Stream& stream);

 private:
  // kind: a codec_kernels::DecodeKind.
  void launch_decode(const void* device_in, std::size_t size, void* device_out,
                     std::size_t capacity, const Stream& stream, int kind);
  struct Buffers;
  std::unique_ptr<Buffers> buffers_;
};

}  // namespace livedrp::gpu
