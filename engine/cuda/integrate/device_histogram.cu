#include "cuda/integrate/device_histogram.hpp"

#include <cuda_runtime.h>

#include <string>

#include "core/error.hpp"
#include "integrate/accumulate.hpp"
#include "integrate/corrections.hpp"

namespace livedrp::gpu {

using integrate::ErrorModel;

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw RuntimeFault(std::string(what) + ": " + cudaGetErrorString(status) + " (" +
                       cudaGetErrorName(status) + ")");
}

constexpr int kThreads = 512;
constexpr int kSums = 5;    // signal, variance, normalisation, count, squared normalisation
constexpr int kFields = 7;  // as DeviceIntegrator: intensity, sigma, std, the four sums

// Each block sweeps a grid-strided share of the pixels into its own shared histogram, then adds
// the bins it touched into the global one.
__global__ void __launch_bounds__(kThreads)
    histogram_kernel(const float* __restrict__ frame, const std::int32_t* __restrict__ bin_of_pixel,
                     const float* __restrict__ normalization, std::size_t pixels, int bins,
                     integrate::DummyTest dummy, double* __restrict__ sums) {
  __shared__ double local[kSums * DeviceHistogramIntegrator::kMaxBins];
  for (int i = threadIdx.x; i < kSums * bins; i += kThreads) local[i] = 0.0;
  __syncthreads();
  const std::size_t step = std::size_t(gridDim.x) * kThreads;
  for (std::size_t p = std::size_t(blockIdx.x) * kThreads + threadIdx.x; p < pixels; p += step) {
    const int b = bin_of_pixel[p];
    if (b < 0) continue;
    const integrate::PixelSample s =
        integrate::preprocess_pixel(frame[p], 0.0f, normalization[p], ErrorModel::Poisson, dummy);
    if (s.count == 0.0f) continue;
    atomicAdd(&local[b], double(s.signal));
    atomicAdd(&local[bins + b], double(s.variance));
    atomicAdd(&local[2 * bins + b], double(s.normalization));
    atomicAdd(&local[3 * bins + b], 1.0);
    atomicAdd(&local[4 * bins + b], double(s.normalization) * double(s.normalization));
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kSums * bins; i += kThreads)
    if (local[i] != 0.0) atomicAdd(&sums[i], local[i]);
}

__global__ void finalize_kernel(const double* __restrict__ sums, int bins, double empty,
                                double* __restrict__ out) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= bins) return;
  integrate::BinAccumulator acc;
  acc.signal = sums[b];
  acc.variance = sums[bins + b];
  acc.normalization = sums[2 * bins + b];
  acc.count = sums[3 * bins + b];
  acc.norm_sq = sums[4 * bins + b];
  const integrate::BinResult r = integrate::finalize_bin(acc, empty, ErrorModel::Poisson);
  const double values[kFields] = {r.intensity,  r.sigma,           r.std,    acc.signal,
                                  acc.variance, acc.normalization, acc.count};
  for (int k = 0; k < kFields; ++k) out[k * bins + b] = values[k];
}

}  // namespace

struct DeviceHistogramIntegrator::State {
  int bins = 0, blocks = 0;
  std::size_t pixels = 0;
  double empty = 0.0;
  integrate::DummyTest dummy;
  std::vector<double> radial;
  DeviceBuffer bin_of_pixel, normalization, sums, out;
  PinnedBuffer host_out;
};

DeviceHistogramIntegrator::DeviceHistogramIntegrator(const IntegrationPlan& plan)
    : state_(std::make_unique<State>()) {
  if (plan.split)
    throw InputError("atomic histogram integrator: no pixel splitting (method no) only");
  if (plan.error_model == ErrorModel::Azimuthal)
    throw InputError(
        "atomic histogram integrator: the azimuthal error model needs an ordered "
        "update; Poisson or none only");
  if (!plan.dark.empty()) throw InputError("atomic histogram integrator: no dark subtraction");
  if (plan.bins < 1 || plan.bins > kMaxBins)
    throw InputError("atomic histogram integrator: " + std::to_string(plan.bins) +
                     " bins, its shared-memory histogram holds 1 .. " + std::to_string(kMaxBins));
  State& s = *state_;
  use_device();
  s.bins = plan.bins;
  s.pixels = plan.pixels;
  s.empty = plan.empty;
  s.dummy = plan.dummy;
  s.radial = plan.radial;
  // Pixel-order tables from the plan's bin-order entries; pixels in no bin get -1.
  std::vector<std::int32_t> bin_of_pixel(plan.pixels, -1);
  std::vector<float> normalization(plan.pixels, 0.0f);
  for (int b = 0; b < plan.bins; ++b)
    for (std::int32_t e = plan.row_start[std::size_t(b)]; e < plan.row_start[std::size_t(b) + 1];
         ++e) {
      bin_of_pixel[std::size_t(plan.pixel[std::size_t(e)])] = b;
      normalization[std::size_t(plan.pixel[std::size_t(e)])] = plan.normalization[std::size_t(e)];
    }
  s.bin_of_pixel = DeviceBuffer(plan.pixels * sizeof(std::int32_t));
  s.normalization = DeviceBuffer(plan.pixels * sizeof(float));
  check(cudaMemcpy(s.bin_of_pixel.get(), bin_of_pixel.data(), s.bin_of_pixel.bytes(),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy(histogram bins)");
  check(cudaMemcpy(s.normalization.get(), normalization.data(), s.normalization.bytes(),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy(histogram normalisation)");
  s.sums = DeviceBuffer(std::size_t(kSums) * std::size_t(s.bins) * sizeof(double));
  s.out = DeviceBuffer(std::size_t(kFields) * std::size_t(s.bins) * sizeof(double));
  s.host_out = PinnedBuffer(s.out.bytes());
  // Enough blocks to fill the device a few times over, few enough that the per-block flush of
  // the shared histogram stays small next to the pixels.
  const DeviceProperties properties = device_properties();
  s.blocks = properties.multiprocessors * 4;
}

DeviceHistogramIntegrator::~DeviceHistogramIntegrator() = default;

std::size_t DeviceHistogramIntegrator::bytes_read_per_frame() const {
  return state_->pixels * (4 + 4 + 4);
}

void DeviceHistogramIntegrator::enqueue(const float* device_frame, const Stream& stream) {
  State& s = *state_;
  fill_async(s.sums.get(), 0, s.sums.bytes(), stream);
  histogram_kernel<<<unsigned(s.blocks), kThreads, 0, stream.get()>>>(
      device_frame, s.bin_of_pixel.as<const std::int32_t>(), s.normalization.as<const float>(),
      s.pixels, s.bins, s.dummy, s.sums.as<double>());
  check_launch("histogram_kernel");
  finalize_kernel<<<unsigned((s.bins + 255) / 256), 256, 0, stream.get()>>>(
      s.sums.as<const double>(), s.bins, s.empty, s.out.as<double>());
  check_launch("histogram finalize_kernel");
  copy_async(s.host_out.get(), s.out.get(), s.out.bytes(), stream, "histogram profile to the host");
}

integrate::Profile DeviceHistogramIntegrator::collect(const Stream& stream) {
  stream.synchronize();
  const State& s = *state_;
  const std::size_t bins = std::size_t(s.bins);
  const double* values = s.host_out.as<const double>();
  integrate::Profile p;
  p.radial = s.radial;
  std::vector<double>* fields[kFields] = {&p.intensity, &p.sigma,         &p.std,  &p.signal,
                                          &p.variance,  &p.normalization, &p.count};
  for (int k = 0; k < kFields; ++k)
    fields[k]->assign(values + std::size_t(k) * bins, values + std::size_t(k + 1) * bins);
  return p;
}

}  // namespace livedrp::gpu
