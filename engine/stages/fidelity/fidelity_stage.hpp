#pragma once
// Compression fidelity, live, as a stage of the contract (stages/stage.hpp): the configuration's
// "fidelity" section makes it (an engine section, since it reads the compression, integration and
// peak-finding stages of the run). It runs after them in the run's list. Its CPU part does
// nothing for most events; for one due to be sampled (fidelity.samples_hz) it hands the compress
// stage's stream of that event, and the calibrated image, to the FidelitySampler, whose worker
// decodes the stream and compares integration and peakfinder8 on both images. Its book publishes
// the newest sample on the `fidelity` topic.
//
// Its CUDA part (fidelity_stage_cuda.cpp) does nothing for most events either; for a launch with
// an event due it copies the last event's stream (the compress stage's device buffer of the
// lane, which that event wrote last) and calibrated image to pinned memory on the lane's stream,
// and hands them to the same sampler when the launch is collected. The device-resident source
// has no such step (the engine refuses the stage there with the reason).
#include <memory>

#include "calib/calibration_math.hpp"
#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "stages/compress/compress_stage.hpp"
#include "stages/fidelity/fidelity_book.hpp"
#include "stages/fidelity/fidelity_config.hpp"
#include "stages/fidelity/fidelity_sampler.hpp"
#include "stages/integrate/integrate_stage.hpp"
#include "stages/peaks/peak_stage.hpp"
#include "stages/stage.hpp"

namespace livedrp::stages {

class FidelityCudaState;  // the CUDA part's state shared by a backend's lanes (..._cuda.cpp)

class FidelityStage final : public Stage {
 public:
  // `pixels`: the detector's, the calibrated image a sample copies.
  FidelityStage(std::shared_ptr<const CompressStage> compress,
                std::shared_ptr<FidelitySampler> sampler, FidelityBookSettings book,
                std::size_t pixels);

  std::string name() const override { return "fidelity"; }
  // The copy of a sampled event (its image); nothing for the others.
  std::uint64_t input_bytes() const override { return 0; }
  std::any run_cpu(const CpuEvent& event) override;
#ifdef LIVEDRP_HAVE_CUDA
  // In its own file (..._cuda.cpp); without CUDA the stage has none (Stage's default). Must be
  // made after the compress stage's part of the same lane (the run's list puts compress first).
  std::unique_ptr<CudaStageLane> make_cuda_lane(const CudaLaneSpec& spec) const override;
#endif
  std::unique_ptr<StageBook> make_book() const override;

  FidelitySampler& sampler() const {
    return *sampler_;
  }

 private:
  std::shared_ptr<const CompressStage> compress_;
  std::shared_ptr<FidelitySampler> sampler_;
  FidelityBookSettings book_;
  std::size_t pixels_ = 0;
#ifdef LIVEDRP_HAVE_CUDA
  // What the lanes of one backend share: the pinned memory a sample comes back to (made by the
  // backend's first lane, as the peak stage's state is).
  mutable std::shared_ptr<FidelityCudaState> cuda_;
#endif
};

// What the stage is built from: the run's stages it compares with (integrate and peaks may be
// null: off) and what a stream of raw words needs to be calibrated again.
struct FidelityStageInputs {
  const DetectorDescription& detector;
  const CalibrationConstants& constants;  // must outlive the stage (the engine's do)
  calib::CalibrationParams calibration;
  std::shared_ptr<const CompressStage> compress;
  std::shared_ptr<const IntegrateStage> integrate;
  std::shared_ptr<const PeakStage> peaks;
};

// The stage the "fidelity" section describes; null when it is off. Throws InputError naming the
// field when it is on but has nothing to measure: compression off, or neither integration nor
// peak finding on.
std::shared_ptr<FidelityStage> make_fidelity_stage(const FidelityConfig& config,
                                                   const FidelityStageInputs& inputs);

}  // namespace livedrp::stages
