#pragma once
// The control socket of an MPI run (docs/mpi.md, "Control"): the ControlTarget the collector's
// ControlServer drives. It validates each request once, on the collector, against the
// configuration in force, so that a request that is wrong gets one clear error and reaches no
// rank; a valid one is queued for the collector's MPI thread (the only thread that talks MPI),
// which sends it to every processing rank and completes it with the merged answers
// (collector_control.hpp). The control server's thread waits for that; the MPI thread never waits
// for it. status, get_config and get_peak_params are answered here from what the MPI thread last
// merged, without asking any rank. No MPI here.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "exec/engine.hpp"
#include "publish/control_target.hpp"

namespace livedrp::mpi {

class ControlFanOut : public ControlTarget {
 public:
  // `config`: the run's, as every rank read it, with publish as the collector bound it;
  // `requested_publish`: publish as given (an apply may name either).
  ControlFanOut(EngineConfig config, int size, std::string requested_publish = {});

  // ControlTarget, on the control server's thread.
  nlohmann::json status() override;
  nlohmann::json get_config() override;
  // A new run on every rank with the change (the collector's merge starts again), validated here
  // first; "mpi" cannot change (the job's ranks and roles are fixed).
  nlohmann::json apply(const nlohmann::json& partial) override;
  // The same merge and validation as apply, then check_engine_config here on the collector (every
  // rank has the same detector): no rank is asked, nothing changes.
  nlohmann::json check(const nlohmann::json& partial) override;
  // A run going: nothing ("started": false). After the run has ended: a new run with the same
  // configuration and the next run number on every rank.
  nlohmann::json start() override;
  nlohmann::json stop() override;
  nlohmann::json replay(const ReplayAction& action) override;
  nlohmann::json get_peak_params() override;
  nlohmann::json set_peak_params(const nlohmann::json& params) override;
  nlohmann::json rerun_peaks(std::optional<std::uint64_t> frames) override;
  nlohmann::json shutdown_result() override;

  // A validated request for the MPI thread: "stop", "set_peak_params", "rerun_peaks" or "apply"
  // (fields {"config": the whole new configuration, its run number set}).
  struct Job {
    std::uint64_t id = 0;
    std::string name;
    nlohmann::json fields = nlohmann::json::object();
  };
  // On the MPI thread. The requests queued since the last call, in order.
  std::deque<Job> take_jobs();
  // The reply's result to the request `id`, or its error (the control server adds "request
  // 'NAME' failed: ").
  void complete(std::uint64_t id, nlohmann::json result);
  void fail(std::uint64_t id, const std::string& error);
  // What status answers: state ("running", "finished", "error"), the run's fault ("" if none) and
  // the merged cumulative `stats` payload with its `ranks` block (protocol::to_json).
  void set_merged(const std::string& state, const std::string& error, nlohmann::json stats);
  // The run is ending: every request still waiting fails with `why`, and so does every later one.
  void close(const std::string& why);

 private:
  // Queues a job and waits for the MPI thread's answer; throws RuntimeFault with its error.
  nlohmann::json ask(const std::string& name, nlohmann::json fields);
  nlohmann::json run_result() const;  // mutex_ held
  // `partial` merged into the configuration in force and checked as an apply takes it (no
  // "mpi" change, publish unchanged), with the next run number.
  EngineConfig merged_change(const nlohmann::json& partial) const;
  // Fans `next` out as a new run; on success it is the configuration in force.
  nlohmann::json apply_new_run(const EngineConfig& next);

  struct Waiting {
    bool done = false;
    bool ok = false;
    nlohmann::json result;
    std::string error;
  };

  const int size_;
  const std::string requested_publish_;
  mutable std::mutex mutex_;
  std::condition_variable answered_;
  EngineConfig config_;  // in force: set_peak_params changes its parameters
  std::string state_ = "running", error_;
  nlohmann::json stats_ = nlohmann::json::object();
  std::deque<Job> queue_;
  std::map<std::uint64_t, Waiting> waiting_;
  std::uint64_t next_id_ = 0;
  bool closed_ = false;
  std::string closed_reason_;
};

}  // namespace livedrp::mpi
