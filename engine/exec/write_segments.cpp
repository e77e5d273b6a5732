#include "exec/write_segments.hpp"

#include <filesystem>
#include <system_error>

#include "core/error.hpp"
#include "io/segment_names.hpp"

namespace livedrp {
namespace {

std::string file_key(const std::filesystem::path& path) {
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return (error ? path : absolute).lexically_normal().string();
}

}  // namespace

bool any_writer(const WriteStatus& s) {
  return s.hits.active || s.profiles.active || s.average.active;
}

std::string write_file_list(const WriteStatus& s) {
  std::string list;
  for (const WriterStatus* w : {&s.hits, &s.profiles, &s.average})
    for (const std::string& file : w->files) list += (list.empty() ? "" : ", ") + file;
  return list;
}

WriteSegment write_segment_of(const Engine& engine) {
  const EngineConfig& c = engine.config();
  const protocol::StatsPayload stats = engine.summary().stats;
  return {c.run, c.write.segment, stats.events_processed,
          stats.peak_finding ? stats.peak_finding->total_hits : 0, engine.write_status()};
}

std::vector<std::string> WriteSegments::first_files(const WriteConfig& write, std::int64_t run,
                                                    int segment, int rank) {
  std::vector<std::string> files;
  if (!write.hits_directory.empty())
    files.push_back(file_key(std::filesystem::path(write.hits_directory) /
                             io::cxi_hit_file_name(run, segment, 0, rank)));
  if (!write.profiles.empty())
    files.push_back(file_key(io::writer_file_path(write.profiles, rank, segment)));
  if (!write.average.empty())
    files.push_back(file_key(io::writer_file_path(write.average, rank, segment)));
  return files;
}

void WriteSegments::choose(EngineConfig& config) const {
  WriteConfig& write = config.write;
  write.segment = io::kFirstSegment;
  if (!write.enabled()) return;
  auto taken = [this, &config](int segment) {
    for (const std::string& file : first_files(config.write, config.run, segment, config.mpi.rank))
      if (created_.count(file)) return true;
    return false;
  };
  while (taken(write.segment)) {
    if (write.segment >= WriteConfig::kMaxSegment)
      throw InputError("write: every segment up to " + std::to_string(WriteConfig::kMaxSegment) +
                       " of these files was written by this engine; choose other paths");
    ++write.segment;
  }
}

void WriteSegments::note_created(const EngineConfig& config) {
  if (!config.write.enabled()) return;
  for (const std::string& file :
       first_files(config.write, config.run, config.write.segment, config.mpi.rank))
    created_.insert(file);
}

}  // namespace livedrp
