#pragma once
// The InputError text a configuration or an engine construction (or any action) gives, or an
// empty string when it is accepted: what the suites compare against the field they expect named.
#include <functional>
#include <string>

#include <QString>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "exec/engine.hpp"

inline QString config_error(const nlohmann::json& json) {
  try {
    livedrp::EngineConfig::from_json(json, "test.json");
  } catch (const livedrp::InputError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

inline QString construction_error(const livedrp::EngineConfig& config) {
  try {
    livedrp::Engine engine(config);
  } catch (const livedrp::InputError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

// The text of the `Error` that `action` throws; empty when it throws none.
template <typename Error = livedrp::InputError>
std::string thrown_text(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}
