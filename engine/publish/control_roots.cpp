#include "publish/control_roots.hpp"

#include "core/error.hpp"
#include "io/array_file.hpp"
#include "replay/replay_source.hpp"

namespace livedrp {
namespace {

namespace fs = std::filesystem;

// `path` inside `root` (both resolved): every component of the root is a prefix of the path's.
bool inside(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

const nlohmann::json* member(const nlohmann::json& object, const char* section, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto s = object.find(section);
  if (s == object.end() || !s->is_object()) return nullptr;
  const auto k = s->find(key);
  return k == s->end() || !k->is_string() ? nullptr : &*k;
}

}  // namespace

ControlRoots::ControlRoots(const std::vector<std::string>& roots) {
  for (const std::string& root : roots) {
    std::error_code error;
    const fs::path resolved = fs::canonical(root, error);
    if (error || !fs::is_directory(resolved))
      throw InputError("--control-root '" + root + "' is not an existing folder");
    roots_.push_back(resolved);
  }
}

void ControlRoots::check(const std::string& field, const std::string& path) const {
  if (!confined()) return;
  std::error_code error;
  const fs::path resolved = fs::weakly_canonical(fs::absolute(path), error);
  if (!error)
    for (const fs::path& root : roots_)
      if (inside(resolved, root)) return;
  std::string allowed;
  for (const fs::path& root : roots_) allowed += (allowed.empty() ? "" : ", ") + root.string();
  throw InputError(field + " '" + path + "' is outside the folders this control socket may name (" +
                   allowed + "; --control-root)");
}

std::vector<std::pair<std::string, std::string>> ControlRoots::paths_in(
    const nlohmann::json& config) {
  std::vector<std::pair<std::string, std::string>> paths;
  if (!config.is_object()) return paths;
  if (const auto source = config.find("source"); source != config.end() && source->is_string()) {
    const std::string& text = source->get_ref<const std::string&>();
    if (text.rfind("replay:", 0) == 0)
      for (const fs::path& file : replay::parse_replay_source(text).files)
        paths.emplace_back("source", file.string());
  }
  if (const auto constants = config.find("constants_file");
      constants != config.end() && constants->is_string() && !constants->get<std::string>().empty())
    paths.emplace_back("constants_file", constants->get<std::string>());
  if (const auto* directory = member(config, "record", "directory"))
    if (!directory->get<std::string>().empty())
      paths.emplace_back("record.directory", directory->get<std::string>());
  if (const auto* poni = member(config, "integration", "poni"))
    if (!poni->get<std::string>().empty() && poni->get<std::string>().rfind("builtin:", 0) != 0)
      paths.emplace_back("integration.poni", poni->get<std::string>());
  for (const auto& [section, key] :
       {std::pair{"integration", "mask"}, std::pair{"peak_finding", "mask"},
        std::pair{"peak_finding", "radius_map"}})
    if (const auto* array = member(config, section, key))
      if (!array->get<std::string>().empty())
        paths.emplace_back(std::string(section) + "." + key,
                           io::parse_array_location(array->get<std::string>()).file.string());
  // A detector is a built-in name or a description file (.json).
  for (const char* section : {"replay", "stream"})
    if (const auto* detector = member(config, section, "detector")) {
      const std::string& text = detector->get_ref<const std::string&>();
      if (fs::path(text).extension() == ".json")
        paths.emplace_back(std::string(section) + ".detector", text);
    }
  return paths;
}

void ControlRoots::check_configuration(const nlohmann::json& config) const {
  if (!confined()) return;
  for (const auto& [field, path] : paths_in(config)) check(field, path);
}

}  // namespace livedrp
