#include "exec/stream_config.hpp"

#include <array>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_input.hpp"

namespace livedrp {
namespace {

using nlohmann::json;

// Name tables: the JSON spelling of each choice, in enum order.
constexpr std::array<std::string_view, 4> kLaunchNames{"plain", "graph", "device_graph",
                                                       "persistent"};
constexpr std::array<std::string_view, 2> kSegmentsNames{"all", "one"};
constexpr std::array<std::string_view, 2> kThreadNames{"one_for_all", "per_stream"};
constexpr std::array<std::string_view, 2> kSourceNames{"host", "device"};
constexpr std::array<std::string_view, 2> kFaultNames{"stop", "fallback_cpu"};

constexpr int kMaxStreams = 16;
constexpr int kMaxSlotsPerStream = 64;
constexpr int kMaxBatch = 64;

template <typename Enum, std::size_t N>
Enum parse_choice(const json& object, const char* key, Enum current,
                  const std::array<std::string_view, N>& names, const std::string& origin) {
  auto it = object.find(key);
  if (it == object.end()) return current;
  std::string allowed;
  for (auto name : names) allowed += (allowed.empty() ? "" : ", ") + std::string(name);
  if (!it->is_string())
    throw InputError(origin + ": field 'runtime." + key + "' must be one of " + allowed + ", got " +
                     it->dump());
  for (std::size_t i = 0; i < N; ++i)
    if (it->get<std::string>() == names[i]) return Enum(i);
  throw InputError(origin + ": field 'runtime." + key + "' must be one of " + allowed + ", got \"" +
                   it->get<std::string>() + "\"");
}

int parse_int(const json& object, const char* key, int current, int minimum, int maximum,
              const std::string& origin) {
  auto it = object.find(key);
  if (it == object.end()) return current;
  if (!it->is_number_integer() || it->get<long long>() < minimum || it->get<long long>() > maximum)
    throw InputError(origin + ": field 'runtime." + key + "' must be an integer in " +
                     std::to_string(minimum) + ".." + std::to_string(maximum) + ", got " +
                     it->dump());
  return it->get<int>();
}

}  // namespace

std::string_view to_string(LaunchMode value) {
  return kLaunchNames[std::size_t(value)];
}
std::string_view to_string(SegmentsPerLaunch value) {
  return kSegmentsNames[std::size_t(value)];
}
std::string_view to_string(HostThreadModel value) {
  return kThreadNames[std::size_t(value)];
}
std::string_view to_string(SourcePlacement value) {
  return kSourceNames[std::size_t(value)];
}
std::string_view to_string(FaultPolicy value) {
  return kFaultNames[std::size_t(value)];
}

json to_json(const StreamConfig& c) {
  return {{"streams", c.streams},
          {"slots_per_stream", c.slots_per_stream},
          {"launch", std::string(to_string(c.launch))},
          {"batch", c.batch},
          {"segments_per_launch", std::string(to_string(c.segments))},
          {"host_threads", std::string(to_string(c.host_threads))},
          {"source", std::string(to_string(c.source))},
          {"on_fault", std::string(to_string(c.on_fault))}};
}

StreamConfig stream_config_from_json(const json& object, const std::string& origin) {
  if (!object.is_object())
    throw InputError(origin + ": field 'runtime' must be a JSON object, got " +
                     json_excerpt(object));
  static const std::set<std::string> known{
      "streams",      "slots_per_stream", "launch",  "batch", "segments_per_launch",
      "host_threads", "source",           "on_fault"};
  for (auto it = object.begin(); it != object.end(); ++it)
    if (!known.count(it.key()))
      throw InputError(origin + ": unknown field 'runtime." + it.key() + "'");
  StreamConfig c;
  c.streams = parse_int(object, "streams", c.streams, 1, kMaxStreams, origin);
  c.slots_per_stream =
      parse_int(object, "slots_per_stream", c.slots_per_stream, 1, kMaxSlotsPerStream, origin);
  c.launch = parse_choice(object, "launch", c.launch, kLaunchNames, origin);
  c.batch = parse_int(object, "batch", c.batch, 1, kMaxBatch, origin);
  c.segments = parse_choice(object, "segments_per_launch", c.segments, kSegmentsNames, origin);
  c.host_threads = parse_choice(object, "host_threads", c.host_threads, kThreadNames, origin);
  c.source = parse_choice(object, "source", c.source, kSourceNames, origin);
  c.on_fault = parse_choice(object, "on_fault", c.on_fault, kFaultNames, origin);
  return c;
}

std::string describe(const StreamConfig& c) {
  std::string text = std::to_string(c.streams) + (c.streams == 1 ? " stream, " : " streams, ");
  text += std::string(to_string(c.launch)) + ", K=" + std::to_string(c.batch);
  text += c.segments == SegmentsPerLaunch::All ? ", all segments" : ", one segment per launch";
  if (c.host_threads == HostThreadModel::PerStream) text += ", thread per stream";
  if (c.source == SourcePlacement::Device) text += ", device-resident source";
  return text;
}

}  // namespace livedrp
