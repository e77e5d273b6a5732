// The CUDA part of the image stage (built with CUDA only; without it the stage has none).
//
// For the event due, the lane's stream copies its raw words and calibrated image into one pinned
// pair shared by the backend's lanes, behind the stages before this one; the retiring thread
// copies them out when the event's launch is collected. Nothing is enqueued for the other events.
// Not capturable: whether an event copies anything is decided per event, so in graph mode the
// stage's recording is empty for most events (the backend's two timing events around it are all
// it costs).
//
// One pinned pair per backend: an image is sampled a few times a second, so an event coming due
// while the last sample is still on its way back waits for the next one (the sampler's due time
// is not taken then).
#ifdef LIVEDRP_HAVE_CUDA
#include <atomic>

#include "cuda/device.hpp"
#include "stages/image/image_stage.hpp"

namespace livedrp::stages {

class ImageCudaState {
 public:
  ImageCudaState(int lanes, int positions, std::size_t raw_bytes, std::size_t pixels)
      : lanes(lanes), positions(positions), raw(raw_bytes), image(pixels * sizeof(float)) {}

  const int lanes, positions;
  gpu::PinnedBuffer raw, image;
  // Written by the submitting thread before it sets `holder`, read by the collecting thread
  // after it sees it.
  EventHeader header;
  // The event position (lane * positions + position) whose sample the pinned pair holds or is
  // about to; -1: free. Set by the submitting thread only, cleared by the collecting one.
  std::atomic<int> holder{-1};
};

namespace {

class ImageCudaLane final : public CudaStageLane {
 public:
  ImageCudaLane(const ImageStage& stage, std::shared_ptr<ImageCudaState> state, int lane)
      : stage_(stage), state_(std::move(state)), lane_(lane) {}

  // A sample comes back through the state's own pinned pair, not a per-position block.
  std::size_t result_bytes() const override { return 0; }
  bool capturable() const override { return false; }

  void record(const CudaEvent& event, const gpu::Stream& stream) override {
    if (!event.header) return;  // a recording not tied to an event is not sampled
    if (state_->holder.load(std::memory_order_acquire) >= 0) return;
    if (!stage_.sampler().take_due(ImageSampler::Clock::now())) return;
    state_->header = *event.header;
    state_->holder.store(slot(event.position), std::memory_order_release);
    gpu::copy_async(state_->raw.get(), event.raw, state_->raw.bytes(), stream,
                    "image: raw words to pinned memory");
    gpu::copy_async(state_->image.get(), event.calibrated, state_->image.bytes(), stream,
                    "image: calibrated image to pinned memory");
  }

  std::any collect(int position, const void*) const override {
    if (state_->holder.load(std::memory_order_acquire) != slot(position)) return ImageResult{};
    ImageResult sample =
        stage_.sample(state_->header, state_->raw.get(), state_->image.as<const float>());
    state_->holder.store(-1, std::memory_order_release);  // sample() copied what it keeps
    return sample;
  }

 private:
  int slot(int position) const { return lane_ * state_->positions + position; }

  const ImageStage& stage_;
  std::shared_ptr<ImageCudaState> state_;
  int lane_;
};

}  // namespace

std::unique_ptr<CudaStageLane> ImageStage::make_cuda_lane(const CudaLaneSpec& spec) const {
  if (spec.lane == 0 || !cuda_ || cuda_->lanes != spec.lanes || cuda_->positions != spec.positions)
    cuda_ = std::make_shared<ImageCudaState>(spec.lanes, spec.positions,
                                             detector_.raw_event_bytes(), detector_.pixels());
  return std::make_unique<ImageCudaLane>(*this, cuda_, spec.lane);
}

}  // namespace livedrp::stages
#endif
