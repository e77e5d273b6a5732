#pragma once
// Takes an event now and then off the pipeline and evaluates it on a thread of its own, so that
// the pipeline pays only for a copy of the sampled event (its stream and calibrated image, a few
// ms for an ePix10ka2M at a few samples a second) and never waits for an evaluation.
//
// A sample is due when 1 / samples_hz has passed since the last one came due (the first event of
// a run is due at once). A due event is taken when the worker is idle; when it is still busy
// with the previous sample, the due sample is skipped and counted, and the next one comes due a
// period later. The worker runs at a lower scheduling priority than the pipeline's threads, so
// that on a machine with few cores it takes the time the pipeline leaves.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "stages/fidelity/fidelity_evaluator.hpp"

namespace livedrp::stages {

struct FidelityCounts {
  std::uint64_t evaluated = 0;  // samples taken and evaluated
  // Samples due while the previous one was still being evaluated (or, on the CUDA backend,
  // still being copied back from the device).
  std::uint64_t skipped = 0;
  std::uint64_t failed = 0;  // samples whose stream the codec refused (last_error says why)
  std::string last_error;
};

class FidelitySampler {
 public:
  using Clock = std::chrono::steady_clock;

  FidelitySampler(FidelityEvaluator evaluator, double samples_hz);
  ~FidelitySampler();  // the sample in evaluation is finished, then the worker ends
  FidelitySampler(const FidelitySampler&) = delete;
  FidelitySampler& operator=(const FidelitySampler&) = delete;

  // The pipeline's submitting thread, for every event: whether a sample is due at `now`; if so
  // the next one comes due a period later, whether this one is taken or skipped. Cheap.
  bool take_due(Clock::time_point now) {
    if (now < next_due_) return false;
    next_due_ = now + period_;
    return true;
  }
  // For a sample take_due gave: copies it for the worker when the worker is idle, or counts it
  // as skipped. Any thread (the CUDA part hands samples over where it collects them).
  void offer(const EventHeader& header, std::span<const std::uint8_t> stream,
             std::span<const float> calibrated);
  // Whether a sample offered now would be skipped (the worker has one waiting or in
  // evaluation): the CUDA part asks before it copies a sample back from the device.
  bool busy() const;
  // A sample take_due gave that could not be taken (the worker or the copy back was busy).
  void count_skipped();

  // The newest evaluated sample not returned before, with the counts as they were when it was
  // evaluated; none when there is no newer one.
  struct Evaluated {
    FidelitySample sample;
    FidelityCounts counts;
  };
  std::optional<Evaluated> take_newest();
  FidelityCounts counts() const;
  // Returns when no sample is waiting or in evaluation (the end of a run: its last sample is
  // published). Takes at most one evaluation's time.
  void wait_idle();

 private:
  void work();

  FidelityEvaluator evaluator_;
  const Clock::duration period_;
  Clock::time_point next_due_{};  // the pipeline's submitting thread only

  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  bool busy_ = false;  // a sample is waiting or in evaluation
  bool stopping_ = false;
  FidelityInput input_;  // the sample handed over (its buffers reused sample after sample)
  std::optional<Evaluated> newest_;
  FidelityCounts counts_;
  std::thread worker_;
};

}  // namespace livedrp::stages
