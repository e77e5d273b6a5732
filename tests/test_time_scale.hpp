#pragma once
// How much slower than a release build the suites run here: LIVEDRP_TEST_TIME_SCALE (default 1).
// installer/sanitize sets it for the sanitizer build, whose instrumented code runs 2 to 5 times
// slower, so that a wall-clock bound that stands for a user's expectation (a change seen within
// a second) is checked there too, scaled, instead of failing on instrumentation alone.
#include <cstdlib>

namespace livedrp::testing {

inline double time_scale() {
  const char* text = std::getenv("LIVEDRP_TEST_TIME_SCALE");
  const double scale = text ? std::atof(text) : 1.0;
  return scale >= 1.0 ? scale : 1.0;
}

}  // namespace livedrp::testing
