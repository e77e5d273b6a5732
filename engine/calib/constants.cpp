#include "calib/constants.hpp"

#include <cmath>
#include <string>

#include <hdf5.h>

#include "core/error.hpp"
#include "io/hdf5_handle.hpp"

namespace livedrp {
namespace {

using io::H5Handle;
using io::QuietHdf5Errors;

std::string shape_text(const std::vector<hsize_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Reads a whole dataset as `memory_type` after checking its shape; HDF5 converts the stored
// numeric type (e.g. float64 pedestals) to the memory type.
template <typename T>
std::vector<T> read_dataset(hid_t file, const std::string& path, const std::string& name,
                            const std::vector<hsize_t>& expected_shape, hid_t memory_type,
                            bool expect_float) {
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0)
    throw InputError("constants file " + path + ": dataset /" + name + " is missing");
  H5Handle dataset(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.valid())
    throw InputError("constants file " + path + ": /" + name + " is not a readable dataset");
  H5Handle type(H5Dget_type(dataset.get()), H5Tclose);
  const H5T_class_t type_class = H5Tget_class(type.get());
  if (type_class != H5T_INTEGER && type_class != H5T_FLOAT)
    throw InputError("constants file " + path + ": /" + name + " must be numeric");
  if (!expect_float && type_class == H5T_FLOAT)
    throw InputError("constants file " + path + ": /" + name +
                     " must hold integers (uint8), found floating point");
  H5Handle space(H5Dget_space(dataset.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> shape(rank > 0 ? std::size_t(rank) : 0);
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), shape.data(), nullptr);
  if (shape != expected_shape)
    throw InputError("constants file " + path + ": /" + name + " has shape " + shape_text(shape) +
                     ", expected " + shape_text(expected_shape));
  std::size_t count = 1;
  for (hsize_t extent : shape) count *= std::size_t(extent);
  std::vector<T> values(count);
  if (H5Dread(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    throw InputError("constants file " + path + ": cannot read /" + name +
                     " (damaged file or unconvertible type)");
  return values;
}

template <typename T>
void write_dataset(hid_t file, const std::string& path, const std::string& name,
                   const std::vector<hsize_t>& shape, hid_t file_type, hid_t memory_type,
                   const T* values) {
  H5Handle space(H5Screate_simple(int(shape.size()), shape.data(), nullptr), H5Sclose);
  H5Handle dataset(
      H5Dcreate2(file, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  if (!dataset.valid() ||
      H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0)
    throw RuntimeFault("constants file " + path + ": cannot write /" + name);
}

// The "detector" attribute, when present, must name this detector.
void check_detector_attribute(hid_t file, const std::string& path,
                              const DetectorDescription& detector) {
  if (H5Aexists(file, "detector") > 0) {
    H5Handle attribute(H5Aopen(file, "detector", H5P_DEFAULT), H5Aclose);
    H5Handle type(H5Aget_type(attribute.get()), H5Tclose);
    if (H5Tget_class(type.get()) == H5T_STRING) {
      std::string name;
      if (H5Tis_variable_str(type.get()) > 0) {
        char* text = nullptr;
        H5Handle memory_type(H5Tcopy(H5T_C_S1), H5Tclose);
        H5Tset_size(memory_type.get(), H5T_VARIABLE);
        if (H5Aread(attribute.get(), memory_type.get(), &text) >= 0 && text) {
          name = text;
          H5free_memory(text);
        }
      } else {
        std::string buffer(H5Tget_size(type.get()), '\0');
        if (H5Aread(attribute.get(), type.get(), buffer.data()) >= 0) name = buffer.c_str();
      }
      if (name != detector.name)
        throw InputError("constants file " + path + " is for detector '" + name + "', not '" +
                         detector.name + "'");
    }
  }
}

}  // namespace

bool has_gain_configuration(const DetectorDescription& detector) {
  return detector.encoding == RawEncoding::Epix10ka;
}

const std::vector<std::string>& epix10ka_config_names() {
  // Ordered by value: calib::kConfigFH = 0 ... calib::kConfigAML = 4.
  static const std::vector<std::string> names = {"FH", "FM", "FL", "AHL", "AML"};
  return names;
}

std::optional<std::uint8_t> epix10ka_config_value(std::string_view name) {
  const std::vector<std::string>& names = epix10ka_config_names();
  for (std::size_t value = 0; value < names.size(); ++value)
    if (names[value] == name) return std::uint8_t(value);
  return std::nullopt;
}

CalibrationConstants identity_constants(const DetectorDescription& detector) {
  CalibrationConstants constants;
  constants.modes = detector.modes();
  constants.pixels = detector.pixels();
  constants.pedestal_gain.assign(std::size_t(constants.modes) * constants.pixels, {0.0f, 1.0f});
  constants.pixel_status.assign(constants.pixels, calib::kConfigFH);
  // Gap pixels hold no sensor: their marker value makes them bad in every event anyway, and masked
  // here integration and peak finding leave them out instead of reading them as 0.
  if (!detector.gap_rows.empty() || !detector.gap_cols.empty())
    for (std::size_t p = 0; p < constants.pixels; ++p) {
      const std::size_t in_segment = p % detector.pixels_per_segment();
      if (detector.in_gap(int(in_segment / std::size_t(detector.cols)),
                          int(in_segment % std::size_t(detector.cols))))
        constants.pixel_status[p] |= calib::kStatusMasked;
    }
  return constants;
}

CalibrationConstants load_constants_hdf5(const std::filesystem::path& file_path,
                                         const DetectorDescription& detector) {
  const std::string path = file_path.string();
  QuietHdf5Errors quiet;
  if (!std::filesystem::exists(file_path))
    throw InputError("constants file " + path + " does not exist");
  if (H5Fis_hdf5(path.c_str()) <= 0)
    throw InputError("constants file " + path + " is not an HDF5 file");
  H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) throw InputError("constants file " + path + " cannot be opened");

  check_detector_attribute(file.get(), path, detector);

  const hsize_t modes = hsize_t(detector.modes()), segments = hsize_t(detector.segments),
                rows = hsize_t(detector.rows), cols = hsize_t(detector.cols);
  const std::vector<hsize_t> plane_shape{modes, segments, rows, cols};
  const std::vector<hsize_t> pixel_shape{segments, rows, cols};
  const auto pedestal =
      read_dataset<float>(file.get(), path, "pedestal", plane_shape, H5T_NATIVE_FLOAT, true);
  const auto gain =
      read_dataset<float>(file.get(), path, "gain", plane_shape, H5T_NATIVE_FLOAT, true);
  const auto mask =
      read_dataset<std::uint8_t>(file.get(), path, "mask", pixel_shape, H5T_NATIVE_UINT8, false);

  CalibrationConstants constants;
  constants.modes = detector.modes();
  constants.pixels = detector.pixels();
  constants.pedestal_gain.resize(pedestal.size());
  for (std::size_t i = 0; i < pedestal.size(); ++i) {
    if (!std::isfinite(pedestal[i]) || !std::isfinite(gain[i]))
      throw InputError("constants file " + path + ": non-finite pedestal or gain at flat index " +
                       std::to_string(i) + " (mode " + std::to_string(i / constants.pixels) +
                       ", pixel " + std::to_string(i % constants.pixels) + ")");
    constants.pedestal_gain[i] = {pedestal[i], gain[i]};
  }
  constants.pixel_status.assign(constants.pixels, calib::kConfigFH);
  if (detector.encoding == RawEncoding::Epix10ka) {
    const auto config = read_dataset<std::uint8_t>(file.get(), path, "config", pixel_shape,
                                                   H5T_NATIVE_UINT8, false);
    for (std::size_t p = 0; p < constants.pixels; ++p) {
      if (config[p] > calib::kConfigAML)
        throw InputError("constants file " + path + ": /config value " +
                         std::to_string(int(config[p])) + " at pixel " + std::to_string(p) +
                         " is not a gain configuration (0..4: FH FM FL AHL AML)");
      constants.pixel_status[p] = config[p];
    }
  }
  for (std::size_t p = 0; p < constants.pixels; ++p)
    if (mask[p] != 0) constants.pixel_status[p] |= calib::kStatusMasked;
  return constants;
}

void save_constants_hdf5(const std::filesystem::path& file_path,
                         const DetectorDescription& detector,
                         const CalibrationConstants& constants) {
  const std::string path = file_path.string();
  if (constants.pixels != detector.pixels() || constants.modes != detector.modes())
    throw InputError("constants do not match detector " + detector.name);
  QuietHdf5Errors quiet;
  H5Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) throw RuntimeFault("cannot create constants file " + path);

  const hsize_t modes = hsize_t(detector.modes()), segments = hsize_t(detector.segments),
                rows = hsize_t(detector.rows), cols = hsize_t(detector.cols);
  std::vector<float> pedestal(constants.pedestal_gain.size()), gain(constants.pedestal_gain.size());
  for (std::size_t i = 0; i < pedestal.size(); ++i) {
    pedestal[i] = constants.pedestal_gain[i].pedestal;
    gain[i] = constants.pedestal_gain[i].gain;
  }
  std::vector<std::uint8_t> mask(constants.pixels), config(constants.pixels);
  for (std::size_t p = 0; p < constants.pixels; ++p) {
    mask[p] = constants.masked(p) ? 1 : 0;
    config[p] = constants.pixel_status[p] & calib::kStatusConfigBits;
  }
  write_dataset(file.get(), path, "pedestal", {modes, segments, rows, cols}, H5T_IEEE_F32LE,
                H5T_NATIVE_FLOAT, pedestal.data());
  write_dataset(file.get(), path, "gain", {modes, segments, rows, cols}, H5T_IEEE_F32LE,
                H5T_NATIVE_FLOAT, gain.data());
  write_dataset(file.get(), path, "mask", {segments, rows, cols}, H5T_STD_U8LE, H5T_NATIVE_UINT8,
                mask.data());
  if (detector.encoding == RawEncoding::Epix10ka)
    write_dataset(file.get(), path, "config", {segments, rows, cols}, H5T_STD_U8LE,
                  H5T_NATIVE_UINT8, config.data());

  H5Handle string_type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(string_type.get(), detector.name.size() + 1);
  H5Handle scalar(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attribute(
      H5Acreate2(file.get(), "detector", string_type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
      H5Aclose);
  if (!attribute.valid() || H5Awrite(attribute.get(), string_type.get(), detector.name.c_str()) < 0)
    throw RuntimeFault("constants file " + path + ": cannot write the detector attribute");
}

GainMap load_gain_map_hdf5(const std::filesystem::path& file_path,
                           const DetectorDescription& detector) {
  const std::string path = file_path.string();
  QuietHdf5Errors quiet;
  if (!std::filesystem::exists(file_path))
    throw InputError("gain file " + path + " does not exist");
  if (H5Fis_hdf5(path.c_str()) <= 0) throw InputError("gain file " + path + " is not an HDF5 file");
  H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) throw InputError("gain file " + path + " cannot be opened");
  check_detector_attribute(file.get(), path, detector);
  const hsize_t modes = hsize_t(detector.modes()), segments = hsize_t(detector.segments),
                rows = hsize_t(detector.rows), cols = hsize_t(detector.cols);
  GainMap map;
  map.gain = read_dataset<float>(file.get(), path, "gain", {modes, segments, rows, cols},
                                 H5T_NATIVE_FLOAT, true);
  for (std::size_t i = 0; i < map.gain.size(); ++i)
    if (!std::isfinite(map.gain[i]))
      throw InputError("gain file " + path + ": non-finite gain at flat index " +
                       std::to_string(i));
  if (detector.encoding == RawEncoding::Epix10ka &&
      H5Lexists(file.get(), "config", H5P_DEFAULT) > 0) {
    map.config = read_dataset<std::uint8_t>(file.get(), path, "config", {segments, rows, cols},
                                            H5T_NATIVE_UINT8, false);
    for (std::size_t p = 0; p < map.config.size(); ++p)
      if (map.config[p] > calib::kConfigAML)
        throw InputError("gain file " + path + ": /config value " +
                         std::to_string(int(map.config[p])) + " at pixel " + std::to_string(p) +
                         " is not a gain configuration (0..4: FH FM FL AHL AML)");
  }
  return map;
}

}  // namespace livedrp
