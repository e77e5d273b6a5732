// Compiled with --fmad=false (engine/CMakeLists.txt), as the other integration kernels: the
// per-pixel preprocessing of integrate/corrections.hpp rounds as on the host.
#include "cuda/integrate/pixel_histogram.hpp"

#include <cuda_runtime.h>

#include <string>

#include "core/error.hpp"
#include "cuda/device.hpp"
#include "cuda/integrate/device_integrator.hpp"
#include "cuda/integrate/sums_bin.cuh"

namespace livedrp::gpu::pixel_histogram {

bool build_tables(const IntegrationPlan& plan, Tables& t) {
  if (plan.split || plan.error_model == integrate::ErrorModel::Azimuthal) return false;
  if (plan.bins > kMaxBins) return false;
  t.bin_of_pixel.assign(plan.pixels, kNoBin);
  t.normalization.assign(plan.pixels, 0.0f);
  if (!plan.dark.empty()) t.dark.assign(plan.pixels, 0.0f);
  for (int b = 0; b < plan.bins; ++b)
    for (std::int32_t e = plan.row_start[std::size_t(b)]; e < plan.row_start[std::size_t(b) + 1];
         ++e) {
      const std::size_t p = std::size_t(plan.pixel[std::size_t(e)]);
      if (t.bin_of_pixel[p] != kNoBin) return false;  // a pixel in two bins: splitting
      t.bin_of_pixel[p] = std::uint16_t(b);
      t.normalization[p] = plan.normalization[std::size_t(e)];
      if (!plan.dark.empty()) t.dark[p] = plan.dark[std::size_t(e)];
    }
  const std::size_t segment_pixels = std::size_t(plan.rows) * std::size_t(plan.cols);
  if (segment_pixels > 0 && plan.pixels % segment_pixels == 0) {
    t.segments = int(plan.pixels / segment_pixels);
    t.rows = plan.rows;
    t.cols = plan.cols;
  } else {  // no segment shape: rows of kTileCols pixels, the last one short
    t.segments = 1;
    t.cols = kTileCols;
    t.rows = int((plan.pixels + kTileCols - 1) / kTileCols);
  }
  return true;
}

std::size_t tiles(const DeviceTables& t) {
  return std::size_t(t.segments) * std::size_t(t.tiles_per_segment);
}

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerThread = kTileRows / kWarps;  // warp w takes rows w, w + kWarps, ...
constexpr int kColsPerThread = kTileCols / 32;      // lane l takes columns l, l + 32, ...
constexpr int kPixelsPerThread = kRowsPerThread * kColsPerThread;
static_assert(kTileRows % kWarps == 0 && kTileCols % 32 == 0, "tile shape vs block shape");

// A block per (tile, frame of the batch).
__global__ void __launch_bounds__(kThreads)
    histogram_kernel(DeviceTables t, const float* __restrict__ frames, double* __restrict__ out) {
  extern __shared__ double histogram[];  // signal[bins], then variance[bins]
  double* signal = histogram;
  double* variance = histogram + t.bins;
  __shared__ bool last_block;
  const std::size_t frame = blockIdx.y;
  const float* image = frames + frame * t.pixels;
  for (int b = int(threadIdx.x); b < 2 * t.bins; b += kThreads) histogram[b] = 0.0;

  const int segment = int(blockIdx.x) / t.tiles_per_segment;
  const int in_segment = int(blockIdx.x) % t.tiles_per_segment;
  const int first_row = (in_segment / t.tiles_per_row) * kTileRows + int(threadIdx.x / 32);
  const int first_col = (in_segment % t.tiles_per_row) * kTileCols + int(threadIdx.x % 32);
  // Every load of the thread's pixels issued before any is used: two memory round trips a tile.
  std::size_t pixel[kPixelsPerThread];
  std::uint16_t bin[kPixelsPerThread];
#pragma unroll
  for (int k = 0; k < kPixelsPerThread; ++k) {
    const int row = first_row + (k / kColsPerThread) * kWarps;
    const int col = first_col + (k % kColsPerThread) * 32;
    pixel[k] =
        (std::size_t(segment) * std::size_t(t.rows) + std::size_t(row)) * std::size_t(t.cols) +
        std::size_t(col);
    const bool inside = row < t.rows && col < t.cols && pixel[k] < t.pixels;
    bin[k] = inside ? __ldg(t.bin_of_pixel + pixel[k]) : kNoBin;
  }
  float raw[kPixelsPerThread];
#pragma unroll
  for (int k = 0; k < kPixelsPerThread; ++k)
    raw[k] = bin[k] != kNoBin ? __ldcs(image + pixel[k]) : 0.0f;
  __syncthreads();  // the histogram is zeroed

  double* frame_sums = t.sums + frame * std::size_t(t.bins) * kSumsPerBin;
  const bool poisson = t.model == integrate::ErrorModel::Poisson;
#pragma unroll
  for (int k = 0; k < kPixelsPerThread; ++k) {
    if (bin[k] == kNoBin) continue;
    const float dark = t.dark ? __ldg(t.dark + pixel[k]) : 0.0f;
    // A normalisation of 1 here changes nothing but spares reading the real one (the pixel is
    // statically valid, or it would have no bin): the signal and variance do not depend on it.
    const integrate::PixelSample s =
        integrate::preprocess_pixel(raw[k], dark, 1.0f, t.model, t.dummy);
    if (s.count != 0.0f) {
      atomicAdd(signal + bin[k], double(s.signal));
      if (poisson) atomicAdd(variance + bin[k], double(s.variance));
    } else {  // invalidated by the event (rare): its static share leaves the bin
      const float norm = __ldg(t.normalization + pixel[k]);
      double* lost = frame_sums + std::size_t(bin[k]) * kSumsPerBin;
      atomicAdd(lost + 2, 1.0);
      atomicAdd(lost + 3, double(norm));
      atomicAdd(lost + 4, 1.0);
      atomicAdd(lost + 5, static_cast<double>(norm) * norm);
    }
  }
  __syncthreads();
  for (int b = int(threadIdx.x); b < t.bins; b += kThreads) {
    const double s = signal[b], v = variance[b];
    if (s != 0.0) atomicAdd(frame_sums + std::size_t(b) * kSumsPerBin, s);
    if (v != 0.0) atomicAdd(frame_sums + std::size_t(b) * kSumsPerBin + 1, v);
  }
  // The last block of the frame to finish finalises every bin.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last_block = atomicAdd(t.tiles_done + frame, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  double* frame_out = out + frame * kStoredFields * std::size_t(t.bins);
  for (int b = int(threadIdx.x); b < t.bins; b += kThreads) {
    double* sums = frame_sums + std::size_t(b) * kSumsPerBin;
    const LostSums lost{__ldcg(sums + 2), __ldcg(sums + 3), __ldcg(sums + 4), __ldcg(sums + 5)};
    store_sums_bin(frame_out, t.bins, b, __ldcg(sums), __ldcg(sums + 1), t.static_normalization[b],
                   t.static_count[b], t.static_norm_sq[b], t.bin_entries[b], lost, t.model,
                   t.empty);
    for (int k = 0; k < kSumsPerBin; ++k) sums[k] = 0.0;  // ready for the next launch
  }
  if (threadIdx.x == 0) t.tiles_done[frame] = 0u;
}

}  // namespace

void prepare() {
  const cudaError_t status =
      cudaFuncSetAttribute(histogram_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           int(2 * kMaxBins * sizeof(double)));
  if (status != cudaSuccess)
    throw RuntimeFault(std::string("cudaFuncSetAttribute(pixel_histogram::histogram_kernel): ") +
                       cudaGetErrorString(status));
}

void launch(const DeviceTables& t, const float* frames, int frames_count, double* out,
            void* stream) {
  const dim3 grid(unsigned(tiles(t)), unsigned(frames_count));
  histogram_kernel<<<grid, kThreads, 2 * std::size_t(t.bins) * sizeof(double),
                     static_cast<cudaStream_t>(stream)>>>(t, frames, out);
  check_launch("pixel_histogram::histogram_kernel");
}

}  // namespace livedrp::gpu::pixel_histogram
