#pragma once
// The InputError text a configuration or an engine construction gives, or an empty string when it
// is accepted: what the engine suites compare against the field they expect to be named.
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
