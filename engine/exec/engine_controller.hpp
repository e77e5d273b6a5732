#pragma once
// Run control over one Engine at a time: the object the control socket and the GUI's engine host
// drive. It owns the current Engine, its configuration, and one Publisher made once from
// config.publish and kept across engine restarts, so subscribers stay connected while the
// configuration changes. No Qt.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/engine.hpp"
#include "exec/write_segments.hpp"

namespace livedrp {

class Publisher;

class EngineController {
 public:
  // Binds the publisher (config.publish; nothing when empty) and builds the first Engine, not
  // started. Throws InputError naming the field or endpoint that is wrong.
  explicit EngineController(EngineConfig config);
  ~EngineController();  // stops and drains the run
  EngineController(const EngineController&) = delete;
  EngineController& operator=(const EngineController&) = delete;

  // Starts a run. If one is going, does nothing. If the current engine already ran (finished,
  // stopped or failed), a new engine with the same configuration and run number + 1 starts.
  // Returns true when a run was started by this call.
  bool start();
  // Stops the source and waits until the events in flight are drained (the run's books balance:
  // in = processed + dropped). Does nothing when no run is going.
  void stop();
  // Replaces the configuration. The new engine is built first, so a configuration that is refused
  // (InputError naming the field) leaves the running one untouched. If a run is going it is stopped
  // and drained, and the new one starts with run number = previous + 1. If the current engine has
  // already run, the new one gets run number + 1 too (run numbers are never reused), unless the
  // configuration names another run number. Changing "publish" is refused: the endpoint is fixed
  // for the controller's life (the value given or the endpoint as bound are both accepted as
  // unchanged). Returns true when a run was restarted.
  bool apply(const EngineConfig& config);
  // Merges `partial` (a JSON object) into the current configuration's JSON, as a merge patch: only
  // the given keys change, and the configuration's sections ("runtime", "calibration",
  // "simulator", "compression", "fidelity", "replay", "record", "integration", "peak_finding" with
  // its "params", "image", "write") merge key by key; then reads it with EngineConfig::from_json
  // (strict) and applies it. Throws InputError.
  bool apply_json(const nlohmann::json& partial);
  // What apply_json(partial) would apply, merged and read as it does and checked against the
  // detector as building its engine would (check_engine_config), without building one: nothing
  // changes, no run stops. Returns the configuration an apply would put in force (its run number
  // as in force). Throws InputError naming the field, in the engine's words.
  EngineConfig check_json(const nlohmann::json& partial) const;

  EngineConfig config() const;  // in force; "publish" is the endpoint as bound
  // The live writers ("write") of every run this controller started, oldest first, the current
  // run's as they are now; runs without writers are not listed. Each engine's write.segment is
  // the first segment whose files no engine of this controller has created (so a restart writes
  // new names derived from the configured ones, and a file from elsewhere is still refused as
  // existing); an engine replaced before it started removes its files, which hold nothing.
  std::vector<WriteSegment> write_segments() const;
  WriteStatus write_status() const;  // the current engine's writers
  // "idle" (built, not started), "running" (started, not finished: includes starting and
  // draining), "finished", or "error" (the run stopped on a fault: summary().error says why).
  std::string state() const;
  std::int64_t run() const;
  RunSummary summary() const;            // of the current (or last) run
  std::string publish_endpoint() const;  // as bound; empty when publishing nothing
  std::string backend_note() const;      // why the current engine's backend runs

  // Replay controls on the current engine (Engine::pause, resume, step, seek): for the GUI's
  // transport bar and, later, the control socket. Throw InputError when the source is no replay.
  void pause();
  void resume();
  void step(std::int64_t delta = 1);
  void seek(std::uint64_t index);
  ReplayStatus replay_status() const;
  // The current engine's recording (Engine::record_status): inactive when "record" is off.
  RecordStatus record_status() const;

  // Live peak finding on the current engine, for the control socket's get_peak_params,
  // set_peak_params and rerun_peaks and the GUI's tuning panel; the results are those requests'
  // results (docs/protocol.md).
  // {"params": {every parameter}, "params_version": N, "enabled": bool}
  nlohmann::json peak_params_json() const;
  // `partial`: some parameters by name (or {"params": {...}}), merged onto those in force,
  // checked, applied to the run without restarting it, and kept in the configuration in force.
  // Returns peak_params_json(). Throws InputError with the reason (peak finding off, unknown
  // name, bad value).
  nlohmann::json set_peak_params(const nlohmann::json& partial);
  // The parameters in force over the newest `frames` kept frames (all kept when nullopt), each
  // published as a `peaks` message with rerun true. {"frames": n, "hits": h, "peaks_per_frame":
  // [...], "sequences": [...], "params_version": v}. Throws InputError.
  nlohmann::json rerun_peaks(std::optional<std::uint64_t> frames);

  // Installed on every engine this controller builds from now on (and the current one); called
  // on the engine's reporter thread at each stats interval.
  void set_progress_callback(std::function<void(const protocol::StatsPayload&)> callback);

 private:
  struct Current {
    std::shared_ptr<Engine> engine;
    bool started = false;
  };
  Current current() const;
  bool apply_locked(const EngineConfig& config);  // operation_mutex_ held
  std::shared_ptr<Engine> build(const EngineConfig& config) const;
  // Sets config.write.segment (the first free one), builds, and notes the files it created.
  std::shared_ptr<Engine> build_segment(EngineConfig& config);
  // Of an engine that was current and is replaced: a started one's writers (nullopt when it
  // had none or never started), which join the finished segments.
  static std::optional<WriteSegment> finished_segment(const Current& old);
  // A replaced engine that never started is released and its (empty) files removed.
  static void discard_unstarted(Current old);

  std::string requested_publish_;         // config.publish as first given
  std::shared_ptr<Publisher> publisher_;  // null when publishing nothing

  std::mutex operation_mutex_;      // serialises start, stop and apply (they block for a while)
  mutable std::mutex state_mutex_;  // guards the fields below; held only briefly
  EngineConfig config_;
  Current current_;
  std::vector<WriteSegment> finished_segments_;  // of the started engines replaced so far
  WriteSegments segments_;  // the segments of every engine built; operation_mutex_
  std::function<void(const protocol::StatsPayload&)> progress_;
};

}  // namespace livedrp
