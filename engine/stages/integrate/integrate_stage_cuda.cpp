// The CUDA part of the integrate stage (built with CUDA only; without it the stage has none).
#ifdef LIVEDRP_HAVE_CUDA
#include <vector>

#include "cuda/integrate/device_integrator.hpp"
#include "exec/backend.hpp"
#include "stages/integrate/integrate_stage.hpp"

namespace livedrp::stages {
namespace {

class IntegrateCudaLane final : public CudaStageLane {
 public:
  explicit IntegrateCudaLane(const gpu::IntegrationPlan& plan)
      // The pixel-major kernels where the plan allows them (no splitting, Poisson or no error
      // model): the image read once; the bin-major kernel otherwise. Both are deterministic.
      : integrator_(plan, 1, gpu::IntegrationKernel::PixelMajor) {}

  std::size_t result_bytes() const override {
    return integrator_.result_doubles() * sizeof(double);
  }
  void record(const CudaEvent& event, const gpu::Stream& stream) override {
    integrator_.enqueue_into(event.calibrated, static_cast<double*>(event.result), stream);
  }
  std::any collect(int position, const void* result) const override {
    (void)position;
    return ProfileResult(
        profile_intensities(integrator_.profile_from(static_cast<const double*>(result))));
  }

 private:
  gpu::DeviceIntegrator integrator_;
};

}  // namespace

std::unique_ptr<CudaStageLane> IntegrateStage::make_cuda_lane(const CudaLaneSpec& spec) const {
  (void)spec;
  // At configuration time, before any event: plan_from reads the tables through a non-const
  // integrator, so it is given a copy.
  integrate::Integrator reference = integrator_;
  return std::make_unique<IntegrateCudaLane>(gpu::plan_from(reference));
}

}  // namespace livedrp::stages
#endif
