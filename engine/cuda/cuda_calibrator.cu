// Calibration kernels. Every value they produce comes from the functions of
// calib/calibration_math.hpp (decode_*, pedestal_offset, is_quiet,
// common_mode_from_order_statistics, calibrated_value), the same ones calibrate_event_cpu calls;
// what is written here is only how the pixels are spread over threads and how the two middle order
// statistics of a bank row are found.
//
// Exactness: the math has no multiply-add shape ((adc - pedestal - cm) * gain, 0.5 * (lo + hi)), so
// the compiler cannot contract it into an FFMA; the SASS of these kernels is checked for FFMA by
// the benchmark run (docs/benchmarks.md). Order statistics are *values*: a sorted sequence has one
// value at each rank however ties were ordered, which is all std::nth_element promises too.
#include "cuda/cuda_calibrator.hpp"

#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "cuda/calibration_lanes.cuh"

namespace livedrp::gpu {
namespace {

// Where the events of one batched launch lie (event b = blockIdx.y) and how far apart the mode
// planes of the constants are (the whole detector's pixels, also when a launch covers one segment).
struct BatchStrides {
  std::size_t raw_bytes = 0;   // from one event's raw words to the next's
  std::size_t out_floats = 0;  // from one event's output to the next's
  std::size_t plane = 0;       // PedestalGain entries per mode plane
};

// ---------------------------------------------------------------------------------------------
// Without common mode: element-wise, 8 pixels per thread, the grid sized to the event.

template <RawEncoding E, bool kVector>
__global__ void __launch_bounds__(kBlockThreads)
    calibrate_pixels_kernel(const void* __restrict__ raw, const std::uint8_t* __restrict__ status,
                            const PedestalGain* __restrict__ pedestal_gain, std::size_t pixels,
                            float* __restrict__ out, BatchStrides batch) {
  // Event blockIdx.y of a batch: its own raw words and its own output.
  raw = static_cast<const char*>(raw) + std::size_t(blockIdx.y) * batch.raw_bytes;
  out += std::size_t(blockIdx.y) * batch.out_floats;
  const std::size_t first =
      (std::size_t(blockIdx.x) * kBlockThreads + threadIdx.x) * std::size_t(kLanePixels);
  if (first >= pixels) return;
  const int count = pixels - first < std::size_t(kLanePixels) ? int(pixels - first) : kLanePixels;
  float values[kLanePixels];
  calibrate_lane_pixels<E, kVector>(raw, status, pedestal_gain, batch.plane, first, count, values);
  store_lane<kVector>(out, first, count, values);
}

// The plain version: one pixel per thread through decode_raw, as the CPU loop reads. Kept as the
// benchmark's baseline and as a second implementation the tests check.
__global__ void __launch_bounds__(kBlockThreads)
    calibrate_pixels_scalar_kernel(RawEncoding encoding, const void* __restrict__ raw,
                                   const std::uint8_t* __restrict__ status,
                                   const PedestalGain* __restrict__ pedestal_gain,
                                   std::size_t pixels, float* __restrict__ out) {
  const std::size_t p = std::size_t(blockIdx.x) * kBlockThreads + threadIdx.x;
  if (p >= pixels) return;
  const DecodedPixel pixel = calib::decode_raw(encoding, raw, p, status[p]);
  const PedestalGain constants = pedestal_gain[std::size_t(pixel.mode) * pixels + p];
  out[p] =
      calib::calibrated_value(pixel, calib::pedestal_offset(pixel, constants), 0.0f, constants);
}

// ---------------------------------------------------------------------------------------------
// With common mode, vectorised: a group of 8 lanes per bank row (calibrate_bank_row_lane).

template <RawEncoding E, bool kVector>
__global__ void __launch_bounds__(kBlockThreads)
    calibrate_bank_rows_kernel(const void* __restrict__ raw,
                               const std::uint8_t* __restrict__ status,
                               const PedestalGain* __restrict__ pedestal_gain, std::size_t pixels,
                               int width, std::size_t rows, CalibrationParams params,
                               float* __restrict__ out, BatchStrides batch) {
  raw = static_cast<const char*>(raw) + std::size_t(blockIdx.y) * batch.raw_bytes;
  out += std::size_t(blockIdx.y) * batch.out_floats;
  const std::size_t row = (std::size_t(blockIdx.x) * kBlockThreads + threadIdx.x) / kGroupLanes;
  float values[kLanePixels];
  const BankRowLane where = calibrate_bank_row_lane<E, kVector>(
      raw, status, pedestal_gain, batch.plane, width, rows, row, params, values);
  if (where.count == 0) return;
  store_lane<kVector>(out, where.first, where.count, values);
}

// ---------------------------------------------------------------------------------------------
// With common mode, plain: one warp per bank row, pixels lane and lane + 32, the two middle order
// statistics found by rank counting over warp shuffles (ties broken by pixel index, so exactly one
// element has each rank).

__global__ void __launch_bounds__(kBlockThreads)
    calibrate_bank_rows_scalar_kernel(RawEncoding encoding, const void* __restrict__ raw,
                                      const std::uint8_t* __restrict__ status,
                                      const PedestalGain* __restrict__ pedestal_gain,
                                      std::size_t pixels, int width, std::size_t rows,
                                      CalibrationParams params, float* __restrict__ out) {
  const int lane_id = threadIdx.x & 31;
  const std::size_t row = (std::size_t(blockIdx.x) * kBlockThreads + threadIdx.x) / 32;
  if (row >= rows) return;  // whole warps: a warp is one row
  DecodedPixel pixel[2];
  PedestalGain constants[2];
  float offset[2], key[2];
  bool present[2];
  int quiet = 0;
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const int column = lane_id + 32 * s;
    const std::size_t p = row * std::size_t(width) + std::size_t(column);
    present[s] = column < width;
    key[s] = INFINITY;
    if (!present[s]) continue;
    pixel[s] = calib::decode_raw(encoding, raw, p, status[p]);
    constants[s] = pedestal_gain[std::size_t(pixel[s].mode) * pixels + p];
    offset[s] = calib::pedestal_offset(pixel[s], constants[s]);
    if (calib::is_quiet(pixel[s], offset[s], params.common_mode_threshold_adu)) {
      key[s] = offset[s];
      ++quiet;
    }
  }
  for (int mask = 1; mask < 32; mask <<= 1) quiet += __shfl_xor_sync(kFullWarp, quiet, mask);

  // rank of element i = number of elements j with key_j < key_i, or key_j == key_i and j < i.
  int rank[2] = {0, 0};
#pragma unroll 4
  for (int d = 0; d < 32; ++d) {
    const int source = (lane_id + d) & 31;
    const float other[2] = {__shfl_sync(kFullWarp, key[0], source),
                            __shfl_sync(kFullWarp, key[1], source)};
#pragma unroll
    for (int s = 0; s < 2; ++s)
#pragma unroll
      for (int t = 0; t < 2; ++t) {
        const bool earlier = t < s || (t == s && source < lane_id);
        rank[s] += (other[t] < key[s] || (other[t] == key[s] && earlier)) ? 1 : 0;
      }
  }
  const int lower_rank = quiet > 0 ? (quiet - 1) / 2 : 0, upper_rank = quiet / 2;
  float lower = 0.0f, upper = 0.0f;
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const unsigned has_lower = __ballot_sync(kFullWarp, rank[s] == lower_rank);
    const unsigned has_upper = __ballot_sync(kFullWarp, rank[s] == upper_rank);
    const float from_lower = __shfl_sync(kFullWarp, key[s], has_lower ? __ffs(has_lower) - 1 : 0);
    const float from_upper = __shfl_sync(kFullWarp, key[s], has_upper ? __ffs(has_upper) - 1 : 0);
    if (has_lower) lower = from_lower;
    if (has_upper) upper = from_upper;
  }
  const float common_mode = quiet > 0 ? calib::common_mode_from_order_statistics(
                                            lower, upper, quiet, params.common_mode_min_pixels)
                                      : 0.0f;
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    if (!present[s]) continue;
    const std::size_t p = row * std::size_t(width) + std::size_t(lane_id + 32 * s);
    out[p] = calib::calibrated_value(pixel[s], offset[s], common_mode, constants[s]);
  }
}

// ---------------------------------------------------------------------------------------------

unsigned blocks_for(std::size_t threads) {
  return unsigned((threads + kBlockThreads - 1) / kBlockThreads);
}

template <RawEncoding E>
void launch_vectorized(const void* raw, const std::uint8_t* status,
                       const PedestalGain* pedestal_gain, std::size_t pixels, int bank_columns,
                       bool common_mode, const CalibrationParams& params, float* out,
                       cudaStream_t stream, int events, BatchStrides batch, bool aligned,
                       bool invalid_config) {
  // invalid_config: the fault-injection hook asks for a block larger than any device allows.
  const unsigned threads = invalid_config ? 4096u : unsigned(kBlockThreads);
  if (common_mode) {
    const std::size_t rows = pixels / std::size_t(bank_columns);
    const dim3 blocks(blocks_for(rows * kGroupLanes), unsigned(events));
    if (aligned && bank_columns % kLanePixels == 0)
      calibrate_bank_rows_kernel<E, true><<<blocks, threads, 0, stream>>>(
          raw, status, pedestal_gain, pixels, bank_columns, rows, params, out, batch);
    else
      calibrate_bank_rows_kernel<E, false><<<blocks, threads, 0, stream>>>(
          raw, status, pedestal_gain, pixels, bank_columns, rows, params, out, batch);
    check_launch("calibrate_bank_rows_kernel");
    return;
  }
  const dim3 blocks(blocks_for((pixels + kLanePixels - 1) / kLanePixels), unsigned(events));
  if (aligned && pixels % kLanePixels == 0)
    calibrate_pixels_kernel<E, true>
        <<<blocks, threads, 0, stream>>>(raw, status, pedestal_gain, pixels, out, batch);
  else
    calibrate_pixels_kernel<E, false>
        <<<blocks, threads, 0, stream>>>(raw, status, pedestal_gain, pixels, out, batch);
  check_launch("calibrate_pixels_kernel");
}

// Fault injection for the tests (see testing::inject_fault): which fault, after how many more
// launches. Read and written with relaxed atomics; a test sets it before the launches it watches.
std::atomic<int> injected_fault{0};
std::atomic<long long> launches_before_fault{-1};

__global__ void trap_kernel() {
  __trap();
}

// Consumes one launch of the countdown; the fault to produce now, or None.
testing::Fault take_injected_fault() {
  if (injected_fault.load(std::memory_order_relaxed) == int(testing::Fault::None))
    return testing::Fault::None;
  if (launches_before_fault.fetch_sub(1, std::memory_order_relaxed) != 0)
    return testing::Fault::None;
  return testing::Fault(injected_fault.exchange(int(testing::Fault::None)));
}

}  // namespace

std::string_view to_string(KernelVariant variant) {
  return variant == KernelVariant::Vectorized ? "vectorized" : "scalar";
}

std::size_t calibration_bytes_per_event(const DetectorDescription& detector) {
  return detector.pixels() * (detector.raw_bytes_per_pixel() + sizeof(PedestalGain) +
                              sizeof(std::uint8_t) + sizeof(float));
}

DeviceCalibrator::DeviceCalibrator(const DetectorDescription& detector,
                                   const CalibrationConstants& constants)
    : detector_(detector) {
  const std::size_t pixels = detector.pixels();
  if (constants.pixels != pixels || constants.modes != detector.modes() ||
      constants.pedestal_gain.size() != std::size_t(constants.modes) * pixels ||
      constants.pixel_status.size() != pixels)
    throw InputError(
        "calibration constants for " + std::to_string(constants.pixels) + " pixels in " +
        std::to_string(constants.modes) + " modes do not fit detector '" + detector.name + "' (" +
        std::to_string(pixels) + " pixels, " + std::to_string(detector.modes()) + " modes)");
  if (detector.bank_columns > calib::kMaxBankColumns)
    throw InputError(
        "detector '" + detector.name + "': bank_columns " + std::to_string(detector.bank_columns) +
        " exceeds the CUDA kernels' limit of " + std::to_string(calib::kMaxBankColumns));
  if (detector.bank_columns > 0 && pixels % std::size_t(detector.bank_columns) != 0)
    throw InputError("detector '" + detector.name + "': " + std::to_string(pixels) +
                     " pixels are not a whole number of bank rows of " +
                     std::to_string(detector.bank_columns));
  use_device();
  pedestal_gain_ = DeviceBuffer(constants.pedestal_gain.size() * sizeof(PedestalGain));
  status_ = DeviceBuffer(pixels);
  // Set-up only: plain blocking copies, once.
  if (const cudaError_t status = cudaMemcpy(pedestal_gain_.get(), constants.pedestal_gain.data(),
                                            pedestal_gain_.bytes(), cudaMemcpyHostToDevice);
      status != cudaSuccess)
    throw RuntimeFault(std::string("cudaMemcpy(pedestal/gain constants to the device): ") +
                       cudaGetErrorString(status));
  if (const cudaError_t status =
          cudaMemcpy(status_.get(), constants.pixel_status.data(), pixels, cudaMemcpyHostToDevice);
      status != cudaSuccess)
    throw RuntimeFault(std::string("cudaMemcpy(pixel status to the device): ") +
                       cudaGetErrorString(status));
}

DeviceCalibrator::~DeviceCalibrator() = default;

std::size_t DeviceCalibrator::constants_bytes() const {
  return pedestal_gain_.bytes() + status_.bytes();
}

void DeviceCalibrator::launch(const void* device_raw, float* device_out,
                              const CalibrationParams& params, const Stream& stream,
                              KernelVariant variant) const {
  const std::size_t pixels = detector_.pixels();
  if (pixels == 0) return;
  const auto* status = status_.as<const std::uint8_t>();
  const auto* pedestal_gain = pedestal_gain_.as<const PedestalGain>();
  const bool common_mode = params.common_mode && detector_.bank_columns > 0;
  const cudaStream_t s = stream.get();
  if (variant == KernelVariant::Scalar) {
    if (common_mode) {
      const std::size_t rows = pixels / std::size_t(detector_.bank_columns);
      calibrate_bank_rows_scalar_kernel<<<blocks_for(rows * 32), kBlockThreads, 0, s>>>(
          detector_.encoding, device_raw, status, pedestal_gain, pixels, detector_.bank_columns,
          rows, params, device_out);
      check_launch("calibrate_bank_rows_scalar_kernel");
    } else {
      calibrate_pixels_scalar_kernel<<<blocks_for(pixels), kBlockThreads, 0, s>>>(
          detector_.encoding, device_raw, status, pedestal_gain, pixels, device_out);
      check_launch("calibrate_pixels_scalar_kernel");
    }
    return;
  }
  launch_batch(device_raw, device_out, params, stream, 1, 0, 0, -1);
}

void DeviceCalibrator::launch_batch(const void* device_raw, float* device_out,
                                    const calib::CalibrationParams& params, const Stream& stream,
                                    int events, std::size_t raw_stride_bytes,
                                    std::size_t out_stride_floats, int segment) const {
  if (events < 1 || events > kMaxBatchEvents)
    throw InputError("DeviceCalibrator::launch_batch: " + std::to_string(events) +
                     " events per launch (1.." + std::to_string(kMaxBatchEvents) + ")");
  if (segment >= detector_.segments)
    throw InputError("DeviceCalibrator::launch_batch: segment " + std::to_string(segment) +
                     " of a detector with " + std::to_string(detector_.segments));
  const std::size_t all = detector_.pixels();
  if (all == 0) return;
  const std::size_t first = segment < 0 ? 0 : std::size_t(segment) * detector_.pixels_per_segment();
  const std::size_t pixels = segment < 0 ? all : detector_.pixels_per_segment();
  const std::size_t raw_offset = first * detector_.raw_bytes_per_pixel();
  const void* raw = static_cast<const char*>(device_raw) + raw_offset;
  float* out = device_out + first;
  const auto* status = status_.as<const std::uint8_t>() + first;
  const auto* pedestal_gain = pedestal_gain_.as<const PedestalGain>() + first;
  const bool common_mode = params.common_mode && detector_.bank_columns > 0;
  // The vectorised loads need 16-byte aligned raw words and outputs for every event of the batch.
  const bool aligned = first % kLanePixels == 0 && raw_stride_bytes % 16 == 0 &&
                       out_stride_floats % 4 == 0 &&
                       reinterpret_cast<std::uintptr_t>(raw) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  const BatchStrides batch{raw_stride_bytes, out_stride_floats, all};
  const cudaStream_t s = stream.get();
  const testing::Fault fault = take_injected_fault();
  if (fault == testing::Fault::DeviceTrap) {
    trap_kernel<<<1, 1, 0, s>>>();
    check_launch("trap_kernel (injected fault)");
  }
  const bool invalid = fault == testing::Fault::InvalidLaunch;
  switch (detector_.encoding) {
    case RawEncoding::Epix10ka:
      launch_vectorized<RawEncoding::Epix10ka>(raw, status, pedestal_gain, pixels,
                                               detector_.bank_columns, common_mode, params, out, s,
                                               events, batch, aligned, invalid);
      break;
    case RawEncoding::Jungfrau:
      launch_vectorized<RawEncoding::Jungfrau>(raw, status, pedestal_gain, pixels,
                                               detector_.bank_columns, common_mode, params, out, s,
                                               events, batch, aligned, invalid);
      break;
    case RawEncoding::Float32:
      launch_vectorized<RawEncoding::Float32>(raw, status, pedestal_gain, pixels,
                                              detector_.bank_columns, common_mode, params, out, s,
                                              events, batch, aligned, invalid);
      break;
    case RawEncoding::Uint16:
      launch_vectorized<RawEncoding::Uint16>(raw, status, pedestal_gain, pixels,
                                             detector_.bank_columns, common_mode, params, out, s,
                                             events, batch, aligned, invalid);
      break;
    case RawEncoding::Uint32:
      launch_vectorized<RawEncoding::Uint32>(raw, status, pedestal_gain, pixels,
                                             detector_.bank_columns, common_mode, params, out, s,
                                             events, batch, aligned, invalid);
      break;
    case RawEncoding::Int32:
      launch_vectorized<RawEncoding::Int32>(raw, status, pedestal_gain, pixels,
                                            detector_.bank_columns, common_mode, params, out, s,
                                            events, batch, aligned, invalid);
      break;
  }
}

namespace testing {
void inject_fault(Fault fault, long long after_launches) {
  launches_before_fault.store(after_launches, std::memory_order_relaxed);
  injected_fault.store(int(fault), std::memory_order_relaxed);
}
}  // namespace testing

}  // namespace livedrp::gpu
