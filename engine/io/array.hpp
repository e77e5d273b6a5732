#pragma once
// An n-dimensional array of one element type, as the offline commands read and write it (NumPy
// .npy, an HDF5 dataset, raw binary). C order, little endian in memory.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace livedrp::io {

enum class ElementType : std::uint8_t { UInt8, UInt16, UInt32, Int16, Int32, Float32, Float64 };

std::size_t element_bytes(ElementType type);
std::string_view to_string(ElementType type);  // "uint16", "float32", ...
// "uint16", "u2", "<u2", "float32", "f4", ...; nullopt when not one livedrp handles.
std::optional<ElementType> element_type_from_name(std::string_view name);

struct Array {
  ElementType type = ElementType::Float32;
  std::vector<std::uint64_t> shape;  // empty: a scalar (one element)
  std::vector<std::uint8_t> bytes;   // elements() * element_bytes(type)

  std::uint64_t elements() const;
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(bytes.data());
  }
};

// "[2, 3, 4]".
std::string shape_text(const std::vector<std::uint64_t>& shape);
// Product of the extents, or nullopt when it overflows 2^63 bytes for `type`.
std::optional<std::uint64_t> checked_elements(const std::vector<std::uint64_t>& shape,
                                              ElementType type);

}  // namespace livedrp::io
