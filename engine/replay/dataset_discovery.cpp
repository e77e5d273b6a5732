#include "replay/dataset_discovery.hpp"

#include <hdf5.h>

#include <algorithm>
#include <mutex>

#include "core/error.hpp"
#include "io/hdf5_array.hpp"
#include "io/hdf5_handle.hpp"
#include "replay/hdf5_lock.hpp"

namespace livedrp::replay {

namespace {

using io::H5Handle;

// Whether `path` names a dataset of at least 3 dimensions (every link on the way exists).
bool is_event_dataset(hid_t file, const std::string& path) {
  std::size_t from = 1;
  while (from <= path.size()) {
    const std::size_t slash = path.find('/', from);
    const std::string prefix = path.substr(0, slash == std::string::npos ? path.size() : slash);
    if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) break;
    from = slash + 1;
  }
  H5Handle object(H5Oopen(file, path.c_str(), H5P_DEFAULT), H5Oclose);
  if (!object.valid() || H5Iget_type(object.get()) != H5I_DATASET) return false;
  H5Handle space(H5Dget_space(object.get()), H5Sclose);
  return space.valid() && H5Sget_simple_extent_ndims(space.get()) >= 3;
}

// A string attribute of an object, empty when absent or not a string.
std::string string_attribute(hid_t object, const char* name) {
  if (H5Aexists(object, name) <= 0) return {};
  H5Handle attribute(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  if (!attribute.valid()) return {};
  H5Handle type(H5Aget_type(attribute.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING) return {};
  H5Handle space(H5Aget_space(attribute.get()), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) return {};
  if (H5Tis_variable_str(type.get()) > 0) {
    H5Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(memory.get(), H5T_VARIABLE);
    char* value = nullptr;
    if (H5Aread(attribute.get(), memory.get(), &value) < 0 || value == nullptr) return {};
    std::string result(value);
    H5free_memory(value);
    return result;
  }
  const std::size_t size = H5Tget_size(type.get());
  std::string value(size, '\0');
  H5Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(memory.get(), size);
  if (H5Aread(attribute.get(), memory.get(), value.data()) < 0) return {};
  value.resize(std::min(value.find('\0'), value.size()));
  return value;
}

// An integer attribute equal to 1 (the old NeXus way of marking the signal dataset).
bool marked_as_signal(hid_t object) {
  if (H5Aexists(object, "signal") <= 0) return false;
  H5Handle attribute(H5Aopen(object, "signal", H5P_DEFAULT), H5Aclose);
  H5Handle type(H5Aget_type(attribute.get()), H5Tclose);
  if (!attribute.valid() || H5Tget_class(type.get()) != H5T_INTEGER) return false;
  long long value = 0;
  return H5Aread(attribute.get(), H5T_NATIVE_LLONG, &value) >= 0 && value == 1;
}

struct Visit {
  std::vector<std::string> nexus;  // NXdata signals and old-style signal datasets
};

// HDF5 1.12 renamed the object-info struct and its visitor; Debian 12 has 1.10.
#if H5_VERSION_GE(1, 12, 0)
using ObjectInfo = H5O_info2_t;
#else
using ObjectInfo = H5O_info_t;
#endif

herr_t visit_object(hid_t file, const char* name, const ObjectInfo* info, void* data) {
  auto& visit = *static_cast<Visit*>(data);
  if (std::string(name) == ".") return 0;
  const std::string path = std::string("/") + name;
  H5Handle object(H5Oopen(file, name, H5P_DEFAULT), H5Oclose);
  if (!object.valid()) return 0;
  if (info->type == H5O_TYPE_GROUP && string_attribute(object.get(), "NX_class") == "NXdata") {
    const std::string signal = string_attribute(object.get(), "signal");
    if (!signal.empty()) visit.nexus.push_back(path + "/" + signal);
  } else if (info->type == H5O_TYPE_DATASET && marked_as_signal(object.get())) {
    visit.nexus.push_back(path);
  }
  return 0;
}

herr_t collect_numbered_data_link(hid_t, const char* name, const H5L_info_t*, void* data) {
  const std::string text(name);
  constexpr std::size_t kDigits = 6;  // data_000001: the NXmx / Eiger numbering
  if (text.size() == 5 + kDigits && text.rfind("data_", 0) == 0 &&
      std::all_of(text.begin() + 5, text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    static_cast<std::vector<std::string>*>(data)->push_back("/entry/data/" + text);
  return 0;
}

// Where an external link points, as "FILE:/object"; empty for another kind of link.
std::string external_link_target(hid_t file, const std::string& link) {
  H5L_info_t info{};
  if (H5Lget_info(file, link.c_str(), &info, H5P_DEFAULT) < 0 || info.type != H5L_TYPE_EXTERNAL)
    return {};
  std::vector<char> value(info.u.val_size);
  const char* target_file = nullptr;
  const char* target_object = nullptr;
  if (H5Lget_val(file, link.c_str(), value.data(), value.size(), H5P_DEFAULT) < 0 ||
      H5Lunpack_elink_val(value.data(), value.size(), nullptr, &target_file, &target_object) < 0)
    return {};
  return std::string(target_file) + ":" + target_object;
}

// The numbered data links of a master file, checked to lead to events; empty when there are none
// or /entry/data/data exists.
std::vector<std::string> master_file_parts(const std::filesystem::path& path) {
  std::lock_guard lock(hdf5_mutex());
  const io::QuietHdf5Errors quiet;
  if (!std::filesystem::exists(path) || H5Fis_hdf5(path.string().c_str()) <= 0) return {};
  H5Handle file(H5Fopen(path.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid() || H5Lexists(file.get(), "/entry", H5P_DEFAULT) <= 0 ||
      H5Lexists(file.get(), "/entry/data", H5P_DEFAULT) <= 0 ||
      H5Lexists(file.get(), "/entry/data/data", H5P_DEFAULT) > 0)
    return {};
  std::vector<std::string> parts;
  hsize_t index = 0;
  H5Literate_by_name(file.get(), "/entry/data", H5_INDEX_NAME, H5_ITER_INC, &index,
                     collect_numbered_data_link, &parts, H5P_DEFAULT);
  std::sort(parts.begin(), parts.end());
  for (const std::string& part : parts)
    if (!is_event_dataset(file.get(), part)) {
      const std::string target = external_link_target(file.get(), part);
      throw InputError("HDF5 master file " + path.string() + ": " + part +
                       (target.empty() ? std::string(" is not a dataset of events")
                                       : " links to " + target +
                                             ", which cannot be opened as a dataset of events "
                                             "(data file missing, moved or damaged?)"));
    }
  return parts;
}

// numpy's name for an HDF5 element type ("uint16", "float32"); the HDF5 class otherwise, so that a
// compound or string dataset still shows what it is.
std::string numpy_dtype(hid_t type) {
  const std::size_t bytes = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
      const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
      if (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8)
        return (is_signed ? "int" : "uint") + std::to_string(bytes * 8);
      return std::to_string(bytes * 8) + "-bit integer";
    }
    case H5T_FLOAT:
      if (bytes == 2 || bytes == 4 || bytes == 8) return "float" + std::to_string(bytes * 8);
      return std::to_string(bytes * 8) + "-bit float";
    case H5T_COMPOUND:
      return "compound";
    case H5T_STRING:
      return "string";
    case H5T_ENUM:
      return "enum";
    default:
      return "other HDF5 type";
  }
}

// The shape and element type of a dataset that is_event_dataset() accepted (hdf5_mutex held).
EventDatasetCandidate describe_dataset(hid_t file, const std::filesystem::path& path,
                                       const std::string& dataset) {
  H5Handle set(H5Dopen2(file, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  H5Handle space(set.valid() ? H5Dget_space(set.get()) : -1, H5Sclose);
  H5Handle type(set.valid() ? H5Dget_type(set.get()) : -1, H5Tclose);
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (!type.valid() || rank < 1)
    throw InputError("HDF5 file " + path.string() + ": dataset " + dataset +
                     " cannot be read (damaged, or its data file is missing?)");
  std::vector<hsize_t> dims(std::size_t(rank), 0);
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  EventDatasetCandidate candidate;
  candidate.dataset = dataset;
  candidate.parts = {dataset};
  candidate.shape.assign(dims.begin(), dims.end());
  candidate.dtype = numpy_dtype(type.get());
  candidate.events = candidate.shape.front();
  return candidate;
}

// Why `path` has nothing to replay, naming the places looked at.
std::string no_events_found(const std::filesystem::path& path, bool master_links_looked_at) {
  return "HDF5 file " + path.string() +
         ": no dataset of events found (looked for /entry/data/data, NeXus NXdata signals" +
         (master_links_looked_at ? ", CXI /entry_N/data_N/data and a master file's "
                                   "/entry/data/data_NNNNNN links"
                                 : " and CXI /entry_N/data_N/data") +
         " with 3 or more dimensions); name one as FILE.h5:/path/to/dataset";
}

}  // namespace

std::vector<EventDatasetCandidate> describe_event_datasets(const std::filesystem::path& path) {
  // Each of these takes the HDF5 lock itself, and checks that the file exists and is HDF5.
  const std::vector<std::string> others = event_dataset_candidates(path);
  const std::vector<std::string> parts = master_file_parts(path);
  if (parts.empty() && others.empty()) throw InputError(no_events_found(path, true));

  std::lock_guard lock(hdf5_mutex());
  const io::QuietHdf5Errors quiet;
  H5Handle file(H5Fopen(path.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid())
    throw InputError("HDF5 file " + path.string() + " cannot be opened (damaged or truncated?)");
  std::vector<EventDatasetCandidate> described;
  if (!parts.empty()) {
    std::vector<EventDatasetCandidate> each;
    for (const std::string& part : parts) each.push_back(describe_dataset(file.get(), path, part));
    // Together: what event_dataset_parts() hands a replay that names no dataset.
    EventDatasetCandidate together = each.front();
    together.dataset.clear();
    together.parts = parts;
    together.events = 0;
    for (const EventDatasetCandidate& part : each) together.events += part.events;
    together.shape.front() = together.events;
    described.push_back(std::move(together));
    described.insert(described.end(), each.begin(), each.end());
  }
  for (const std::string& dataset : others)
    if (std::find(parts.begin(), parts.end(), dataset) == parts.end())
      described.push_back(describe_dataset(file.get(), path, dataset));
  described.front().is_default = true;
  return described;
}

std::vector<std::string> event_dataset_parts(const std::filesystem::path& path) {
  std::vector<std::string> parts = master_file_parts(path);
  if (parts.empty()) parts.push_back(find_event_dataset(path));
  return parts;
}

std::vector<std::string> event_dataset_candidates(const std::filesystem::path& path) {
  std::lock_guard lock(hdf5_mutex());
  const io::QuietHdf5Errors quiet;
  if (!std::filesystem::exists(path))
    throw InputError("HDF5 file " + path.string() + " does not exist");
  if (H5Fis_hdf5(path.string().c_str()) <= 0)
    throw InputError("file " + path.string() +
                     " is not an HDF5 file (or its superblock is damaged)");
  H5Handle file(H5Fopen(path.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid())
    throw InputError("HDF5 file " + path.string() + " cannot be opened (damaged or truncated?)");
  Visit visit;
#if H5_VERSION_GE(1, 12, 0)
  H5Ovisit3(file.get(), H5_INDEX_NAME, H5_ITER_INC, visit_object, &visit, H5O_INFO_BASIC);
#else
  H5Ovisit2(file.get(), H5_INDEX_NAME, H5_ITER_INC, visit_object, &visit, H5O_INFO_BASIC);
#endif

  std::vector<std::string> ordered{"/entry/data/data"};
  ordered.insert(ordered.end(), visit.nexus.begin(), visit.nexus.end());
  // CXI: entries and their data groups are numbered from 1.
  for (int entry = 1; entry <= 9; ++entry) {
    const std::string base = "/entry_" + std::to_string(entry);
    if (H5Lexists(file.get(), base.c_str(), H5P_DEFAULT) <= 0) continue;
    for (int data = 1; data <= 9; ++data)
      ordered.push_back(base + "/data_" + std::to_string(data) + "/data");
    ordered.push_back(base + "/instrument_1/detector_1/data");
  }
  std::vector<std::string> found;
  for (const std::string& candidate : ordered)
    if (std::find(found.begin(), found.end(), candidate) == found.end() &&
        is_event_dataset(file.get(), candidate))
      found.push_back(candidate);
  return found;
}

std::string find_event_dataset(const std::filesystem::path& path) {
  const std::vector<std::string> found = event_dataset_candidates(path);
  if (found.empty()) throw InputError(no_events_found(path, false));
  return found.front();
}

io::Array read_event_frames(const std::filesystem::path& path) {
  const std::vector<std::string> parts = event_dataset_parts(path);
  io::Array events;
  const auto described = [](const std::string& part, const io::Array& array) {
    return part + " (" + std::string(io::to_string(array.type)) + " " +
           io::shape_text(array.shape) + ")";
  };
  for (std::size_t k = 0; k < parts.size(); ++k) {
    io::Array part = io::read_hdf5_dataset(path, parts[k]);
    if (part.shape.size() < 3)
      throw InputError(path.string() + ": " + described(parts[k], part) +
                       " is not a stack of frames (events first)");
    if (k == 0) {
      events = std::move(part);
      continue;
    }
    if (part.type != events.type || part.shape.size() != events.shape.size() ||
        !std::equal(part.shape.begin() + 1, part.shape.end(), events.shape.begin() + 1))
      throw InputError(path.string() + ": the events' datasets differ: " +
                       described(parts[k], part) + " after " + described(parts[0], events));
    events.shape[0] += part.shape[0];
    events.bytes.insert(events.bytes.end(), part.bytes.begin(), part.bytes.end());
  }
  return events;
}

}  // namespace livedrp::replay
