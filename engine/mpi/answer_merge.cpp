#include "mpi/answer_merge.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace livedrp::mpi {
namespace {

using json = nlohmann::json;

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int rank : ranks) out += (out.empty() ? "" : ", ") + std::to_string(rank);
  return out;
}

// Throws when a rank refused or failed: the request is then not in force everywhere, and the
// operator needs to know where it is.
void refuse_on_rank_errors(const std::vector<RankAnswer>& answers,
                           const std::vector<int>& missing) {
  std::string errors;
  std::vector<int> applied;
  for (const RankAnswer& answer : answers) {
    if (answer.ok)
      applied.push_back(answer.rank);
    else
      errors += (errors.empty() ? "" : "; ") +
                ("rank " + std::to_string(answer.rank) + ": " + answer.error);
  }
  if (errors.empty()) return;
  std::string text = errors + " (it took effect on " +
                     (applied.empty() ? std::string("no rank") : "ranks " + rank_list(applied));
  if (!missing.empty()) text += "; ranks " + rank_list(missing) + " did not answer";
  throw RuntimeFault(text + ")");
}

std::uint64_t field(const json& result, const char* name) {
  return result.at(name).get<std::uint64_t>();
}

}  // namespace

json merge_peak_params_answers(const json& params, const std::vector<RankAnswer>& answers,
                               const std::vector<int>& missing) {
  refuse_on_rank_errors(answers, missing);
  std::uint64_t version = 0;
  json ranks = json::array();
  for (const RankAnswer& answer : answers) {
    const std::uint64_t v = field(answer.result, "params_version");
    version = std::max(version, v);
    ranks.push_back({{"rank", answer.rank}, {"params_version", v}});
  }
  return {{"params", params},
          {"params_version", version},
          {"enabled", true},
          {"ranks", ranks},
          {"missing_ranks", missing}};
}

json merge_rerun_answers(const std::vector<RankAnswer>& answers, const std::vector<int>& missing,
                         std::optional<protocol::EventPeaks>& newest_hit) {
  refuse_on_rank_errors(answers, missing);
  struct Frame {
    std::uint64_t sequence, pulse_id, found;
  };
  std::vector<Frame> frames;
  std::uint64_t hits = 0, version = 0;
  json ranks = json::array();
  json newest = nullptr;
  newest_hit.reset();
  for (const RankAnswer& answer : answers) {
    const json& r = answer.result;
    const auto sequences = r.at("sequences").get<std::vector<std::uint64_t>>();
    const auto pulse_ids = r.at("pulse_ids").get<std::vector<std::uint64_t>>();
    const auto found = r.at("peaks_per_frame").get<std::vector<std::uint64_t>>();
    if (pulse_ids.size() != sequences.size() || found.size() != sequences.size())
      throw RuntimeFault("rank " + std::to_string(answer.rank) +
                         "'s re-run answer has lists of unequal length");
    for (std::size_t k = 0; k < sequences.size(); ++k)
      frames.push_back({sequences[k], pulse_ids[k], found[k]});
    hits += field(r, "hits");
    version = std::max(version, field(r, "params_version"));
    ranks.push_back({{"rank", answer.rank},
                     {"frames", sequences.size()},
                     {"hits", field(r, "hits")},
                     {"params_version", field(r, "params_version")}});
    if (answer.newest_hit && (!newest_hit || answer.newest_hit->pulse_id > newest_hit->pulse_id)) {
      newest_hit = answer.newest_hit;
      newest = {{"rank", answer.rank},
                {"sequence", answer.newest_hit->sequence},
                {"pulse_id", answer.newest_hit->pulse_id},
                {"found", answer.newest_hit->found}};
    }
  }
  std::sort(frames.begin(), frames.end(),
            [](const Frame& a, const Frame& b) { return a.sequence < b.sequence; });
  json sequences = json::array(), pulse_ids = json::array(), found = json::array();
  std::uint64_t peaks = 0;
  for (const Frame& f : frames) {
    sequences.push_back(f.sequence);
    pulse_ids.push_back(f.pulse_id);
    found.push_back(f.found);
    peaks += f.found;
  }
  return {{"frames", frames.size()},   {"hits", hits},           {"peaks", peaks},
          {"peaks_per_frame", found},  {"sequences", sequences}, {"pulse_ids", pulse_ids},
          {"params_version", version}, {"newest_hit", newest},   {"ranks", ranks},
          {"missing_ranks", missing}};
}

}  // namespace livedrp::mpi
