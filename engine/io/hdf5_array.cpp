#include "io/hdf5_array.hpp"

#include "core/error.hpp"
#include "core/memory_limit.hpp"
#include "io/hdf5_handle.hpp"

namespace livedrp::io {
namespace {

// The native memory type HDF5 converts to for each element type.
hid_t native_type(ElementType type) {
  switch (type) {
    case ElementType::UInt8:
      return H5T_NATIVE_UINT8;
    case ElementType::UInt16:
      return H5T_NATIVE_UINT16;
    case ElementType::UInt32:
      return H5T_NATIVE_UINT32;
    case ElementType::Int16:
      return H5T_NATIVE_INT16;
    case ElementType::Int32:
      return H5T_NATIVE_INT32;
    case ElementType::Float32:
      return H5T_NATIVE_FLOAT;
    case ElementType::Float64:
      return H5T_NATIVE_DOUBLE;
  }
  return H5T_NATIVE_FLOAT;
}

}  // namespace

Array read_hdf5_dataset(const std::filesystem::path& path, const std::string& dataset) {
  const std::string where = "HDF5 file " + path.string() + ", dataset " + dataset;
  QuietHdf5Errors quiet;
  if (!std::filesystem::exists(path))
    throw InputError("HDF5 file " + path.string() + " does not exist");
  if (H5Fis_hdf5(path.string().c_str()) <= 0)
    throw InputError("file " + path.string() + " is not an HDF5 file");
  H5Handle file(H5Fopen(path.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) throw InputError("HDF5 file " + path.string() + " cannot be opened");
  if (dataset.empty() || dataset.front() != '/')
    throw InputError(where + ": the dataset path must start with '/'");
  // H5Lexists needs every parent group to exist; check them one by one for a clear message.
  for (std::size_t at = dataset.find('/', 1);; at = dataset.find('/', at + 1)) {
    const std::string prefix = dataset.substr(0, at);
    if (H5Lexists(file.get(), prefix.c_str(), H5P_DEFAULT) <= 0)
      throw InputError(where + ": " + prefix + " does not exist");
    if (at == std::string::npos) break;
  }
  {
    H5Handle object(H5Oopen(file.get(), dataset.c_str(), H5P_DEFAULT), H5Oclose);
    if (!object.valid() || H5Iget_type(object.get()) != H5I_DATASET)
      throw InputError(where + ": not a dataset (a group?)");
  }
  H5Handle set(H5Dopen2(file.get(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!set.valid()) throw InputError(where + ": cannot be opened");
  H5Handle type(H5Dget_type(set.get()), H5Tclose);
  const H5T_class_t type_class = H5Tget_class(type.get());
  const std::size_t size = H5Tget_size(type.get());
  Array array;
  if (type_class == H5T_FLOAT && (size == 4 || size == 8)) {
    array.type = size == 4 ? ElementType::Float32 : ElementType::Float64;
  } else if (type_class == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type.get()) == H5T_SGN_2;
    if (!is_signed && size == 1)
      array.type = ElementType::UInt8;
    else if (!is_signed && size == 2)
      array.type = ElementType::UInt16;
    else if (!is_signed && size == 4)
      array.type = ElementType::UInt32;
    else if (is_signed && size == 2)
      array.type = ElementType::Int16;
    else if (is_signed && size == 4)
      array.type = ElementType::Int32;
    else
      throw InputError(where + ": " + std::string(is_signed ? "signed" : "unsigned") + " " +
                       std::to_string(8 * size) + "-bit integers are not handled");
  } else {
    throw InputError(where + ": not a numeric dataset");
  }
  H5Handle space(H5Dget_space(set.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) throw InputError(where + ": cannot read its shape");
  std::vector<hsize_t> dims(std::size_t(rank), 0);
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  array.shape.assign(dims.begin(), dims.end());
  const auto elements = checked_elements(array.shape, array.type);
  if (!elements) throw InputError(where + ": shape " + shape_text(array.shape) + " is too large");
  check_input_allocation(*elements * element_bytes(array.type),
                         where + ": shape " + shape_text(array.shape));
  array.bytes.resize(*elements * element_bytes(array.type));
  if (*elements > 0 && H5Dread(set.get(), native_type(array.type), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                               array.bytes.data()) < 0)
    throw InputError(where + ": cannot read the data (damaged file or a filter not available)");
  return array;
}

void write_hdf5_dataset(const std::filesystem::path& path, const std::string& dataset,
                        const Array& array) {
  const std::string where = "HDF5 file " + path.string() + ", dataset " + dataset;
  QuietHdf5Errors quiet;
  const bool exists = std::filesystem::exists(path) && H5Fis_hdf5(path.string().c_str()) > 0;
  H5Handle file(exists ? H5Fopen(path.string().c_str(), H5F_ACC_RDWR, H5P_DEFAULT)
                       : H5Fcreate(path.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                H5Fclose);
  if (!file.valid()) throw RuntimeFault(where + ": cannot open the file for writing");
  if (H5Lexists(file.get(), dataset.c_str(), H5P_DEFAULT) > 0 &&
      H5Ldelete(file.get(), dataset.c_str(), H5P_DEFAULT) < 0)
    throw RuntimeFault(where + ": cannot replace the existing dataset");
  std::vector<hsize_t> dims(array.shape.begin(), array.shape.end());
  H5Handle space(dims.empty() ? H5Screate(H5S_SCALAR)
                              : H5Screate_simple(int(dims.size()), dims.data(), nullptr),
                 H5Sclose);
  H5Handle links(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(links.get(), 1);
  H5Handle set(H5Dcreate2(file.get(), dataset.c_str(), native_type(array.type), space.get(),
                          links.get(), H5P_DEFAULT, H5P_DEFAULT),
               H5Dclose);
  if (!set.valid()) throw RuntimeFault(where + ": cannot create the dataset");
  if (!array.bytes.empty() && H5Dwrite(set.get(), native_type(array.type), H5S_ALL, H5S_ALL,
                                       H5P_DEFAULT, array.bytes.data()) < 0)
    throw RuntimeFault(where + ": write failed");
}

}  // namespace livedrp::io
