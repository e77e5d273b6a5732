#pragma once
// The collector's side of an MPI run's control requests (docs/mpi.md, "Control"), on its MPI
// thread: it takes the requests ControlFanOut validated, sends each to every processing rank
// still there (non-blocking; a processing collector answers its own share at once), gathers the
// answers, and replies with them merged (answer_merge.hpp) once every rank asked has answered,
// is lost, or has been silent for the answer limit; those are named in the reply as missing. A
// "stop" stops every rank's engine (the collector's own stop path) and is answered when every
// rank has ended or is lost. An "apply" goes in two steps: every rank still there builds the new
// engine (prepare_apply); only when all could do they stop their runs and start the new one
// (commit_apply), and the collector's merge starts again for the new run; when one could not,
// those that built it drop it (discard_apply) and the reply names the rank and its reason.
// Ranks already lost take no part and are named missing. Nothing here waits for a rank.
#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include <mpi.h>

#include "mpi/collector.hpp"
#include "mpi/control_fanout.hpp"
#include "mpi/rank_requests.hpp"

namespace livedrp::mpi {

class CollectorControl {
 public:
  using Clock = std::chrono::steady_clock;
  struct Hooks {
    std::function<void()> stop_run;               // stop every rank's engine (once is enough)
    std::function<nlohmann::json()> stop_result;  // the reply to "stop" once the run has ended
    std::function<void(const protocol::EventPeaks&)> publish_peaks;  // a re-run's newest hit
    // An apply took effect: `ranks` run `config` now (the merge starts again over them).
    std::function<void(const EngineConfig& config, const std::vector<int>& ranks)> new_run;
  };
  // `own`: the collector's engines when it takes a share (mpi.collector "processing").
  CollectorControl(ControlFanOut& fanout, std::vector<int> processing, RankEngines* own,
                   Clock::duration answer_limit, Hooks hooks);
  ~CollectorControl();  // lets go of sends that never completed (their rank is gone)
  CollectorControl(const CollectorControl&) = delete;
  CollectorControl& operator=(const CollectorControl&) = delete;

  // One pass: new requests out, answers in, complete requests answered. Throws RuntimeFault on a
  // failure of MPI itself.
  void poll(const Collector& merge, Clock::time_point now);
  // After the last request: fails what is still waiting with `why`, then takes the answers that
  // ranks still there owe (so that no message is left unmatched when they leave), each rank for
  // at most the answer limit.
  void finish(const Collector& merge, const std::string& why);

 private:
  // What a round is for: one request answered by every rank, or a step of an apply.
  enum class Step { Single, Prepare, Commit, Discard };
  struct Round {
    ControlFanOut::Job job;
    Step step = Step::Single;
    std::string failure;  // Discard: the reply's error once the ranks have dropped the engine
    std::set<int> awaiting;
    std::vector<RankAnswer> answers;
    std::vector<int> missing;  // asked, and did not answer (lost or silent meanwhile)
    std::vector<int> absent;   // lost before the request: not asked
    Clock::time_point deadline;
  };
  struct Send {
    int rank = 0;
    std::vector<std::uint8_t> bytes;  // MPI reads them until the send completes
    MPI_Request request = MPI_REQUEST_NULL;
  };

  void begin(ControlFanOut::Job job, const Collector& merge, Clock::time_point now);
  // Sends `request` to `ranks` (answering the collector's own share at once) as a new round.
  Round& send_round(ControlFanOut::Job job, Step step, const std::string& request_name,
                    const nlohmann::json& fields, const std::vector<int>& ranks,
                    Clock::time_point now);
  void next_apply_step(Round& round, Clock::time_point now);
  void reply(Round& round);
  bool take_answers();  // true when one came
  void test_sends();

  ControlFanOut& fanout_;
  std::vector<int> processing_;
  RankEngines* own_;
  Clock::duration answer_limit_;
  Hooks hooks_;
  std::list<Round> rounds_;
  std::vector<ControlFanOut::Job> stops_;  // answered when the run has ended
  bool stop_sent_ = false;
  std::list<Send> sends_;
  std::map<int, std::uint64_t> owed_;  // answers each rank still owes, late ones included
};

}  // namespace livedrp::mpi
