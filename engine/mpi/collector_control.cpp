#include "mpi/collector_control.hpp"

#include <algorithm>
#include <thread>

#include <spdlog/spdlog.h>

#include "mpi/answer_merge.hpp"
#include "mpi/mpi_session.hpp"
#include "mpi/mpi_tags.hpp"

namespace livedrp::mpi {
namespace {

// How long a rank may take to build the engine of an apply: building one (detector constants,
// a GPU's set-up) takes seconds, and a rank still reporting meanwhile is not lost. One that is
// (its reports stop) is named missing at once.
constexpr auto kEngineBuildLimit = std::chrono::seconds(120);

}  // namespace

CollectorControl::CollectorControl(ControlFanOut& fanout, std::vector<int> processing,
                                   RankEngines* own, Clock::duration answer_limit, Hooks hooks)
    : fanout_(fanout),
      processing_(std::move(processing)),
      own_(own),
      answer_limit_(answer_limit),
      hooks_(std::move(hooks)) {}

CollectorControl::~CollectorControl() {
  for (Send& send : sends_)
    if (send.request != MPI_REQUEST_NULL) MPI_Request_free(&send.request);
}

CollectorControl::Round& CollectorControl::send_round(ControlFanOut::Job job, Step step,
                                                      const std::string& request_name,
                                                      const nlohmann::json& fields,
                                                      const std::vector<int>& ranks,
                                                      Clock::time_point now) {
  Round& round = rounds_.emplace_back();
  round.step = step;
  round.deadline = now + answer_limit_;
  const RankRequest request{job.id, request_name, fields};
  round.job = std::move(job);
  for (int rank : ranks) {
    if (rank == kCollectorRank) {
      // The collector's own share: answered here, between two passes of its loop.
      round.answers.push_back(answer_request(*own_, rank, request));
      continue;
    }
    Send& send = sends_.emplace_back();
    send.rank = rank;
    send.bytes = encode_request(request);
    check(MPI_Isend(send.bytes.data(), int(send.bytes.size()), MPI_BYTE, rank, kTagRequest,
                    MPI_COMM_WORLD, &send.request),
          "sending a control request to a rank");
    ++owed_[rank];
    round.awaiting.insert(rank);
  }
  return round;
}

void CollectorControl::begin(ControlFanOut::Job job, const Collector& merge,
                             Clock::time_point now) {
  if (job.name == "stop") {
    if (!stop_sent_) hooks_.stop_run();
    stop_sent_ = true;
    stops_.push_back(std::move(job));
    return;
  }
  std::vector<int> there, lost;
  for (int rank : processing_) (merge.lost(rank) ? lost : there).push_back(rank);
  const bool apply = job.name == "apply";
  const std::string name = apply ? "prepare_apply" : job.name;
  const nlohmann::json fields =
      apply ? nlohmann::json{{"config", job.fields.at("config")}} : job.fields;
  Round& round =
      send_round(std::move(job), apply ? Step::Prepare : Step::Single, name, fields, there, now);
  round.absent = lost;
  if (apply) round.deadline = now + std::max<Clock::duration>(answer_limit_, kEngineBuildLimit);
}

namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int rank : ranks) out += (out.empty() ? "" : ", ") + std::to_string(rank);
  return out;
}

}  // namespace

void CollectorControl::next_apply_step(Round& round, Clock::time_point now) {
  std::vector<int> ready;
  std::string errors;
  for (const RankAnswer& answer : round.answers) {
    if (answer.ok)
      ready.push_back(answer.rank);
    else
      errors += (errors.empty() ? "" : "; ") +
                ("rank " + std::to_string(answer.rank) + ": " + answer.error);
  }
  std::sort(ready.begin(), ready.end());
  if (!round.missing.empty())
    errors += (errors.empty() ? "" : "; ") + ("ranks " + rank_list(round.missing) +
                                              " did not answer (lost, or silent past their time)");
  switch (round.step) {
    case Step::Prepare:
      if (errors.empty()) {
        Round& commit = send_round(std::move(round.job), Step::Commit, "commit_apply",
                                   nlohmann::json::object(), ready, now);
        commit.absent = round.absent;
      } else if (ready.empty()) {
        fanout_.fail(round.job.id, errors + " (no rank changed its run)");
      } else {
        const std::string failure = errors + " (no rank changed its run)";
        Round& discard = send_round(std::move(round.job), Step::Discard, "discard_apply",
                                    nlohmann::json::object(), ready, now);
        discard.failure = failure;
      }
      return;
    case Step::Commit: {
      const EngineConfig config = EngineConfig::from_json(round.job.fields.at("config"), "apply");
      processing_ = ready;
      hooks_.new_run(config, ready);
      stop_sent_ = false;
      if (!errors.empty()) {
        fanout_.fail(round.job.id,
                     errors + " (the new run goes on ranks " + rank_list(ready) + " only)");
        return;
      }
      nlohmann::json ranks = nlohmann::json::array();
      for (int rank : ready) ranks.push_back(rank);
      fanout_.complete(round.job.id, {{"ranks", ranks}, {"missing_ranks", round.absent}});
      return;
    }
    case Step::Discard:
      fanout_.fail(round.job.id, round.failure);
      return;
    case Step::Single:
      return;
  }
}

bool CollectorControl::take_answers() {
  bool any = false;
  for (;;) {
    int flag = 0;
    MPI_Message message;
    MPI_Status status;
    check(MPI_Improbe(MPI_ANY_SOURCE, kTagAnswer, MPI_COMM_WORLD, &flag, &message, &status),
          "probing for control answers");
    if (!flag) return any;
    int count = 0;
    check(MPI_Get_count(&status, MPI_BYTE, &count), "sizing a control answer");
    std::vector<std::uint8_t> bytes(std::size_t(std::max(count, 0)));
    check(MPI_Mrecv(bytes.data(), count, MPI_BYTE, &message, &status),
          "receiving a control answer");
    any = true;
    const int from = status.MPI_SOURCE;
    if (owed_[from] > 0) --owed_[from];
    RankAnswer answer;
    try {
      answer = decode_answer(bytes, from);
    } catch (const std::exception& e) {
      // That rank's answer is lost; the request names it missing when its time is up.
      spdlog::error("MPI collector: {}", e.what());
      continue;
    }
    for (Round& round : rounds_)
      if (round.job.id == answer.id && round.awaiting.erase(from)) {
        round.answers.push_back(std::move(answer));
        break;
      }
    // Otherwise a late answer to a request already replied to: dropped.
  }
}

void CollectorControl::reply(Round& round) {
  try {
    std::sort(round.answers.begin(), round.answers.end(),
              [](const RankAnswer& a, const RankAnswer& b) { return a.rank < b.rank; });
    if (!round.missing.empty())
      spdlog::warn("MPI collector: request '{}' answered without ranks {}, which did not answer",
                   round.job.name, rank_list(round.missing));
    round.missing.insert(round.missing.end(), round.absent.begin(), round.absent.end());
    std::sort(round.missing.begin(), round.missing.end());
    if (round.job.name == "set_peak_params") {
      fanout_.complete(round.job.id, merge_peak_params_answers(round.job.fields.at("params"),
                                                               round.answers, round.missing));
    } else if (round.job.name == "rerun_peaks") {
      std::optional<protocol::EventPeaks> newest;
      nlohmann::json result = merge_rerun_answers(round.answers, round.missing, newest);
      if (newest && hooks_.publish_peaks) hooks_.publish_peaks(*newest);
      fanout_.complete(round.job.id, std::move(result));
    } else {
      fanout_.fail(round.job.id, "request '" + round.job.name + "' has no fan-out");
    }
  } catch (const std::exception& e) {
    fanout_.fail(round.job.id, e.what());
  }
}

void CollectorControl::test_sends() {
  for (auto it = sends_.begin(); it != sends_.end();) {
    int done = 0;
    check(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "testing a control request's send");
    it = done ? sends_.erase(it) : std::next(it);
  }
}

void CollectorControl::poll(const Collector& merge, Clock::time_point now) {
  for (ControlFanOut::Job& job : fanout_.take_jobs()) begin(std::move(job), merge, now);
  take_answers();
  test_sends();
  for (auto it = rounds_.begin(); it != rounds_.end();) {
    for (auto rank = it->awaiting.begin(); rank != it->awaiting.end();) {
      if (merge.lost(*rank) || now >= it->deadline) {
        it->missing.push_back(*rank);
        rank = it->awaiting.erase(rank);
      } else {
        ++rank;
      }
    }
    if (!it->awaiting.empty()) {
      ++it;
      continue;
    }
    if (it->step == Step::Single)
      reply(*it);
    else
      next_apply_step(*it, now);
    it = rounds_.erase(it);
  }
  if (!stops_.empty() && merge.all_final()) {
    const nlohmann::json result = hooks_.stop_result();
    for (const ControlFanOut::Job& job : stops_) fanout_.complete(job.id, result);
    stops_.clear();
  }
}

void CollectorControl::finish(const Collector& merge, const std::string& why) {
  fanout_.close(why);
  for (Round& round : rounds_) fanout_.fail(round.job.id, why);
  for (const ControlFanOut::Job& job : stops_) fanout_.fail(job.id, why);
  rounds_.clear();
  stops_.clear();
  const auto until = Clock::now() + answer_limit_;
  for (;;) {
    bool owed = false;
    for (const auto& [rank, count] : owed_)
      if (count > 0 && !merge.lost(rank)) owed = true;
    if (!owed || Clock::now() >= until) break;
    if (!take_answers()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  test_sends();
  for (Send& send : sends_)
    if (!merge.lost(send.rank) && owed_[send.rank] == 0)
      check(MPI_Wait(&send.request, MPI_STATUS_IGNORE), "completing a control request's send");
}

}  // namespace livedrp::mpi
