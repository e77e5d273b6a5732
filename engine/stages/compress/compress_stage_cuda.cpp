// The CUDA part of the compress stage (built with CUDA only; without it the stage has none).
#ifdef LIVEDRP_HAVE_CUDA
#include <cstring>
#include <string>

#include "codec/codec.hpp"
#include "core/error.hpp"
#include "cuda/codec/device_codec.hpp"
#include "cuda/device.hpp"
#include "stages/compress/compress_stage.hpp"

namespace livedrp::stages {
namespace {

class CompressCudaLane final : public CudaStageLane {
 public:
  CompressCudaLane(codec::CodecParams params, codec::DType dtype, bool calibrated_image,
                   std::uint64_t count, std::uint64_t bytes_in, std::vector<std::uint64_t> shape)
      : params_(params),
        dtype_(dtype),
        calibrated_image_(calibrated_image),
        count_(count),
        bytes_in_(bytes_in),
        shape_(std::move(shape)),
        codec_(count),
        // One stream at a time on the lane: each event's overwrites the last one's (the bytes
        // stay on the device; only their size comes back).
        compressed_(codec::compressed_bound(dtype, count, unsigned(shape_.size()), params)) {}

  std::size_t result_bytes() const override { return sizeof(std::uint64_t); }

  void record(const CudaEvent& event, const gpu::Stream& stream) override {
    const void* input = calibrated_image_ ? static_cast<const void*>(event.calibrated) : event.raw;
    codec_.compress(input, dtype_, count_, shape_, params_, compressed_.get(), compressed_.bytes(),
                    stream);
    gpu::copy_async(event.result, codec_.device_size_word(), sizeof(std::uint64_t), stream,
                    "compressed size to pinned memory");
  }

  std::any collect(int position, const void* result) const override {
    std::uint64_t size = 0;
    std::memcpy(&size, result, sizeof size);
    if (size == 0 || size > compressed_.bytes())
      throw RuntimeFault("compress stage: the GPU codec reported a stream of " +
                         std::to_string(size) + " bytes at position " + std::to_string(position) +
                         " (output buffer of " + std::to_string(compressed_.bytes()) + " bytes)");
    return CompressedSize{bytes_in_, size};
  }

 private:
  codec::CodecParams params_;
  codec::DType dtype_;
  bool calibrated_image_;
  std::uint64_t count_, bytes_in_;
  std::vector<std::uint64_t> shape_;
  gpu::DeviceCodec codec_;
  gpu::DeviceBuffer compressed_;
};

}  // namespace

std::unique_ptr<CudaStageLane> CompressStage::make_cuda_lane(const CudaLaneSpec& spec) const {
  (void)spec;
  return std::make_unique<CompressCudaLane>(params_, dtype_, calibrated_image_, count_, bytes_in_,
                                            shape_);
}

}  // namespace livedrp::stages
#endif
