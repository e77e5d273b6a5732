#pragma once
// The engine's side of the stages (stages/stage.hpp): one book per stage, fed every processed
// event in admission order (the consumer thread), asked for its messages at each report tick or
// at its own rate and for its block of `stats` (the reporter thread), plus the per-stage timing
// of stats.stages that every stage gets without saying anything. Calls on one book are
// serialised here, so books need no lock of their own.
// Every stage's result is in CompletedEvent::stage_outputs, in the list's order.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "exec/stage_timer.hpp"
#include "protocol/topics.hpp"
#include "stages/stage.hpp"

namespace livedrp {

struct CompletedEvent;

// Where the books' messages go: the engine's publisher, or (an engine that publishes nothing
// itself, an MPI processing rank) whoever forwards them. May throw protocol::ProtocolError for a
// message the protocol refuses.
using StageMessageSink = std::function<void(const protocol::Message& message)>;

class StageBooks {
 public:
  explicit StageBooks(const stages::StageList& stages);
  StageBooks(const StageBooks&) = delete;
  StageBooks& operator=(const StageBooks&) = delete;

  bool empty() const { return entries_.empty(); }
  // Consumer thread, in admission order. Throws RuntimeFault when the event carries no result
  // for a stage (a backend that skipped it).
  void add(const CompletedEvent& done);
  // Reporter thread, at each report tick and once more at the end (`last`): the messages of
  // every book without a rate of its own (all of them at the end), published with the run
  // number.
  void publish(const StageMessageSink& sink, std::int64_t run, bool last);
  // Reporter thread, between ticks: the books with a rate of their own whose time has come.
  void publish_due(const StageMessageSink& sink, std::int64_t run,
                   std::chrono::steady_clock::time_point now);
  // Reporter thread: each stage's timing over the interval (into stats.stages) and its blocks
  // (stats.stage_stats, the protocol's own blocks); starts the next interval.
  void take_interval(protocol::StatsPayload& stats);
  // The same over the whole run (the summary).
  void add_totals(protocol::StatsPayload& stats) const;

 private:
  struct Entry {
    Entry(std::string name, double input_bytes) : name(name), timer(std::move(name), input_bytes) {}
    std::string name;
    std::unique_ptr<stages::StageBook> book;
    std::chrono::steady_clock::time_point next_publish{};
    // Guards the book and the timer: the consumer adds while the reporter reads.
    mutable std::mutex mutex;
    StageTimer timer;
  };
  void publish_entry(Entry& entry, const StageMessageSink& sink, std::int64_t run, bool last);
  std::vector<std::unique_ptr<Entry>> entries_;
  std::vector<std::string> names_;  // the entries' stage names, in the list's order
};

}  // namespace livedrp
