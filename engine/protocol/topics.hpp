#pragma once
// Typed payloads of the topics, with their JSON mapping (documented in docs/protocol.md).
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/message.hpp"
// The radial profile topic has its own header; whoever decodes topics gets it here too.
#include "protocol/profile_topic.hpp"
// Likewise the peak-finding topics (`peaks`, `image`) and the `peak_finding` block of `stats`.
#include "protocol/peaks_topic.hpp"
// The process's warnings and errors (`log`).
#include "protocol/log_topic.hpp"
// And the per-rank block of a run of many engines (MPI).
#include "protocol/ranks_block.hpp"

namespace livedrp::protocol {

inline constexpr std::string_view kTopicStats = "stats";
inline constexpr std::string_view kTopicStatus = "status";

struct StageTiming {
  std::string name;    // "calibrate", ...
  double mean_us = 0;  // mean time per event in the last interval
  double max_us = 0;
  double gbps = 0;  // input bytes of the stage per second of stage time
};

// One execution lane of the backend (a CUDA stream; the CPU backend has one).
struct StreamStats {
  std::uint64_t index = 0;
  std::uint64_t in_flight = 0;  // launches submitted and not yet completed, at the snapshot
  std::uint64_t capacity = 0;   // launches this lane can hold in flight
  std::uint64_t completed = 0;  // events completed on this lane since the run started
};

// Per-event compression ratios, binned by log2: bin k counts ratios in [2^(k-1), 2^k), k = 0..10,
// i.e. edges 1/2, 1, 2, ..., 1024. Ratios below 1/2 fall in bin 0 and ratios of 1024 or more in
// bin 10, so every compressed event is counted once. Fixed bins keep intervals comparable.
inline constexpr std::size_t kRatioHistogramBins = 11;
// Lower edge of bin k (the first bin also takes everything below it).
double ratio_histogram_lower_edge(std::size_t bin);
std::size_t ratio_histogram_bin(double ratio);

// Live compression of the last stats interval and of the run so far; present only when the
// engine compresses (pipeline "compression.codec" is not "off").
struct CompressionStats {
  std::string codec;       // "lossless" (raw detector data) or "lossy" (calibrated float32)
  double error_bound = 0;  // absolute, in the calibrated unit; 0 for lossless
  std::uint64_t interval_bytes_in = 0;   // uncompressed bytes of the events of the interval
  std::uint64_t interval_bytes_out = 0;  // their compressed streams
  std::uint64_t total_bytes_in = 0;      // the same since the run started
  std::uint64_t total_bytes_out = 0;
  double interval_ratio = 0;  // interval_bytes_in / interval_bytes_out; NaN when no event
  double gbps = 0;            // interval bytes in per second of compression time (1e9); NaN idem
  std::array<std::uint64_t, kRatioHistogramBins> ratio_histogram{};  // events of the interval
};

// What bounds the processed event rate now: computed by the engine from one stats interval (the
// rule and its thresholds: engine/exec/rate_bound.hpp). `by` is one of the words below or the
// name of a stage of `stages`.
inline constexpr std::string_view kRateBoundIdle = "idle";          // no event in the last second
inline constexpr std::string_view kRateBoundPacing = "pacing";      // the pace, and it is kept
inline constexpr std::string_view kRateBoundSource = "source";      // it cannot fill the ring
inline constexpr std::string_view kRateBoundCopy = "copy";          // host-to-device copies
inline constexpr std::string_view kRateBoundPipeline = "pipeline";  // the lanes, outside any stage
inline constexpr std::string_view kRateBoundUnknown = "unknown";    // no figures to judge by

struct RateBound {
  std::string by;  // one of the words above, or a stage's name
  // The share of its capacity that the element named by `by` uses at the current rate (a stage:
  // rate x mean time / lanes; the copy: bytes per second / measured bandwidth). For "pacing" and
  // "source" it is the pipeline's (the headroom before the pipeline would bound); 0 for "idle";
  // NaN when the interval has no figures to compute it from.
  double busy_fraction = 0;
  std::string why;  // one sentence with the figures behind the verdict
};

// A live detector stream's receiving side (sources "sls:", "dectris:"): every message it got, the
// events it assembled, and the messages it refused by reason. Events it began but could not hand
// on are in drops_by_reason (missing_module, incomplete, cut_by_end, engine_busy).
struct SourceStreamStats {
  std::string kind;  // "sls", "dectris"
  std::uint64_t messages = 0;
  std::uint64_t events = 0;  // assembled and handed to the engine
  std::uint64_t acquisitions = 0;
  std::uint64_t acquisitions_ended = 0;
  std::map<std::string, std::uint64_t> rejected;  // "malformed", "wrong_detector", ...
  std::string last_problem;  // names the endpoint, the message and what was wrong
};

// One of the newest events, for the per-pulse latency view: where its time from the source to
// its result went. `stages` are the pipeline's in order (calibrate first), each with its time on
// its lane; latency_us minus their sum is the time the event waited (queues, reorder, launches).
struct RecentEvent {
  std::uint64_t sequence = 0;
  std::uint64_t pulse_id = 0;
  std::int64_t source_time_ns = 0;  // the doorbell (the source's time stamp), Unix epoch
  double latency_us = 0;            // doorbell to result, as latency_p50_us measures it
  std::vector<std::pair<std::string, double>> stage_us;
};
// The most a `stats` message carries; a decoder refuses more.
inline constexpr std::size_t kMaxRecentEvents = 64;

// `stats`: published a few times a second while a run goes.
struct StatsPayload {
  std::uint64_t events_in = 0;                           // events the source produced
  std::uint64_t events_processed = 0;                    // events through every stage
  std::uint64_t events_dropped = 0;                      // sum of drops_by_reason
  std::map<std::string, std::uint64_t> drops_by_reason;  // "ring_full", ...
  std::uint64_t events_in_flight = 0;  // entered, neither processed nor dropped yet
  std::uint64_t order_errors = 0;      // sequence gaps or pulse ids that did not rise
  double elapsed_s = 0;                // since the run started
  double event_rate_hz = 0;            // processed events per second, over the last second
  double input_gbps = 0;               // raw input bytes per second (1e9), same window
  std::uint64_t ring_slots = 0;
  std::uint64_t ring_occupancy = 0;  // slots holding an event at the time of the snapshot
  std::string backend;               // "cpu" or "cuda"
  std::string device;                // "NVIDIA H200", "CPU (16 threads)", ...
  std::vector<StageTiming> stages;
  // Latency from the doorbell (event written into the ring) to the result leaving the reorder
  // stage, over the events of the last interval; NaN when none.
  double latency_p50_us = 0;
  double latency_p99_us = 0;
  double latency_max_us = 0;
  std::uint64_t reorder_depth = 0;  // completed events held back for an earlier one
  std::vector<StreamStats> streams;
  std::optional<CompressionStats> compression;     // absent: compression off (or an older engine)
  std::optional<PeakFindingStats> peak_finding;    // absent: peak finding off (or an older engine)
  std::optional<RateBound> rate_bound;             // absent: not computed (or an older engine)
  std::optional<SourceStreamStats> source_stream;  // absent: the source is not a live stream
  // Blocks of the stages that run through the stage contract (engine/stages), by stage name;
  // each stage defines its own block. Absent when there are none (or an older engine).
  std::map<std::string, nlohmann::json> stage_stats;
  // A run of many engines (MPI): each rank's own counts; the fields above are their merge.
  // Absent for a single engine (or an older one).
  std::optional<RanksBlock> ranks;
  // The newest events of the interval (at most 16 are sent, newest last). Empty when none
  // completed (or an older engine).
  std::vector<RecentEvent> recent_events;
};

// `status`: on every state change and once a second.
struct StatusPayload {
  std::string state;    // "idle", "starting", "running", "stopping", "finished", "error"
  std::string message;  // human-readable detail (the error text when state is "error")
  std::string source;   // "sim:epix10ka2m", ...
  std::string detector;
  std::string backend;
  std::string device;
  nlohmann::json config = nlohmann::json::object();  // the pipeline configuration in force
};

nlohmann::json to_json(const StatsPayload& stats);
StatsPayload stats_from_json(const nlohmann::json& payload);  // throws ProtocolError
nlohmann::json to_json(const StatusPayload& status);
StatusPayload status_from_json(const nlohmann::json& payload);  // throws ProtocolError

// Message makers: topic and payload filled in, time_ns set to now; run, sequence and pulse_id are
// the caller's.
Message make_stats_message(const StatsPayload& stats);
Message make_status_message(const StatusPayload& status);

}  // namespace livedrp::protocol
