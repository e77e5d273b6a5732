#pragma once
// The engine's side of the stage-contract stages (stages/stage.hpp): one book per stage of the
// run's list, fed every processed event in admission order (the consumer thread), asked for its
// messages at each report tick and its block of `stats` (the reporter thread), and the per-stage
// timing of stats.stages that every stage gets without saying anything. Calls on one book are
// serialised here, so books need no lock of their own.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "protocol/topics.hpp"
#include "stages/stage.hpp"

namespace livedrp {

class Publisher;
struct CompletedEvent;

class StageBooks {
 public:
  explicit StageBooks(const stages::StageList& stages);
  StageBooks(const StageBooks&) = delete;
  StageBooks& operator=(const StageBooks&) = delete;

  bool empty() const { return entries_.empty(); }
  // Consumer thread, in admission order. Throws RuntimeFault when the event carries no result
  // for a stage (a backend that skipped it).
  void add(const CompletedEvent& done);
  // Reporter thread: every book's messages, published with the run number; `last` at the end.
  void publish(Publisher& publisher, std::int64_t run, bool last);
  // Reporter thread: each stage's timing over the interval (into stats.stages) and its block
  // (stats.stage_stats); starts the next interval.
  void take_interval(protocol::StatsPayload& stats);
  // The same over the whole run (the summary).
  void add_totals(protocol::StatsPayload& stats) const;

 private:
  struct Entry {
    std::string name;
    std::uint64_t input_bytes = 0;
    std::unique_ptr<stages::StageBook> book;
    // Guards the book and the timings: the consumer adds while the reporter reads.
    mutable std::mutex mutex;
    double interval_us = 0, interval_max_us = 0;
    std::uint64_t interval_events = 0;
    double total_us = 0;
    std::uint64_t total_events = 0;
  };
  static protocol::StageTiming timing(const Entry& entry, double us, double max_us,
                                      std::uint64_t events);
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace livedrp
