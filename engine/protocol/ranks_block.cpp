#include "protocol/ranks_block.hpp"

#include "protocol/message.hpp"
#include "protocol/payload_reader.hpp"

namespace livedrp::protocol {

using detail::describe;
using detail::number_or_null;
using detail::PayloadReader;
using json = nlohmann::json;

json to_json(const RanksBlock& block) {
  json processing = json::array();
  for (const RankStats& r : block.processing)
    processing.push_back({{"rank", r.rank},
                          {"state", r.state},
                          {"error", r.error},
                          {"host", r.host},
                          {"pid", r.pid},
                          {"events_in", r.events_in},
                          {"events_processed", r.events_processed},
                          {"events_dropped", r.events_dropped},
                          {"drops_by_reason", r.drops_by_reason},
                          {"event_rate_hz", number_or_null(r.event_rate_hz)},
                          {"elapsed_s", number_or_null(r.elapsed_s)},
                          {"backend", r.backend},
                          {"device", r.device},
                          {"report_age_s", number_or_null(r.report_age_s)}});
  return {{"size", block.size},
          {"collector", block.collector},
          {"collector_processes", block.collector_processes},
          {"processing", std::move(processing)}};
}

RanksBlock ranks_block_from_json(const json& block) {
  const PayloadReader reader(block, "stats", "ranks.");
  if (!block.is_object())
    throw ProtocolError("stats payload: field 'ranks' must be an object, got " + describe(block));
  RanksBlock out;
  out.size = reader.count("size");
  out.collector = reader.count("collector");
  const json& processes = reader.field("collector_processes");
  if (!processes.is_boolean())
    reader.fail("collector_processes", "must be true or false, got " + describe(processes));
  out.collector_processes = processes.get<bool>();
  const json& processing = reader.field("processing");
  if (!processing.is_array())
    reader.fail("processing", "must be an array, got " + describe(processing));
  for (std::size_t i = 0; i < processing.size(); ++i) {
    const std::string name = "processing[" + std::to_string(i) + "]";
    const json& entry = processing[i];
    if (!entry.is_object()) reader.fail(name, "must be an object, got " + describe(entry));
    const PayloadReader r(entry, "stats", "ranks." + name + ".");
    RankStats rank;
    rank.rank = r.count("rank");
    if (rank.rank >= out.size)
      r.fail("rank", "must be below the run's size " + std::to_string(out.size));
    rank.state = r.string("state");
    rank.error = r.string("error");
    rank.host = r.string("host");
    rank.pid = r.count("pid");
    rank.events_in = r.count("events_in");
    rank.events_processed = r.count("events_processed");
    rank.events_dropped = r.count("events_dropped");
    const json& drops = r.field("drops_by_reason");
    if (!drops.is_object())
      r.fail("drops_by_reason", "must be an object of counts, got " + describe(drops));
    for (const auto& [reason, count] : drops.items())
      rank.drops_by_reason[reason] = r.count_value(count, "drops_by_reason." + reason);
    rank.event_rate_hz = r.number("event_rate_hz");
    rank.elapsed_s = r.number("elapsed_s");
    rank.backend = r.string("backend");
    rank.device = r.string("device");
    rank.report_age_s = r.number("report_age_s");
    out.processing.push_back(std::move(rank));
  }
  return out;
}

}  // namespace livedrp::protocol
