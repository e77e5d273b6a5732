// The pixel-major integration path (pixel_major.hpp). Compiled with --fmad=false like the rest of
// cuda/integrate, so the per-pixel and per-bin math rounds as the host's does.
#include "cuda/integrate/pixel_major.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cuda/atomic>

#include <string>

#include "core/error.hpp"
#include "cuda/device.hpp"
#include "cuda/integrate/device_integrator.hpp"
#include "cuda/integrate/sums_bin.cuh"
#include "integrate/accumulate.hpp"

namespace livedrp::gpu::pixel_major {

bool build_tables(const IntegrationPlan& plan, Tables& t) {
  if (plan.split || plan.error_model == integrate::ErrorModel::Azimuthal || plan.bins < 1)
    return false;
  const std::size_t entries = plan.pixel.size();
  std::vector<std::int32_t> entry_of_pixel(plan.pixels, -1), bin_of_pixel(plan.pixels, -1);
  for (int b = 0; b < plan.bins; ++b) {
    for (std::int32_t e = plan.row_start[std::size_t(b)]; e < plan.row_start[std::size_t(b) + 1];
         ++e) {
      const std::int32_t p = plan.pixel[std::size_t(e)];
      if (p < 0 || std::size_t(p) >= plan.pixels || entry_of_pixel[std::size_t(p)] >= 0)
        return false;  // a pixel in two entries: this path sums each pixel once
      entry_of_pixel[std::size_t(p)] = e;
      bin_of_pixel[std::size_t(p)] = b;
    }
  }
  t = Tables{};
  // Segment shape: rows x cols, or the whole image as one row when the plan has none.
  const bool shaped = plan.rows > 0 && plan.cols > 0 &&
                      plan.pixels % (std::size_t(plan.rows) * std::size_t(plan.cols)) == 0;
  const std::size_t cols = shaped ? std::size_t(plan.cols) : plan.pixels;
  const std::size_t rows = shaped ? std::size_t(plan.rows) : 1;
  const std::size_t segments = plan.pixels / (rows * cols);
  if (plan.pixels > std::size_t(INT32_MAX) || cols > std::size_t(INT32_MAX)) return false;
  t.row_pitch = int(cols);
  for (std::size_t segment = 0; segment < segments; ++segment)
    for (std::size_t r0 = 0; r0 < rows; r0 += kTileRows)
      for (std::size_t c0 = 0; c0 < cols; c0 += kTileCols) {
        const std::size_t tile_rows = std::min<std::size_t>(kTileRows, rows - r0);
        const std::size_t tile_cols = std::min<std::size_t>(kTileCols, cols - c0);
        t.tile_origin.push_back(std::int32_t(segment * rows * cols + r0 * cols + c0));
        t.tile_shape.push_back(std::int32_t((tile_rows << 16) | tile_cols));
      }
  t.tiles = t.tile_origin.size();
  t.local_pixel.reserve(entries);
  t.normalization.reserve(entries);
  std::vector<std::vector<std::int32_t>> segments_of_bin(std::size_t(plan.bins));
  std::vector<std::pair<std::int32_t, std::uint32_t>> tile_entries;  // (bin, pixel in tile)
  std::vector<std::int32_t> pixel_of_local(kTilePixels);
  t.tile_segment_start.push_back(0);
  for (std::size_t tile = 0; tile < t.tiles; ++tile) {
    const std::size_t origin = std::size_t(t.tile_origin[tile]);
    const std::size_t tile_rows = std::size_t(t.tile_shape[tile]) >> 16;
    const std::size_t tile_cols = std::size_t(t.tile_shape[tile]) & 0xFFFF;
    tile_entries.clear();
    for (std::size_t r = 0; r < tile_rows; ++r)
      for (std::size_t c = 0; c < tile_cols; ++c) {
        const std::size_t p = origin + r * cols + c;
        const std::uint32_t local = std::uint32_t(r * kTileCols + c);
        pixel_of_local[local] = std::int32_t(p);
        if (bin_of_pixel[p] >= 0) tile_entries.emplace_back(bin_of_pixel[p], local);
      }
    std::sort(tile_entries.begin(), tile_entries.end());
    for (std::size_t k = 0; k < tile_entries.size(); ++k) {
      const auto [bin, local] = tile_entries[k];
      if (k == 0 || bin != tile_entries[k - 1].first) {
        segments_of_bin[std::size_t(bin)].push_back(std::int32_t(t.segment_bin.size()));
        t.segment_bin.push_back(bin);
        t.segment_begin.push_back(std::int32_t(t.local_pixel.size()));
      }
      const std::size_t e = std::size_t(entry_of_pixel[std::size_t(pixel_of_local[local])]);
      t.local_pixel.push_back(std::uint16_t(local));
      t.normalization.push_back(plan.normalization[e]);
      if (!plan.dark.empty()) t.dark.push_back(plan.dark[e]);
    }
    // Bins without entries get an empty segment at the end of the last tile.
    if (tile + 1 == t.tiles) {
      for (int b = 0; b < plan.bins; ++b) {
        if (!segments_of_bin[std::size_t(b)].empty()) continue;
        segments_of_bin[std::size_t(b)].push_back(std::int32_t(t.segment_bin.size()));
        t.segment_bin.push_back(b);
        t.segment_begin.push_back(std::int32_t(t.local_pixel.size()));
      }
    }
    t.tile_segment_start.push_back(std::int32_t(t.segment_bin.size()));
  }
  t.segment_begin.push_back(std::int32_t(t.local_pixel.size()));
  t.bin_segment_start.push_back(0);
  for (const auto& list : segments_of_bin) {
    t.bin_segments.insert(t.bin_segments.end(), list.begin(), list.end());
    t.bin_segment_start.push_back(std::int32_t(t.bin_segments.size()));
  }
  return true;
}

namespace {

constexpr int kThreads = 256;

using DeviceCounter = cuda::atomic_ref<unsigned, cuda::thread_scope_device>;

// Run by the one thread whose count completed bin `bin` of frame `frame`: the bin's partials
// added in segment order (fixed at upload, so the sum does not depend on who merges), the static
// sums and the invalidated entries' sums applied, and the bin stored. The partials were written
// by other blocks: they are read from L2, past this SM's L1, after a fence.
__device__ void merge_bin(const DeviceTables& t, int bin, std::size_t frame, double* out) {
  __threadfence();
  const std::int32_t first = t.bin_segment_start[bin], end = t.bin_segment_start[bin + 1];
  const double* partials = t.partials + frame * t.segments * 3;
  const double* lost_partials = t.lost_partials + frame * t.segments * 3;
  integrate::BinAccumulator total;
  double lost = 0, lost_norm = 0, lost_count = 0, lost_norm_sq = 0;
  // Unrolled so that several segments' loads are in flight; the additions keep their order.
#pragma unroll 4
  for (std::int32_t k = first; k < end; ++k) {
    const std::size_t s = std::size_t(__ldg(t.bin_segments + k));
    total.signal += __ldcg(partials + 3 * s);
    total.variance += __ldcg(partials + 3 * s + 1);
    const double l = __ldcg(partials + 3 * s + 2);
    if (l != 0.0) {
      lost += l;
      lost_norm += __ldcg(lost_partials + 3 * s);
      lost_count += __ldcg(lost_partials + 3 * s + 1);
      lost_norm_sq += __ldcg(lost_partials + 3 * s + 2);
    }
  }
  store_sums_bin(out + frame * kStoredFields * std::size_t(t.bins), t.bins, bin, total.signal,
                 total.variance, t.static_normalization[bin], t.static_count[bin],
                 t.static_norm_sq[bin], t.bin_entries[bin],
                 LostSums{lost, lost_norm, lost_count, lost_norm_sq}, t.model, t.empty);
  // Every segment of the bin has been counted: ready for the next launch (stream order).
  DeviceCounter(t.segments_done[frame * std::size_t(t.bins) + bin])
      .store(0, cuda::memory_order_relaxed);
}

// Shared memory of a block: the tile's image values, then per entry of the tile (in tile order)
// its signal and variance (a negative variance marks an entry the event invalidates).
constexpr std::size_t kSharedBytes = 3 * kTilePixels * sizeof(float);

// A block per (tile, frame of the batch).
__global__ void __launch_bounds__(kThreads)
    tile_kernel(DeviceTables t, const float* __restrict__ frames, double* __restrict__ out) {
  extern __shared__ float shared[];
  float* tile_values = shared;
  float* entry_signal = shared + kTilePixels;
  float* entry_variance = shared + 2 * kTilePixels;
  const std::size_t tile = blockIdx.x, frame = blockIdx.y;
  const float* image = frames + frame * t.pixels + t.tile_origin[tile];
  const std::uint32_t shape = std::uint32_t(t.tile_shape[tile]);
  const std::uint32_t rows = shape >> 16, cols = shape & 0xFFFFu;
  // The tile's rows, coalesced: 16-byte loads when every row starts 16-byte aligned.
  if ((reinterpret_cast<std::uintptr_t>(image) | std::uintptr_t(t.row_pitch) * 4 | cols * 4) % 16 ==
      0) {
    const std::uint32_t quads = cols / 4;
    for (std::uint32_t i = threadIdx.x; i < rows * quads; i += kThreads) {
      const std::uint32_t r = i / quads, q = i % quads;
      const float4 v =
          __ldcs(reinterpret_cast<const float4*>(image + std::size_t(r) * t.row_pitch) + q);
      reinterpret_cast<float4*>(tile_values + r * kTileCols)[q] = v;
    }
  } else {
    for (std::uint32_t i = threadIdx.x; i < rows * cols; i += kThreads) {
      const std::uint32_t r = i / cols, c = i % cols;
      tile_values[r * kTileCols + c] = __ldcs(image + std::size_t(r) * t.row_pitch + c);
    }
  }
  __syncthreads();

  // Every entry of the tile, coalesced: its sample into shared memory, in tile order.
  const std::int32_t segments_first = t.tile_segment_start[tile];
  const std::int32_t segments_end = t.tile_segment_start[tile + 1];
  const std::int32_t entries_first = t.segment_begin[segments_first];
  const std::int32_t entries = t.segment_begin[segments_end] - entries_first;
#pragma unroll 4
  for (std::int32_t k = std::int32_t(threadIdx.x); k < entries; k += kThreads) {
    const std::int32_t e = entries_first + k;
    const float raw = tile_values[__ldg(t.local_pixel + e)];
    const float dark = t.dark ? __ldg(t.dark + e) : 0.0f;
    // Statically valid entries only (plan_from left the others out): a normalisation of 1
    // changes nothing in the sample's signal and variance and spares reading the real one.
    const integrate::PixelSample sample =
        integrate::preprocess_pixel(raw, dark, 1.0f, t.model, t.dummy);
    entry_signal[k] = sample.signal;
    entry_variance[k] = sample.count != 0.0f ? sample.variance : -1.0f;
  }
  __syncthreads();

  // A thread per segment (a tile holds about a hundred, of tens of entries each): its sums in
  // double over its entries in order, its partial written, then, after one fence, its bin's
  // count; the thread whose count completes a bin merges it.
  double* partials = t.partials + frame * t.segments * 3;
  double* lost_partials = t.lost_partials + frame * t.segments * 3;
  for (std::int32_t s0 = segments_first; s0 < segments_end; s0 += kThreads) {
    const std::int32_t s = s0 + std::int32_t(threadIdx.x);
    if (s < segments_end) {
      const std::int32_t begin = t.segment_begin[s] - entries_first;
      const std::int32_t end = t.segment_begin[s + 1] - entries_first;
      double signal = 0, variance = 0;
      double lost = 0, lost_norm = 0, lost_count = 0, lost_norm_sq = 0;
      for (std::int32_t k = begin; k < end; ++k) {
        const float v = entry_variance[k];
        if (v >= 0.0f) {
          signal += entry_signal[k];
          variance += v;
        } else {
          const float norm = __ldg(t.normalization + entries_first + k);
          lost += 1.0;
          lost_norm += norm;
          lost_count += 1.0;
          lost_norm_sq += static_cast<double>(norm) * norm;
        }
      }
      partials[3 * std::size_t(s)] = signal;
      partials[3 * std::size_t(s) + 1] = variance;
      partials[3 * std::size_t(s) + 2] = lost;
      if (lost != 0.0) {
        lost_partials[3 * std::size_t(s)] = lost_norm;
        lost_partials[3 * std::size_t(s) + 1] = lost_count;
        lost_partials[3 * std::size_t(s) + 2] = lost_norm_sq;
      }
      __threadfence();  // release: the partial before the count
      const int bin = t.segment_bin[s];
      const unsigned done = DeviceCounter(t.segments_done[frame * std::size_t(t.bins) + bin])
                                .fetch_add(1, cuda::memory_order_relaxed) +
                            1;
      if (done == unsigned(t.bin_segment_start[bin + 1] - t.bin_segment_start[bin]))
        merge_bin(t, bin, frame, out);
    }
  }
}

}  // namespace

void prepare() {
  // 48 KiB of dynamic shared memory needs the opt-in.
  const cudaError_t status = cudaFuncSetAttribute(
      tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSharedBytes));
  if (status != cudaSuccess)
    throw RuntimeFault(std::string("cudaFuncSetAttribute(pixel_major::tile_kernel): ") +
                       cudaGetErrorString(status));
}

void launch(const DeviceTables& t, const float* frames, int frames_count, double* out,
            void* stream) {
  const dim3 grid(unsigned(t.tiles), unsigned(frames_count));
  tile_kernel<<<grid, kThreads, kSharedBytes, static_cast<cudaStream_t>(stream)>>>(t, frames, out);
  check_launch("pixel_major::tile_kernel");
}

}  // namespace livedrp::gpu::pixel_major
