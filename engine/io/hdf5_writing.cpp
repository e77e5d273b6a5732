#include "io/hdf5_writing.hpp"

#include <utility>

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

}  // namespace

void H5Where::check(herr_t status, const std::string& what) const {
  if (status < 0) fail(what);
}

void H5Where::fail(const std::string& what) const {
  throw RuntimeFault("writing '" + file + "' failed (" + what + ")");
}

hid_t h5_group(const H5Where& where, hid_t parent, const char* name, const char* nx_class) {
  const hid_t group = H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  where.check(group, std::string("group ") + name);
  try {
    if (nx_class && *nx_class) h5_string_attribute(where, group, "NX_class", nx_class);
  } catch (...) {
    H5Gclose(group);
    throw;
  }
  return group;
}

void h5_string_attribute(const H5Where& where, hid_t object, const char* name,
                         const std::string& value) {
  const H5Handle type(new_string_type(), H5Tclose);
  const H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  const H5Handle attribute(
      H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char* text = value.c_str();
  where.check(attribute.valid() ? H5Awrite(attribute.get(), type.get(), &text) : -1,
              std::string("attribute ") + name);
}

void h5_strings_attribute(const H5Where& where, hid_t object, const char* name,
                          const std::vector<std::string>& values) {
  const H5Handle type(new_string_type(), H5Tclose);
  const hsize_t count = values.size();
  const H5Handle space(H5Screate_simple(1, &count, nullptr), H5Sclose);
  const H5Handle attribute(
      H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  std::vector<const char*> texts;
  for (const std::string& value : values) texts.push_back(value.c_str());
  where.check(attribute.valid() ? H5Awrite(attribute.get(), type.get(), texts.data()) : -1,
              std::string("attribute ") + name);
}

void h5_int_attribute(const H5Where& where, hid_t object, const char* name, std::int64_t value) {
  const H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  const H5Handle attribute(
      H5Acreate2(object, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  where.check(attribute.valid() ? H5Awrite(attribute.get(), H5T_NATIVE_INT64, &value) : -1,
              std::string("attribute ") + name);
}

void h5_string_field(const H5Where& where, hid_t parent, const char* name,
                     const std::string& value) {
  const H5Handle type(new_string_type(), H5Tclose);
  const H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  const H5Handle field(
      H5Dcreate2(parent, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  const char* text = value.c_str();
  where.check(
      field.valid() ? H5Dwrite(field.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) : -1,
      std::string("field ") + name);
}

void h5_int_field(const H5Where& where, hid_t parent, const char* name, std::int64_t value) {
  const H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  const H5Handle field(
      H5Dcreate2(parent, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  where.check(field.valid()
                  ? H5Dwrite(field.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value)
                  : -1,
              std::string("field ") + name);
}

hid_t h5_double_field(const H5Where& where, hid_t parent, const char* name,
                      const std::vector<double>& values) {
  const hsize_t count = values.size();
  const H5Handle space(H5Screate_simple(1, &count, nullptr), H5Sclose);
  const hid_t field =
      H5Dcreate2(parent, name, H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  where.check(field, std::string("field ") + name);
  if (count > 0 &&
      H5Dwrite(field, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) {
    H5Dclose(field);
    where.fail(std::string("field ") + name);
  }
  return field;
}

H5RowDataset::H5RowDataset(const H5Where& where, hid_t parent, const char* name, hid_t file_type,
                           hid_t memory_type, std::vector<hsize_t> row_shape)
    : where_(where), name_(name), memory_type_(memory_type), row_shape_(std::move(row_shape)) {
  std::vector<hsize_t> dims{0}, max_dims{H5S_UNLIMITED}, chunk{1};
  for (hsize_t extent : row_shape_) {
    dims.push_back(extent);
    max_dims.push_back(extent);
    chunk.push_back(extent);
  }
  const H5Handle space(H5Screate_simple(int(dims.size()), dims.data(), max_dims.data()), H5Sclose);
  const H5Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  where_.check(H5Pset_chunk(properties.get(), int(chunk.size()), chunk.data()),
               "chunking of " + name_);
  dataset_ =
      H5Dcreate2(parent, name, file_type, space.get(), H5P_DEFAULT, properties.get(), H5P_DEFAULT);
  where_.check(dataset_, "dataset " + name_);
}

H5RowDataset::~H5RowDataset() {
  if (dataset_ >= 0) H5Dclose(dataset_);
}

hsize_t H5RowDataset::row_values() const {
  hsize_t n = 1;
  for (hsize_t extent : row_shape_) n *= extent;
  return n;
}

void H5RowDataset::append(const void* values) {
  std::vector<hsize_t> size{rows_ + 1}, start{rows_}, count{1};
  for (hsize_t extent : row_shape_) {
    size.push_back(extent);
    start.push_back(0);
    count.push_back(extent);
  }
  where_.check(H5Dset_extent(dataset_, size.data()), "growing " + name_);
  const H5Handle file_space(H5Dget_space(dataset_), H5Sclose);
  where_.check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                   count.data(), nullptr),
               "selecting a row of " + name_);
  const H5Handle memory_space(H5Screate_simple(int(count.size()), count.data(), nullptr), H5Sclose);
  where_.check(
      H5Dwrite(dataset_, memory_type_, memory_space.get(), file_space.get(), H5P_DEFAULT, values),
      "a row of " + name_);
  ++rows_;
}

void H5RowDataset::close() {
  if (dataset_ < 0) return;
  const herr_t status = H5Dclose(dataset_);
  dataset_ = -1;
  where_.check(status, "closing " + name_);
}

void h5_close_file(const H5Where& where, hid_t& file, const H5RowDatasets& datasets) {
  std::string failure;
  for (auto* dataset : datasets) try {
      if (*dataset) (*dataset)->close();
    } catch (const std::exception& e) {
      if (failure.empty()) failure = e.what();
    }
  if (file >= 0) {
    if (H5Fclose(file) < 0 && failure.empty())
      failure = "writing '" + where.file + "' failed (closing it)";
    file = -1;
  }
  if (!failure.empty()) throw RuntimeFault(failure);
}

void h5_release_file(hid_t& file, const H5RowDatasets& datasets) {
  for (auto* dataset : datasets) dataset->reset();
  if (file >= 0) H5Fclose(std::exchange(file, -1));
}

}  // namespace livedrp::io
