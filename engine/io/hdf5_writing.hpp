#pragma once
// What the live writers (CXI hit files, the profile series) share to build HDF5 files: groups with
// a NeXus class, string attributes and fields, and datasets that grow by whole rows along their
// first dimension (chunked one row per chunk, so a reader can take any row alone and the file is
// complete after each append). Every failure throws RuntimeFault naming the file and the object.
// Callers hold replay::hdf5_mutex() around every call (HDF5 may be built without thread safety).
#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace livedrp::io {

// The file and object names for error messages.
struct H5Where {
  std::string file;
  void check(herr_t status, const std::string& what) const;  // status < 0: RuntimeFault
  [[noreturn]] void fail(const std::string& what) const;
};

// A new group (NX_class `nx_class` when not empty); the caller closes it.
hid_t h5_group(const H5Where& where, hid_t parent, const char* name, const char* nx_class);
void h5_string_attribute(const H5Where& where, hid_t object, const char* name,
                         const std::string& value);
void h5_strings_attribute(const H5Where& where, hid_t object, const char* name,
                          const std::vector<std::string>& values);
void h5_int_attribute(const H5Where& where, hid_t object, const char* name, std::int64_t value);
// A scalar variable-length UTF-8 string field (what h5py reads as str).
void h5_string_field(const H5Where& where, hid_t parent, const char* name,
                     const std::string& value);
void h5_int_field(const H5Where& where, hid_t parent, const char* name, std::int64_t value);
// A one-dimensional float64 field written at once (a radial axis); the caller closes it.
hid_t h5_double_field(const H5Where& where, hid_t parent, const char* name,
                      const std::vector<double>& values);

// A dataset of shape [rows, row_shape...], rows unlimited, one row per chunk.
class H5RowDataset {
 public:
  H5RowDataset(const H5Where& where, hid_t parent, const char* name, hid_t file_type,
               hid_t memory_type, std::vector<hsize_t> row_shape);
  ~H5RowDataset();
  H5RowDataset(const H5RowDataset&) = delete;
  H5RowDataset& operator=(const H5RowDataset&) = delete;

  // One more row, row_values() values of the memory type at `values`.
  void append(const void* values);
  hid_t id() const { return dataset_; }
  hsize_t rows() const { return rows_; }
  hsize_t row_values() const;
  void close();  // throws when HDF5 refuses; idempotent

 private:
  H5Where where_;
  std::string name_;
  hid_t dataset_ = -1;
  hid_t memory_type_;
  std::vector<hsize_t> row_shape_;
  hsize_t rows_ = 0;
};

// A writer's open datasets, by pointer (those not open are empty optionals).
using H5RowDatasets = std::vector<std::optional<H5RowDataset>*>;
// Closes every open dataset, then `file` (set to -1); after everything is closed, throws
// RuntimeFault with the first failure.
void h5_close_file(const H5Where& where, hid_t& file, const H5RowDatasets& datasets);
// Closes whatever is open without reporting: the error that led here is reported instead.
void h5_release_file(hid_t& file, const H5RowDatasets& datasets);

}  // namespace livedrp::io
