#pragma once
// The parts of control replies that more than one target writes (docs/protocol.md, "status").
#include <nlohmann/json.hpp>

#include "exec/engine.hpp"
#include "exec/engine_controller.hpp"

namespace livedrp {

nlohmann::json replay_json(const ReplayStatus& status);
nlohmann::json record_json(const RecordStatus& status);
// One live writer: written, dropped, failed, peaks_left_out, error, files.
nlohmann::json writer_json(const WriterStatus& status);
// The active writers by name ("hits", "profiles", "average"); {} when none writes.
nlohmann::json write_json(const WriteStatus& status);
// Each segment as {"run", "segment", "events_processed", "hits", "write": write_json}, oldest
// first.
nlohmann::json write_segments_json(const std::vector<WriteSegment>& segments);

}  // namespace livedrp
