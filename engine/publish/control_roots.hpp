#pragma once
// The folders a control socket's clients may name files in (`livedrp-engine run --control-root
// DIR`, repeatable): with roots configured, every file or folder a control request names (the
// replay source, constants, the recording folder, PONI, masks and radius maps, detector
// descriptions, the file replay_candidates lists) must resolve inside one of them, so a client
// that reaches the socket cannot make the engine read, create or overwrite files elsewhere.
// Without roots any path is taken, as from the operator's own command line.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace livedrp {

class ControlRoots {
 public:
  ControlRoots() = default;
  // Throws InputError for a root that is not an existing folder.
  explicit ControlRoots(const std::vector<std::string>& roots);

  bool confined() const { return !roots_.empty(); }
  const std::vector<std::filesystem::path>& roots() const { return roots_; }

  // Throws InputError "<field> '<path>' is outside the control roots (...)" when confined and
  // `path` does not resolve inside a root (symbolic links and '..' followed).
  void check(const std::string& field, const std::string& path) const;
  // The same for every path a (partial) pipeline configuration in a request names.
  void check_configuration(const nlohmann::json& config) const;

  // The (field, path) pairs a pipeline configuration's JSON names; names that are not paths (a
  // built-in detector, builtin:GEOMETRY) are left out.
  static std::vector<std::pair<std::string, std::string>> paths_in(const nlohmann::json& config);

 private:
  std::vector<std::filesystem::path> roots_;
};

}  // namespace livedrp
