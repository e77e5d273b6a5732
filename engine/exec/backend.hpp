#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "calib/calibration_math.hpp"
#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "core/event.hpp"

namespace livedrp {

// One event handed to a backend: its header and the ring slot holding its raw bytes.
struct BackendEvent {
  EventHeader header;
  const void* raw = nullptr;  // detector.raw_event_bytes(); stays valid until the event completes
  int ring_slot = -1;
};

struct CompletedEvent {
  EventHeader header;
  int ring_slot = -1;
  double calibrate_us = 0;  // time the calibration stage took for this event
  int output_slot = -1;     // which output buffer holds the result (see read_output)
};

// A calibration backend. Events are submitted in sequence order and complete in the same order;
// several may be in flight. Nothing here allocates or synchronises the device per event.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;         // "cpu", "cuda"
  virtual std::string device_name() const = 0;  // "NVIDIA H200", "CPU (2 threads)"

  // Memory for ring slots. The CUDA backend gives pinned memory so host-to-device copies are DMA.
  virtual void* allocate_host(std::size_t bytes) = 0;
  virtual void free_host(void* pointer) = 0;

  // Takes effect for events submitted afterwards.
  virtual void set_params(const calib::CalibrationParams& params) = 0;

  virtual bool can_submit() const = 0;  // room for one more event in flight
  virtual void submit(const BackendEvent& event) = 0;
  // The oldest event in flight once it is done; with `block`, waits for it; nullopt when none is
  // in flight (or, without `block`, none is done yet). Throws RuntimeFault on a device error.
  virtual std::optional<CompletedEvent> next_completed(bool block) = 0;
  virtual std::size_t in_flight() const = 0;

  // Copies the calibrated image of a completed event to the host (detector.pixels() floats). Valid
  // until the next submit. For tests and the image topic, not for the per-event path.
  virtual void read_output(const CompletedEvent& event, float* host_out) = 0;
};

std::unique_ptr<Backend> make_cpu_backend(const DetectorDescription& detector,
                                          const CalibrationConstants& constants,
                                          const calib::CalibrationParams& params, unsigned threads);

// Is a CUDA device usable? nullopt when yes, else the reason (built without CUDA, no device,
// driver too old, ...).
std::optional<std::string> cuda_unavailable_reason();

// Throws RuntimeFault with CUDA's error text when the device cannot be set up (e.g. out of memory).
// Only in builds with CUDA; otherwise throws RuntimeFault saying so.
std::unique_ptr<Backend> make_cuda_backend(const DetectorDescription& detector,
                                           const CalibrationConstants& constants,
                                           const calib::CalibrationParams& params);

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string note;  // why this backend (e.g. "auto: no CUDA device (...), using CPU")
};
// requested: "cpu", "cuda" or "auto" (CUDA when usable, otherwise CPU and the reason in `note`).
BackendChoice make_backend(const std::string& requested, const DetectorDescription& detector,
                           const CalibrationConstants& constants,
                           const calib::CalibrationParams& params, unsigned cpu_threads);

}  // namespace livedrp
