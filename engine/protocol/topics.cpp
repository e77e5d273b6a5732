#include "protocol/topics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "protocol/payload_reader.hpp"

namespace livedrp::protocol {

namespace {

using detail::describe;
using detail::now_ns;
using detail::number_or_null;
using detail::PayloadReader;
using nlohmann::json;

const std::set<std::string> kCompressionCodecs = {"lossless", "lossy"};

json to_json(const CompressionStats& compression) {
  json histogram = json::array();
  for (const std::uint64_t count : compression.ratio_histogram) histogram.push_back(count);
  return {{"codec", compression.codec},
          {"error_bound", number_or_null(compression.error_bound)},
          {"interval_bytes_in", compression.interval_bytes_in},
          {"interval_bytes_out", compression.interval_bytes_out},
          {"total_bytes_in", compression.total_bytes_in},
          {"total_bytes_out", compression.total_bytes_out},
          {"interval_ratio", number_or_null(compression.interval_ratio)},
          {"gbps", number_or_null(compression.gbps)},
          {"ratio_histogram", std::move(histogram)}};
}

CompressionStats compression_from_json(const PayloadReader& parent, const json& object) {
  if (!object.is_object()) parent.fail("compression", "must be an object, got " + describe(object));
  const PayloadReader reader(object, parent.topic(), "compression.");
  CompressionStats compression;
  compression.codec = reader.string("codec");
  if (!kCompressionCodecs.count(compression.codec))
    reader.fail("codec", "must be \"lossless\" or \"lossy\", got " + describe(object.at("codec")));
  compression.error_bound = reader.number("error_bound");
  if (compression.codec == "lossy" &&
      !(std::isfinite(compression.error_bound) && compression.error_bound > 0))
    reader.fail("error_bound", "must be finite and > 0 for the lossy codec");
  compression.interval_bytes_in = reader.count("interval_bytes_in");
  compression.interval_bytes_out = reader.count("interval_bytes_out");
  compression.total_bytes_in = reader.count("total_bytes_in");
  compression.total_bytes_out = reader.count("total_bytes_out");
  if (compression.interval_bytes_in > compression.total_bytes_in ||
      compression.interval_bytes_out > compression.total_bytes_out)
    reader.fail("interval_bytes_in", "and interval_bytes_out cannot exceed the run's totals");
  compression.interval_ratio = reader.number("interval_ratio");
  compression.gbps = reader.number("gbps");
  const json& histogram = reader.field("ratio_histogram");
  if (!histogram.is_array() || histogram.size() != kRatioHistogramBins)
    reader.fail("ratio_histogram", "must be an array of " + std::to_string(kRatioHistogramBins) +
                                       " counts, got " + describe(histogram));
  for (std::size_t bin = 0; bin < kRatioHistogramBins; ++bin)
    compression.ratio_histogram[bin] =
        reader.count_value(histogram[bin], "ratio_histogram[" + std::to_string(bin) + "]");
  return compression;
}

json to_json(const RateBound& bound) {
  return {
      {"by", bound.by}, {"busy_fraction", number_or_null(bound.busy_fraction)}, {"why", bound.why}};
}

RateBound rate_bound_from_json(const PayloadReader& parent, const json& object) {
  if (!object.is_object()) parent.fail("rate_bound", "must be an object, got " + describe(object));
  const PayloadReader reader(object, parent.topic(), "rate_bound.");
  RateBound bound;
  bound.by = reader.string("by");
  if (bound.by.empty()) reader.fail("by", "must name what bounds the rate, got an empty string");
  bound.busy_fraction = reader.number("busy_fraction");  // null (not measured) reads as NaN
  if (!std::isnan(bound.busy_fraction) && !(bound.busy_fraction >= 0))
    reader.fail("busy_fraction",
                "must be a number >= 0 or null, got " + describe(object.at("busy_fraction")));
  bound.why = reader.string("why");
  return bound;
}

json to_json(const SourceStreamStats& source) {
  json rejected = json::object();
  for (const auto& [reason, count] : source.rejected) rejected[reason] = count;
  return {{"kind", source.kind},
          {"messages", source.messages},
          {"events", source.events},
          {"acquisitions", source.acquisitions},
          {"acquisitions_ended", source.acquisitions_ended},
          {"rejected", std::move(rejected)},
          {"last_problem", source.last_problem}};
}

SourceStreamStats source_stream_from_json(const PayloadReader& parent, const json& object) {
  if (!object.is_object())
    parent.fail("source_stream", "must be an object, got " + describe(object));
  const PayloadReader reader(object, parent.topic(), "source_stream.");
  SourceStreamStats source;
  source.kind = reader.string("kind");
  source.messages = reader.count("messages");
  source.events = reader.count("events");
  source.acquisitions = reader.count("acquisitions");
  source.acquisitions_ended = reader.count("acquisitions_ended");
  const json& rejected = reader.field("rejected");
  if (!rejected.is_object())
    reader.fail("rejected", "must be an object of counts by reason, got " + describe(rejected));
  for (const auto& [reason, count] : rejected.items())
    source.rejected[reason] = reader.count_value(count, "rejected." + reason);
  source.last_problem = reader.string("last_problem");
  return source;
}

}  // namespace

double ratio_histogram_lower_edge(std::size_t bin) {
  return std::ldexp(1.0, int(bin) - 1);
}

std::size_t ratio_histogram_bin(double ratio) {
  if (!(ratio >= 1.0)) return 0;  // below 1 (and NaN) are in the first bin, [1/2, 1)
  const int exponent = int(std::floor(std::log2(ratio))) + 1;
  return std::size_t(std::min<int>(exponent, int(kRatioHistogramBins) - 1));
}

json to_json(const StatsPayload& stats) {
  json stages = json::array();
  for (const StageTiming& stage : stats.stages) {
    stages.push_back({{"name", stage.name},
                      {"mean_us", number_or_null(stage.mean_us)},
                      {"max_us", number_or_null(stage.max_us)},
                      {"gbps", number_or_null(stage.gbps)}});
  }
  json drops = json::object();
  for (const auto& [reason, count] : stats.drops_by_reason) drops[reason] = count;
  json streams = json::array();
  for (const StreamStats& stream : stats.streams) {
    streams.push_back({{"index", stream.index},
                       {"in_flight", stream.in_flight},
                       {"capacity", stream.capacity},
                       {"completed", stream.completed}});
  }

  json payload = {{"events_in", stats.events_in},
                  {"events_processed", stats.events_processed},
                  {"events_dropped", stats.events_dropped},
                  {"drops_by_reason", std::move(drops)},
                  {"events_in_flight", stats.events_in_flight},
                  {"order_errors", stats.order_errors},
                  {"elapsed_s", number_or_null(stats.elapsed_s)},
                  {"event_rate_hz", number_or_null(stats.event_rate_hz)},
                  {"input_gbps", number_or_null(stats.input_gbps)},
                  {"ring_slots", stats.ring_slots},
                  {"ring_occupancy", stats.ring_occupancy},
                  {"backend", stats.backend},
                  {"device", stats.device},
                  {"stages", std::move(stages)},
                  {"latency_p50_us", number_or_null(stats.latency_p50_us)},
                  {"latency_p99_us", number_or_null(stats.latency_p99_us)},
                  {"latency_max_us", number_or_null(stats.latency_max_us)},
                  {"reorder_depth", stats.reorder_depth},
                  {"streams", std::move(streams)}};
  if (stats.compression) payload["compression"] = to_json(*stats.compression);
  if (stats.peak_finding) payload["peak_finding"] = to_json(*stats.peak_finding);
  if (stats.rate_bound) payload["rate_bound"] = to_json(*stats.rate_bound);
  if (stats.source_stream) payload["source_stream"] = to_json(*stats.source_stream);
  if (!stats.stage_stats.empty()) {
    json blocks = json::object();
    for (const auto& [name, block] : stats.stage_stats) blocks[name] = block;
    payload["stage_stats"] = std::move(blocks);
  }
  if (stats.ranks) payload["ranks"] = to_json(*stats.ranks);
  if (!stats.recent_events.empty()) {
    json recent = json::array();
    for (const RecentEvent& event : stats.recent_events) {
      json stage_list = json::array();
      for (const auto& [name, us] : event.stage_us)
        stage_list.push_back({{"name", name}, {"us", number_or_null(us)}});
      recent.push_back({{"sequence", event.sequence},
                        {"pulse_id", event.pulse_id},
                        {"source_time_ns", event.source_time_ns},
                        {"latency_us", number_or_null(event.latency_us)},
                        {"stages", std::move(stage_list)}});
    }
    payload["recent_events"] = std::move(recent);
  }
  return payload;
}

StatsPayload stats_from_json(const json& payload) {
  const PayloadReader reader(payload, std::string(kTopicStats));
  reader.require_object("the payload");

  StatsPayload stats;
  stats.events_in = reader.count("events_in");
  stats.events_processed = reader.count("events_processed");
  stats.events_dropped = reader.count("events_dropped");
  stats.events_in_flight = reader.count("events_in_flight");
  stats.order_errors = reader.count("order_errors");
  stats.elapsed_s = reader.number("elapsed_s");
  stats.event_rate_hz = reader.number("event_rate_hz");
  stats.input_gbps = reader.number("input_gbps");
  stats.ring_slots = reader.count("ring_slots");
  stats.ring_occupancy = reader.count("ring_occupancy");
  stats.backend = reader.string("backend");
  stats.device = reader.string("device");

  const json& drops = reader.field("drops_by_reason");
  if (!drops.is_object()) {
    reader.fail("drops_by_reason", "must be an object of counts, got " + describe(drops));
  }
  for (const auto& [reason, count] : drops.items()) {
    stats.drops_by_reason[reason] = reader.count_value(count, "drops_by_reason." + reason);
  }

  const json& stages = reader.field("stages");
  if (!stages.is_array()) reader.fail("stages", "must be an array, got " + describe(stages));
  stats.stages.reserve(stages.size());
  for (std::size_t index = 0; index < stages.size(); ++index) {
    const std::string name = "stages[" + std::to_string(index) + "]";
    const json& entry = stages[index];
    if (!entry.is_object()) reader.fail(name, "must be an object, got " + describe(entry));
    const PayloadReader stage_reader(entry, reader.topic(), name + ".");
    StageTiming stage;
    stage.name = stage_reader.string("name");
    stage.mean_us = stage_reader.number("mean_us");
    stage.max_us = stage_reader.number("max_us");
    stage.gbps = stage_reader.number("gbps");
    stats.stages.push_back(std::move(stage));
  }
  stats.latency_p50_us = reader.number("latency_p50_us");
  stats.latency_p99_us = reader.number("latency_p99_us");
  stats.latency_max_us = reader.number("latency_max_us");
  stats.reorder_depth = reader.count("reorder_depth");
  const json& streams = reader.field("streams");
  if (!streams.is_array()) reader.fail("streams", "must be an array, got " + describe(streams));
  for (std::size_t index = 0; index < streams.size(); ++index) {
    const std::string name = "streams[" + std::to_string(index) + "]";
    const json& entry = streams[index];
    if (!entry.is_object()) reader.fail(name, "must be an object, got " + describe(entry));
    const PayloadReader stream_reader(entry, reader.topic(), name + ".");
    StreamStats stream;
    stream.index = stream_reader.count("index");
    stream.in_flight = stream_reader.count("in_flight");
    stream.capacity = stream_reader.count("capacity");
    stream.completed = stream_reader.count("completed");
    stats.streams.push_back(stream);
  }
  // Optional: engines with compression off, and engines older than it, send no block.
  if (const auto block = payload.find("compression"); block != payload.end())
    stats.compression = compression_from_json(reader, *block);
  // Optional likewise: present only when the pipeline finds peaks.
  if (const auto block = payload.find("peak_finding"); block != payload.end())
    stats.peak_finding = peak_finding_stats_from_json(*block);
  // Optional likewise: engines older than it send no verdict.
  if (const auto block = payload.find("rate_bound"); block != payload.end())
    stats.rate_bound = rate_bound_from_json(reader, *block);
  // Optional likewise: present only when the source is a live detector stream.
  if (const auto block = payload.find("source_stream"); block != payload.end())
    stats.source_stream = source_stream_from_json(reader, *block);
  // Optional likewise: engines older than it send none.
  if (const auto recent = payload.find("recent_events"); recent != payload.end()) {
    if (!recent->is_array())
      reader.fail("recent_events", "must be an array, got " + describe(*recent));
    if (recent->size() > kMaxRecentEvents)
      reader.fail("recent_events", "has " + std::to_string(recent->size()) + " entries, more than " +
                                       std::to_string(kMaxRecentEvents));
    for (std::size_t index = 0; index < recent->size(); ++index) {
      const std::string name = "recent_events[" + std::to_string(index) + "]";
      const json& entry = (*recent)[index];
      if (!entry.is_object()) reader.fail(name, "must be an object, got " + describe(entry));
      const PayloadReader event_reader(entry, reader.topic(), name + ".");
      RecentEvent event;
      event.sequence = event_reader.count("sequence");
      event.pulse_id = event_reader.count("pulse_id");
      const json& time = event_reader.field("source_time_ns");
      if (!time.is_number_integer())
        event_reader.fail("source_time_ns", "must be an integer, got " + describe(time));
      event.source_time_ns = time.get<std::int64_t>();
      event.latency_us = event_reader.number("latency_us");
      const json& stage_list = event_reader.field("stages");
      if (!stage_list.is_array() || stage_list.size() > 64)
        event_reader.fail("stages", "must be an array of at most 64 stages, got " +
                                        describe(stage_list));
      for (std::size_t k = 0; k < stage_list.size(); ++k) {
        const PayloadReader stage_reader(stage_list[k], reader.topic(),
                                         name + ".stages[" + std::to_string(k) + "].");
        stage_reader.require_object("a stage");
        event.stage_us.emplace_back(stage_reader.string("name"), stage_reader.number("us"));
      }
      stats.recent_events.push_back(std::move(event));
    }
  }
  // Optional likewise: present only when stages of the stage contract report; each block is the
  // stage's own JSON object.
  if (const auto blocks = payload.find("stage_stats"); blocks != payload.end()) {
    if (!blocks->is_object())
      reader.fail("stage_stats", "must be an object of stage blocks, got " + describe(*blocks));
    for (const auto& [name, block] : blocks->items()) {
      if (!block.is_object())
        reader.fail("stage_stats." + name, "must be an object, got " + describe(block));
      stats.stage_stats[name] = block;
    }
  }
  // Optional likewise: present only for a run of many engines (MPI).
  if (const auto block = payload.find("ranks"); block != payload.end())
    stats.ranks = ranks_block_from_json(*block);
  return stats;
}

json to_json(const StatusPayload& status) {
  return {{"state", status.state},       {"message", status.message}, {"source", status.source},
          {"detector", status.detector}, {"backend", status.backend}, {"device", status.device},
          {"config", status.config}};
}

StatusPayload status_from_json(const json& payload) {
  const PayloadReader reader(payload, std::string(kTopicStatus));
  reader.require_object("the payload");

  StatusPayload status;
  status.state = reader.string("state");
  status.message = reader.string("message");
  status.source = reader.string("source");
  status.detector = reader.string("detector");
  status.backend = reader.string("backend");
  status.device = reader.string("device");
  const json& config = reader.field("config");
  if (!config.is_object()) reader.fail("config", "must be an object, got " + describe(config));
  status.config = config;
  return status;
}

Message make_stats_message(const StatsPayload& stats) {
  Message message;
  message.topic = std::string(kTopicStats);
  message.time_ns = now_ns();
  message.payload = to_json(stats);
  return message;
}

Message make_status_message(const StatusPayload& status) {
  Message message;
  message.topic = std::string(kTopicStatus);
  message.time_ns = now_ns();
  message.payload = to_json(status);
  return message;
}

}  // namespace livedrp::protocol
