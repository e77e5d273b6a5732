#pragma once
// The control socket's requests on one engine: each one an EngineController call, answered in
// the shapes docs/protocol.md lists.
#include "publish/control_target.hpp"

namespace livedrp {

class EngineController;

class EngineControlTarget : public ControlTarget {
 public:
  explicit EngineControlTarget(EngineController& controller) : controller_(controller) {}

  nlohmann::json status() override;
  nlohmann::json get_config() override;
  nlohmann::json apply(const nlohmann::json& partial) override;
  nlohmann::json check(const nlohmann::json& partial) override;
  nlohmann::json start() override;
  nlohmann::json stop() override;
  nlohmann::json replay(const ReplayAction& action) override;
  nlohmann::json get_peak_params() override;
  nlohmann::json set_peak_params(const nlohmann::json& params) override;
  nlohmann::json rerun_peaks(std::optional<std::uint64_t> frames) override;
  nlohmann::json shutdown_result() override;

 private:
  nlohmann::json run_result() const;  // state, run, config

  EngineController& controller_;
};

}  // namespace livedrp
