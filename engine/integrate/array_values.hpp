#pragma once
// Elements of an io::Array as the integration takes them: float32, as pyFAI's preprocessing casts
// every input (counts, dark, flat) before it works on it.
#include <cstdint>
#include <vector>

#include "io/array.hpp"

namespace livedrp::integrate {

// Elements [first, first + count) of `array`, converted to float; InputError when out of range.
std::vector<float> float_values(const io::Array& array, std::uint64_t first, std::uint64_t count);
std::vector<float> float_values(const io::Array& array);
// Non-zero -> 1: a mask of any numeric type.
std::vector<std::uint8_t> mask_values(const io::Array& array);

}  // namespace livedrp::integrate
