#pragma once
// The control requests an MPI run's collector fans out to its processing ranks (docs/mpi.md,
// "Control"), and each rank's answer. The collector validates a request once, against the
// configuration in force, before any rank sees it (control_fanout.hpp); a rank applies it to its
// own engine with the code one engine's control socket uses (exec/peak_requests.hpp). No MPI
// here: these are the messages' contents and what a rank does with them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/engine.hpp"
#include "mpi/rank_engines.hpp"

namespace livedrp::mpi {

// What the collector sends: `id` pairs the answers with the request.
//   {"id": N, "request": "set_peak_params", "params": {every parameter}}
//   {"id": N, "request": "rerun_peaks", "frames": F}  (frames absent: all kept)
//   {"id": N, "request": "prepare_apply", "config": {the whole configuration, run number set}}
//   {"id": N, "request": "commit_apply"} / {"id": N, "request": "discard_apply"}
// (an apply in two steps: every rank builds the new engine first, and only when all could does
// any rank stop its run for it; rank_engines.hpp)
struct RankRequest {
  std::uint64_t id = 0;
  std::string name;
  nlohmann::json fields = nlohmann::json::object();
};

// One rank's answer: ok and the result its engine gave (the single engine's reply shape), or the
// engine's error. A rerun's newest hit travels beside the result (the collector publishes the
// newest over the ranks).
struct RankAnswer {
  std::uint64_t id = 0;
  int rank = 0;
  bool ok = false;
  nlohmann::json result = nlohmann::json::object();
  std::string error;
  std::optional<protocol::EventPeaks> newest_hit;
};

std::vector<std::uint8_t> encode_request(const RankRequest& request);
// Throws RuntimeFault naming what is wrong.
RankRequest decode_request(const std::vector<std::uint8_t>& bytes);
std::vector<std::uint8_t> encode_answer(const RankAnswer& answer);
// Throws RuntimeFault naming `from_rank` and what is wrong.
RankAnswer decode_answer(const std::vector<std::uint8_t>& bytes, int from_rank);

// Applies `request` to this rank's engine; every failure is the answer's error, never a throw.
// A prepare_apply is answered once the new engine is built (RankControl answers it later instead,
// so that its rank goes on reporting meanwhile).
RankAnswer answer_request(RankEngines& engines, int rank, const RankRequest& request);

}  // namespace livedrp::mpi
