// The CUDA part of the compress stage (built with CUDA only; without it the stage has none).
#ifdef LIVEDRP_HAVE_CUDA
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "codec/codec.hpp"
#include "core/error.hpp"
#include "cuda/codec/device_codec.hpp"
#include "cuda/device.hpp"
#include "stages/compress/compress_stage.hpp"

namespace livedrp::stages {
namespace {

// A lane's codec and the stream it writes, shared with a stage that reads the stream after it
// (fidelity) so that the device memory outlives whichever lane part goes first.
struct LaneOutput {
  LaneOutput(std::uint64_t count, std::size_t capacity) : codec(count), compressed(capacity) {
    view.bytes = compressed.get();
    view.size_word = codec.device_size_word();
    view.capacity = compressed.bytes();
  }
  gpu::DeviceCodec codec;
  // One stream at a time on the lane: each event's overwrites the last one's (the bytes stay on
  // the device; only their size comes back).
  gpu::DeviceBuffer compressed;
  CompressDeviceStream view;
};

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
        output_(std::make_shared<LaneOutput>(
            count, codec::compressed_bound(dtype, count, unsigned(shape_.size()), params))) {}

  std::size_t result_bytes() const override { return sizeof(std::uint64_t); }

  void record(const CudaEvent& event, const gpu::Stream& stream) override {
    const void* input = calibrated_image_ ? static_cast<const void*>(event.calibrated) : event.raw;
    output_->codec.compress(input, dtype_, count_, shape_, params_, output_->compressed.get(),
                            output_->compressed.bytes(), stream);
    gpu::copy_async(event.result, output_->codec.device_size_word(), sizeof(std::uint64_t), stream,
                    "compressed size to pinned memory");
  }

  std::any collect(int position, const void* result) const override {
    std::uint64_t size = 0;
    std::memcpy(&size, result, sizeof size);
    if (size == 0 || size > output_->compressed.bytes())
      throw RuntimeFault("compress stage: the GPU codec reported a stream of " +
                         std::to_string(size) + " bytes at position " + std::to_string(position) +
                         " (output buffer of " + std::to_string(output_->compressed.bytes()) +
                         " bytes)");
    return CompressedSize{bytes_in_, size};
  }

  std::shared_ptr<const CompressDeviceStream> stream() const {
    return {output_, &output_->view};  // shares the ownership of the codec and its buffer
  }

 private:
  codec::CodecParams params_;
  codec::DType dtype_;
  bool calibrated_image_;
  std::uint64_t count_, bytes_in_;
  std::vector<std::uint64_t> shape_;
  std::shared_ptr<LaneOutput> output_;
};

}  // namespace

std::unique_ptr<CudaStageLane> CompressStage::make_cuda_lane(const CudaLaneSpec& spec) const {
  auto lane = std::make_unique<CompressCudaLane>(params_, dtype_, calibrated_image_, count_,
                                                 bytes_in_, shape_);
  std::lock_guard lock(device_mutex_);
  if (spec.lane >= int(device_streams_.size())) device_streams_.resize(std::size_t(spec.lane) + 1);
  device_streams_[std::size_t(spec.lane)] = lane->stream();
  return lane;
}

std::shared_ptr<const CompressDeviceStream> CompressStage::device_stream(int lane) const {
  std::lock_guard lock(device_mutex_);
  std::shared_ptr<const CompressDeviceStream> stream;
  if (lane >= 0 && lane < int(device_streams_.size()))
    stream = device_streams_[std::size_t(lane)].lock();
  if (!stream)
    throw RuntimeFault("compress stage: no CUDA part alive for backend lane " +
                       std::to_string(lane) +
                       " (the backend makes it before the stages after compress)");
  return stream;
}

}  // namespace livedrp::stages
#endif
