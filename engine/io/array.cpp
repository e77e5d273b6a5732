#include "io/array.hpp"

#include <array>
#include <limits>

namespace livedrp::io {

std::size_t element_bytes(ElementType type) {
  switch (type) {
    case ElementType::UInt8:
      return 1;
    case ElementType::UInt16:
    case ElementType::Int16:
      return 2;
    case ElementType::UInt32:
    case ElementType::Int32:
    case ElementType::Float32:
      return 4;
    case ElementType::Float64:
      return 8;
  }
  return 1;
}

std::string_view to_string(ElementType type) {
  switch (type) {
    case ElementType::UInt8:
      return "uint8";
    case ElementType::UInt16:
      return "uint16";
    case ElementType::UInt32:
      return "uint32";
    case ElementType::Int16:
      return "int16";
    case ElementType::Int32:
      return "int32";
    case ElementType::Float32:
      return "float32";
    case ElementType::Float64:
      return "float64";
  }
  return "?";
}

std::optional<ElementType> element_type_from_name(std::string_view name) {
  // NumPy's descr without the byte-order mark, and the long names.
  if (!name.empty() && (name.front() == '<' || name.front() == '|' || name.front() == '='))
    name.remove_prefix(1);
  struct Entry {
    std::string_view short_name, long_name;
    ElementType type;
  };
  static constexpr std::array<Entry, 7> kEntries{{{"u1", "uint8", ElementType::UInt8},
                                                  {"u2", "uint16", ElementType::UInt16},
                                                  {"u4", "uint32", ElementType::UInt32},
                                                  {"i2", "int16", ElementType::Int16},
                                                  {"i4", "int32", ElementType::Int32},
                                                  {"f4", "float32", ElementType::Float32},
                                                  {"f8", "float64", ElementType::Float64}}};
  for (const Entry& e : kEntries)
    if (name == e.short_name || name == e.long_name) return e.type;
  return std::nullopt;
}

std::uint64_t Array::elements() const {
  std::uint64_t n = 1;
  for (const std::uint64_t extent : shape) n *= extent;
  return n;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::optional<std::uint64_t> checked_elements(const std::vector<std::uint64_t>& shape,
                                              ElementType type) {
  const std::uint64_t limit =
      std::uint64_t(std::numeric_limits<std::int64_t>::max()) / std::uint64_t(element_bytes(type));
  std::uint64_t n = 1;
  for (const std::uint64_t extent : shape) {
    if (extent != 0 && n > limit / extent) return std::nullopt;
    n *= extent;
  }
  return n;
}

}  // namespace livedrp::io
