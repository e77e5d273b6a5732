// The CUDA part of the peak stage (built with CUDA only; without it the stage has none).
//
// Every event position of every lane has its own DevicePeakFinder8 and its own stream: a finder
// returns its list through one pinned buffer and collect() waits for the stream it is given, so a
// finder per position on a stream of its own keeps the results of launches in flight apart and
// lets a list be read at retirement without waiting for later work. record() forks the position's
// stream from the lane's after the calibration and searches there; join() makes the lane's
// stream wait for the search before the launch's end, so the later stages run beside it. The
// calibrated frame is also copied (device to device) into a ring of kept frames for re-runs.
// A parameter change builds a new set of finders (a generation); a position keeps the
// generation it recorded with until it records again, so events in flight finish with theirs.
// Not capturable: the finders change with the parameters, and the kept frame with the event.
#ifdef LIVEDRP_HAVE_CUDA
#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "cuda/device.hpp"
#include "cuda/peaks/device_peakfinder8.hpp"
#include "stages/peaks/peak_stage.hpp"

namespace livedrp::stages {

// Device finders are kept per event position (streams x slots_per_stream x batch); each holds
// its scratch and result buffers, so their count is bounded.
constexpr int kMaxPeakPositions = 256;

// One parameter set's device finders: one per event position of every lane, and one for re-runs
// (whose read-only tables the others share).
struct PeakGeneration {
  std::uint64_t version = 0;
  std::unique_ptr<gpu::DevicePeakFinder8> rerun;
  std::vector<std::unique_ptr<gpu::DevicePeakFinder8>> finders;  // [lane * positions + position]
};

std::shared_ptr<PeakGeneration> make_generation(const peaks::PeakFinder8& finder,
                                                std::uint64_t version, int count) {
  auto generation = std::make_shared<PeakGeneration>();
  generation->version = version;
  generation->rerun = std::make_unique<gpu::DevicePeakFinder8>(finder);
  for (int k = 0; k < count; ++k) generation->finders.push_back(generation->rerun->sibling());
  return generation;
}

// Shared by the lanes of one backend: the generation new records take, and the kept frames.
class PeakCudaState {
 public:
  // `finder` and `version`: the parameters in force when the backend is made.
  PeakCudaState(int lanes, int positions, std::size_t pixels, std::size_t recent_frames,
                const peaks::PeakFinder8& finder, std::uint64_t version)
      : lanes(lanes),
        positions(positions),
        current(make_generation(finder, version, lanes * positions)),
        pixels_(pixels),
        recent_(recent_frames),
        // Room for the frames of the events in flight besides those kept.
        kept_(recent_frames > 0 ? recent_frames + std::size_t(lanes * positions) : 0),
        frames_(kept_.empty() ? gpu::DeviceBuffer()
                              : gpu::DeviceBuffer(kept_.size() * pixels * sizeof(float))) {}

  const int lanes, positions;
  std::shared_ptr<PeakGeneration> current;  // the generation new records take (submitting thread)

  std::shared_ptr<PeakGeneration> generation(const peaks::PeakFinder8& finder,
                                             std::uint64_t version) const {
    return make_generation(finder, version, lanes * positions);
  }

  // The submitting thread: the entry the event's frame is copied to (-1: none are kept), not
  // valid until the event's search has been collected.
  int claim(const EventHeader& header, std::uint64_t admission) {
    if (kept_.empty()) return -1;
    std::lock_guard lock(mutex_);
    const int entry = int(next_++ % kept_.size());
    kept_[std::size_t(entry)] = {header, admission, false};
    return entry;
  }
  // The thread that retires the lane; ignored when the entry went to a newer event meanwhile.
  void mark_valid(int entry, std::uint64_t admission) {
    if (entry < 0) return;
    std::lock_guard lock(mutex_);
    if (kept_[std::size_t(entry)].admission == admission) kept_[std::size_t(entry)].valid = true;
  }
  float* frame(int entry) const { return frames_.as<float>() + std::size_t(entry) * pixels_; }
  std::size_t frame_bytes() const { return pixels_ * sizeof(float); }

  // The submitting thread: the newest `frames` valid kept frames, oldest first, searched with
  // the current generation's re-run finder.
  std::vector<PeakRerunFrame> rerun(std::size_t frames) {
    std::vector<std::size_t> order;
    std::vector<EventHeader> headers;
    {
      std::lock_guard lock(mutex_);
      for (std::size_t e = 0; e < kept_.size(); ++e)
        if (kept_[e].valid) order.push_back(e);
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return kept_[a].admission < kept_[b].admission;
      });
      for (std::size_t e : order) headers.push_back(kept_[e].header);
    }
    const std::size_t n = std::min({frames, order.size(), recent_});
    std::vector<PeakRerunFrame> out;
    gpu::DevicePeakFinder8& finder = *current->rerun;
    for (std::size_t k = order.size() - n; k < order.size(); ++k) {
      finder.enqueue(frame(int(order[k])), rerun_stream_);
      out.push_back({headers[k], finder.collect(rerun_stream_)});
    }
    return out;
  }

 private:
  struct KeptFrame {
    EventHeader header;
    std::uint64_t admission = 0;
    bool valid = false;
  };
  std::size_t pixels_, recent_;
  std::mutex mutex_;  // the kept entries: claimed by the submitter, validated by retirers
  std::vector<KeptFrame> kept_;
  std::uint64_t next_ = 0;
  gpu::DeviceBuffer frames_;
  gpu::Stream rerun_stream_;
};

namespace {

class PeakCudaLane final : public CudaStageLane {
 public:
  PeakCudaLane(std::shared_ptr<PeakCudaState> state, int lane)
      : state_(std::move(state)), lane_(lane) {
    for (int p = 0; p < state_->positions; ++p) positions_.push_back(std::make_unique<Position>());
  }

  // The list comes back through the position's finder's own pinned buffer.
  std::size_t result_bytes() const override { return 1; }
  bool capturable() const override { return false; }

  void record(const CudaEvent& event, const gpu::Stream& stream) override {
    Position& p = *positions_[std::size_t(event.position)];
    p.generation = state_->current;
    p.admission = event.admission;
    p.ready.record(stream);
    p.stream.wait(p.ready.get());
    p.begin.record(p.stream);
    finder(p, event.position).enqueue(event.calibrated, p.stream);
    p.end.record(p.stream);
    p.kept = event.header ? state_->claim(*event.header, event.admission) : -1;
    if (p.kept >= 0)
      gpu::copy_async(state_->frame(p.kept), event.calibrated, state_->frame_bytes(), stream,
                      "calibrated frame to the kept frames");
  }

  void join(const CudaEvent& event, const gpu::Stream& stream) override {
    stream.wait(positions_[std::size_t(event.position)]->end.get());
  }

  std::any collect(int position, const void*) const override {
    Position& p = *positions_[std::size_t(position)];
    // The launch's end waited for this search: its stream has nothing left, collect() returns
    // at once.
    PeakResult result;
    result.peaks = finder(p, position).collect(p.stream);
    result.params_version = p.generation->version;
    result.search_us = 1000.0 * double(p.end.elapsed_ms_since(p.begin));
    state_->mark_valid(p.kept, p.admission);
    return result;
  }

  double event_us(int position) const override {
    const Position& p = *positions_[std::size_t(position)];
    return 1000.0 * double(p.end.elapsed_ms_since(p.begin));
  }

 private:
  struct Position {
    gpu::Stream stream;
    gpu::Event ready{false}, begin{true}, end{true};
    std::shared_ptr<PeakGeneration> generation;  // what the last record searched with
    std::uint64_t admission = 0;
    int kept = -1;
  };
  gpu::DevicePeakFinder8& finder(const Position& p, int position) const {
    return *p.generation->finders[std::size_t(lane_ * state_->positions + position)];
  }

  std::shared_ptr<PeakCudaState> state_;
  int lane_;
  std::vector<std::unique_ptr<Position>> positions_;
};

}  // namespace

std::unique_ptr<CudaStageLane> PeakStage::make_cuda_lane(const CudaLaneSpec& spec) const {
  if (spec.positions * spec.lanes > kMaxPeakPositions)
    throw InputError(
        "cuda backend: live peak finding keeps a device finder per event in "
        "flight, at most " +
        std::to_string(kMaxPeakPositions) + "; this configuration has " +
        std::to_string(spec.positions * spec.lanes) +
        " (lower streams, slots_per_stream or batch)");
  // The first lane of a backend makes the state its lanes share.
  if (spec.lane == 0 || !cuda_ || cuda_->lanes != spec.lanes || cuda_->positions != spec.positions)
    cuda_ = std::make_shared<PeakCudaState>(spec.lanes, spec.positions,
                                            std::size_t(input_bytes_ / sizeof(float)),
                                            recent_frames_, *finder_, finder_version_);
  return std::make_unique<PeakCudaLane>(cuda_, spec.lane);
}

void PeakStage::prepare_device(Prepared& prepared) const {
  if (cuda_) prepared.device = cuda_->generation(*prepared.finder, prepared.version);
}

void PeakStage::apply_device_change(const Prepared& prepared) {
  if (cuda_ && prepared.device)
    cuda_->current = std::static_pointer_cast<PeakGeneration>(prepared.device);
}

std::vector<PeakRerunFrame> PeakStage::rerun_on_device(std::size_t frames) {
  if (!cuda_)
    throw RuntimeFault("peak stage: no CUDA part was made, so no frame was kept on a device");
  return cuda_->rerun(frames);
}

}  // namespace livedrp::stages
#endif
