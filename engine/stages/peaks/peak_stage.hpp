#pragma once
// Live peak finding as a stage of the contract (stages/stage.hpp): the configuration's
// "peak_finding" section makes it (the engine's own section, so the engine builds it); its CPU
// part is PeakFinder8::find on the backend's pool, its CUDA part a DevicePeakFinder8 per event
// position, each on a stream of its own that forks from the lane after calibration and joins it
// at the launch's end (so the searches run beside the later stages), its result the event's
// PeakList with the version of the parameters it was searched with, and its book the
// LivePeakBook (stats.peak_finding, `peaks` for hits, rate-limited).
//
// Beyond the contract, the stage has a run-time API of its own that the engine calls from its
// submitting thread (where no event is being recorded or searched): a parameter change
// (prepared on any thread, as uploading device tables takes milliseconds, then swapped in for
// the events submitted afterwards; events in flight finish with the finders they started with)
// and a re-run of the newest kept calibrated frames with the parameters in force. Frames are
// kept where the search ran: in host memory by the CPU part, in device memory by the CUDA part.
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "core/detector.hpp"
#include "core/image_assembly.hpp"
#include "exec/engine.hpp"
#include "peaks/peakfinder8.hpp"
#include "stages/peaks/live_peaks.hpp"
#include "stages/stage.hpp"

namespace livedrp::stages {

// One event's search: its list, the parameters' version (1 = the run's first), the time the
// search took (microseconds; the CUDA part's GPU time).
struct PeakResult {
  peaks::PeakList peaks;
  std::uint64_t params_version = 0;
  double search_us = 0;
};

// A kept frame searched again.
struct PeakRerunFrame {
  EventHeader header;
  peaks::PeakList peaks;
};

// The parameters in force and their history (version v is history[v - 1]); thread-safe.
class PeakParamHistory {
 public:
  explicit PeakParamHistory(peaks::PeakFinderParams first) : history_{std::move(first)} {}
  std::uint64_t version() const;
  peaks::PeakFinderParams current() const;
  // The parameters of `version`; the first ones for a version never made.
  peaks::PeakFinderParams of(std::uint64_t version) const;
  peaks::PeakFinderParams first() const { return of(1); }
  std::uint64_t add(const peaks::PeakFinderParams& params);
  // The version in force and its parameters, read together (a change between two separate reads
  // would pair a version with another version's parameters).
  std::pair<std::uint64_t, peaks::PeakFinderParams> in_force() const;

 private:
  mutable std::mutex mutex_;
  std::vector<peaks::PeakFinderParams> history_;
};

class PeakCudaState;  // the CUDA part's state shared by the lanes (peak_stage_cuda.cpp)

class PeakStage final : public Stage {
 public:
  // Throws InputError naming the field ("peak_finding.params: ...", the geometry's fields).
  // `assembly` (may be null: a detector without placement) places the topic's x/y.
  PeakStage(const LivePeakFindingConfig& config, const DetectorDescription& detector,
            const CalibrationConstants& constants, std::shared_ptr<const ImageAssembly> assembly);
  ~PeakStage() override;

  std::string name() const override { return "peak"; }
  std::uint64_t input_bytes() const override { return input_bytes_; }
  std::any run_cpu(const CpuEvent& event) override;
#ifdef LIVEDRP_HAVE_CUDA
  // In its own file (peak_stage_cuda.cpp); without CUDA the stage has none (Stage's default).
  // Refuses (InputError) more event positions over all lanes than it keeps finders for.
  std::unique_ptr<CudaStageLane> make_cuda_lane(const CudaLaneSpec& spec) const override;
#endif
  std::unique_ptr<StageBook> make_book() const override;

  // A finder with the run's first parameters (the device-resident pipeline records its own).
  peaks::PeakFinder8 first_finder() const {
    return geometry_.finder(history_->first());
  }
  const PeakParamHistory& params() const {
    return *history_;
  }
  // A finder on the stage's geometry (slab, radius, mask) with `params`, for a search of the
  // stage's own kind outside the pipeline (the fidelity sampler's). Any thread.
  peaks::PeakFinder8 finder(const peaks::PeakFinderParams& params) const {
    return geometry_.finder(params);
  }
  // Thread-safe: hit counts and the pending hit (the engine counts re-runs' messages there).
  LivePeakBook& book() const {
    return *book_;
  }
  // The `peaks` topic's message of one event's list.
  protocol::EventPeaks message(const EventHeader& header, const peaks::PeakList& list,
                               std::uint64_t version, bool rerun) const;

  // A parameter change, one at a time (the caller serialises them). prepare_change (any thread;
  // InputError naming the parameter): the finder with `params`, as the next version, and, when
  // `on_device`, the device finders of every lane (RuntimeFault when the device cannot hold
  // them). apply_change (the submitting thread): in force for events submitted from now on.
  struct Prepared;
  std::shared_ptr<Prepared> prepare_change(const peaks::PeakFinderParams& params,
                                           bool on_device) const;
  void apply_change(const std::shared_ptr<Prepared>& prepared);
  // The newest `frames` kept frames (fewer when fewer are kept), oldest first, searched with the
  // parameters in force: on the device (the frames the CUDA part kept) or in host memory (the
  // CPU part's). The submitting thread.
  std::vector<PeakRerunFrame> rerun(std::size_t frames, bool on_device);

 private:
  void keep_frame(const EventHeader& header, std::span<const float> calibrated);
  // The CUDA part's side of a change and a re-run (peak_stage_cuda.cpp; without CUDA, none).
  void prepare_device(Prepared& prepared) const;
  void apply_device_change(const Prepared& prepared);
  std::vector<PeakRerunFrame> rerun_on_device(std::size_t frames);

  LivePeakGeometry geometry_;
  std::shared_ptr<const ImageAssembly> assembly_;
  std::shared_ptr<PeakParamHistory> history_;
  std::shared_ptr<LivePeakBook> book_;
  std::uint64_t input_bytes_ = 0;
  std::size_t recent_frames_ = 0;
  // The CPU part's finder and its version (the submitting thread).
  std::optional<peaks::PeakFinder8> finder_;
  std::uint64_t finder_version_ = 1;
  ThreadPool* pool_ = nullptr;  // the CPU backend's, as the last event gave it, for re-runs
  // The CPU part's kept frames, oldest first (allocated as they fill).
  std::deque<std::pair<EventHeader, std::vector<float>>> kept_;
  // The CUDA part's state, made with the first lane, shared by all lanes.
  mutable std::shared_ptr<PeakCudaState> cuda_;
};

// The stage the "peak_finding" section describes; null when it is off. Throws InputError naming
// the field ("peak_finding.params: ..." first, then the geometry's fields).
std::shared_ptr<PeakStage> make_peak_stage(const LivePeakFindingConfig& config,
                                           const DetectorDescription& detector,
                                           const CalibrationConstants& constants,
                                           std::shared_ptr<const ImageAssembly> assembly);

struct PeakStage::Prepared {
  std::uint64_t version = 0;
  peaks::PeakFinderParams params;
  std::optional<peaks::PeakFinder8> finder;
  std::shared_ptr<void> device;  // the CUDA part's finders (peak_stage_cuda.cpp); null: none
};

}  // namespace livedrp::stages
