#include "io/average_image_writer.hpp"

#include <hdf5.h>

#include <filesystem>

#include "core/error.hpp"
#include "io/hdf5_handle.hpp"
#include "io/hdf5_writing.hpp"

namespace livedrp::io {
namespace {

void u64_field(const H5Where& where, hid_t parent, const char* name, std::uint64_t value) {
  const H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  const H5Handle field(
      H5Dcreate2(parent, name, H5T_STD_U64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  where.check(field.valid()
                  ? H5Dwrite(field.get(), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value)
                  : -1,
              std::string("field ") + name);
}

}  // namespace

AverageImageWriter::AverageImageWriter(AverageImageOptions options) : options_(std::move(options)) {
  QuietHdf5Errors quiet;
  const hid_t file =
      H5Fcreate(options_.path.c_str(), options_.overwrite ? H5F_ACC_TRUNC : H5F_ACC_EXCL,
                H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0) {
    const std::filesystem::path folder = std::filesystem::path(options_.path).parent_path();
    throw InputError(
        options_.origin + ": cannot create '" + options_.path + "': " +
        (!options_.overwrite && std::filesystem::exists(options_.path)
             ? std::string("it exists (not overwritten)")
         : folder.empty() || std::filesystem::is_directory(folder)
             ? std::string(std::filesystem::exists(options_.path) ? "it is not writable"
                                                                  : "the folder is not writable")
             : "folder '" + folder.string() + "' does not exist"));
  }
  file_ = file;
}

AverageImageWriter::~AverageImageWriter() {
  if (file_ >= 0) H5Fclose(hid_t(file_));
}

void AverageImageWriter::write(const std::vector<float>& image, std::size_t height,
                               std::size_t width, std::uint64_t events,
                               std::uint64_t first_pulse_id, std::uint64_t last_pulse_id) {
  if (file_ < 0) throw RuntimeFault("'" + options_.path + "' is closed");
  if (image.size() != height * width)
    throw RuntimeFault("average image of " + std::to_string(image.size()) + " values for " +
                       std::to_string(height) + " x " + std::to_string(width));
  QuietHdf5Errors quiet;
  const hid_t file = hid_t(file_);
  const H5Where where{options_.path};
  h5_string_attribute(where, file, "pipeline_config", options_.pipeline_config_json);
  h5_string_attribute(where, file, "creator", options_.creator);
  h5_string_attribute(where, file, "default", "entry");
  {
    const H5Handle entry(h5_group(where, file, "entry", "NXentry"), H5Gclose);
    h5_string_attribute(where, entry.get(), "default", "average");
    {
      const H5Handle note(h5_group(where, entry.get(), "configuration", "NXnote"), H5Gclose);
      h5_string_field(where, note.get(), "type", "text/json");
      h5_string_field(where, note.get(), "data", options_.pipeline_config_json);
    }
    const H5Handle data(h5_group(where, entry.get(), "average", "NXdata"), H5Gclose);
    h5_string_attribute(where, data.get(), "signal", "data");
    h5_string_attribute(where, data.get(), "averaged_over", options_.averaged_over);
    h5_string_attribute(
        where, data.get(), "averaged_over_note",
        options_.averaged_over_note.empty()
            ? std::string("the mean of every processed event of the run (events), per pixel "
                          "over its finite calibrated values")
            : options_.averaged_over_note);
    const hsize_t shape[2] = {height, width};
    const H5Handle space(H5Screate_simple(2, shape, nullptr), H5Sclose);
    const H5Handle dataset(H5Dcreate2(data.get(), "data", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT,
                                      H5P_DEFAULT, H5P_DEFAULT),
                           H5Dclose);
    where.check(dataset.valid() ? H5Dwrite(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL,
                                           H5P_DEFAULT, image.data())
                                : -1,
                "dataset data");
    h5_string_attribute(where, dataset.get(), "interpretation", "image");
    if (!options_.unit.empty()) h5_string_attribute(where, dataset.get(), "units", options_.unit);
    u64_field(where, data.get(), "events", events);
    u64_field(where, data.get(), "first_pulse_id", first_pulse_id);
    u64_field(where, data.get(), "last_pulse_id", last_pulse_id);
  }
  const herr_t closed = H5Fclose(file);
  file_ = -1;
  where.check(closed, "closing it");
}

}  // namespace livedrp::io
