#pragma once
// What the event_sum suites share (test_engine_stages on the CPU backend, test_gpu_engine_stages
// on CUDA): the engine configuration that turns the test-only stage on, a run that keeps the last
// message of the stage's topic, and every event's sum computed here, independently of the
// engine: the simulator's raw event calibrated by calibrate_event_cpu and summed exactly.
#include <QtTest>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calib/calibrate_cpu.hpp"
#include "core/detector.hpp"
#include "core/thread_pool.hpp"
#include "exec/engine.hpp"
#include "protocol/subscriber.hpp"
#include "sim/simulator.hpp"
#include "test_stages/event_sum_stage.hpp"

namespace livedrp::test_stages {

using namespace std::chrono_literals;

inline constexpr const char* kSumTopic = "event_sums";

// 200 events of the simulated ePix10ka2M cycling through 4 generated ones (generating is slow on
// a 2-core machine), the stage on and publishing on its own topic. Read through from_json, as a
// configuration file is: the stage's section is found by its registered name.
inline EngineConfig event_sum_config(const std::string& backend) {
  EngineConfig c;
  c.source = "sim:epix10ka2m";
  c.backend = backend;
  c.publish = "tcp://127.0.0.1:*";
  c.simulator_pool = 4;
  c.stats_interval_s = 0.05;
  c.cpu_threads = 2;
  c.events = 200;
  c.full_ring = "wait";
  nlohmann::json json = c.to_json();
  json[kEventSumStage] = {{"enabled", true}, {"topic", kSumTopic}};
  return EngineConfig::from_json(json, "event_sum test");
}

struct SumRun {
  std::optional<EventSums> last;  // the last message on the stage's topic
  std::size_t messages = 0;
  RunSummary summary;
};

// Subscribes before the start; whatever it misses, the publisher's late-joiner copy of the topic's
// last message (published at the end of the run) still arrives, and it holds every sum.
inline SumRun run_event_sum(const EngineConfig& config) {
  SumRun run;
  Engine engine(config);
  protocol::Subscriber subscriber(engine.publish_endpoint(), {std::string(kSumTopic)});
  engine.start();
  const auto take = [&](std::chrono::milliseconds timeout) {
    while (auto message = subscriber.receive(timeout)) {
      QCOMPARE(message->topic, std::string(kSumTopic));
      QCOMPARE(message->run, config.run);
      run.last = event_sums_from_message(*message);
      ++run.messages;
    }
  };
  while (!engine.finished()) take(20ms);
  engine.wait();
  take(500ms);
  run.summary = engine.summary();
  return run;
}

// One distinct event's calibrated image summed exactly enough to be the reference: every float32
// is exact in long double, and Neumaier's compensated sum in long double (64-bit significand)
// leaves an error far below a float64 sum's.
struct ReferenceSum {
  double sum = 0;
  double sum_abs = 0;  // sum of |value|: the scale of a float64 sum's rounding error
};

inline ReferenceSum exact_sum(const std::vector<float>& values) {
  long double sum = 0, compensation = 0, sum_abs = 0;
  for (float v : values) {
    const long double x = v;
    const long double t = sum + x;
    compensation += std::fabs(sum) >= std::fabs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
    sum_abs += std::fabs(x);
  }
  return {double(sum + compensation), double(sum_abs)};
}

// Event i carries the raw bytes of simulator event i % pool; its reference is that event
// calibrated on the CPU here and summed exactly.
inline std::vector<ReferenceSum> reference_sums(const EngineConfig& config) {
  const DetectorDescription detector = find_detector("epix10ka2m");
  ThreadPool pool(2);
  SimulatorConfig simulator_config;
  simulator_config.seed = config.seed;
  simulator_config.hit_fraction = config.hit_fraction;
  const DetectorSimulator simulator(detector, simulator_config, &pool);
  std::vector<std::uint8_t> raw(detector.raw_event_bytes());
  std::vector<float> calibrated(detector.pixels());
  std::vector<ReferenceSum> sums;
  for (int i = 0; i < config.simulator_pool; ++i) {
    simulator.generate(std::uint64_t(i), raw.data(), nullptr, &pool);
    calibrate_event_cpu(detector, simulator.constants(), config.calibration, raw.data(),
                        calibrated.data(), &pool);
    sums.push_back(exact_sum(calibrated));
  }
  return sums;
}

// A float64 sum of n values, added in any order, is within (n - 1) u sum|x| of the exact sum, u
// = 2^-53 (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 4.4 with
// gamma_{n-1} ~ (n - 1) u): the tolerance of one backend's sum against the reference. Two
// backends' sums differ by at most twice that.
inline double float64_sum_bound(std::size_t n, double sum_abs) {
  return double(n - 1) * std::ldexp(1.0, -53) * sum_abs * 1.0001;  // 1.0001: gamma's (1 - nu)^-1
}

}  // namespace livedrp::test_stages
