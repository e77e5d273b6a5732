#include "integrate/array_values.hpp"

#include <string>

#include "core/error.hpp"

namespace livedrp::integrate {
namespace {

template <typename T, typename Out, typename F>
void convert(const io::Array& a, std::uint64_t first, std::uint64_t count, Out* out, F f) {
  const T* in = a.as<T>() + first;
  for (std::uint64_t k = 0; k < count; ++k) out[k] = f(in[k]);
}

template <typename Out, typename F>
void convert_any(const io::Array& a, std::uint64_t first, std::uint64_t count, Out* out, F f) {
  using io::ElementType;
  switch (a.type) {
    case ElementType::UInt8:
      return convert<std::uint8_t>(a, first, count, out, f);
    case ElementType::UInt16:
      return convert<std::uint16_t>(a, first, count, out, f);
    case ElementType::UInt32:
      return convert<std::uint32_t>(a, first, count, out, f);
    case ElementType::Int16:
      return convert<std::int16_t>(a, first, count, out, f);
    case ElementType::Int32:
      return convert<std::int32_t>(a, first, count, out, f);
    case ElementType::Float32:
      return convert<float>(a, first, count, out, f);
    case ElementType::Float64:
      return convert<double>(a, first, count, out, f);
  }
}

void check_range(const io::Array& a, std::uint64_t first, std::uint64_t count) {
  const std::uint64_t n = a.elements();
  if (first > n || count > n - first || a.bytes.size() < n * io::element_bytes(a.type))
    throw InputError("array of " + std::to_string(n) + " elements has no elements [" +
                     std::to_string(first) + ", " + std::to_string(first + count) + ")");
}

}  // namespace

std::vector<float> float_values(const io::Array& array, std::uint64_t first, std::uint64_t count) {
  check_range(array, first, count);
  std::vector<float> out(count);
  convert_any(array, first, count, out.data(), [](auto v) { return static_cast<float>(v); });
  return out;
}

std::vector<float> float_values(const io::Array& array) {
  return float_values(array, 0, array.elements());
}

std::vector<std::uint8_t> mask_values(const io::Array& array) {
  const std::uint64_t n = array.elements();
  check_range(array, 0, n);
  std::vector<std::uint8_t> out(n);
  convert_any(array, 0, n, out.data(), [](auto v) { return std::uint8_t(v != 0 ? 1 : 0); });
  return out;
}

}  // namespace livedrp::integrate
