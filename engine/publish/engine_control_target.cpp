#include "publish/engine_control_target.hpp"

#include "exec/engine_controller.hpp"
#include "publish/control_replies.hpp"

namespace livedrp {

using nlohmann::json;

json EngineControlTarget::run_result() const {
  return {{"state", controller_.state()},
          {"run", controller_.run()},
          {"config", controller_.config().to_json()}};
}

json EngineControlTarget::status() {
  const RunSummary summary = controller_.summary();
  return {{"state", controller_.state()},
          {"run", controller_.run()},
          {"error", summary.error},
          {"publish", controller_.publish_endpoint()},
          {"backend_note", controller_.backend_note()},
          {"stats", protocol::to_json(summary.stats)},
          {"replay", replay_json(controller_.replay_status())},
          {"record", record_json(controller_.record_status())},
          {"write", write_json(controller_.write_status())},
          {"write_segments", write_segments_json(controller_.write_segments())},
          {"config", controller_.config().to_json()}};
}

json EngineControlTarget::get_config() {
  return {{"config", controller_.config().to_json()}};
}

json EngineControlTarget::apply(const json& partial) {
  const bool restarted = controller_.apply_json(partial);
  json result = run_result();
  result["restarted"] = restarted;
  return result;
}

json EngineControlTarget::check(const json& partial) {
  const EngineConfig checked = controller_.check_json(partial);
  return {
      {"state", controller_.state()}, {"run", controller_.run()}, {"checked", checked.to_json()}};
}

json EngineControlTarget::start() {
  const bool started = controller_.start();
  json result = run_result();
  result["started"] = started;
  return result;
}

json EngineControlTarget::stop() {
  controller_.stop();
  json result = run_result();
  result["stats"] = protocol::to_json(controller_.summary().stats);
  return result;
}

json EngineControlTarget::replay(const ReplayAction& action) {
  // The engine refuses controls on a source that is no replay with an InputError naming it;
  // "status" answers for any source (active: false), so a GUI can poll without knowing.
  if (action.action == "pause") controller_.pause();
  if (action.action == "resume") controller_.resume();
  if (action.action == "step") controller_.step(action.delta);
  if (action.action == "seek") controller_.seek(action.index);
  return {{"state", controller_.state()},
          {"run", controller_.run()},
          {"replay", replay_json(controller_.replay_status())},
          {"record", record_json(controller_.record_status())}};
}

json EngineControlTarget::get_peak_params() {
  return controller_.peak_params_json();
}

json EngineControlTarget::set_peak_params(const json& params) {
  return controller_.set_peak_params(params);
}

json EngineControlTarget::rerun_peaks(std::optional<std::uint64_t> frames) {
  return controller_.rerun_peaks(frames);
}

json EngineControlTarget::shutdown_result() {
  return run_result();
}

}  // namespace livedrp
