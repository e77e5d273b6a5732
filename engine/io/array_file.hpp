#pragma once
// What the offline commands accept as an array: "FILE.npy", "FILE.h5:/dataset" (any HDF5 file:
// .h5, .hdf5, .cxi, .nxs, ...), or raw binary with an element type and shape given separately.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/array.hpp"

namespace livedrp::io {

struct ArrayLocation {
  std::filesystem::path file;
  std::string dataset;  // HDF5 only; empty otherwise
};

// Splits "FILE:/dataset" at the last ':' followed by '/'; anything else is a plain file path.
ArrayLocation parse_array_location(const std::string& text);

enum class ArrayFormat { Npy, Hdf5, Raw };

// By content, not by name: HDF5's signature, then NumPy's magic; otherwise raw.
ArrayFormat detect_format(const std::filesystem::path& file);

// The element type and shape of raw binary input (--dtype, --shape).
struct RawLayout {
  ElementType type = ElementType::Float32;
  std::vector<std::uint64_t> shape;
};

// Reads the array at `location`. Raw files need `raw` (and their size must match it exactly);
// HDF5 files need a dataset. Throws InputError naming the file (and dataset) and what is wrong.
Array read_array(const ArrayLocation& location, const std::optional<RawLayout>& raw = {});
// Writes `array` in `format` (Raw: the bytes only). Throws RuntimeFault when it cannot.
void write_array(const ArrayLocation& location, ArrayFormat format, const Array& array);

// "352,384" or "16x352x384" -> extents; throws InputError for anything else.
std::vector<std::uint64_t> parse_shape_text(const std::string& text);

}  // namespace livedrp::io
