#pragma once
// Finding the events in a detector file without being told the dataset: livedrp's own recordings,
// NeXus files (an NXdata group's `signal` dataset) and CXI files (/entry_N/data_N/data, or the
// detector's data under /entry_N/instrument_1/detector_1) hold their frames in different places.
#include <filesystem>
#include <string>
#include <vector>

namespace livedrp::replay {

// The datasets of `path` that may hold events (3 or more dimensions: events first), in the order
// they are preferred: /entry/data/data (livedrp's recordings, and NeXus writers that follow the
// NXmx convention), then the `signal` dataset of each NXdata group in name order (the group's
// `signal` attribute names it; an older file's dataset with an attribute signal = 1 counts too),
// then CXI's /entry_N/data_N/data and /entry_N/instrument_1/detector_1/data. No duplicates.
// Throws InputError naming the file when it is not a readable HDF5 file.
std::vector<std::string> event_dataset_candidates(const std::filesystem::path& path);

// The first candidate; throws InputError naming the file and the places looked at when there is
// none.
std::string find_event_dataset(const std::filesystem::path& path);

// The datasets that hold the events of `path`, in event order. Eiger and Jungfraujoch master
// files hold no frames themselves: /entry/data/data_000001, data_000002, ... link (HDF5 external
// links) to the /entry/data/data of their data files, each a run of consecutive frames; those
// links, in number order, when /entry/data/data itself is absent. Otherwise the one dataset
// find_event_dataset() picks. Throws InputError naming the master file, the link and the data
// file when a linked data file is missing or holds no dataset there.
std::vector<std::string> event_dataset_parts(const std::filesystem::path& path);

}  // namespace livedrp::replay
