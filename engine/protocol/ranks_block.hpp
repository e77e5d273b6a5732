#pragma once
// The `ranks` block of `stats` (docs/protocol.md): a run of many engines under MPI (engine/mpi)
// publishes its merged counts with the usual fields of `stats` and adds, here, what each engine
// (rank) last reported to the collector. Absent for a single engine.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace livedrp::protocol {

// States of a rank as the collector sees it.
inline constexpr const char* kRankWaiting = "waiting";    // no report from it yet
inline constexpr const char* kRankRunning = "running";    // it reports, its run goes on
inline constexpr const char* kRankFinished = "finished";  // its final report came
inline constexpr const char* kRankFailed = "error";       // its run stopped on a fault
// Silent past mpi.silent_after_s: the process or its node is gone (its last counts are kept).
inline constexpr const char* kRankLost = "lost";

struct RankStats {
  std::uint64_t rank = 0;
  std::string state = kRankWaiting;
  std::string error;      // why it failed or was lost; empty otherwise
  std::string host;       // where it runs (MPI_Get_processor_name); empty before its first report
  std::uint64_t pid = 0;  // its process id there; 0 before its first report
  std::uint64_t events_in = 0;
  std::uint64_t events_processed = 0;
  std::uint64_t events_dropped = 0;
  std::map<std::string, std::uint64_t> drops_by_reason;
  double event_rate_hz = 0;  // between its last two reports; NaN before the second
  double elapsed_s = 0;      // its run's, at its last report
  std::string backend;
  std::string device;
  double report_age_s = 0;  // since the collector last heard from it
};

struct RanksBlock {
  std::uint64_t size = 0;       // ranks of the run (MPI_COMM_WORLD)
  std::uint64_t collector = 0;  // the rank that merges and publishes
  bool collector_processes = false;
  std::vector<RankStats> processing;  // the ranks that take a share, by rank
};

nlohmann::json to_json(const RanksBlock& block);
RanksBlock ranks_block_from_json(const nlohmann::json& block);  // throws ProtocolError

}  // namespace livedrp::protocol
