#pragma once
// Compression fidelity, live, as a stage of the contract (stages/stage.hpp): the configuration's
// "fidelity" section makes it (an engine section, since it reads the compression, integration and
// peak-finding stages of the run). It runs after them in the run's list. Its CPU part does
// nothing for most events; for one due to be sampled (fidelity.samples_hz) it hands the compress
// stage's stream of that event, and the calibrated image, to the FidelitySampler, whose worker
// decodes the stream and compares integration and peakfinder8 on both images. Its book publishes
// the newest sample on the `fidelity` topic.
//
// It has no CUDA part: the CUDA backend's codec writes each event's stream into device memory
// that its next event overwrites, and the stream never comes back to the host, so the CUDA
// backend refuses the stage with that reason (a configuration error, not silence).
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

class FidelityStage final : public Stage {
 public:
  FidelityStage(std::shared_ptr<const CompressStage> compress,
                std::shared_ptr<FidelitySampler> sampler, FidelityBookSettings book);

  std::string name() const override { return "fidelity"; }
  // The copy of a sampled event (its image); nothing for the others.
  std::uint64_t input_bytes() const override { return 0; }
  std::any run_cpu(const CpuEvent& event) override;
  // Throws InputError: not available on the CUDA backend (above).
  std::unique_ptr<CudaStageLane> make_cuda_lane(const CudaLaneSpec& spec) const override;
  std::unique_ptr<StageBook> make_book() const override;

  FidelitySampler& sampler() const { return *sampler_; }

 private:
  std::shared_ptr<const CompressStage> compress_;
  std::shared_ptr<FidelitySampler> sampler_;
  FidelityBookSettings book_;
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
