#include "io/profile_writer_nexus.hpp"

#include <hdf5.h>

#include <ctime>
#include <filesystem>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5_handle.hpp"

namespace livedrp::io {
namespace {

// Variable-length UTF-8 strings: what h5py and silx read back as str.
hid_t new_string_type() {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  return type;
}

class NexusProfileWriter final : public ProfileWriter {
 public:
  NexusProfileWriter(const std::string& output, const ProfileOutputContext& context)
      : output_(output), context_(context) {
    QuietHdf5Errors quiet;
    file_ = H5Fcreate(output.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file_ < 0) {
      const std::filesystem::path folder = std::filesystem::path(output).parent_path();
      throw InputError("cannot write output file '" + output + "': " +
                       (folder.empty() || std::filesystem::is_directory(folder)
                            ? std::string("HDF5 could not create it (permission?)")
                            : "folder '" + folder.string() + "' does not exist"));
    }
    try {
      build_tree();
    } catch (...) {
      release();
      throw;
    }
  }
  ~NexusProfileWriter() override {
    QuietHdf5Errors quiet;
    release();
  }

  void write(std::uint64_t frame, const integrate::Profile& p) override {
    QuietHdf5Errors quiet;
    if (frame == 0)
      check(H5Dwrite(radial_, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, p.radial.data()),
            "the radial axis");
    write_row(intensity_, frame, p.intensity, "intensity");
    write_row(errors_, frame, p.sigma, "intensity_errors");
  }

  void close() override {
    QuietHdf5Errors quiet;
    bool ok = true;
    for (hid_t* dataset : {&intensity_, &errors_, &radial_}) {
      ok = H5Dclose(*dataset) >= 0 && ok;
      *dataset = -1;
    }
    ok = H5Fclose(file_) >= 0 && ok;
    file_ = -1;
    if (!ok) throw RuntimeFault("writing output file '" + output_ + "' failed (closing it)");
  }

  std::string destination() const override { return output_; }

 private:
  // Closes whatever is open, without reporting: the error that led here is reported instead.
  void release() {
    for (hid_t* dataset : {&intensity_, &errors_, &radial_})
      if (*dataset >= 0) H5Dclose(std::exchange(*dataset, -1));
    if (file_ >= 0) H5Fclose(std::exchange(file_, -1));
  }

  void check(herr_t status, const std::string& what) const {
    if (status < 0)
      throw RuntimeFault("writing output file '" + output_ + "' failed (" + what + ")");
  }

  // A new group of NeXus class `nx_class`; the caller owns the identifier.
  hid_t group(hid_t parent, const char* name, const char* nx_class) const {
    const hid_t g = H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(g, std::string("group ") + name);
    try {
      attribute(g, "NX_class", nx_class);
    } catch (...) {
      H5Gclose(g);
      throw;
    }
    return g;
  }

  void attribute(hid_t object, const char* name, const std::string& value) const {
    const H5Handle type(new_string_type(), H5Tclose);
    H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Handle a(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
               H5Aclose);
    const char* text = value.c_str();
    check(a.valid() ? H5Awrite(a.get(), type.get(), &text) : -1, std::string("attribute ") + name);
  }

  void attribute(hid_t object, const char* name, const std::vector<std::string>& values) const {
    const H5Handle type(new_string_type(), H5Tclose);
    const hsize_t count = values.size();
    H5Handle space(H5Screate_simple(1, &count, nullptr), H5Sclose);
    H5Handle a(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
               H5Aclose);
    std::vector<const char*> texts;
    for (const std::string& v : values) texts.push_back(v.c_str());
    check(a.valid() ? H5Awrite(a.get(), type.get(), texts.data()) : -1,
          std::string("attribute ") + name);
  }

  void attribute(hid_t object, const char* name, std::int64_t value) const {
    H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Handle a(H5Acreate2(object, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
               H5Aclose);
    check(a.valid() ? H5Awrite(a.get(), H5T_NATIVE_INT64, &value) : -1,
          std::string("attribute ") + name);
  }

  void text_field(hid_t parent, const char* name, const std::string& value) const {
    const H5Handle type(new_string_type(), H5Tclose);
    H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Handle d(
        H5Dcreate2(parent, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
        H5Dclose);
    const char* text = value.c_str();
    check(d.valid() ? H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) : -1,
          std::string("field ") + name);
  }

  hid_t array_field(hid_t parent, const char* name, hid_t file_type,
                    const std::vector<hsize_t>& shape) const {
    H5Handle space(H5Screate_simple(int(shape.size()), shape.data(), nullptr), H5Sclose);
    const hid_t d =
        H5Dcreate2(parent, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(d, std::string("field ") + name);
    return d;
  }

  void build_tree() {
    char now[32];
    const std::time_t t = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&t, &utc);
    std::strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &utc);

    attribute(file_, "default", "entry");
    attribute(file_, "creator", context_.program);
    attribute(file_, "file_name", output_);
    attribute(file_, "file_time", now);

    const H5Handle entry(group(file_, "entry", "NXentry"), H5Gclose);
    attribute(entry.get(), "default", "profiles");
    text_field(entry.get(), "program_name", context_.program);

    const H5Handle process(group(entry.get(), "integration", "NXprocess"), H5Gclose);
    text_field(process.get(), "program", context_.program);
    text_field(process.get(), "date", now);
    {
      H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
      H5Handle d(H5Dcreate2(process.get(), "sequence_index", H5T_STD_I64LE, space.get(),
                            H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                 H5Dclose);
      const std::int64_t one = 1;
      check(
          d.valid() ? H5Dwrite(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &one) : -1,
          "field sequence_index");
    }
    const H5Handle note(group(process.get(), "configuration", "NXnote"), H5Gclose);
    text_field(note.get(), "type", "text/json");
    text_field(note.get(), "data", context_.configuration_json);

    const std::string axis = radial_axis_name(context_.unit);
    const H5Handle data(group(entry.get(), "profiles", "NXdata"), H5Gclose);
    attribute(data.get(), "signal", "intensity");
    attribute(data.get(), "axes", std::vector<std::string>{"frame", axis});
    attribute(data.get(), "frame_indices", std::int64_t(0));
    attribute(data.get(), (axis + "_indices").c_str(), std::int64_t(1));

    const std::vector<hsize_t> shape{context_.frames, context_.bins};
    intensity_ = array_field(data.get(), "intensity", H5T_IEEE_F64LE, shape);
    attribute(intensity_, "interpretation", "spectrum");
    attribute(intensity_, "long_name", "intensity");
    errors_ = array_field(data.get(), "intensity_errors", H5T_IEEE_F64LE, shape);
    attribute(errors_, "long_name", "sigma of the intensity");

    const hid_t frames = array_field(data.get(), "frame", H5T_STD_U64LE, {context_.frames});
    H5Handle frames_handle(frames, H5Dclose);
    attribute(frames, "long_name", "frame index in the input");
    std::vector<std::uint64_t> index(context_.frames);
    for (std::uint64_t f = 0; f < context_.frames; ++f) index[f] = f;
    if (context_.frames > 0)
      check(H5Dwrite(frames, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, index.data()),
            "field frame");

    radial_ = array_field(data.get(), axis.c_str(), H5T_IEEE_F64LE, {context_.bins});
    attribute(radial_, "units", radial_axis_units(context_.unit));
    attribute(radial_, "long_name",
              axis + " (" + std::string(integrate::to_string(context_.unit)) + ")");
  }

  void write_row(hid_t dataset, std::uint64_t frame, const std::vector<double>& values,
                 const char* what) const {
    if (values.size() != context_.bins)
      throw RuntimeFault("profile of " + std::to_string(values.size()) + " bins, the file has " +
                         std::to_string(context_.bins));
    H5Handle file_space(H5Dget_space(dataset), H5Sclose);
    const hsize_t start[2] = {frame, 0}, count[2] = {1, context_.bins};
    H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
    H5Handle memory_space(H5Screate_simple(2, count, nullptr), H5Sclose);
    check(H5Dwrite(dataset, H5T_NATIVE_DOUBLE, memory_space.get(), file_space.get(), H5P_DEFAULT,
                   values.data()),
          what);
  }

  std::string output_;
  ProfileOutputContext context_;
  hid_t file_ = -1, intensity_ = -1, errors_ = -1, radial_ = -1;
};

}  // namespace

std::unique_ptr<ProfileWriter> open_nexus_profile_writer(const std::string& output,
                                                         const ProfileOutputContext& context) {
  return std::make_unique<NexusProfileWriter>(output, context);
}

}  // namespace livedrp::io
