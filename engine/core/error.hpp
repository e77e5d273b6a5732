#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>

namespace livedrp {

// Longest message an InputError keeps: it may quote what it refuses, and a 100 MB value from a
// file or a request must not come back whole on stderr or in a reply.
inline constexpr std::size_t kMaxInputErrorChars = 4096;

// Bad user input (configuration, detector description, constants file, command-line value).
// The message names what is wrong: which file, which field, which value, what was expected.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(bounded(what)) {}
  explicit InputError(const char* what) : InputError(std::string(what)) {}

 private:
  static std::string bounded(const std::string& what) {
    if (what.size() <= kMaxInputErrorChars) return what;
    return what.substr(0, kMaxInputErrorChars) + "... (a message of " +
           std::to_string(what.size()) + " characters, cut)";
  }
};

// A failure of the machine or a library underneath (CUDA, ZeroMQ, HDF5) while running.
class RuntimeFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace livedrp
