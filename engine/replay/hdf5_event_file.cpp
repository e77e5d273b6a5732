#include "replay/hdf5_event_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <span>

#include <nlohmann/json.hpp>

#include "codec/container.hpp"
#include "core/error.hpp"
#include "core/json_input.hpp"
#include "hdf5_filter/filter_class.hpp"
#include "hdf5_filter/livedrp_filter.hpp"
#include "io/hdf5_handle.hpp"
#include "replay/chunk_decoder.hpp"
#include "replay/hdf5_lock.hpp"

namespace livedrp::replay {
namespace {

using io::H5Handle;
using io::QuietHdf5Errors;

std::vector<hsize_t> event_dims(const DetectorDescription& d, bool stacked) {
  if (stacked) return {hsize_t(d.segments) * hsize_t(d.rows), hsize_t(d.cols)};
  return {hsize_t(d.segments), hsize_t(d.rows), hsize_t(d.cols)};
}

// The HDF5 types of the element types events are stored in (element_type_of).
hid_t native_type(io::ElementType type) {
  switch (type) {
    case io::ElementType::UInt32:
      return H5T_NATIVE_UINT32;
    case io::ElementType::Int32:
      return H5T_NATIVE_INT32;
    case io::ElementType::Float32:
      return H5T_NATIVE_FLOAT;
    default:
      return H5T_NATIVE_UINT16;
  }
}
hid_t little_endian_type(io::ElementType type) {
  switch (type) {
    case io::ElementType::UInt32:
      return H5T_STD_U32LE;
    case io::ElementType::Int32:
      return H5T_STD_I32LE;
    case io::ElementType::Float32:
      return H5T_IEEE_F32LE;
    default:
      return H5T_STD_U16LE;
  }
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

void write_string_attribute(hid_t object, const char* name, const std::string& value) {
  H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), std::max<std::size_t>(1, value.size()));
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attribute(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose);
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  if (!attribute.valid() || H5Awrite(attribute.get(), type.get(), padded.data()) < 0)
    throw RuntimeFault(std::string("cannot write the HDF5 attribute ") + name);
}

// A string attribute of the root group, fixed or variable length; empty when absent or not a
// string (files written by other programs need not have any).
std::string read_string_attribute(hid_t object, const char* name) {
  if (H5Aexists(object, name) <= 0) return {};
  H5Handle attribute(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  if (!attribute.valid()) return {};
  H5Handle type(H5Aget_type(attribute.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING) return {};
  if (H5Tis_variable_str(type.get()) > 0) {
    char* text = nullptr;
    H5Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(memory.get(), H5T_VARIABLE);
    if (H5Aread(attribute.get(), memory.get(), &text) < 0 || !text) return {};
    std::string value(text);
    H5free_memory(text);
    return value;
  }
  std::string value(H5Tget_size(type.get()), '\0');
  if (H5Aread(attribute.get(), type.get(), value.data()) < 0) return {};
  value.resize(std::strlen(value.c_str()));
  return value;
}

// Every parent group, then the object itself, must exist (H5Lexists needs the parents).
bool path_exists(hid_t file, const std::string& path, std::string* missing) {
  for (std::size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
    const std::string prefix = path.substr(0, at);
    if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) {
      if (missing) *missing = prefix;
      return false;
    }
    if (at == std::string::npos) return true;
  }
}

std::string sibling(const std::string& dataset, const char* name) {
  return dataset.substr(0, dataset.rfind('/') + 1) + name;
}

// NeXus classes on the groups above the data, so that silx, DAWN and h5web open a recording as
// an image stack: the data's group is NXdata (signal: the data, with pulse_id and timestamp as
// its fields), the group above it NXentry, and each "default" attribute points down to them.
// Variable-length ASCII strings: what NeXus readers take and what the replay's dataset discovery
// reads (HDF5 converts no string between ASCII and UTF-8).
void mark_nexus(hid_t file, hid_t data, const std::string& dataset, const std::string& file_name) {
  const auto write_string_attribute = [&file_name](hid_t object, const char* name,
                                                   const std::string& value) {
    H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Handle attribute(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                       H5Aclose);
    const char* text = value.c_str();
    if (!attribute.valid() || H5Awrite(attribute.get(), type.get(), &text) < 0)
      throw RuntimeFault("HDF5 file " + file_name + ": cannot write the attribute " + name);
  };
  write_string_attribute(data, "interpretation", "image");
  const std::size_t last = dataset.rfind('/');
  if (last == 0) return;  // the data sits in the root: no group to mark
  const std::string data_group = dataset.substr(0, last);
  H5Handle group(H5Gopen2(file, data_group.c_str(), H5P_DEFAULT), H5Gclose);
  if (!group.valid()) throw RuntimeFault("cannot open the HDF5 group " + data_group);
  write_string_attribute(group.get(), "NX_class", "NXdata");
  write_string_attribute(group.get(), "signal", dataset.substr(last + 1));
  const std::size_t up = data_group.rfind('/');
  if (up == 0) {
    write_string_attribute(file, "default", data_group.substr(1));
    return;
  }
  const std::string entry = data_group.substr(0, up);
  H5Handle entry_group(H5Gopen2(file, entry.c_str(), H5P_DEFAULT), H5Gclose);
  if (!entry_group.valid()) throw RuntimeFault("cannot open the HDF5 group " + entry);
  write_string_attribute(entry_group.get(), "NX_class", "NXentry");
  write_string_attribute(entry_group.get(), "default", data_group.substr(up + 1));
  if (entry.rfind('/') == 0) write_string_attribute(file, "default", entry.substr(1));
}

// A 1-D integer dataset of at least `events` values, read as 64-bit; nullopt when absent.
std::optional<std::vector<std::int64_t>> read_metadata(hid_t file, const std::string& path,
                                                       std::uint64_t events,
                                                       const std::string& where) {
  if (!path_exists(file, path, nullptr)) return std::nullopt;
  H5Handle set(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!set.valid()) throw InputError(where + ": " + path + " exists but is not a dataset");
  H5Handle type(H5Dget_type(set.get()), H5Tclose);
  H5Handle space(H5Dget_space(set.get()), H5Sclose);
  hsize_t length = 0;
  if (H5Tget_class(type.get()) != H5T_INTEGER || H5Sget_simple_extent_ndims(space.get()) != 1 ||
      H5Sget_simple_extent_dims(space.get(), &length, nullptr) < 0)
    throw InputError(where + ": " + path + " must be a 1-D integer dataset (one value per event)");
  if (length < events)
    throw InputError(where + ": " + path + " has " + std::to_string(length) + " values for " +
                     std::to_string(events) + " events");
  std::vector<std::int64_t> values(length);
  if (length > 0 &&
      H5Dread(set.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    throw InputError(where + ": " + path + " cannot be read (damaged file?)");
  values.resize(events);
  return values;
}

}  // namespace

// ---------------------------------------------------------------- writer

namespace {
// HDF5's exit handler closes every file still open, and crashes (SIGSEGV in H5F__close_cb, HDF5
// 1.10) on a file whose close has already failed because the disk was full. Every file this
// program opens is closed by its owner, so the handler has nothing to do but that crash: it is
// not installed. (Before the library's first call, which is why this is a static initialiser.)
[[maybe_unused]] const bool kNoHdf5ExitHandler = [] { return H5dont_atexit() >= 0; }();
}  // namespace

struct Hdf5EventWriter::Handles {
  hid_t file = -1, data = -1, pulse = -1, time = -1;
  codec::CpuCompressor compressor;  // layout.codec: each event's stream, in memory it keeps
  ~Handles() {
    for (hid_t set : {data, pulse, time})
      if (set >= 0) H5Dclose(set);
    if (file >= 0) H5Fclose(file);
  }
};

namespace {

// What the codec takes: chunks of one event, no other filter, uint16 or float32 words, a lossy
// bound only on float32.
void check_codec_layout(const WriteLayout& layout, const DetectorDescription& detector,
                        const std::string& where) {
  if (!layout.chunked)
    throw InputError(where + ": the livedrp codec needs a chunked layout (one event per chunk)");
  if (layout.deflate > 0)
    throw InputError(where + ": choose deflate or the livedrp codec, not both");
  const io::ElementType type = element_type_of(detector.encoding);
  if (type != io::ElementType::UInt16 && type != io::ElementType::Float32)
    throw InputError(where + ": the livedrp codec compresses uint16 or float32 events, detector " +
                     detector.name + " has " + std::string(io::to_string(type)));
  codec::check_params(
      type == io::ElementType::Float32 ? codec::DType::Float32 : codec::DType::UInt16,
      *layout.codec, layout.stacked ? 2 : 3);
}

}  // namespace

Hdf5EventWriter::Hdf5EventWriter(const std::filesystem::path& path,
                                 const DetectorDescription& detector, const WriteLayout& layout,
                                 const std::string& pipeline_config_json,
                                 std::uint64_t contiguous_events)
    : path_(path), detector_(detector), layout_(layout) {
  const std::string where = "HDF5 file " + path.string() + ", dataset " + layout.dataset;
  if (layout.dataset.size() < 2 || layout.dataset.front() != '/' || layout.dataset.back() == '/')
    throw InputError(where + ": the dataset path must start with '/' and name a dataset");
  if (layout.deflate < 0 || layout.deflate > 9)
    throw InputError(where + ": deflate level must be 0..9, got " + std::to_string(layout.deflate));
  if (!layout.chunked && layout.deflate > 0)
    throw InputError(where + ": HDF5 filters need a chunked layout (deflate with contiguous)");
  if (layout.codec) check_codec_layout(layout, detector, where);
  capacity_ = layout.chunked ? 0 : contiguous_events;
  QuietHdf5Errors quiet;
  auto handles = std::make_unique<Handles>();
  handles->file = H5Fcreate(path.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (handles->file < 0) throw RuntimeFault(where + ": cannot create the file");

  std::vector<hsize_t> dims{capacity_};
  const auto per_event = event_dims(detector, layout.stacked);
  dims.insert(dims.end(), per_event.begin(), per_event.end());
  std::vector<hsize_t> max_dims = dims;
  if (layout.chunked) max_dims[0] = H5S_UNLIMITED;
  H5Handle space(H5Screate_simple(int(dims.size()), dims.data(), max_dims.data()), H5Sclose);
  H5Handle create(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (layout.chunked) {
    std::vector<hsize_t> chunk = dims;
    chunk[0] = 1;  // one event per chunk: any event is read (and decompressed) alone
    H5Pset_chunk(create.get(), int(chunk.size()), chunk.data());
    if (layout.deflate > 0) {
      H5Pset_shuffle(create.get());
      H5Pset_deflate(create.get(), unsigned(layout.deflate));
    }
    if (layout.codec) {
      // Registered in this process, so that no plugin path is needed to write or replay.
      if (!hdf5_filter::register_filter())
        throw RuntimeFault(where + ": cannot register the livedrp HDF5 filter");
      const std::vector<unsigned> parameters =
          hdf5_filter::filter_parameters(layout.codec->codec == codec::Codec::Lossy,
                                         layout.codec->error_bound, layout.codec->chunk_bytes);
      H5Pset_filter(create.get(), hdf5_filter::kFilterId, H5Z_FLAG_MANDATORY, parameters.size(),
                    parameters.data());
    }
  } else {
    H5Pset_layout(create.get(), H5D_CONTIGUOUS);
  }
  H5Handle links(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(links.get(), 1);
  handles->data = H5Dcreate2(handles->file, layout.dataset.c_str(),
                             little_endian_type(element_type_of(detector.encoding)), space.get(),
                             links.get(), create.get(), H5P_DEFAULT);
  if (handles->data < 0) throw RuntimeFault(where + ": cannot create the dataset");

  // Per-event metadata: 1-D beside the data, chunked in blocks when extendible.
  hsize_t meta_dims = capacity_, meta_max = layout.chunked ? H5S_UNLIMITED : capacity_;
  H5Handle meta_space(H5Screate_simple(1, &meta_dims, &meta_max), H5Sclose);
  H5Handle meta_create(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (layout.chunked) {
    const hsize_t block = 1024;
    H5Pset_chunk(meta_create.get(), 1, &block);
  }
  handles->pulse =
      H5Dcreate2(handles->file, sibling(layout.dataset, "pulse_id").c_str(), H5T_STD_U64LE,
                 meta_space.get(), links.get(), meta_create.get(), H5P_DEFAULT);
  handles->time =
      H5Dcreate2(handles->file, sibling(layout.dataset, "timestamp").c_str(), H5T_STD_I64LE,
                 meta_space.get(), links.get(), meta_create.get(), H5P_DEFAULT);
  if (handles->pulse < 0 || handles->time < 0)
    throw RuntimeFault(where + ": cannot create the pulse_id and timestamp datasets");
  write_string_attribute(handles->file, "livedrp_format", kFormatName);
  write_string_attribute(handles->file, "format_version", std::to_string(kFormatVersion));
  write_string_attribute(handles->file, "detector", detector.name);
  write_string_attribute(handles->file, "detector_description", to_json(detector).dump());
  write_string_attribute(handles->file, "pipeline_config", pipeline_config_json);
  mark_nexus(handles->file, handles->data, layout.dataset, path.string());
  h_ = handles.release();
}

Hdf5EventWriter::~Hdf5EventWriter() {
  try {
    close();
  } catch (...) {
    // Destructors must not throw; close() explicitly to see the error.
  }
}

void Hdf5EventWriter::append(const EventHeader& header, const void* raw) {
  const std::string where = "HDF5 file " + path_.string() + ", dataset " + layout_.dataset;
  if (!h_) throw RuntimeFault(where + ": the file is closed");
  if (!layout_.chunked && events_ >= capacity_)
    throw RuntimeFault(where + ": the contiguous dataset holds " + std::to_string(capacity_) +
                       " events and is full");
  QuietHdf5Errors quiet;
  auto write_row = [&](hid_t set, std::vector<hsize_t> row_dims, hid_t memory_type,
                       const void* data) {
    if (layout_.chunked) {
      H5Handle old_space(H5Dget_space(set), H5Sclose);
      std::vector<hsize_t> extent(std::size_t(H5Sget_simple_extent_ndims(old_space.get())));
      H5Sget_simple_extent_dims(old_space.get(), extent.data(), nullptr);
      extent[0] = events_ + 1;
      if (H5Dset_extent(set, extent.data()) < 0) return false;
    }
    H5Handle file_space(H5Dget_space(set), H5Sclose);
    std::vector<hsize_t> start(row_dims.size() + 1, 0), count{1};
    start[0] = events_;
    count.insert(count.end(), row_dims.begin(), row_dims.end());
    H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                        nullptr);
    H5Handle memory_space(H5Screate_simple(int(count.size()), count.data(), nullptr), H5Sclose);
    return H5Dwrite(set, memory_type, memory_space.get(), file_space.get(), H5P_DEFAULT, data) >= 0;
  };
  // With the codec, the event's stream is its chunk, written as it is (filter mask 0: the
  // filter was applied).
  auto write_compressed = [&] {
    const auto dims = event_dims(detector_, layout_.stacked);
    const std::vector<std::uint64_t> shape(dims.begin(), dims.end());
    const std::span<const std::uint8_t> stream = h_->compressor.compress(
        raw,
        element_type_of(detector_.encoding) == io::ElementType::Float32 ? codec::DType::Float32
                                                                        : codec::DType::UInt16,
        shape, *layout_.codec);
    std::vector<hsize_t> extent{events_ + 1}, offset(dims.size() + 1, 0);
    extent.insert(extent.end(), dims.begin(), dims.end());
    offset[0] = events_;
    return H5Dset_extent(h_->data, extent.data()) >= 0 &&
           H5Dwrite_chunk(h_->data, H5P_DEFAULT, 0, offset.data(), stream.size(), stream.data()) >=
               0;
  };
  const std::uint64_t pulse = header.pulse_id;
  const std::int64_t time = header.timestamp_ns;
  if (!(layout_.codec ? write_compressed()
                      : write_row(h_->data, event_dims(detector_, layout_.stacked),
                                  native_type(element_type_of(detector_.encoding)), raw)) ||
      !write_row(h_->pulse, {}, H5T_NATIVE_UINT64, &pulse) ||
      !write_row(h_->time, {}, H5T_NATIVE_INT64, &time))
    throw RuntimeFault(where + ": cannot write event " + std::to_string(events_) + " (disk full?)");
  ++events_;
}

std::uint64_t Hdf5EventWriter::file_bytes() const {
  hsize_t size = 0;
  if (h_) H5Fget_filesize(h_->file, &size);
  return size;
}

void Hdf5EventWriter::close() {
  if (!h_) return;
  QuietHdf5Errors quiet;
  const bool flushed = H5Fflush(h_->file, H5F_SCOPE_GLOBAL) >= 0;
  delete h_;
  h_ = nullptr;
  if (!flushed) throw RuntimeFault("HDF5 file " + path_.string() + ": cannot flush (disk full?)");
}

// ---------------------------------------------------------------- reader

struct Hdf5EventReader::Handles {
  hid_t file = -1, data = -1;
  std::vector<std::int64_t> pulse_ids, timestamps;
  ~Handles() {
    if (data >= 0) H5Dclose(data);
    if (file >= 0) H5Fclose(file);
  }
};

namespace {

// Opens the file and the dataset, fills `info` (shape, type, attributes, metadata presence).
void open_event_file(const std::filesystem::path& path, const std::string& dataset,
                     EventFileInfo& info, hid_t& file_out, hid_t& data_out,
                     std::vector<std::int64_t>* pulse_ids, std::vector<std::int64_t>* timestamps) {
  const std::string where = "HDF5 file " + path.string() + ", dataset " + dataset;
  info.path = path;
  info.dataset = dataset;
  if (!std::filesystem::exists(path))
    throw InputError("HDF5 file " + path.string() + " does not exist");
  if (dataset.size() < 2 || dataset.front() != '/')
    throw InputError(where + ": the dataset path must start with '/'");
  if (H5Fis_hdf5(path.string().c_str()) <= 0)
    throw InputError("file " + path.string() +
                     " is not an HDF5 file (or its superblock is damaged)");
  H5Handle file(H5Fopen(path.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid())
    throw InputError("HDF5 file " + path.string() + " cannot be opened (damaged or truncated?)");
  std::string missing;
  if (!path_exists(file.get(), dataset, &missing))
    throw InputError(where + ": " + missing + " does not exist");
  {
    H5Handle object(H5Oopen(file.get(), dataset.c_str(), H5P_DEFAULT), H5Oclose);
    if (!object.valid() || H5Iget_type(object.get()) != H5I_DATASET)
      throw InputError(where + ": not a dataset (a group, or a damaged object header?)");
  }
  H5Handle set(H5Dopen2(file.get(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!set.valid()) throw InputError(where + ": cannot be opened (damaged?)");
  H5Handle type(H5Dget_type(set.get()), H5Tclose);
  const H5T_class_t type_class = H5Tget_class(type.get());
  const std::size_t size = H5Tget_size(type.get());
  const bool is_signed = type_class == H5T_INTEGER && H5Tget_sign(type.get()) == H5T_SGN_2;
  if (type_class == H5T_FLOAT && size == 4)
    info.element_type = io::ElementType::Float32;
  else if (type_class == H5T_INTEGER && size == 2 && !is_signed)
    info.element_type = io::ElementType::UInt16;
  else if (type_class == H5T_INTEGER && size == 4 && !is_signed)
    info.element_type = io::ElementType::UInt32;
  else if (type_class == H5T_INTEGER && size == 4 && is_signed)
    info.element_type = io::ElementType::Int32;
  else
    throw InputError(where + ": element type is " +
                     (type_class == H5T_FLOAT ? "float" + std::to_string(8 * size)
                      : type_class == H5T_INTEGER
                          ? std::string(is_signed ? "int" : "uint") + std::to_string(8 * size)
                          : std::string("not numeric")) +
                     "; replay reads uint16 (raw words, counts), uint32 or int32 (counts) or "
                     "float32 (calibrated) events");
  H5Handle space(H5Dget_space(set.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(std::size_t(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  info.shape.assign(dims.begin(), dims.end());
  if (rank != 2 && rank != 3 && rank != 4)
    throw InputError(where + ": shape " + shape_text(info.shape) +
                     " is not [N, segments, rows, cols], [N, rows, cols] or [N, pixels]");
  info.events = dims[0];
  info.detector_name = read_string_attribute(file.get(), "detector");
  info.detector_description = read_string_attribute(file.get(), "detector_description");
  info.pipeline_config = read_string_attribute(file.get(), "pipeline_config");
  auto pulses = read_metadata(file.get(), sibling(dataset, "pulse_id"), info.events, where);
  auto times = read_metadata(file.get(), sibling(dataset, "timestamp"), info.events, where);
  info.has_pulse_ids = pulses.has_value();
  info.has_timestamps = times.has_value();
  if (pulse_ids && pulses) *pulse_ids = std::move(*pulses);
  if (timestamps && times) *timestamps = std::move(*times);
  file_out = H5Fopen(path.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  data_out = H5Dopen2(file_out, dataset.c_str(), H5P_DEFAULT);
}

}  // namespace

EventFileInfo Hdf5EventReader::inspect(const std::filesystem::path& path,
                                       const std::string& dataset) {
  std::lock_guard hdf5(hdf5_mutex());
  QuietHdf5Errors quiet;
  EventFileInfo info;
  Handles handles;
  open_event_file(path, dataset, info, handles.file, handles.data, nullptr, nullptr);
  return info;
}

Hdf5EventReader::Hdf5EventReader(const std::filesystem::path& path, const std::string& dataset,
                                 const DetectorDescription& detector) {
  std::lock_guard hdf5(hdf5_mutex());
  QuietHdf5Errors quiet;
  // Recordings made with the livedrp codec read through H5Dread too, where the fast path does
  // not apply, without a plugin path.
  hdf5_filter::register_filter();
  auto handles = std::make_unique<Handles>();
  open_event_file(path, dataset, info_, handles->file, handles->data, &handles->pulse_ids,
                  &handles->timestamps);
  if (handles->data < 0)
    throw InputError("HDF5 file " + path.string() + ", dataset " + dataset + ": cannot be opened");
  const std::string where = "HDF5 file " + path.string() + ", dataset " + dataset;
  const io::ElementType wanted = element_type_of(detector.encoding);
  if (info_.element_type != wanted)
    throw InputError(where + ": element type " + std::string(io::to_string(info_.element_type)) +
                     ", but detector " + detector.name + " (raw_encoding " +
                     std::string(to_string(detector.encoding)) + ") takes " +
                     std::string(io::to_string(wanted)) +
                     " events; the detector description's raw_encoding must match the file's "
                     "element type");
  const std::vector<std::uint64_t> per_event(info_.shape.begin() + 1, info_.shape.end());
  const std::vector<std::uint64_t> full{std::uint64_t(detector.segments),
                                        std::uint64_t(detector.rows), std::uint64_t(detector.cols)};
  const std::vector<std::uint64_t> stacked{
      std::uint64_t(detector.segments) * std::uint64_t(detector.rows),
      std::uint64_t(detector.cols)};
  const std::vector<std::uint64_t> flat{std::uint64_t(detector.pixels())};
  // [rows, cols] of a one-segment detector, [segments * rows, cols] and [pixels] are the same
  // bytes as [segments, rows, cols]: segments stacked along the slow scan, as CXI files store
  // panels, or one flat row of pixels per event.
  if (per_event != full && per_event != stacked && per_event != flat)
    throw InputError(where + ": shape " + shape_text(info_.shape) + " does not hold events of " +
                     detector.name + " (expected [N, " + std::to_string(detector.segments) + ", " +
                     std::to_string(detector.rows) + ", " + std::to_string(detector.cols) +
                     "], [N, " + std::to_string(stacked[0]) + ", " + std::to_string(detector.cols) +
                     "] or [N, " + std::to_string(flat[0]) + "])");
  event_bytes_ = detector.raw_event_bytes();
  h_ = handles.release();
  choose_read_path();
}

const char* to_string(EventReadPath path) {
  switch (path) {
    case EventReadPath::Contiguous:
      return "pread (contiguous)";
    case EventReadPath::Chunks:
      return "pread chunks (+ decode)";
    case EventReadPath::Library:
      return "HDF5 library";
  }
  return "?";
}

// Chunks of [1, rows_per_chunk, <the rest of one event>]: chunk j of an event is rows
// [j * rows_per_chunk, ...) of dimension 1, one contiguous range of the event's bytes.
struct Hdf5EventReader::ChunkPlan {
  std::vector<hsize_t> dims;  // of the dataset
  hsize_t rows_per_chunk = 0, chunks_per_event = 0;
  std::size_t row_bytes = 0, chunk_bytes = 0, element_size = 0;
  std::vector<H5Z_filter_t> filters;  // in the order HDF5 applied them when writing
};

namespace {

// Reads `size` bytes at `offset` completely; false on a short read (truncated file) or an error.
bool pread_all(int fd, void* out, std::size_t size, std::uint64_t offset) {
  auto* at = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t got = ::pread(fd, at, size, off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    at += got;
    size -= std::size_t(got);
    offset += std::uint64_t(got);
  }
  return true;
}

}  // namespace

// Called with the HDF5 lock held (from the constructor).
void Hdf5EventReader::choose_read_path() {
  path_ = EventReadPath::Library;
  H5Handle type(H5Dget_type(h_->data), H5Tclose);
  // Bytes as stored must be the bytes in memory: same element type and byte order as native.
  const hid_t native = native_type(info_.element_type);
  if (H5Tequal(type.get(), native) <= 0) return;
  // Addresses from HDF5 are relative to the end of a user block; files with one go the slow way.
  H5Handle file_create(H5Fget_create_plist(h_->file), H5Pclose);
  hsize_t user_block = 0;
  if (!file_create.valid() || H5Pget_userblock(file_create.get(), &user_block) < 0 ||
      user_block != 0)
    return;
  H5Handle create(H5Dget_create_plist(h_->data), H5Pclose);
  if (!create.valid()) return;
  const H5D_layout_t layout = H5Pget_layout(create.get());
  if (layout == H5D_CONTIGUOUS) {
    const haddr_t offset = H5Dget_offset(h_->data);
    if (offset == HADDR_UNDEF) return;  // never written: the library returns fill values
    contiguous_offset_ = offset;
    path_ = EventReadPath::Contiguous;
  } else if (layout == H5D_CHUNKED) {
    auto plan = std::make_unique<ChunkPlan>();
    plan->dims.assign(info_.shape.begin(), info_.shape.end());
    std::vector<hsize_t> chunk(plan->dims.size());
    if (H5Pget_chunk(create.get(), int(chunk.size()), chunk.data()) != int(chunk.size())) return;
    if (chunk[0] != 1) return;
    for (std::size_t k = 2; k < chunk.size(); ++k)
      if (chunk[k] != plan->dims[k]) return;
    plan->element_size = io::element_bytes(info_.element_type);
    plan->row_bytes = plan->element_size;
    for (std::size_t k = 2; k < chunk.size(); ++k) plan->row_bytes *= std::size_t(chunk[k]);
    plan->rows_per_chunk = chunk[1];
    plan->chunks_per_event = (plan->dims[1] + chunk[1] - 1) / chunk[1];
    plan->chunk_bytes = plan->row_bytes * std::size_t(chunk[1]);
    const int filters = H5Pget_nfilters(create.get());
    for (int i = 0; i < filters; ++i) {
      unsigned flags = 0, values[8] = {};
      std::size_t value_count = 8;
      const H5Z_filter_t id = H5Pget_filter2(create.get(), unsigned(i), &flags, &value_count,
                                             values, 0, nullptr, nullptr);
      // Bitshuffle is decoded here in its LZ4 mode only; its cd_values after the filter's own
      // set-up: version (2), element size, block size, compression.
      if (id == H5Z_filter_t(kBitshuffleFilter) &&
          (value_count < 5 || values[2] != plan->element_size || values[4] != kBitshuffleLz4))
        return;
      if (id != H5Z_FILTER_DEFLATE && id != H5Z_FILTER_SHUFFLE &&
          id != H5Z_filter_t(kBitshuffleFilter) && id != H5Z_filter_t(kLz4Filter) &&
          id != H5Z_filter_t(hdf5_filter::kFilterId))
        return;
      // Shuffle's element size is the datatype's; another value would be a foreign encoder.
      if (id == H5Z_FILTER_SHUFFLE && value_count >= 1 && values[0] != plan->element_size) return;
      plan->filters.push_back(id);
    }
    chunks_ = std::move(plan);
    path_ = EventReadPath::Chunks;
  } else {
    return;
  }
  // Through an external link (a master file's data part) the bytes are in the linked file.
  std::string holder = info_.path.string();
  {
    H5Handle file(H5Iget_file_id(h_->data), H5Fclose);
    const ssize_t length = file.valid() ? H5Fget_name(file.get(), nullptr, 0) : -1;
    if (length > 0) {
      holder.assign(std::size_t(length) + 1, '\0');
      H5Fget_name(file.get(), holder.data(), holder.size());
      holder.resize(std::size_t(length));
    }
  }
  fd_ = ::open(holder.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) path_ = EventReadPath::Library;
}

Hdf5EventReader::~Hdf5EventReader() {
  if (fd_ >= 0) ::close(fd_);
  delete h_;
}

void Hdf5EventReader::read(std::uint64_t index, void* raw, std::uint64_t& pulse_id,
                           std::int64_t& timestamp_ns) {
  const std::string where = "HDF5 file " + info_.path.string() + ", dataset " + info_.dataset;
  if (index >= info_.events)
    throw InputError(where + ": event " + std::to_string(index) + " is past the last (" +
                     std::to_string(info_.events) + " events)");
  switch (path_) {
    case EventReadPath::Contiguous:
      read_contiguous(index, raw, where);
      break;
    case EventReadPath::Chunks:
      if (!read_chunks(index, raw, where)) read_with_library(index, raw, where);
      break;
    case EventReadPath::Library:
      read_with_library(index, raw, where);
      break;
  }
  pulse_id = h_->pulse_ids.empty() ? index : std::uint64_t(h_->pulse_ids[index]);
  timestamp_ns = h_->timestamps.empty() ? 0 : h_->timestamps[index];
}

void Hdf5EventReader::read_contiguous(std::uint64_t index, void* raw, const std::string& where) {
  if (!pread_all(fd_, raw, event_bytes_, contiguous_offset_ + index * event_bytes_))
    throw InputError(where + ": event " + std::to_string(index) +
                     " cannot be read (truncated file: " + std::to_string(event_bytes_) +
                     " bytes at offset " +
                     std::to_string(contiguous_offset_ + index * event_bytes_) + ")");
}

bool Hdf5EventReader::read_chunks(std::uint64_t index, void* raw, const std::string& where) {
  // Per reader thread, reused: the chunk as stored.
  thread_local std::vector<std::byte> stored;
  const ChunkPlan& plan = *chunks_;
  auto* event = static_cast<std::byte*>(raw);
  for (hsize_t j = 0; j < plan.chunks_per_event; ++j) {
    std::vector<hsize_t> coordinate(plan.dims.size(), 0);
    coordinate[0] = index;
    coordinate[1] = j * plan.rows_per_chunk;
    unsigned skipped = 0;  // bit i set: filter i was not applied to this chunk
    haddr_t address = HADDR_UNDEF;
    hsize_t size = 0;
    {
      std::lock_guard hdf5(hdf5_mutex());
      QuietHdf5Errors quiet;
      if (H5Dget_chunk_info_by_coord(h_->data, coordinate.data(), &skipped, &address, &size) < 0)
        throw InputError(where + ": event " + std::to_string(index) +
                         " cannot be read (its chunk index is damaged)");
    }
    if (address == HADDR_UNDEF) return false;
    const std::string what = where + ": event " + std::to_string(index) + ", chunk at row " +
                             std::to_string(coordinate[1]) + " cannot be read (";
    const std::size_t rows =
        std::size_t(std::min<hsize_t>(plan.rows_per_chunk, plan.dims[1] - coordinate[1]));
    std::byte* target = event + std::size_t(coordinate[1]) * plan.row_bytes;
    const std::size_t valid = rows * plan.row_bytes;  // an edge chunk is stored whole
    std::vector<H5Z_filter_t> applied;
    for (std::size_t i = 0; i < plan.filters.size(); ++i)
      if (!(skipped & (1u << i))) applied.push_back(plan.filters[i]);
    if (applied.empty()) {
      if (size != plan.chunk_bytes)
        throw InputError(what + "stored size " + std::to_string(size) + " bytes, expected " +
                         std::to_string(plan.chunk_bytes) + ")");
      if (valid == plan.chunk_bytes) {  // straight into the event's buffer
        if (!pread_all(fd_, target, valid, address)) throw InputError(what + "truncated file)");
        continue;
      }
      stored.resize(size);
      if (!pread_all(fd_, stored.data(), size, address)) throw InputError(what + "truncated file)");
      std::memcpy(target, stored.data(), valid);
      continue;
    }
    stored.resize(size);
    if (!pread_all(fd_, stored.data(), size, address)) throw InputError(what + "truncated file)");
    // Undo the filters last-applied first, alternating between two scratch buffers; the last
    // step writes straight into the event when the chunk is whole (not an edge chunk).
    thread_local std::vector<std::byte> scratch_a, scratch_b;
    scratch_a.resize(plan.chunk_bytes);
    scratch_b.resize(plan.chunk_bytes);
    std::span<const std::byte> current(stored.data(), stored.size());
    for (std::size_t k = applied.size(); k-- > 0;) {
      std::byte* out = k == 0 && valid == plan.chunk_bytes  ? target
                       : current.data() == scratch_a.data() ? scratch_b.data()
                                                            : scratch_a.data();
      if (applied[k] == H5Z_FILTER_DEFLATE) {
        const std::string error = inflate_chunk(current, {out, plan.chunk_bytes});
        if (!error.empty()) throw InputError(what + error + ")");
      } else if (applied[k] == H5Z_filter_t(kLz4Filter)) {
        const std::string error = lz4_decode_chunk(current, {out, plan.chunk_bytes});
        if (!error.empty()) throw InputError(what + error + ")");
      } else if (applied[k] == H5Z_filter_t(hdf5_filter::kFilterId)) {
        // A codec stream decodes to the chunk's bytes or is refused, naming why.
        try {
          codec::decompress_cpu_into(reinterpret_cast<const std::uint8_t*>(current.data()),
                                     current.size(), out, plan.chunk_bytes);
        } catch (const InputError& e) {
          throw InputError(what + e.what() + ")");
        }
      } else if (applied[k] == H5Z_filter_t(kBitshuffleFilter)) {
        const std::string error =
            bitshuffle_lz4_decode_chunk(current, {out, plan.chunk_bytes}, plan.element_size);
        if (!error.empty()) throw InputError(what + error + ")");
      } else {  // shuffle
        if (current.size() != plan.chunk_bytes)
          throw InputError(what + "shuffled size " + std::to_string(current.size()) +
                           " bytes, expected " + std::to_string(plan.chunk_bytes) + ")");
        unshuffle_chunk(current, {out, plan.chunk_bytes}, plan.element_size);
      }
      current = std::span<const std::byte>(out, plan.chunk_bytes);
    }
    if (current.data() != target) std::memcpy(target, current.data(), valid);
  }
  return true;
}

void Hdf5EventReader::read_with_library(std::uint64_t index, void* raw, const std::string& where) {
  std::lock_guard hdf5(hdf5_mutex());
  QuietHdf5Errors quiet;
  H5Handle file_space(H5Dget_space(h_->data), H5Sclose);
  std::vector<hsize_t> start(info_.shape.size(), 0), count(info_.shape.begin(), info_.shape.end());
  start[0] = index;
  count[0] = 1;
  H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                      nullptr);
  H5Handle memory_space(H5Screate_simple(int(count.size()), count.data(), nullptr), H5Sclose);
  if (H5Dread(h_->data, native_type(info_.element_type), memory_space.get(), file_space.get(),
              H5P_DEFAULT, raw) < 0)
    throw InputError(where + ": event " + std::to_string(index) +
                     " cannot be read (damaged or truncated file, or a filter not available)");
}

io::ElementType element_type_of(RawEncoding encoding) {
  switch (encoding) {
    case RawEncoding::Float32:
      return io::ElementType::Float32;
    case RawEncoding::Uint32:
      return io::ElementType::UInt32;
    case RawEncoding::Int32:
      return io::ElementType::Int32;
    case RawEncoding::Epix10ka:
    case RawEncoding::Jungfrau:
    case RawEncoding::Uint16:
      return io::ElementType::UInt16;
  }
  return io::ElementType::UInt16;
}

DetectorDescription detector_for_file(const EventFileInfo& info, const std::string& requested) {
  const std::string where = "HDF5 file " + info.path.string() + ", dataset " + info.dataset;
  if (!requested.empty()) {
    DetectorDescription detector = find_detector(requested);
    if (!info.detector_name.empty() && info.detector_name != detector.name)
      throw InputError(where + ": recorded from detector " + info.detector_name +
                       " (attribute 'detector'), not " + detector.name);
    return detector;
  }
  if (!info.detector_description.empty()) {
    return parse_detector_description(
        parse_json_input(info.detector_description, where + ": attribute detector_description"),
        where + " attribute detector_description");
  }
  if (!info.detector_name.empty()) return find_detector(info.detector_name);
  // No attributes (a file of another program): the built-in detector of this shape and type.
  for (const auto& name : builtin_detector_names()) {
    DetectorDescription d = find_detector(name);
    if (element_type_of(d.encoding) != info.element_type) continue;
    const std::vector<std::uint64_t> per_event(info.shape.begin() + 1, info.shape.end());
    if (per_event == std::vector<std::uint64_t>{std::uint64_t(d.segments), std::uint64_t(d.rows),
                                                std::uint64_t(d.cols)} ||
        per_event == std::vector<std::uint64_t>{std::uint64_t(d.segments) * std::uint64_t(d.rows),
                                                std::uint64_t(d.cols)})
      return d;
  }
  throw InputError(where + ": no detector given and no built-in detector has events of shape " +
                   shape_text(info.shape) + " " + std::string(io::to_string(info.element_type)) +
                   "; name one (replay.detector)");
}

}  // namespace livedrp::replay
