#pragma once
// One HDF5 dataset as an Array: any numeric dataset livedrp handles, contiguous or chunked,
// compressed with HDF5's built-in filters or not (HDF5 decodes them).
#include <filesystem>
#include <string>

#include "io/array.hpp"

namespace livedrp::io {

// Throws InputError naming the file and the dataset (missing file, not HDF5, missing dataset, a
// group or non-numeric type, an element type livedrp does not handle, unreadable data).
Array read_hdf5_dataset(const std::filesystem::path& path, const std::string& dataset);
// Creates (or replaces) `dataset` in `path`, creating the file and intermediate groups as needed.
// Throws RuntimeFault when it cannot write.
void write_hdf5_dataset(const std::filesystem::path& path, const std::string& dataset,
                        const Array& array);

}  // namespace livedrp::io
