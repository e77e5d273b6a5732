#pragma once
// One reply from the answers of many ranks (docs/mpi.md, "Control"): what an MPI run's collector
// answers a request it fanned out. `missing`: the ranks asked that did not answer (lost, or
// silent past mpi.silent_after_s); the reply names them and merges what did answer. A rank that
// answered with an error makes the whole reply an error (RuntimeFault) naming that rank, its
// reason and the ranks where the request did take effect. No MPI here.
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "mpi/rank_requests.hpp"

namespace livedrp::mpi {

// set_peak_params: get_peak_params' shape ({"params", "params_version", "enabled"}) with
// `params` the collector's validated set and `params_version` the highest a rank reports,
// plus "ranks" ([{"rank", "params_version"}]) and "missing_ranks".
nlohmann::json merge_peak_params_answers(const nlohmann::json& params,
                                         const std::vector<RankAnswer>& answers,
                                         const std::vector<int>& missing);

// rerun_peaks: one engine's reply over all ranks' kept frames: "frames", "hits" and "peaks"
// summed, "sequences", "pulse_ids" and "peaks_per_frame" merged in sequence order (every event
// keeps its run-wide index as its sequence), "params_version" the highest, "newest_hit" (rank,
// sequence, pulse_id, found of the hit with the highest pulse id; null when none), "ranks"
// ([{"rank", "frames", "hits", "params_version"}]) and "missing_ranks". `newest_hit` receives
// that hit's peaks, for the collector to publish.
nlohmann::json merge_rerun_answers(const std::vector<RankAnswer>& answers,
                                   const std::vector<int>& missing,
                                   std::optional<protocol::EventPeaks>& newest_hit);

}  // namespace livedrp::mpi
