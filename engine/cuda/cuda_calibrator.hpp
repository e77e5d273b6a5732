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

  const DetectorDescription& detector() const { return detector_; }
  std::size_t constants_bytes() const;  // on the device

 private:
  DetectorDescription detector_;
  DeviceBuffer pedestal_gain_;  // [mode][pixel] PedestalGain
  DeviceBuffer status_;         // [pixel] status byte
};

}  // namespace livedrp::gpu
