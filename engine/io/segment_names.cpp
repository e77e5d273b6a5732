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

}  // namespace

std::string segment_file_path(const std::string& path, int segment) {
  if (segment == kFirstSegment || path.empty()) return path;
  const std::filesystem::path p(path);
  std::filesystem::path named = p.parent_path() / p.stem();
  named += "." + segment_part(segment) + p.extension().string();
  return named.string();
}

std::string cxi_hit_file_name(std::int64_t run, int segment, std::size_t index) {
  char name[96];
  if (segment == kFirstSegment)
    std::snprintf(name, sizeof name, "run%04lld-hits-%03zu.cxi", static_cast<long long>(run),
                  index);
  else
    std::snprintf(name, sizeof name, "run%04lld-%s-hits-%03zu.cxi", static_cast<long long>(run),
                  segment_part(segment).c_str(), index);
  return name;
}

}  // namespace livedrp::io
