#pragma once
// Finding the events in a detector file without being told the dataset: livedrp's own recordings,
// NeXus files (an NXdata group's `signal` dataset) and CXI files (/entry_N/data_N/data, or the
// detector's data under /entry_N/instrument_1/detector_1) hold their frames in different places.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/array.hpp"

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

// The events of `path` as one array, events first, for the offline commands given a detector file
// without a dataset: the datasets event_dataset_parts() names (a master file's data files in
// order, else the one dataset found), each read whole through the HDF5 library (its filter
// plugins decode bitshuffle-LZ4 and LZ4), joined along the events. Throws InputError as
// event_dataset_parts() does, and naming the parts when they differ in element type or frame
// shape.
io::Array read_event_frames(const std::filesystem::path& path);

// One choice of events in a file, as a user picking what to replay needs to see it.
struct EventDatasetCandidate {
  // The dataset's HDF5 path; empty for a master file's linked parts taken together (a replay that
  // names no dataset reads them in turn).
  std::string dataset;
  std::vector<std::string> parts;    // the datasets read, in event order: {dataset}, or the links
  std::vector<std::uint64_t> shape;  // events first; for the parts together, their events summed
  std::string dtype;                 // numpy's name ("uint16", "float32"); else the HDF5 class
  std::uint64_t events = 0;          // shape[0]
  bool is_default = false;           // what a replay without a named dataset reads
};

// Every choice of events in `path`, the default first: a master file's numbered data links
// together, then each of them alone, then event_dataset_candidates() in their order. Throws
// InputError as event_dataset_parts() and find_event_dataset() do: not an HDF5 file, a master
// file's data file missing, or no dataset of events (the message names the places looked at).
std::vector<EventDatasetCandidate> describe_event_datasets(const std::filesystem::path& path);

}  // namespace livedrp::replay
