#pragma once
// Calibration on the GPU: the detector's constants live on the device (uploaded once), and
// `launch` enqueues the calibration of one device-resident raw event into a device float32 image.
// The per-pixel and per-bank-row math is calib/calibration_math.hpp, the same functions the CPU
// backend calls, so the results equal calibrate_event_cpu bit for bit.
//
// Plain C++ (no CUDA headers): engine/exec/cuda_backend.cpp and the tools include it.
#include <cstddef>
#include <string_view>

#include "calib/calibration_math.hpp"
#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "cuda/device.hpp"

namespace livedrp::gpu {

// Which kernel calibrates. Both give identical results; `Scalar` (one pixel per thread, plain
// loads, one bank row per thread with common mode) is the straightforward version that the
// benchmark keeps as its baseline.
enum class KernelVariant {
  Vectorized,  // 8 pixels per thread (16-byte raw loads), a group of 8 lanes per bank row
  Scalar,
};
std::string_view to_string(KernelVariant variant);

// Bytes calibration must move through device memory for one event (each read once, the output
// written once): raw words + the PedestalGain of the mode each pixel selects (8 bytes) + the status
// byte + the float32 output, i.e.  pixels * (raw_bytes_per_pixel + 8 + 1 + 4).
std::size_t calibration_bytes_per_event(const DetectorDescription& detector);

// Most events one launch_batch calibrates (the batch K of StreamConfig, 1..64).
inline constexpr int kMaxBatchEvents = 64;

// Test hook: make a later calibration launch fail, to check that faults surface as RuntimeFault
// and nothing hangs. InvalidLaunch: the launch itself is rejected (a block of 4096 threads;
// CUDA 13.0 reports cudaErrorInvalidValue at the launch call; the context stays usable).
// DeviceTrap: a kernel that executes `trap` runs before it on the same stream (reported
// asynchronously, by the next query of that stream's work; the context is lost for the process).
namespace testing {
enum class Fault { None = 0, InvalidLaunch = 1, DeviceTrap = 2 };
// The fault hits the launch after `after_launches` more launches (0: the next one), process-wide.
void inject_fault(Fault fault, long long after_launches = 0);
}  // namespace testing

class DeviceCalibrator {
 public:
  // Uploads the constants (blocking; set-up only). Throws InputError when the detector's layout
  // is one the kernels do not handle (bank rows wider than calib::kMaxBankColumns, pixels not a
  // whole number of bank rows), RuntimeFault on a CUDA error.
  DeviceCalibrator(const DetectorDescription& detector, const CalibrationConstants& constants);
  ~DeviceCalibrator();
  DeviceCalibrator(const DeviceCalibrator&) = delete;
  DeviceCalibrator& operator=(const DeviceCalibrator&) = delete;

  // Enqueues the calibration of `device_raw` (detector.raw_event_bytes(), 16-byte aligned, as
  // cudaMalloc gives) into `device_out` (detector.pixels() floats) on `stream`. Asynchronous: no
  // allocation, no host wait. Throws RuntimeFault if the launch fails.
  void launch(const void* device_raw, float* device_out, const calib::CalibrationParams& params,
              const Stream& stream, KernelVariant variant = KernelVariant::Vectorized) const;

  // Enqueues one launch that calibrates `events` events (1..kMaxBatchEvents, blockIdx.y picks the
  // event): event b's raw words at device_raw + b * raw_stride_bytes, its image at
  // device_out + b * out_stride_floats, each a whole-detector buffer. `segment` -1 calibrates
  // every segment; 0..segments-1 only that one (its pixels of each event; the rest untouched).
  // Strides that keep 16-byte alignment (multiples of 16 bytes and 4 floats) get the vectorised
  // loads. Always the vectorised kernel family; asynchronous, no allocation, no host wait.
  void launch_batch(const void* device_raw, float* device_out,
                    const calib::CalibrationParams& params, const Stream& stream, int events,
                    std::size_t raw_stride_bytes, std::size_t out_stride_floats,
                    int segment = -1) const;

  const DetectorDescription& detector() const { return detector_; }
  std::size_t constants_bytes() const;  // on the device

 private:
  DetectorDescription detector_;
  DeviceBuffer pedestal_gain_;  // [mode][pixel] PedestalGain
  DeviceBuffer status_;         // [pixel] status byte
};

}  // namespace livedrp::gpu
