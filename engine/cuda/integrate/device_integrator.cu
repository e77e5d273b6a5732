// Compiled with --fmad=false (engine/CMakeLists.txt): the shared per-pixel and per-bin math
// (integrate/corrections.hpp, integrate/accumulate.hpp) then rounds each operation as the host
// does, which keeps sigma clipping's keep-or-reject decisions on the CPU's side of a threshold.
#include "cuda/integrate/device_integrator.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "cuda/integrate/pixel_major.hpp"
#include "integrate/accumulate.hpp"
#include "integrate/corrections.hpp"

namespace livedrp::gpu {

using integrate::BinAccumulator;
using integrate::ErrorModel;
using integrate::PixelSample;

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw RuntimeFault(std::string(what) + ": " + cudaGetErrorString(status) + " (" +
                       cudaGetErrorName(status) + ")");
}

constexpr int kThreads = 256;  // per bin
// Per bin and frame, in this order: intensity, sigma, std, signal, variance, normalisation, count.
constexpr int kFields = 7;

struct Tables {
  const std::int32_t* row_start;
  const std::int32_t* pixel;
  const float* normalization;
  const float* coef;  // null without splitting
  const float* dark;  // null without a dark
  ErrorModel model;
  integrate::DummyTest dummy;
  double empty;
  int bins;
  std::size_t pixels;
};

__device__ PixelSample sample_of(const Tables& t, const float* frame, std::int32_t e) {
  const float raw = frame[t.pixel[e]];
  return integrate::preprocess_pixel(raw, t.dark ? t.dark[e] : 0.0f, t.normalization[e], t.model,
                                     t.dummy);
}

__device__ void add_entry(BinAccumulator& acc, const PixelSample& s, double coef, bool azimuthal) {
  if (azimuthal)
    integrate::accumulate_azimuthal(acc, s, coef);
  else
    integrate::accumulate(acc, s, coef);
}

// Appends partial `b` (later entries) to `a`. Poisson: plain sums. Azimuthal: the pairwise form
// of accumulate_azimuthal's weighted update (Schubert & Gertz): for a `b` of one entry it is that
// update exactly.
__device__ void merge(BinAccumulator& a, const BinAccumulator& b, bool azimuthal) {
  if (!azimuthal) {
    a.signal += b.signal;
    a.variance += b.variance;
    a.normalization += b.normalization;
    a.count += b.count;
    a.norm_sq += b.norm_sq;
    return;
  }
  if (b.normalization == 0.0) return;  // only invalid entries, which the update skips
  if (a.normalization == 0.0) {        // the update starts a bin at its first weighted entry
    a = b;
    return;
  }
  const double omega_a = a.normalization, w = b.normalization;
  const double omega = omega_a + w;
  const double delta = w * a.signal - omega_a * b.signal;
  a.variance += b.variance + delta * delta / (omega * omega_a * w);
  a.signal += b.signal;
  a.normalization = omega;
  a.count += b.count;
  a.norm_sq += b.norm_sq;
}

// The block's partial sums merged in a fixed pairwise tree (thread t takes t + stride); every
// thread gets the bin's total. Shared memory as plain doubles: BinAccumulator's member
// initialisers rule out a __shared__ array of it.
__device__ BinAccumulator block_total(const BinAccumulator& mine, bool azimuthal) {
  __shared__ double field[5][kThreads];
  const int t = threadIdx.x;
  const auto put = [&](int slot, const BinAccumulator& a) {
    field[0][slot] = a.signal;
    field[1][slot] = a.variance;
    field[2][slot] = a.normalization;
    field[3][slot] = a.count;
    field[4][slot] = a.norm_sq;
  };
  const auto get = [&](int slot) {
    BinAccumulator a;
    a.signal = field[0][slot];
    a.variance = field[1][slot];
    a.normalization = field[2][slot];
    a.count = field[3][slot];
    a.norm_sq = field[4][slot];
    return a;
  };
  put(t, mine);
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) {
      BinAccumulator a = get(t);
      merge(a, get(t + stride), azimuthal);
      put(t, a);
    }
    __syncthreads();
  }
  const BinAccumulator total = get(0);
  __syncthreads();  // the next call may overwrite slot 0
  return total;
}

__device__ void store_bin(const Tables& t, double* out, int bin, const BinAccumulator& acc) {
  const integrate::BinResult r = integrate::finalize_bin(acc, t.empty, t.model);
  const double values[kFields] = {r.intensity,  r.sigma,           r.std,    acc.signal,
                                  acc.variance, acc.normalization, acc.count};
  for (int k = 0; k < kFields; ++k) out[std::size_t(k) * std::size_t(t.bins) + bin] = values[k];
}

// A block per (bin, frame of the batch).
__global__ void __launch_bounds__(kThreads)
    integrate_kernel(Tables t, const float* __restrict__ frames, double* __restrict__ out) {
  const int bin = blockIdx.x;
  const std::size_t frame_index = blockIdx.y;
  const float* frame = frames + frame_index * t.pixels;
  const bool azimuthal = t.model == ErrorModel::Azimuthal;
  const std::int32_t first = t.row_start[bin], end = t.row_start[bin + 1];
  BinAccumulator acc;
  for (std::int32_t e = first + std::int32_t(threadIdx.x); e < end; e += kThreads)
    add_entry(acc, sample_of(t, frame, e), t.coef ? double(t.coef[e]) : 1.0, azimuthal);
  const BinAccumulator total = block_total(acc, azimuthal);
  if (threadIdx.x == 0)
    store_bin(t, out + frame_index * std::size_t(kFields) * std::size_t(t.bins), bin, total);
}

// The sums path (Poisson or no error model): a bin's normalisation, count and squared
// normalisation do not depend on the event except through the entries the event invalidates
// (a dummy or non-finite value), so they are summed once on the host (StaticBinSums) and the
// kernel reads per entry only the pixel index (and the share and dark where they apply), and an
// entry's normalisation only when the event invalidates it ("lost" sums, subtracted at the
// end). Per event the bytes read are the image and 4 bytes an entry, instead of 8.
constexpr int kSumThreads = 256;
// Entries a thread has in flight at once: all their index loads are issued, then all their
// gathers, so a bin of up to kSumThreads * kSumBatch entries costs two memory round trips rather
// than one per entry (latency, not bandwidth, bounded the one-at-a-time loop).
constexpr int kSumBatch = 8;
constexpr int kSumWarps = kSumThreads / 32;

struct StaticBinSums {
  const double* normalization;  // per bin: sum of coef * normalisation over its entries
  const double* count;          // sum of coef
  const double* norm_sq;        // sum of (coef * normalisation)^2
  const std::int32_t* entries;  // entries of the bin (every one valid unless the event says no)
};

__device__ double warp_sum(double x) {
  for (int d = 16; d > 0; d /= 2) x += __shfl_xor_sync(~0u, x, d);
  return x;
}

// Sums `value` over the block in a fixed order (lanes by the xor tree, then warps in order);
// the result in every thread. `slot` picks one of the kernel's shared rows.
__device__ double block_sum_fixed(double value, double (*rows)[kSumWarps], int slot) {
  value = warp_sum(value);
  if (threadIdx.x % 32 == 0) rows[slot][threadIdx.x / 32] = value;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kSumWarps; ++w) total += rows[slot][w];
  return total;
}

__global__ void __launch_bounds__(kSumThreads)
    integrate_sums_kernel(Tables t, StaticBinSums sums, const float* __restrict__ frames,
                          double* __restrict__ out) {
  __shared__ double rows[6][kSumWarps];
  const int bin = blockIdx.x;
  const std::size_t frame_index = blockIdx.y;
  const float* frame = frames + frame_index * t.pixels;
  const std::int32_t first = t.row_start[bin], end = t.row_start[bin + 1];
  double signal = 0.0, variance = 0.0;
  double lost_norm = 0.0, lost_count = 0.0, lost_norm_sq = 0.0, lost_entries = 0.0;
  for (std::int32_t base = first + std::int32_t(threadIdx.x); base < end;
       base += kSumThreads * kSumBatch) {
    std::int32_t pixel[kSumBatch];
#pragma unroll
    for (int k = 0; k < kSumBatch; ++k) {
      const std::int32_t e = base + k * kSumThreads;
      pixel[k] = e < end ? __ldg(t.pixel + e) : -1;
    }
    float raw[kSumBatch];
#pragma unroll
    for (int k = 0; k < kSumBatch; ++k) raw[k] = pixel[k] >= 0 ? __ldg(frame + pixel[k]) : 0.0f;
#pragma unroll
    for (int k = 0; k < kSumBatch; ++k) {
      if (pixel[k] < 0) continue;
      const std::int32_t e = base + k * kSumThreads;
      const float dark = t.dark ? __ldg(t.dark + e) : 0.0f;
      // Statically valid entries only (plan_from left the others out), so a normalisation of 1
      // here changes nothing but spares reading the real one: the sample's signal and variance
      // do not depend on it.
      const PixelSample s = integrate::preprocess_pixel(raw[k], dark, 1.0f, t.model, t.dummy);
      const double coef = t.coef ? double(__ldg(t.coef + e)) : 1.0;
      if (s.count != 0.0f) {
        signal += coef * s.signal;
        variance += coef * coef * s.variance;
      } else {
        const float norm = __ldg(t.normalization + e);
        lost_norm += coef * norm;
        lost_count += coef;
        lost_norm_sq += coef * coef * static_cast<double>(norm) * norm;
        lost_entries += 1.0;
      }
    }
  }
  BinAccumulator total;
  total.signal = block_sum_fixed(signal, rows, 0);
  total.variance = block_sum_fixed(variance, rows, 1);
  total.normalization = sums.normalization[bin];
  total.count = sums.count[bin];
  total.norm_sq = sums.norm_sq[bin];
  // Invalidated entries are rare: their sums are only formed when a thread of the block saw one.
  if (__syncthreads_or(lost_entries != 0.0)) {
    const double lost = block_sum_fixed(lost_entries, rows, 2);
    if (lost >= double(sums.entries[bin])) {  // nothing valid left: exactly the CPU's zeros
      total.normalization = total.count = total.norm_sq = 0.0;
    } else {
      total.normalization -= block_sum_fixed(lost_norm, rows, 3);
      total.count -= block_sum_fixed(lost_count, rows, 4);
      total.norm_sq -= block_sum_fixed(lost_norm_sq, rows, 5);
    }
  }
  if (threadIdx.x == 0)
    store_bin(t, out + frame_index * std::size_t(kFields) * std::size_t(t.bins), bin, total);
}

// Integrator::sigma_clip per bin: the valid entries with a non-zero share start in; each
// iteration rejects, from the entries still in, those further than the threshold from the mean,
// and sums the rest; it stops when nothing was rejected (keeping the previous sum, which equals
// the new one: same entries, same order), when the bin is empty, or after max_iter. `kept` holds
// one flag per entry; a thread only touches the flags of its own entries.
__global__ void __launch_bounds__(kThreads)
    sigma_clip_kernel(Tables t, const float* __restrict__ frame, std::uint8_t* __restrict__ kept,
                      int max_iter, double cutoff, double* __restrict__ out) {
  const int bin = blockIdx.x;
  const bool azimuthal = t.model == ErrorModel::Azimuthal;
  const std::int32_t first = t.row_start[bin], end = t.row_start[bin + 1];
  BinAccumulator acc;
  for (std::int32_t e = first + std::int32_t(threadIdx.x); e < end; e += kThreads) {
    const PixelSample s = sample_of(t, frame, e);
    const float coef = t.coef ? t.coef[e] : 1.0f;
    const bool in = s.count != 0.0f && coef != 0.0f;
    kept[e] = in ? 1 : 0;
    if (in) add_entry(acc, s, coef, azimuthal);
  }
  BinAccumulator total = block_total(acc, azimuthal);
  // `total` is the same in every thread, so every branch on it below is taken by the whole block.
  for (int iteration = 0; iteration < max_iter; ++iteration) {
    if (total.normalization == 0.0 || total.count == 0.0) break;
    const double mean = total.signal / total.normalization;
    const double threshold =
        integrate::clip_threshold(total.count, cutoff, integrate::clip_spread(total));
    BinAccumulator next;
    int rejected = 0;
    for (std::int32_t e = first + std::int32_t(threadIdx.x); e < end; e += kThreads) {
      if (!kept[e]) continue;
      const PixelSample s = sample_of(t, frame, e);
      if (integrate::clip_rejects(s, mean, threshold)) {
        kept[e] = 0;
        rejected = 1;
        continue;
      }
      add_entry(next, s, t.coef ? double(t.coef[e]) : 1.0, azimuthal);
    }
    const bool any_rejected = __syncthreads_or(rejected) != 0;
    next = block_total(next, azimuthal);
    if (!any_rejected) break;
    total = next;
  }
  if (threadIdx.x == 0) store_bin(t, out, bin, total);
}

}  // namespace

struct DeviceIntegrator::State {
  IntegrationPlan plan;  // radial and the settings; the tables are released after the upload
  int max_batch = 1;
  int last_frames = 0;
  bool has_dark = false;
  std::size_t entries = 0;
  DeviceBuffer row_start, pixel, normalization, coef, dark, kept, out;
  DeviceBuffer static_normalization, static_count, static_norm_sq, bin_entries;
  PinnedBuffer host_out;
  Tables tables{};
  StaticBinSums sums{};
  // The pixel-major path (pixel_major.hpp), when the plan allows it.
  bool pixel_major_path = false;
  std::size_t pixel_major_entries = 0, pixel_major_runs = 0, pixel_major_segments = 0;
  DeviceBuffer pm_tile_origin, pm_tile_shape, pm_tile_entry_start, pm_tile_segment_start,
      pm_segment_slot, pm_segment_first_entry, pm_entry, pm_run_segment, pm_normalization, pm_dark,
      pm_bin_segment_start, pm_partials, pm_lost_partials;
  pixel_major::DeviceTables pm{};
  bool sums_path() const { return plan.error_model != ErrorModel::Azimuthal; }

  // One launch over `frames` consecutive frames into `out`.
  // The kernels into `out`, except the pixel-major path when `host_results` (pinned host
  // memory) is given: its merge writes the bins there itself, and no copy is needed. True when
  // the results went to `host_results`.
  bool launch(const float* device_frames, int frames, const Stream& stream,
              double* host_results = nullptr) {
    const dim3 grid(unsigned(plan.bins), unsigned(frames));
    if (pixel_major_path) {
      pixel_major::launch(pm, device_frames, frames, host_results ? host_results : out.as<double>(),
                          stream.get());
      return host_results != nullptr;
    } else if (sums_path()) {
      integrate_sums_kernel<<<grid, kSumThreads, 0, stream.get()>>>(tables, sums, device_frames,
                                                                    out.as<double>());
      check_launch("integrate_sums_kernel");
    } else {
      integrate_kernel<<<grid, kThreads, 0, stream.get()>>>(tables, device_frames,
                                                            out.as<double>());
      check_launch("integrate_kernel");
    }
    return false;
  }
};

namespace {
// Memory a kernel may write through this pointer: pinned host memory (cudaHostAlloc), which
// unified addressing maps into the device's address space at the same address.
bool pinned_host(const void* pointer) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();  // an unknown pointer is not an error to keep
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}
}  // namespace

DeviceIntegrator::DeviceIntegrator(const IntegrationPlan& plan, int max_batch,
                                   IntegrationKernel kernel)
    : state_(std::make_unique<State>()) {
  const bool pixel_major = kernel == IntegrationKernel::PixelMajor;
  State& s = *state_;
  if (plan.bins < 1 || plan.row_start.size() != std::size_t(plan.bins) + 1)
    throw InputError("device integrator: the plan has " + std::to_string(plan.row_start.size()) +
                     " row starts for " + std::to_string(plan.bins) + " bins");
  if (max_batch < 1) throw InputError("device integrator: max_batch must be >= 1");
  // Entry indices are int32 on the device, as in the CPU matrix.
  s.entries = plan.pixel.size();
  if (plan.normalization.size() != s.entries || (plan.split && plan.coef.size() != s.entries) ||
      (!plan.dark.empty() && plan.dark.size() != s.entries))
    throw InputError("device integrator: the plan's per-entry tables differ in length");
  use_device();
  s.max_batch = max_batch;
  auto upload = [](DeviceBuffer& target, const void* source, std::size_t bytes, const char* what) {
    target = DeviceBuffer(std::max<std::size_t>(bytes, 4));
    if (bytes > 0) check(cudaMemcpy(target.get(), source, bytes, cudaMemcpyHostToDevice), what);
  };
  upload(s.row_start, plan.row_start.data(), plan.row_start.size() * sizeof(std::int32_t),
         "cudaMemcpy(CSR row starts)");
  upload(s.pixel, plan.pixel.data(), s.entries * sizeof(std::int32_t), "cudaMemcpy(CSR pixels)");
  upload(s.normalization, plan.normalization.data(), s.entries * sizeof(float),
         "cudaMemcpy(CSR normalisation)");
  if (plan.split)
    upload(s.coef, plan.coef.data(), s.entries * sizeof(float), "cudaMemcpy(CSR shares)");
  if (!plan.dark.empty())
    upload(s.dark, plan.dark.data(), s.entries * sizeof(float), "cudaMemcpy(CSR dark)");
  s.kept = DeviceBuffer(std::max<std::size_t>(s.entries, 4));
  const std::size_t out_bytes =
      std::size_t(max_batch) * kFields * std::size_t(plan.bins) * sizeof(double);
  s.out = DeviceBuffer(out_bytes);
  s.host_out = PinnedBuffer(out_bytes);
  s.tables = Tables{s.row_start.as<const std::int32_t>(),
                    s.pixel.as<const std::int32_t>(),
                    s.normalization.as<const float>(),
                    plan.split ? s.coef.as<const float>() : nullptr,
                    plan.dark.empty() ? nullptr : s.dark.as<const float>(),
                    plan.error_model,
                    plan.dummy,
                    plan.empty,
                    plan.bins,
                    plan.pixels};
  s.plan.bins = plan.bins;
  s.plan.pixels = plan.pixels;
  s.plan.split = plan.split;
  s.plan.error_model = plan.error_model;
  s.plan.dummy = plan.dummy;
  s.plan.empty = plan.empty;
  s.plan.radial = plan.radial;
  s.has_dark = !plan.dark.empty();
  if (s.sums_path()) {
    // The per-bin sums that do not change between events, in entry order as the CPU adds them.
    const std::size_t bins = std::size_t(plan.bins);
    std::vector<double> norm(bins, 0.0), count(bins, 0.0), norm_sq(bins, 0.0);
    std::vector<std::int32_t> entries(bins, 0);
    for (std::size_t b = 0; b < bins; ++b) {
      for (std::int32_t e = plan.row_start[b]; e < plan.row_start[b + 1]; ++e) {
        const double coef = plan.split ? double(plan.coef[std::size_t(e)]) : 1.0;
        const float n = plan.normalization[std::size_t(e)];
        norm[b] += coef * n;
        count[b] += coef;
        norm_sq[b] += coef * coef * static_cast<double>(n) * n;
      }
      entries[b] = plan.row_start[b + 1] - plan.row_start[b];
    }
    upload(s.static_normalization, norm.data(), bins * sizeof(double),
           "cudaMemcpy(static bin normalisation)");
    upload(s.static_count, count.data(), bins * sizeof(double), "cudaMemcpy(static bin count)");
    upload(s.static_norm_sq, norm_sq.data(), bins * sizeof(double),
           "cudaMemcpy(static bin squared normalisation)");
    upload(s.bin_entries, entries.data(), bins * sizeof(std::int32_t),
           "cudaMemcpy(bin entry counts)");
    s.sums =
        StaticBinSums{s.static_normalization.as<const double>(), s.static_count.as<const double>(),
                      s.static_norm_sq.as<const double>(), s.bin_entries.as<const std::int32_t>()};
    pixel_major::Tables pm;
    if (pixel_major && pixel_major::build_tables(plan, pm)) {
      const auto bytes_of = [](const auto& v) { return v.size() * sizeof(v[0]); };
      upload(s.pm_tile_origin, pm.tile_origin.data(), bytes_of(pm.tile_origin),
             "cudaMemcpy(tile origins)");
      upload(s.pm_tile_shape, pm.tile_shape.data(), bytes_of(pm.tile_shape),
             "cudaMemcpy(tile shapes)");
      upload(s.pm_tile_segment_start, pm.tile_segment_start.data(), bytes_of(pm.tile_segment_start),
             "cudaMemcpy(tile segments)");
      upload(s.pm_tile_entry_start, pm.tile_entry_start.data(), bytes_of(pm.tile_entry_start),
             "cudaMemcpy(tile entry starts)");
      upload(s.pm_segment_slot, pm.segment_slot.data(), bytes_of(pm.segment_slot),
             "cudaMemcpy(segment slots)");
      upload(s.pm_segment_first_entry, pm.segment_first_entry.data(),
             bytes_of(pm.segment_first_entry), "cudaMemcpy(segment first entries)");
      upload(s.pm_entry, pm.entry.data(), bytes_of(pm.entry), "cudaMemcpy(tile entries)");
      upload(s.pm_run_segment, pm.run_segment.data(), bytes_of(pm.run_segment),
             "cudaMemcpy(run segment counts)");
      upload(s.pm_normalization, pm.normalization.data(), bytes_of(pm.normalization),
             "cudaMemcpy(tile normalisation)");
      if (!pm.dark.empty())
        upload(s.pm_dark, pm.dark.data(), bytes_of(pm.dark), "cudaMemcpy(tile dark)");
      upload(s.pm_bin_segment_start, pm.bin_segment_start.data(), bytes_of(pm.bin_segment_start),
             "cudaMemcpy(bin segment starts)");
      const std::size_t segments = pm.segment_bin.size();
      s.pm_partials = DeviceBuffer(std::size_t(max_batch) * segments * 2 * sizeof(double));
      s.pm_lost_partials = DeviceBuffer(std::size_t(max_batch) * segments * 3 * sizeof(double));
      s.pm = pixel_major::DeviceTables{plan.bins,
                                       plan.pixels,
                                       pm.tiles,
                                       segments,
                                       pm.row_pitch,
                                       s.pm_tile_origin.as<const std::int32_t>(),
                                       s.pm_tile_shape.as<const std::int32_t>(),
                                       s.pm_tile_entry_start.as<const std::int32_t>(),
                                       s.pm_tile_segment_start.as<const std::int32_t>(),
                                       pm.max_tile_segments,
                                       s.pm_segment_slot.as<const std::int32_t>(),
                                       s.pm_segment_first_entry.as<const std::uint16_t>(),
                                       s.pm_entry.as<const std::uint16_t>(),
                                       s.pm_run_segment.as<const std::uint16_t>(),
                                       s.pm_normalization.as<const float>(),
                                       pm.dark.empty() ? nullptr : s.pm_dark.as<const float>(),
                                       s.pm_bin_segment_start.as<const std::int32_t>(),
                                       s.sums.normalization,
                                       s.sums.count,
                                       s.sums.norm_sq,
                                       s.sums.entries,
                                       s.pm_partials.as<double>(),
                                       s.pm_lost_partials.as<double>(),
                                       plan.error_model,
                                       plan.dummy,
                                       plan.empty};
      pixel_major::prepare(s.pm);
      s.pixel_major_path = true;
      s.pixel_major_entries = pm.entry.size();
      s.pixel_major_runs = pm.run_segment.size();
      s.pixel_major_segments = pm.segment_first_entry.size();
    }
  }
}

DeviceIntegrator::~DeviceIntegrator() = default;

int DeviceIntegrator::bins() const {
  return state_->plan.bins;
}

std::size_t DeviceIntegrator::pixels() const {
  return state_->plan.pixels;
}

std::size_t DeviceIntegrator::entries() const {
  return state_->entries;
}

IntegrationKernel DeviceIntegrator::kernel() const {
  const State& s = *state_;
  return s.pixel_major_path ? IntegrationKernel::PixelMajor : IntegrationKernel::BinMajor;
}

std::size_t DeviceIntegrator::bytes_read_per_frame() const {
  const State& s = *state_;
  // The pixel-major path: the image once, a 2-byte in-tile offset per entry (and the dark), a
  // 2-byte segment count per run of entries, and a 2-byte first entry and a 4-byte slot per
  // segment.
  if (s.pixel_major_path)
    return s.plan.pixels * sizeof(float) + s.pixel_major_entries * (2 + (s.has_dark ? 4 : 0)) +
           s.pixel_major_runs * 2 + s.pixel_major_segments * (2 + 4);
  // The sums path reads an entry's normalisation only when the event invalidates the entry.
  const std::size_t per_entry =
      4 + (s.sums_path() ? 0 : 4) + (s.plan.split ? 4 : 0) + (s.has_dark ? 4 : 0);
  return s.plan.pixels * sizeof(float) + s.entries * per_entry;
}

void DeviceIntegrator::enqueue(const float* device_frame, const Stream& stream) {
  enqueue_batch(device_frame, 1, stream);
}

void DeviceIntegrator::enqueue_batch(const float* device_frames, int frames, const Stream& stream) {
  State& s = *state_;
  if (frames < 1 || frames > s.max_batch)
    throw InputError("device integrator: a batch of " + std::to_string(frames) +
                     " frames, this integrator takes 1 .. " + std::to_string(s.max_batch));
  if (!s.launch(device_frames, frames, stream, s.host_out.as<double>()))
    copy_async(s.host_out.get(), s.out.get(),
               std::size_t(frames) * kFields * std::size_t(s.plan.bins) * sizeof(double), stream,
               "integrated profiles to the host");
  s.last_frames = frames;
}

void DeviceIntegrator::enqueue_sigma_clip(const float* device_frame,
                                          const integrate::Integrator::SigmaClip& clip,
                                          const Stream& stream) {
  State& s = *state_;
  if (clip.max_iter < 0)
    throw InputError("sigma clipping needs max_iter >= 0, got " + std::to_string(clip.max_iter));
  if (!std::isfinite(clip.cutoff) || clip.cutoff < 0.0)
    throw InputError("sigma clipping cutoff must be a finite number >= 0, got " +
                     std::to_string(clip.cutoff));
  sigma_clip_kernel<<<unsigned(s.plan.bins), kThreads, 0, stream.get()>>>(
      s.tables, device_frame, s.kept.as<std::uint8_t>(), clip.max_iter, clip.cutoff,
      s.out.as<double>());
  check_launch("sigma_clip_kernel");
  copy_async(s.host_out.get(), s.out.get(), kFields * std::size_t(s.plan.bins) * sizeof(double),
             stream, "clipped profile to the host");
  s.last_frames = 1;
}

std::size_t DeviceIntegrator::result_doubles() const {
  return result_doubles_for(state_->plan.bins);
}

std::size_t DeviceIntegrator::result_doubles_for(int bins) {
  return kFields * std::size_t(bins);
}

void DeviceIntegrator::enqueue_into(const float* device_frame, double* host_results,
                                    const Stream& stream) {
  State& s = *state_;
  // The pixel-major path writes pinned results itself. Otherwise the device buffer is reused by
  // the next enqueue on the stream only after this copy (stream order), so one buffer serves any
  // number of enqueues in flight.
  const bool direct = s.pixel_major_path && pinned_host(host_results);
  if (!s.launch(device_frame, 1, stream, direct ? host_results : nullptr))
    copy_async(host_results, s.out.get(), result_doubles() * sizeof(double), stream,
               "integrated profile to the host");
}

void DeviceIntegrator::enqueue_into_device(const float* device_frame, double* device_results,
                                           const Stream& stream) {
  State& s = *state_;
  // The pixel-major kernels write wherever they are pointed; the bin-major ones write `out`.
  if (!s.launch(device_frame, 1, stream, device_results))
    copy_async(device_results, s.out.get(), result_doubles() * sizeof(double), stream,
               "integrated profile to the device results");
}

integrate::Profile DeviceIntegrator::collect(const Stream& stream, int index) {
  const State& s = *state_;
  if (index < 0 || index >= s.last_frames)
    throw InputError("device integrator: no frame " + std::to_string(index) +
                     " in the last enqueue (" + std::to_string(s.last_frames) + " frames)");
  stream.synchronize();
  return profile_from(s.host_out.as<const double>() + std::size_t(index) * result_doubles());
}

integrate::Profile DeviceIntegrator::profile_from(const double* values) const {
  const State& s = *state_;
  const std::size_t bins = std::size_t(s.plan.bins);
  integrate::Profile p;
  p.radial = s.plan.radial;
  std::vector<double>* fields[kFields] = {&p.intensity, &p.sigma,         &p.std,  &p.signal,
                                          &p.variance,  &p.normalization, &p.count};
  for (int k = 0; k < kFields; ++k)
    fields[k]->assign(values + std::size_t(k) * bins, values + std::size_t(k + 1) * bins);
  return p;
}

}  // namespace livedrp::gpu
