// The CPU backend: calibrates each event on a thread pool, split over bank rows. It is the
// reference the CUDA backend is checked against, and the backend wherever no GPU is usable.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <new>
#include <span>
#include <thread>
#include <vector>

#include "calib/calibrate_cpu.hpp"
#include "core/thread_pool.hpp"
#include "exec/backend.hpp"

namespace livedrp {
namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(const DetectorDescription& detector, const CalibrationConstants& constants,
             const calib::CalibrationParams& params, unsigned threads)
      : detector_(detector),
        constants_(constants),
        params_(params),
        pool_(threads == 0 ? std::max(1u, std::thread::hardware_concurrency()) : threads),
        output_(detector.pixels()) {}

  std::string name() const override { return "cpu"; }
  std::string device_name() const override {
    return "CPU (" + std::to_string(pool_.size()) + " threads)";
  }
  void* allocate_host(std::size_t bytes) override {
    // 64-byte alignment: whole cache lines per slot, and vector loads stay aligned.
    return ::operator new(bytes, std::align_val_t(64));
  }
  void free_host(void* pointer) override { ::operator delete(pointer, std::align_val_t(64)); }
  void set_params(const calib::CalibrationParams& params) override { params_ = params; }

  // One event at a time: the pool already spreads each event over every core.
  bool can_submit() const override { return completed_.empty(); }
  void set_stages(const stages::StageList& stages) override { stages_ = stages; }

  void submit(const BackendEvent& event) override {
    const auto start = std::chrono::steady_clock::now();
    calibrate_event_cpu(detector_, constants_, params_, event.raw, output_.data(), &pool_);
    const auto end = std::chrono::steady_clock::now();
    CompletedEvent done;
    run_stages(event, done);
    done.header = event.header;
    done.ring_slot = event.ring_slot;
    done.admission = event.admission;
    done.output_slot = 0;
    done.calibrate_us = std::chrono::duration<double, std::micro>(end - start).count();
    completed_.push_back(done);
  }
  std::optional<CompletedEvent> next_completed(bool) override {
    if (completed_.empty()) return std::nullopt;
    CompletedEvent done = completed_.front();
    completed_.pop_front();
    ++completed_count_;
    return done;
  }
  std::size_t in_flight() const override { return completed_.size(); }
  std::vector<LaneOccupancy> lane_occupancy() const override {
    return {{completed_.size(), 1, completed_count_}};
  }
  void read_output(const CompletedEvent&, float* host_out) override {
    std::memcpy(host_out, output_.data(), output_.size() * sizeof(float));
  }

 private:
  // The stage-contract stages, in order, each on the calibrated image and timed on its own.
  void run_stages(const BackendEvent& event, CompletedEvent& done) {
    done.stage_outputs.reserve(stages_.size());
    for (const auto& stage : stages_) {
      const auto start = std::chrono::steady_clock::now();
      std::any result = stage->run_cpu({event.header, event.raw, output_, &pool_});
      const double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count();
      done.stage_outputs.push_back({std::move(result), us});
    }
  }

  DetectorDescription detector_;
  const CalibrationConstants& constants_;
  calib::CalibrationParams params_;
  ThreadPool pool_;
  std::vector<float> output_;
  stages::StageList stages_;
  std::deque<CompletedEvent> completed_;
  std::uint64_t completed_count_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const DetectorDescription& detector,
                                          const CalibrationConstants& constants,
                                          const calib::CalibrationParams& params,
                                          unsigned threads) {
  return std::make_unique<CpuBackend>(detector, constants, params, threads);
}

}  // namespace livedrp
