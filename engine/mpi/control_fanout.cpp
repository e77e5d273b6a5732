#include "mpi/control_fanout.hpp"

#include "core/error.hpp"
#include "exec/config_change.hpp"
#include "exec/config_check.hpp"
#include "exec/peak_requests.hpp"
#include "peaks/peak_params.hpp"

namespace livedrp::mpi {

using nlohmann::json;

ControlFanOut::ControlFanOut(EngineConfig config, int size, std::string requested_publish)
    : size_(size), requested_publish_(std::move(requested_publish)), config_(std::move(config)) {}

json ControlFanOut::run_result() const {
  return {{"state", state_}, {"run", config_.run}, {"config", config_.to_json()}};
}

json ControlFanOut::status() {
  const std::lock_guard lock(mutex_);
  json result = run_result();
  result["error"] = error_;
  result["publish"] = config_.publish;
  result["backend_note"] = "MPI run over " + std::to_string(size_) +
                           " ranks; each processing rank's backend is in stats.ranks";
  result["stats"] = stats_;
  // Per-rank state, host, pid and counts; also in stats.ranks, repeated here so that a client
  // need not dig for them.
  result["ranks"] = stats_.contains("ranks") ? stats_.at("ranks") : json(nullptr);
  return result;
}

json ControlFanOut::get_config() {
  const std::lock_guard lock(mutex_);
  return {{"config", config_.to_json()}};
}

EngineConfig ControlFanOut::merged_change(const json& partial) const {
  const std::lock_guard lock(mutex_);
  // The whole validation a configuration gets without building an engine, once, here; what
  // only building one finds (a file missing on a node) the ranks find in the first step.
  EngineConfig next = merge_config_change(config_, partial);
  check_publish_unchanged(next.publish, config_.publish, requested_publish_);
  next.publish = config_.publish;
  // (Echoed only when not the defaults: compared as written.)
  if (next.to_json().value("mpi", json()) != config_.to_json().value("mpi", json()))
    throw InputError(
        "configuration change: section 'mpi' cannot change during an MPI job (its ranks and "
        "their roles are fixed when the job starts); start the job again to change it");
  // Run numbers are never reused, unless the change names one of its own.
  if (next.run == config_.run) next.run = config_.run + 1;
  return next;
}

json ControlFanOut::apply(const json& partial) {
  json result = apply_new_run(merged_change(partial));
  result["restarted"] = true;
  return result;
}

json ControlFanOut::check(const json& partial) {
  const EngineConfig next = merged_change(partial);
  check_engine_config(next);
  const std::lock_guard lock(mutex_);
  return {{"state", state_}, {"run", config_.run}, {"checked", next.to_json()}};
}

json ControlFanOut::apply_new_run(const EngineConfig& next) {
  json result = ask("apply", {{"config", next.to_json()}});
  const std::lock_guard lock(mutex_);
  config_ = next;
  state_ = "running";
  result["state"] = state_;
  result["run"] = config_.run;
  result["config"] = config_.to_json();
  return result;
}

json ControlFanOut::start() {
  EngineConfig next;
  {
    const std::lock_guard lock(mutex_);
    if (state_ == "running") {
      json result = run_result();
      result["started"] = false;  // an MPI run starts with the job
      return result;
    }
    next = config_;
    next.run = config_.run + 1;
  }
  json result = apply_new_run(next);
  result["started"] = true;
  return result;
}

json ControlFanOut::stop() {
  return ask("stop", json::object());
}

json ControlFanOut::replay(const ReplayAction&) {
  throw InputError(
      "replay controls are not available for a run over several MPI ranks: each rank replays "
      "its own share of the events at its own pace");
}

json ControlFanOut::get_peak_params() {
  const std::lock_guard lock(mutex_);
  std::uint64_t version = 0;
  if (const auto p = stats_.find("peak_finding"); p != stats_.end() && p->is_object())
    version = p->value("params_version", std::uint64_t(0));
  return {{"params", peaks::to_json(config_.peak_finding.params)},
          {"params_version", config_.peak_finding.enabled ? version : 0},
          {"enabled", config_.peak_finding.enabled}};
}

json ControlFanOut::set_peak_params(const json& params) {
  peaks::PeakFinderParams merged;
  {
    const std::lock_guard lock(mutex_);
    if (!config_.peak_finding.enabled) throw peak_finding_off_error();
    // The whole validation, once: a set the finder cannot use never leaves the collector.
    merged = merge_peak_params_request(config_.peak_finding.params, params);
  }
  json result = ask("set_peak_params", {{"params", peaks::to_json(merged)}});
  const std::lock_guard lock(mutex_);
  config_.peak_finding.params = merged;
  return result;
}

json ControlFanOut::rerun_peaks(std::optional<std::uint64_t> frames) {
  json fields = json::object();
  {
    const std::lock_guard lock(mutex_);
    if (!config_.peak_finding.enabled) throw peak_finding_off_error();
    check_rerun_frames(config_.peak_finding.recent_frames, frames);
  }
  if (frames) fields["frames"] = *frames;
  return ask("rerun_peaks", std::move(fields));
}

json ControlFanOut::shutdown_result() {
  const std::lock_guard lock(mutex_);
  return run_result();
}

json ControlFanOut::ask(const std::string& name, json fields) {
  std::unique_lock lock(mutex_);
  if (closed_) throw RuntimeFault(closed_reason_);
  const std::uint64_t id = ++next_id_;
  queue_.push_back({id, name, std::move(fields)});
  waiting_[id] = {};
  // No time limit here: the MPI thread answers every request it takes (ranks that do not answer
  // are named missing after mpi.silent_after_s), and close() answers the rest.
  answered_.wait(lock, [&] { return waiting_.at(id).done; });
  Waiting done = std::move(waiting_.at(id));
  waiting_.erase(id);
  if (!done.ok) throw RuntimeFault(done.error);
  return done.result;
}

std::deque<ControlFanOut::Job> ControlFanOut::take_jobs() {
  const std::lock_guard lock(mutex_);
  std::deque<Job> jobs;
  jobs.swap(queue_);
  return jobs;
}

void ControlFanOut::complete(std::uint64_t id, json result) {
  const std::lock_guard lock(mutex_);
  if (const auto it = waiting_.find(id); it != waiting_.end() && !it->second.done) {
    it->second = {true, true, std::move(result), {}};
    answered_.notify_all();
  }
}

void ControlFanOut::fail(std::uint64_t id, const std::string& error) {
  const std::lock_guard lock(mutex_);
  if (const auto it = waiting_.find(id); it != waiting_.end() && !it->second.done) {
    it->second = {true, false, json::object(), error};
    answered_.notify_all();
  }
}

void ControlFanOut::set_merged(const std::string& state, const std::string& error, json stats) {
  const std::lock_guard lock(mutex_);
  state_ = state;
  error_ = error;
  stats_ = std::move(stats);
}

void ControlFanOut::close(const std::string& why) {
  const std::lock_guard lock(mutex_);
  closed_ = true;
  closed_reason_ = why;
  queue_.clear();
  for (auto& [id, waiting] : waiting_)
    if (!waiting.done) waiting = {true, false, json::object(), why};
  answered_.notify_all();
}

}  // namespace livedrp::mpi
