#pragma once
// Sizes that an input announces (an HDF5 dataset's shape, a container's declared payload) are
// checked against what this machine can hold before anything is allocated for them: a small
// file that declares a terabyte is refused with a message, not answered with std::bad_alloc.
#include <cstdint>
#include <string>

namespace livedrp {

// Half of this machine's physical memory, the most one input may make the program allocate.
std::uint64_t input_allocation_limit();

// Throws InputError "<what> needs N bytes, more than half of this machine's memory (M bytes)".
void check_input_allocation(std::uint64_t bytes, const std::string& what);

}  // namespace livedrp
