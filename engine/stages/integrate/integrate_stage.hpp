#pragma once
// Live azimuthal integration as a stage of the contract (stages/stage.hpp): the configuration's
// "integration" section makes it (the engine's own section, so the engine builds it rather than
// the registry); its CPU part is the Integrator, its CUDA part a DeviceIntegrator per backend
// lane (the Integrator's tables uploaded once; the bins go to the position's pinned result
// block), its result the event's mean intensity per bin (ProfileResult, NaN where no pixel
// contributed) and its book the IntegrationBook (the `profile` topic).
#include <memory>

#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "exec/engine.hpp"
#include "integrate/integrator.hpp"
#include "stages/integrate/integration_book.hpp"
#include "stages/stage.hpp"

namespace livedrp::stages {

class IntegrateStage final : public Stage {
 public:
  IntegrateStage(integrate::Integrator integrator, IntegrationBookSettings book);

  std::string name() const override { return "integrate"; }
  std::uint64_t input_bytes() const override { return integrator_.pixels() * sizeof(float); }
  std::any run_cpu(const CpuEvent& event) override;
#ifdef LIVEDRP_HAVE_CUDA
  // In its own file (..._cuda.cpp); without CUDA the stage has none (Stage's default).
  std::unique_ptr<CudaStageLane> make_cuda_lane(const CudaLaneSpec& spec) const override;
#endif
  std::unique_ptr<StageBook> make_book() const override;

  // The integrator as configured, its tables built (the device-resident pipeline runs its own
  // copy; a fallback CPU backend shares this stage).
  const integrate::Integrator& integrator() const {
    return integrator_;
  }
  const IntegrationBookSettings& book_settings() const {
    return book_;
  }

 private:
  integrate::Integrator integrator_;  // run_cpu's: one event at a time, on the backend's thread
  IntegrationBookSettings book_;
};

// The stage the "integration" section describes (its mask: the section's file and the
// constants' bad pixels). Throws InputError naming the field.
std::shared_ptr<IntegrateStage> make_integrate_stage(const LiveIntegrationConfig& config,
                                                     const DetectorDescription& detector,
                                                     const CalibrationConstants& constants);

}  // namespace livedrp::stages
