#pragma once
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "calib/calibration_math.hpp"
#include "calib/constants.hpp"
#include "codec/codec.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/event.hpp"
#include "exec/stream_config.hpp"
#include "integrate/integrator.hpp"
#include "stages/stage.hpp"

namespace livedrp {

// One event handed to a backend: its header and the ring slot holding its raw bytes.
struct BackendEvent {
  EventHeader header;
  const void* raw = nullptr;  // detector.raw_event_bytes(); stays valid until the event completes
  int ring_slot = -1;
  std::uint64_t admission = 0;  // 0, 1, 2, ... in submission order (the reorder stage's key)
};

struct CompletedEvent {
  EventHeader header;
  int ring_slot = -1;
  std::uint64_t admission = 0;
  int stream = 0;           // lane (CUDA stream) that ran it
  double calibrate_us = 0;  // time the calibration stage took for this event (its launch's time)
  int output_slot = -1;     // which output buffer holds the result (see read_output)
  // The results of the stage-contract stages (Backend::set_stages), one per stage, in the
  // list's order; empty when there are none.
  std::vector<stages::StageOutput> stage_outputs;
};

// A profile's intensities as live integration's result carries them: NaN for a bin without
// contributing pixels (count or normalisation 0), where the integrator reports its empty value.
inline std::vector<double> profile_intensities(const integrate::Profile& profile) {
  std::vector<double> out(profile.intensity.size());
  for (std::size_t b = 0; b < out.size(); ++b)
    out[b] = profile.count[b] == 0.0 || profile.normalization[b] == 0.0
                 ? std::numeric_limits<double>::quiet_NaN()
                 : profile.intensity[b];
  return out;
}

// Occupancy of one backend lane (a CUDA stream; the CPU backend has one lane).
struct LaneOccupancy {
  std::uint64_t in_flight = 0;  // launches submitted, not yet completed
  std::uint64_t capacity = 0;   // launches the lane can hold
  std::uint64_t completed = 0;  // events completed since the backend was made
};

// A calibration backend. Events are submitted in admission order; they may complete in another
// order when several lanes run at once (the engine's reorder stage puts them back in order), but
// never lost: every submitted event comes back from next_completed exactly once. Several may be
// in flight. Nothing here allocates or synchronises the device per event.
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
  // With batch K > 1 the event may wait for K - 1 more before its launch; see flush().
  virtual void submit(const BackendEvent& event) = 0;
  // Launches a partly filled batch now (the engine calls it when the ring has nothing more).
  virtual void flush() {}
  // A completed event; with `block`, waits for one; nullopt when none is in flight (or, without
  // `block`, none is done yet). Throws RuntimeFault on a device error.
  virtual std::optional<CompletedEvent> next_completed(bool block) = 0;
  virtual std::size_t in_flight() const = 0;  // events submitted and not yet returned
  // One entry per lane. Called from the thread that submits.
  virtual std::vector<LaneOccupancy> lane_occupancy() const = 0;
  virtual StreamConfig stream_config() const { return {}; }  // what the backend actually runs
  // Runs `stages` (stages/stage.hpp), in order, on every calibrated event from the next submit
  // on, after calibration; their results are CompletedEvent::stage_outputs. An empty list
  // turns them off. Configuration time only (before the run). Throws InputError for a stage
  // this backend cannot run.
  virtual void set_stages(const stages::StageList& stages) {
    if (!stages.empty())
      throw InputError("the " + name() + " backend runs no stages of the stage contract ('" +
                       stages.front()->name() + "')");
  }

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
                                           const calib::CalibrationParams& params,
                                           const StreamConfig& runtime = {});

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string note;  // why this backend (e.g. "auto: no CUDA device (...), using CPU")
};
// requested: "cpu", "cuda" or "auto" (CUDA when usable, otherwise CPU and the reason in `note`).
BackendChoice make_backend(const std::string& requested, const DetectorDescription& detector,
                           const CalibrationConstants& constants,
                           const calib::CalibrationParams& params, unsigned cpu_threads,
                           const StreamConfig& runtime = {});

}  // namespace livedrp
