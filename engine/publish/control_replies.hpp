#pragma once
// The parts of control replies that more than one target writes (docs/protocol.md, "status").
#include <nlohmann/json.hpp>

#include "exec/engine.hpp"

namespace livedrp {

nlohmann::json replay_json(const ReplayStatus& status);
nlohmann::json record_json(const RecordStatus& status);

}  // namespace livedrp
