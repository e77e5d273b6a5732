#include "publish/replay_candidates.hpp"

#include <filesystem>
#include <system_error>

#include "core/error.hpp"
#include "replay/dataset_discovery.hpp"

namespace livedrp {

nlohmann::json replay_candidates_result(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError("the path is empty: name the HDF5 file to look in");
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (!fs::exists(status))
    throw InputError("file " + path + " does not exist (on the engine's machine)");
  if (fs::is_directory(status))
    throw InputError(path +
                     " is a directory: a run's files are replayed together (replay:DIRECTORY); "
                     "name one HDF5 file to list its datasets");
  if (!fs::is_regular_file(status)) throw InputError(path + " is not a regular file");

  const std::vector<replay::EventDatasetCandidate> described =
      replay::describe_event_datasets(path);
  nlohmann::json candidates = nlohmann::json::array();
  std::size_t default_index = 0;
  for (std::size_t i = 0; i < described.size(); ++i) {
    const replay::EventDatasetCandidate& candidate = described[i];
    if (candidate.is_default) default_index = i;
    candidates.push_back(
        {{"dataset", candidate.dataset},
         {"source", "replay:" + path + (candidate.dataset.empty() ? "" : ":" + candidate.dataset)},
         {"parts", candidate.parts},
         {"shape", candidate.shape},
         {"dtype", candidate.dtype},
         {"events", candidate.events},
         {"default", candidate.is_default}});
  }
  return {{"path", path}, {"default", default_index}, {"candidates", std::move(candidates)}};
}

}  // namespace livedrp
