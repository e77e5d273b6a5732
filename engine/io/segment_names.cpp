#include "io/segment_names.hpp"

#include <cstdio>
#include <filesystem>

namespace livedrp::io {
namespace {

std::string segment_part(int segment) {
  char part[32];
  std::snprintf(part, sizeof part, "seg%03d", segment);
  return part;
}

// ".PART" before the extension of the file name (at its end when it has none).
std::string with_part(const std::string& path, const std::string& part) {
  const std::filesystem::path p(path);
  std::filesystem::path named = p.parent_path() / p.stem();
  named += "." + part + p.extension().string();
  return named.string();
}

std::string rank_part(int rank) {
  char part[32];
  std::snprintf(part, sizeof part, "rank%03d", rank);
  return part;
}

}  // namespace

std::string segment_file_path(const std::string& path, int segment) {
  if (segment == kFirstSegment || path.empty()) return path;
  return with_part(path, segment_part(segment));
}

std::string rank_file_path(const std::string& path, int rank) {
  if (rank == kNoRank || path.empty()) return path;
  return with_part(path, rank_part(rank));
}

std::string writer_file_path(const std::string& path, int rank, int segment) {
  return segment_file_path(rank_file_path(path, rank), segment);
}

std::string rank_name_part(int rank) {
  return rank == kNoRank ? "" : "-" + rank_part(rank);
}

std::string cxi_hit_file_name(std::int64_t run, int segment, std::size_t index, int rank) {
  char name[128];
  const std::string segment_name = segment == kFirstSegment ? "" : "-" + segment_part(segment);
  std::snprintf(name, sizeof name, "run%04lld%s%s-hits-%03zu.cxi", static_cast<long long>(run),
                rank_name_part(rank).c_str(), segment_name.c_str(), index);
  return name;
}

}  // namespace livedrp::io
