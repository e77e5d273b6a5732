#include "stages/fidelity/fidelity_sampler.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "core/error.hpp"

namespace livedrp::stages {

namespace {

// Nice value of the worker (Linux applies it per thread): below the pipeline's threads, so that
// on a 2-core machine an evaluation takes idle time rather than the pipeline's.
constexpr int kWorkerNice = 10;

void lower_this_threads_priority() {
  const auto thread_id = static_cast<id_t>(::syscall(SYS_gettid));
  if (::setpriority(PRIO_PROCESS, thread_id, kWorkerNice) != 0)
    spdlog::debug("fidelity: could not lower the sampler's priority; it runs at normal priority");
}

}  // namespace

FidelitySampler::FidelitySampler(FidelityEvaluator evaluator, double samples_hz)
    : evaluator_(std::move(evaluator)),
      period_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(1.0 / samples_hz))),
      worker_([this] { work(); }) {}

FidelitySampler::~FidelitySampler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void FidelitySampler::offer(const EventHeader& header, std::span<const std::uint8_t> stream,
                            std::span<const float> calibrated) {
  {
    std::lock_guard lock(mutex_);
    if (busy_) {
      ++counts_.skipped;
      return;
    }
    busy_ = true;
    input_.header = header;
    input_.stream.assign(stream.begin(), stream.end());
    input_.calibrated.assign(calibrated.begin(), calibrated.end());
  }
  wake_.notify_one();
}

bool FidelitySampler::busy() const {
  std::lock_guard lock(mutex_);
  return busy_;
}

void FidelitySampler::count_skipped() {
  std::lock_guard lock(mutex_);
  ++counts_.skipped;
}

std::optional<FidelitySampler::Evaluated> FidelitySampler::take_newest() {
  std::lock_guard lock(mutex_);
  std::optional<Evaluated> out = std::move(newest_);
  newest_.reset();
  return out;
}

FidelityCounts FidelitySampler::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void FidelitySampler::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return !busy_; });
}

void FidelitySampler::work() {
  lower_this_threads_priority();
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || busy_; });
    if (!busy_) return;  // stopping, nothing handed over
    // The input is the worker's until busy_ is cleared: the pipeline's thread does not touch it
    // while busy_ is set, so it is read without the lock.
    lock.unlock();
    std::optional<FidelitySample> sample;
    std::string error;
    try {
      sample = evaluator_.evaluate(input_);
    } catch (const std::exception& e) {
      error = e.what();
    }
    lock.lock();
    if (sample) {
      ++counts_.evaluated;
      newest_ = Evaluated{std::move(*sample), counts_};
    } else {
      ++counts_.failed;
      counts_.last_error = error;
      spdlog::warn("fidelity: sample of event {} not evaluated: {}", input_.header.sequence, error);
    }
    busy_ = false;
    idle_.notify_all();
    if (stopping_) return;
  }
}

}  // namespace livedrp::stages
