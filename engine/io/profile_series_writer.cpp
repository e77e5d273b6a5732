#include "io/profile_series_writer.hpp"

#include <hdf5.h>

#include <filesystem>
#include <optional>
#include <utility>

#include "core/error.hpp"
#include "io/hdf5_handle.hpp"
#include "io/hdf5_writing.hpp"
#include "io/profile_output.hpp"

namespace livedrp::io {

struct ProfileSeriesWriter::File {
  H5Where where;
  hid_t handle = -1;
  std::optional<H5RowDataset> intensity, pulse_id, sequence, timestamp;

  explicit File(const ProfileSeriesOptions& o) : where{o.path} {
    handle = H5Fcreate(o.path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    if (handle < 0) {
      const std::filesystem::path folder = std::filesystem::path(o.path).parent_path();
      throw InputError("--write-profiles: cannot create '" + o.path + "': " +
                       (std::filesystem::exists(o.path)
                            ? std::string("it exists (profiles are not overwritten)")
                        : folder.empty() || std::filesystem::is_directory(folder)
                            ? std::string("the folder is not writable")
                            : "folder '" + folder.string() + "' does not exist"));
    }
    try {
      build(o);
    } catch (...) {
      release();
      throw;
    }
  }
  ~File() { release(); }

  void build(const ProfileSeriesOptions& o) {
    h5_string_attribute(where, handle, "pipeline_config", o.pipeline_config_json);
    h5_string_attribute(where, handle, "creator", "livedrp-engine");
    h5_string_attribute(where, handle, "default", "entry");
    const H5Handle entry(h5_group(where, handle, "entry", "NXentry"), H5Gclose);
    h5_string_attribute(where, entry.get(), "default", "profiles");
    {
      const H5Handle note(h5_group(where, entry.get(), "configuration", "NXnote"), H5Gclose);
      h5_string_field(where, note.get(), "type", "text/json");
      h5_string_field(where, note.get(), "data", o.pipeline_config_json);
    }
    const std::string axis = radial_axis_name(o.unit);
    const H5Handle data(h5_group(where, entry.get(), "profiles", "NXdata"), H5Gclose);
    h5_string_attribute(where, data.get(), "signal", "intensity");
    h5_strings_attribute(where, data.get(), "axes", {".", axis});
    h5_int_attribute(where, data.get(), (axis + "_indices").c_str(), 1);
    intensity.emplace(where, data.get(), "intensity", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                      std::vector<hsize_t>{hsize_t(o.radial.size())});
    h5_string_attribute(where, intensity->id(), "interpretation", "spectrum");
    {
      const H5Handle radial(h5_double_field(where, data.get(), axis.c_str(), o.radial), H5Dclose);
      h5_string_attribute(where, radial.get(), "units", radial_axis_units(o.unit));
      h5_string_attribute(where, radial.get(), "long_name",
                          axis + " (" + std::string(integrate::to_string(o.unit)) + ")");
    }
    pulse_id.emplace(where, data.get(), "pulse_id", H5T_STD_U64LE, H5T_NATIVE_UINT64,
                     std::vector<hsize_t>{});
    sequence.emplace(where, data.get(), "event_sequence", H5T_STD_U64LE, H5T_NATIVE_UINT64,
                     std::vector<hsize_t>{});
    timestamp.emplace(where, data.get(), "timestamp_ns", H5T_STD_I64LE, H5T_NATIVE_INT64,
                      std::vector<hsize_t>{});
  }

  void close() { h5_close_file(where, handle, {&intensity, &pulse_id, &sequence, &timestamp}); }
  void release() { h5_release_file(handle, {&intensity, &pulse_id, &sequence, &timestamp}); }
};

ProfileSeriesWriter::ProfileSeriesWriter(ProfileSeriesOptions options)
    : options_(std::move(options)) {
  if (options_.radial.empty())
    throw InputError("--write-profiles: the integration has no radial bins");
  QuietHdf5Errors quiet;
  file_ = std::make_unique<File>(options_);
}

ProfileSeriesWriter::~ProfileSeriesWriter() {
  try {
    close();
  } catch (...) {
    // close() explicitly to see the error
  }
}

void ProfileSeriesWriter::append(const EventHeader& header, const std::vector<double>& intensity) {
  if (!file_) throw RuntimeFault("profile series '" + options_.path + "' is closed");
  if (intensity.size() != options_.radial.size())
    throw RuntimeFault("a profile of " + std::to_string(intensity.size()) + " bins for '" +
                       options_.path + "', which has " + std::to_string(options_.radial.size()));
  QuietHdf5Errors quiet;
  file_->intensity->append(intensity.data());
  file_->pulse_id->append(&header.pulse_id);
  file_->sequence->append(&header.sequence);
  file_->timestamp->append(&header.timestamp_ns);
  ++rows_;
}

void ProfileSeriesWriter::close() {
  if (!file_) return;
  QuietHdf5Errors quiet;
  auto file = std::move(file_);
  file->close();
}

}  // namespace livedrp::io
