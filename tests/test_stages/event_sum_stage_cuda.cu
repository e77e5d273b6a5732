// The test-only stage's CUDA part: per event, a grid of blocks each sums its grid-stride share of
// the calibrated image (strided_sum, the CPU part's math) and the block's threads in a fixed
// tree; one block then adds the blocks' partial sums the same way and the result is copied to
// the position's pinned bytes. Deterministic (no atomics), no allocation or host wait per event.
#include <cuda_runtime.h>

#include <memory>

#include "core/error.hpp"
#include "cuda/device.hpp"
#include "test_stages/event_sum_math.hpp"
#include "test_stages/event_sum_stage.hpp"

namespace livedrp::test_stages {
namespace {

constexpr int kThreads = 256;  // a power of two: the tree halves it
constexpr int kBlocks = 264;   // two waves of an H100's 132 multiprocessors

__device__ void block_tree_sum(double* shared, double value, double* out) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = shared[0];
}

__global__ void partial_sums(const float* image, std::size_t pixels, double* partials) {
  __shared__ double shared[kThreads];
  const std::size_t first = std::size_t(blockIdx.x) * kThreads + threadIdx.x;
  block_tree_sum(shared, strided_sum(image, first, pixels, std::size_t(kBlocks) * kThreads),
                 &partials[blockIdx.x]);
}

__global__ void final_sum(const double* partials, double* out) {
  __shared__ double shared[kThreads];
  double value = 0.0;
  for (int k = int(threadIdx.x); k < kBlocks; k += kThreads) value += partials[k];
  block_tree_sum(shared, value, out);
}

class EventSumCudaLane final : public stages::CudaStageLane {
 public:
  EventSumCudaLane(std::size_t pixels, int positions)
      : pixels_(pixels),
        // One partials row per lane: the lane's stream runs its events one after another.
        partials_(kBlocks * sizeof(double)),
        sums_(std::size_t(positions) * sizeof(double)) {}
  std::size_t result_bytes() const override { return sizeof(double); }
  void record(const stages::CudaEvent& event, const gpu::Stream& stream) override {
    double* sum = sums_.as<double>() + event.position;
    partial_sums<<<kBlocks, kThreads, 0, stream.get()>>>(event.calibrated, pixels_,
                                                         partials_.as<double>());
    gpu::check_launch("event_sum partial_sums");
    final_sum<<<1, kThreads, 0, stream.get()>>>(partials_.as<double>(), sum);
    gpu::check_launch("event_sum final_sum");
    gpu::copy_async(event.result, sum, sizeof(double), stream, "event sum to pinned memory");
  }
  std::any collect(int position, const void* result) const override {
    (void)position;
    return *static_cast<const double*>(result);
  }

 private:
  std::size_t pixels_;
  gpu::DeviceBuffer partials_, sums_;
};

}  // namespace

std::unique_ptr<stages::CudaStageLane> make_event_sum_cuda_lane(std::size_t pixels,
                                                                const stages::CudaLaneSpec& spec) {
  return std::make_unique<EventSumCudaLane>(pixels, spec.positions);
}

}  // namespace livedrp::test_stages
