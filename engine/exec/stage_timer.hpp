#pragma once
// One stage's time per event, as `stats.stages` reports it: over the current stats interval
// (taken, and restarted, at each report tick) and over the whole run (the summary). Not locked:
// the owner serialises the consumer's add and the reporter's take.
#include <algorithm>
#include <cstdint>
#include <string>

#include "protocol/topics.hpp"

namespace livedrp {

class StageTimer {
 public:
  // `input_bytes`: what the stage reads per event, for its GB/s.
  StageTimer(std::string name, double input_bytes)
      : name_(std::move(name)), input_bytes_(input_bytes) {}

  const std::string& name() const { return name_; }

  void add(double us) {
    interval_us_ += us;
    interval_max_us_ = std::max(interval_max_us_, us);
    ++interval_events_;
    total_us_ += us;
    ++total_events_;
  }

  // The interval's mean, maximum and GB/s (zeros without events), then the next interval.
  protocol::StageTiming take_interval() {
    protocol::StageTiming timing = make(interval_us_, interval_max_us_, interval_events_);
    interval_us_ = interval_max_us_ = 0;
    interval_events_ = 0;
    return timing;
  }

  // Over the whole run; its maximum is not kept (0).
  protocol::StageTiming totals() const { return make(total_us_, 0, total_events_); }

  std::uint64_t total_events() const { return total_events_; }

 private:
  protocol::StageTiming make(double us, double max_us, std::uint64_t events) const {
    protocol::StageTiming timing{name_};
    if (events > 0) {
      timing.mean_us = us / double(events);
      timing.max_us = max_us;
      if (timing.mean_us > 0) timing.gbps = input_bytes_ / (timing.mean_us * 1e-6) / 1e9;
    }
    return timing;
  }

  std::string name_;
  double input_bytes_ = 0;
  double interval_us_ = 0, interval_max_us_ = 0;
  std::uint64_t interval_events_ = 0;
  double total_us_ = 0;
  std::uint64_t total_events_ = 0;
};

}  // namespace livedrp
