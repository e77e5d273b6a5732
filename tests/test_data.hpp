#pragma once
// Where the tests' reference data (tests/reference/...) are, so that a suite does not depend on
// the path it was compiled at: $LIVEDRP_TEST_DATA when set (the folder holding reference/), else
// beside this header when it is there (a build of this checkout), else tests/reference under the
// current directory (a suite packed for the GPU machine runs from a copy of the repository root).
#include <cstdlib>
#include <filesystem>

namespace livedrp::testing {

inline std::filesystem::path test_reference_dir() {
  if (const char* given = std::getenv("LIVEDRP_TEST_DATA"); given && *given)
    return std::filesystem::path(given) / "reference";
  const std::filesystem::path beside = std::filesystem::path(__FILE__).parent_path() / "reference";
  if (std::filesystem::is_directory(beside)) return beside;
  return std::filesystem::current_path() / "tests" / "reference";
}

}  // namespace livedrp::testing
