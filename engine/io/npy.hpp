#pragma once
// NumPy .npy files (format versions 1.0, 2.0 and 3.0): little-endian numeric arrays in C order.
#include <filesystem>

#include "io/array.hpp"

namespace livedrp::io {

// Throws InputError naming the file and what is wrong (not .npy, unsupported dtype, Fortran
// order, big endian, truncated, trailing bytes).
Array read_npy(const std::filesystem::path& path);
// Writes format 1.0 (2.0 if the header would not fit); throws RuntimeFault when it cannot write.
void write_npy(const std::filesystem::path& path, const Array& array);

}  // namespace livedrp::io
