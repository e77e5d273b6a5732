#include "io/array_file.hpp"

#include <cstring>
#include <fstream>

#include <hdf5.h>

#include "core/error.hpp"
#include "io/hdf5_array.hpp"
#include "io/hdf5_handle.hpp"
#include "io/npy.hpp"

namespace livedrp::io {

ArrayLocation parse_array_location(const std::string& text) {
  const std::size_t split = text.rfind(":/");
  if (split == std::string::npos || split == 0) return {text, {}};
  return {text.substr(0, split), text.substr(split + 1)};
}

ArrayFormat detect_format(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[6] = {};
  if (in.read(magic, sizeof magic) && std::memcmp(magic, "\x93NUMPY", 6) == 0)
    return ArrayFormat::Npy;
  QuietHdf5Errors quiet;
  if (H5Fis_hdf5(file.string().c_str()) > 0) return ArrayFormat::Hdf5;
  return ArrayFormat::Raw;
}

Array read_array(const ArrayLocation& location, const std::optional<RawLayout>& raw) {
  const std::string name = location.file.string();
  if (!std::filesystem::exists(location.file))
    throw InputError("input " + name + " does not exist");
  if (!std::filesystem::is_regular_file(location.file))
    throw InputError("input " + name + " is not a regular file");
  switch (detect_format(location.file)) {
    case ArrayFormat::Npy:
      if (!location.dataset.empty())
        throw InputError("input " + name + " is a .npy file; it has no dataset " +
                         location.dataset);
      return read_npy(location.file);
    case ArrayFormat::Hdf5:
      if (location.dataset.empty())
        throw InputError("input " + name + " is an HDF5 file: name the dataset, as " + name +
                         ":/path/to/dataset");
      return read_hdf5_dataset(location.file, location.dataset);
    case ArrayFormat::Raw:
      break;
  }
  if (!raw)
    throw InputError("input " + name +
                     " is neither .npy nor HDF5; raw binary needs --dtype and --shape");
  Array array;
  array.type = raw->type;
  array.shape = raw->shape;
  const auto elements = checked_elements(array.shape, array.type);
  if (!elements) throw InputError("raw shape " + shape_text(array.shape) + " is too large");
  const std::uint64_t want = *elements * element_bytes(array.type);
  const std::uint64_t have = std::filesystem::file_size(location.file);
  if (have != want)
    throw InputError("raw input " + name + " has " + std::to_string(have) + " bytes; " +
                     std::string(to_string(array.type)) + " of shape " + shape_text(array.shape) +
                     " needs " + std::to_string(want));
  array.bytes.resize(want);
  std::ifstream in(location.file, std::ios::binary);
  if (want > 0 && !in.read(reinterpret_cast<char*>(array.bytes.data()), std::streamsize(want)))
    throw InputError("raw input " + name + ": read failed");
  return array;
}

void write_array(const ArrayLocation& location, ArrayFormat format, const Array& array) {
  switch (format) {
    case ArrayFormat::Npy:
      write_npy(location.file, array);
      return;
    case ArrayFormat::Hdf5:
      write_hdf5_dataset(location.file, location.dataset.empty() ? "/data" : location.dataset,
                         array);
      return;
    case ArrayFormat::Raw: {
      std::ofstream out(location.file, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(array.bytes.data()),
                std::streamsize(array.bytes.size()));
      if (!out) throw RuntimeFault("cannot write " + location.file.string());
      return;
    }
  }
}

std::vector<std::uint64_t> parse_shape_text(const std::string& text) {
  std::vector<std::uint64_t> shape;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find_first_of(",x", at);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(at, end - at);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
        part.size() > 18)
      throw InputError("shape '" + text + "': expected extents like 352,384 or 16x352x384");
    shape.push_back(std::stoull(part));
    at = end + 1;
  }
  return shape;
}

}  // namespace livedrp::io
