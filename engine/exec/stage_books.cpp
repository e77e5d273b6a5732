#include "exec/stage_books.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "exec/backend.hpp"
#include "publish/publisher.hpp"

namespace livedrp {

StageBooks::StageBooks(const stages::StageList& stages) {
  for (const auto& stage : stages) {
    auto entry = std::make_unique<Entry>();
    entry->name = stage->name();
    entry->input_bytes = stage->input_bytes();
    entry->book = stage->make_book();
    if (!entry->book) throw RuntimeFault("stage '" + entry->name + "' made no book");
    entries_.push_back(std::move(entry));
  }
}

void StageBooks::add(const CompletedEvent& done) {
  if (done.stage_outputs.size() != entries_.size())
    throw RuntimeFault("event " + std::to_string(done.header.sequence) + " came back with " +
                       std::to_string(done.stage_outputs.size()) + " stage results for " +
                       std::to_string(entries_.size()) + " stages");
  for (std::size_t k = 0; k < entries_.size(); ++k) {
    Entry& entry = *entries_[k];
    const stages::StageOutput& output = done.stage_outputs[k];
    std::lock_guard lock(entry.mutex);
    entry.book->add(done.header, output.result);
    entry.interval_us += output.us;
    entry.interval_max_us = std::max(entry.interval_max_us, output.us);
    ++entry.interval_events;
    entry.total_us += output.us;
    ++entry.total_events;
  }
}

void StageBooks::publish(Publisher& publisher, std::int64_t run, bool last) {
  for (auto& entry : entries_) {
    std::vector<protocol::Message> messages;
    {
      std::lock_guard lock(entry->mutex);
      messages = entry->book->publish(last);
    }
    for (protocol::Message& message : messages) {
      message.run = run;
      // A message the protocol refuses (a non-finite value, say) is not sent; the run goes on,
      // as for the built-in topics.
      try {
        publisher.publish(message);
      } catch (const protocol::ProtocolError& e) {
        spdlog::warn("engine: stage {}: {} message not published: {}", entry->name, message.topic,
                     e.what());
      }
    }
  }
}

protocol::StageTiming StageBooks::timing(const Entry& entry, double us, double max_us,
                                         std::uint64_t events) {
  protocol::StageTiming stage{entry.name};
  if (events > 0) {
    stage.mean_us = us / double(events);
    stage.max_us = max_us;
    if (stage.mean_us > 0) stage.gbps = double(entry.input_bytes) / (stage.mean_us * 1e-6) / 1e9;
  }
  return stage;
}

void StageBooks::take_interval(protocol::StatsPayload& stats) {
  for (auto& entry : entries_) {
    std::lock_guard lock(entry->mutex);
    stats.stages.push_back(
        timing(*entry, entry->interval_us, entry->interval_max_us, entry->interval_events));
    entry->interval_us = entry->interval_max_us = 0;
    entry->interval_events = 0;
    if (nlohmann::json block = entry->book->stats_block(false); !block.is_null())
      stats.stage_stats[entry->name] = std::move(block);
  }
}

void StageBooks::add_totals(protocol::StatsPayload& stats) const {
  for (const auto& entry : entries_) {
    std::lock_guard lock(entry->mutex);
    // The maximum of the whole run is not kept: 0, as the built-in stages' summaries give it.
    stats.stages.push_back(timing(*entry, entry->total_us, 0, entry->total_events));
    if (nlohmann::json block = entry->book->stats_block(true); !block.is_null())
      stats.stage_stats[entry->name] = std::move(block);
  }
}

}  // namespace livedrp
