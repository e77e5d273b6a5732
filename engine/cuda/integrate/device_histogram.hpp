#pragma once
// The plain way to integrate on a GPU, kept as the benchmark's baseline for the CSR kernel of
// DeviceIntegrator: a thread per pixel reads the image, the pixel's bin and its normalisation
// (pixel order, all coalesced) and adds signal, variance, normalisation and count with atomics
// into a block-private histogram in shared memory (double), which the block then adds into the
// global histogram with atomics. No pixel splitting, Poisson error model. The order of the
// additions is whatever the atomics give, so results vary in the last bits from run to run.
// Plain C++ header (no CUDA types).
#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/device.hpp"
#include "cuda/integrate/device_integrator.hpp"

namespace livedrp::gpu {

class DeviceHistogramIntegrator {
 public:
  // Throws InputError for a plan with pixel splitting, the azimuthal error model or more bins than
  // a block's shared-memory histogram holds (kMaxBins).
  explicit DeviceHistogramIntegrator(const IntegrationPlan& plan);
  ~DeviceHistogramIntegrator();
  DeviceHistogramIntegrator(const DeviceHistogramIntegrator&) = delete;
  DeviceHistogramIntegrator& operator=(const DeviceHistogramIntegrator&) = delete;

  static constexpr int kMaxBins = 1024;

  // Bytes read per frame: the image and the per-pixel bin and normalisation (4 + 4 + 4).
  std::size_t bytes_read_per_frame() const;
  // Same contract as DeviceIntegrator::enqueue / collect.
  void enqueue(const float* device_frame, const Stream& stream);
  integrate::Profile collect(const Stream& stream);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace livedrp::gpu
