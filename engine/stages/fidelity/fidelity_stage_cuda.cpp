// The CUDA part of the fidelity stage (built with CUDA only; without it the stage has none).
//
// The compress stage's CUDA part writes each event's stream into one device buffer per lane,
// which the lane's next event overwrites, and the backend records every stage over all the
// events of a launch before the next stage, then each stage's join() (stages/stage.hpp). So when
// this stage's join() runs, the lane's buffer holds the stream of the launch's last event: a
// launch with an event due samples its last event. join() enqueues, on the lane's stream, the
// copies of that event's stream size, stream and calibrated image into pinned memory, and the
// launch's collect() hands them to the sampler. Nothing is enqueued for the other launches.
//
// Not capturable: whether a launch copies anything is decided per launch. The stage's recording
// for a launch that samples nothing is empty, so in graph mode it costs no device work beyond the
// two timing events the backend records around every stage.
//
// One pinned copy per backend (shared by its lanes): the sampler evaluates one sample at a time
// and a sample comes due at most 50 times a second, so a sample due while the last one is still
// on its way back (or still being evaluated) is skipped and counted, as on the CPU backend.
#ifdef LIVEDRP_HAVE_CUDA
#include <atomic>
#include <cstring>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "cuda/device.hpp"
#include "stages/fidelity/fidelity_stage.hpp"

namespace livedrp::stages {

class FidelityCudaState {
 public:
  FidelityCudaState(int lanes, int positions, std::size_t capacity, std::size_t pixels)
      : lanes(lanes),
        positions(positions),
        capacity(capacity),
        pixels(pixels),
        size(sizeof(std::uint64_t)),
        stream(capacity),
        image(pixels * sizeof(float)) {}

  const int lanes, positions;
  const std::size_t capacity, pixels;
  gpu::PinnedBuffer size, stream, image;
  // Written by the submitting thread before it sets `holder`, read by the collecting thread
  // after it sees it.
  EventHeader header;
  // The event position (lane * positions + position) whose sample the pinned memory holds or is
  // about to; -1: free. Set by the submitting thread only, cleared by the collecting one.
  std::atomic<int> holder{-1};
};

namespace {

class FidelityCudaLane final : public CudaStageLane {
 public:
  FidelityCudaLane(std::shared_ptr<FidelitySampler> sampler,
                   std::shared_ptr<FidelityCudaState> state,
                   std::shared_ptr<const CompressDeviceStream> compressed, int lane)
      : sampler_(std::move(sampler)),
        state_(std::move(state)),
        compressed_(std::move(compressed)),
        lane_(lane) {}

  // A sample comes back through the state's own pinned memory, not a per-position block.
  std::size_t result_bytes() const override { return 0; }
  bool capturable() const override { return false; }

  // Enqueues nothing: only chooses. Once an event of the launch is due, every later event of the
  // launch takes the choice over, so that the one chosen is the launch's last.
  void record(const CudaEvent& event, const gpu::Stream&) override {
    if (!event.header) return;  // a recording not tied to an event cannot be sampled
    if (!chosen_ && !sampler_->take_due(FidelitySampler::Clock::now())) return;
    chosen_ = Chosen{event.position, *event.header, event.calibrated};
  }

  void join(const CudaEvent& event, const gpu::Stream& stream) override {
    if (!chosen_ || event.position != chosen_->position) return;
    const Chosen chosen = *chosen_;
    chosen_.reset();
    // The worker still busy with the last sample would skip this one anyway: no copy for it.
    if (state_->holder.load(std::memory_order_acquire) >= 0 || sampler_->busy()) {
      sampler_->count_skipped();
      return;
    }
    state_->header = chosen.header;
    state_->holder.store(slot(chosen.position), std::memory_order_release);
    gpu::copy_async(state_->size.get(), compressed_->size_word, sizeof(std::uint64_t), stream,
                    "fidelity: compressed stream's size to pinned memory");
    // The whole buffer: the stream's size is known only on the device until the copy is done.
    gpu::copy_async(state_->stream.get(), compressed_->bytes, compressed_->capacity, stream,
                    "fidelity: compressed stream to pinned memory");
    gpu::copy_async(state_->image.get(), chosen.calibrated, state_->pixels * sizeof(float), stream,
                    "fidelity: calibrated image to pinned memory");
  }

  std::any collect(int position, const void*) const override {
    if (state_->holder.load(std::memory_order_acquire) != slot(position)) return {};
    std::uint64_t size = 0;
    std::memcpy(&size, state_->size.get(), sizeof size);
    if (size == 0 || size > state_->capacity) {
      state_->holder.store(-1, std::memory_order_release);
      throw RuntimeFault("fidelity: the GPU codec reported a stream of " + std::to_string(size) +
                         " bytes for event " + std::to_string(state_->header.sequence) +
                         " (output buffer of " + std::to_string(state_->capacity) + " bytes)");
    }
    sampler_->offer(state_->header, {state_->stream.as<const std::uint8_t>(), std::size_t(size)},
                    {state_->image.as<const float>(), state_->pixels});
    state_->holder.store(-1, std::memory_order_release);  // offer copied what it keeps
    return {};
  }

 private:
  struct Chosen {
    int position = 0;
    EventHeader header;
    const float* calibrated = nullptr;
  };
  int slot(int position) const { return lane_ * state_->positions + position; }

  std::shared_ptr<FidelitySampler> sampler_;
  std::shared_ptr<FidelityCudaState> state_;
  std::shared_ptr<const CompressDeviceStream> compressed_;
  int lane_;
  std::optional<Chosen> chosen_;  // submitting thread only
};

}  // namespace

std::unique_ptr<CudaStageLane> FidelityStage::make_cuda_lane(const CudaLaneSpec& spec) const {
  std::shared_ptr<const CompressDeviceStream> compressed = compress_->device_stream(spec.lane);
  // The first lane of a backend makes the state its lanes share.
  if (spec.lane == 0 || !cuda_ || cuda_->lanes != spec.lanes ||
      cuda_->positions != spec.positions || cuda_->capacity != compressed->capacity)
    cuda_ = std::make_shared<FidelityCudaState>(spec.lanes, spec.positions, compressed->capacity,
                                                pixels_);
  return std::make_unique<FidelityCudaLane>(sampler_, cuda_, std::move(compressed), spec.lane);
}

}  // namespace livedrp::stages
#endif
