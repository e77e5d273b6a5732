#include "exec/stage_books.hpp"

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "exec/backend.hpp"
#include "publish/publisher.hpp"

namespace livedrp {

StageBooks::StageBooks(const stages::StageList& stages) {
  for (const auto& stage : stages) {
    auto entry = std::make_unique<Entry>(stage->name(), double(stage->input_bytes()));
    entry->book = stage->make_book();
    if (!entry->book) throw RuntimeFault("stage '" + entry->name + "' made no book");
    names_.push_back(entry->name);
    entries_.push_back(std::move(entry));
  }
}

void StageBooks::add(const CompletedEvent& done) {
  if (done.stage_outputs.size() != entries_.size())
    throw RuntimeFault("event " + std::to_string(done.header.sequence) + " came back with " +
                       std::to_string(done.stage_outputs.size()) + " stage results for " +
                       std::to_string(entries_.size()) + " stages");
  const stages::EventResults event(names_, done.stage_outputs);
  for (std::size_t k = 0; k < entries_.size(); ++k) {
    Entry& entry = *entries_[k];
    const stages::StageOutput& output = done.stage_outputs[k];
    std::lock_guard lock(entry.mutex);
    entry.book->add_event(done.header, output.result, output.us, event);
    entry.timer.add(output.us);
  }
}

void StageBooks::publish_entry(Entry& entry, const StageMessageSink& sink, std::int64_t run,
                               bool last) {
  std::vector<protocol::Message> messages;
  // A message the protocol refuses (a non-finite value, say) is not sent; the run goes on.
  try {
    std::lock_guard lock(entry.mutex);
    messages = entry.book->publish(last);
  } catch (const protocol::ProtocolError& e) {
    spdlog::warn("engine: stage {}: message not published: {}", entry.name, e.what());
  }
  for (protocol::Message& message : messages) {
    message.run = run;
    try {
      sink(message);
    } catch (const protocol::ProtocolError& e) {
      spdlog::warn("engine: stage {}: {} message not published: {}", entry.name, message.topic,
                   e.what());
    }
  }
}

void StageBooks::publish(const StageMessageSink& sink, std::int64_t run, bool last) {
  // A book with a rate of its own is asked by publish_due, and here only at the end.
  for (auto& entry : entries_)
    if (last || !(entry->book->publish_hz() > 0)) publish_entry(*entry, sink, run, last);
}

void StageBooks::publish_due(const StageMessageSink& sink, std::int64_t run,
                             std::chrono::steady_clock::time_point now) {
  for (auto& entry : entries_) {
    const double hz = entry->book->publish_hz();
    if (!(hz > 0) || now < entry->next_publish) continue;
    if (hz != stages::StageBook::kEveryStep)
      entry->next_publish = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(1.0 / hz));
    publish_entry(*entry, sink, run, false);
  }
}

void StageBooks::take_interval(protocol::StatsPayload& stats) {
  for (auto& entry : entries_) {
    std::lock_guard lock(entry->mutex);
    stats.stages.push_back(entry->timer.take_interval());
    if (nlohmann::json block = entry->book->stats_block(false); !block.is_null())
      stats.stage_stats[entry->name] = std::move(block);
    entry->book->fill_stats(stats, false);
  }
}

void StageBooks::add_totals(protocol::StatsPayload& stats) const {
  for (const auto& entry : entries_) {
    std::lock_guard lock(entry->mutex);
    stats.stages.push_back(entry->timer.totals());
    if (nlohmann::json block = entry->book->stats_block(true); !block.is_null())
      stats.stage_stats[entry->name] = std::move(block);
    entry->book->fill_stats(stats, true);
  }
}

}  // namespace livedrp
