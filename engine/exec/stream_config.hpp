#pragma once
// How the backend runs events: the configuration developers compare (streams, launch mode, batch,
// segments per launch, host thread model, where the source writes events). Part of the pipeline
// JSON under "runtime", echoed in `status` and in every benchmark result.
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace livedrp {

enum class LaunchMode {
  Plain,        // kernels launched from the host for every launch
  Graph,        // the per-launch kernel sequence captured once as a CUDA graph and replayed
  DeviceGraph,  // a device-launched graph that relaunches itself (tail launch): no host per event
  Persistent,   // one resident kernel follows the doorbells
};
enum class SegmentsPerLaunch { All, One };            // whole detector, or one segment per launch
enum class HostThreadModel { OneForAll, PerStream };  // host threads that retire completions
enum class SourcePlacement { Host, Device };   // ring in pinned host memory, or in GPU memory
enum class FaultPolicy { Stop, FallbackCpu };  // on a device fault during a run

struct StreamConfig {
  int streams = 1;           // CUDA streams, 1..16; the CPU backend has one lane
  int slots_per_stream = 4;  // launches in flight per stream, 1..64 (buffers allocated once)
  LaunchMode launch = LaunchMode::Plain;
  int batch = 1;  // K events per launch, 1..64; K = 1 is the default and must be fast
  SegmentsPerLaunch segments = SegmentsPerLaunch::All;
  HostThreadModel host_threads = HostThreadModel::OneForAll;
  SourcePlacement source = SourcePlacement::Host;
  FaultPolicy on_fault = FaultPolicy::Stop;

  bool operator==(const StreamConfig&) const = default;
};

std::string_view to_string(LaunchMode value);
std::string_view to_string(SegmentsPerLaunch value);
std::string_view to_string(HostThreadModel value);
std::string_view to_string(SourcePlacement value);
std::string_view to_string(FaultPolicy value);

nlohmann::json to_json(const StreamConfig& config);
// Strict: unknown keys, wrong types and out-of-range values throw InputError naming
// "<origin>: field 'runtime.<key>'" and the allowed values.
StreamConfig stream_config_from_json(const nlohmann::json& json, const std::string& origin);
// A short label for tables and plot legends, e.g. "4 streams, graph, K=1, all segments".
std::string describe(const StreamConfig& config);

}  // namespace livedrp
