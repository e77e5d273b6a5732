#pragma once
// The control socket's "replay_candidates" request (docs/protocol.md, "Control socket"): the
// choices of events in an HDF5 file on the engine's machine, for a GUI that lets the user pick
// which dataset to replay. The embedded GUI calls it directly, a remote one through the socket,
// so both see the same answer.
#include <string>

#include <nlohmann/json.hpp>

namespace livedrp {

// {"path": PATH, "default": INDEX, "candidates": [{"dataset", "source", "parts", "shape",
// "dtype", "events", "default"}, ...]} for the file `path` (replay::describe_event_datasets()),
// where "source" is what to replay it with ("replay:PATH:/dataset", or "replay:PATH" for a
// master file's parts together). Throws InputError naming what is wrong: an empty path, no such
// file, a directory or other non-file, not HDF5, a master file's missing data file, or no
// dataset of events (the places looked at).
nlohmann::json replay_candidates_result(const std::string& path);

}  // namespace livedrp
