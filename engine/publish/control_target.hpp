#pragma once
// What a control socket drives (docs/protocol.md, "Control socket"): one engine through its
// EngineController (engine_control_target.hpp), or a run over many MPI ranks through its
// collector (mpi/control_fanout.hpp). The ControlServer checks every request's envelope and
// fields before it calls one of these, so each target gets only well-formed requests and both
// answer them in the same shapes. A method throws InputError (the request is refused, with the
// reason) or RuntimeFault (it failed); the server turns either into the error reply.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace livedrp {

// The "replay" request's action and its argument, checked by the server: `delta` goes only with
// "step" (non-zero), `index` only with "seek".
struct ReplayAction {
  std::string action;  // status, pause, resume, step, seek
  std::int64_t delta = 1;
  std::uint64_t index = 0;
};

class ControlTarget {
 public:
  virtual ~ControlTarget() = default;

  virtual nlohmann::json status() = 0;
  virtual nlohmann::json get_config() = 0;
  // `partial`: a configuration change, merged key by key into the configuration in force
  // ("apply", and "set_runtime" / "set_calibration" as {"runtime": ...} / {"calibration": ...}).
  virtual nlohmann::json apply(const nlohmann::json& partial) = 0;
  // "check": what apply(partial) would apply, merged and checked as it is, against the detector
  // too (exec/config_check.hpp), without applying it; nothing changes.
  virtual nlohmann::json check(const nlohmann::json& partial) = 0;
  virtual nlohmann::json start() = 0;
  virtual nlohmann::json stop() = 0;
  virtual nlohmann::json replay(const ReplayAction& action) = 0;
  virtual nlohmann::json get_peak_params() = 0;
  virtual nlohmann::json set_peak_params(const nlohmann::json& params) = 0;
  virtual nlohmann::json rerun_peaks(std::optional<std::uint64_t> frames) = 0;
  // The answer to "shutdown" (the server notes the request; its host ends the run).
  virtual nlohmann::json shutdown_result() = 0;
};

}  // namespace livedrp
