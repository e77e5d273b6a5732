#pragma once
#include <stdexcept>
#include <string>

namespace livedrp {

// Bad user input (configuration, detector description, constants file, command-line value).
// The message names what is wrong: which file, which field, which value, what was expected.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failure of the machine or a library underneath (CUDA, ZeroMQ, HDF5) while running.
class RuntimeFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace livedrp
