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

nlohmann::json writer_json(const WriterStatus& w) {
  return {{"written", w.written}, {"dropped", w.dropped},
          {"failed", w.failed},   {"peaks_left_out", w.peaks_left_out},
          {"error", w.error},     {"files", w.files}};
}

nlohmann::json write_json(const WriteStatus& s) {
  nlohmann::json out = nlohmann::json::object();
  if (s.hits.active) out["hits"] = writer_json(s.hits);
  if (s.profiles.active) out["profiles"] = writer_json(s.profiles);
  if (s.average.active) out["average"] = writer_json(s.average);
  return out;
}

nlohmann::json write_segments_json(const std::vector<WriteSegment>& segments) {
  nlohmann::json out = nlohmann::json::array();
  for (const WriteSegment& segment : segments) {
    out.push_back({{"run", segment.run},
                   {"segment", segment.segment},
                   {"events_processed", segment.events_processed},
                   {"hits", segment.hits},
                   {"write", write_json(segment.status)}});
  }
  return out;
}

}  // namespace livedrp
