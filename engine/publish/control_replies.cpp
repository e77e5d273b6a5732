#include "publish/control_replies.hpp"

namespace livedrp {

nlohmann::json replay_json(const ReplayStatus& s) {
  return {{"active", s.active},
          {"position", s.position},
          {"handed", s.handed},
          {"total_events", s.total_events},
          {"loops", s.loops},
          {"paused", s.paused},
          {"pace", s.pace},
          {"pace_note", s.pace_note},
          {"disk_wait_s", s.disk_wait_s},
          {"pipeline_wait_s", s.pipeline_wait_s},
          {"read_gbps", s.read_gbps},
          {"limited_by", s.limited_by},
          {"read_errors", s.read_errors},
          {"skipped_files", s.skipped_files}};
}

nlohmann::json record_json(const RecordStatus& s) {
  return {{"active", s.active}, {"events", s.events}, {"dropped", s.dropped},
          {"failed", s.failed}, {"error", s.error},   {"files", s.files}};
}

}  // namespace livedrp
