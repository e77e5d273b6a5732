#pragma once
// The `image` topic as a stage of the contract (stages/stage.hpp), built by the engine from the
// configuration's "image" section (publish_hz) when the detector has an assembled image and the
// run publishes (or an MPI rank keeps images for its reports), last in the run's list.
//   CPU part   for the event due (image.publish_hz a second, ImageSampler) a copy of its raw
//              words and calibrated pixels; nothing for the others.
//   CUDA part  (image_stage_cuda.cpp) for the event due, the same two copies into pinned memory
//              on the lane's stream, behind the stages before it; nothing enqueued for the others.
//   result     ImageResult: the sample, or null for an event not sampled.
//   book       ImageBook: hands a sample, with the peaks of the same event (the peak stage's
//              result, through EventResults), to the LiveImage mailbox, and publishes the newest
//              as the `image` message as soon as the reporter's step comes round.
// The device-resident source is not a backend: its snapshot of a sampled event (launch graph and
// plain) becomes this stage's result there (exec/engine_device_source.cpp).
#include <atomic>
#include <chrono>
#include <memory>

#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "core/image_assembly.hpp"
#include "stages/image/live_image.hpp"
#include "stages/peaks/peak_stage.hpp"
#include "stages/stage.hpp"

namespace livedrp::stages {

using ImageResult = std::shared_ptr<const ImageSample>;

// When the next event is to be sampled: publish_hz a second, whichever thread asks first.
class ImageSampler {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ImageSampler(double publish_hz);
  // Is an event due now (without taking it)?
  bool due(Clock::time_point now) const;
  // Takes the due event: true once per period, for the first caller at or after the due time.
  bool take_due(Clock::time_point now);
  // An event was sampled now whether or not it was due (the device-resident snapshot, asked for
  // when due and granted to a later event): the next is due a period from now.
  void taken(Clock::time_point now);

 private:
  Clock::duration period_;
  std::atomic<Clock::rep> next_due_{0};  // Clock ticks since its epoch
};

class ImageCudaState;  // the CUDA part's pinned copy shared by a backend's lanes (..._cuda.cpp)

class ImageStage final : public Stage {
 public:
  // `assembly` must not be null; `peaks` may be (peak finding off). `detector` and `constants`
  // outlive the stage (the engine's do).
  ImageStage(const DetectorDescription& detector, const CalibrationConstants& constants,
             std::shared_ptr<const ImageAssembly> assembly, std::shared_ptr<const PeakStage> peaks,
             double publish_hz);

  std::string name() const override { return "image"; }
  // A sampled event's copy only; nothing for the others.
  std::uint64_t input_bytes() const override { return 0; }
  std::any run_cpu(const CpuEvent& event) override;
#ifdef LIVEDRP_HAVE_CUDA
  std::unique_ptr<CudaStageLane> make_cuda_lane(const CudaLaneSpec& spec) const override;
#endif
  std::unique_ptr<StageBook> make_book() const override;

  ImageSampler& sampler() const {
    return *sampler_;
  }
  // The newest sampled event's image, assembled, once (an MPI rank's report takes it).
  std::optional<protocol::ImageFrame> take() {
    return mailbox_->take();
  }
  // From now on the book publishes nothing: take() is how the images leave (an MPI rank).
  void keep_for_taking() {
    kept_for_taking_->store(true);
  }
  // A sample made outside the backends (the device-resident snapshot) as this stage's result.
  ImageResult sample(const EventHeader& header, const void* raw, const float* calibrated) const;

 private:
  const DetectorDescription& detector_;
  std::shared_ptr<const ImageAssembly> assembly_;
  std::shared_ptr<const PeakStage> peaks_;
  std::shared_ptr<ImageSampler> sampler_;
  std::shared_ptr<LiveImage> mailbox_;
  std::shared_ptr<std::atomic<bool>> kept_for_taking_;
#ifdef LIVEDRP_HAVE_CUDA
  mutable std::shared_ptr<ImageCudaState> cuda_;  // made by a backend's first lane
#endif
};

}  // namespace livedrp::stages
