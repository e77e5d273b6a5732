#pragma once
#include <string_view>
#include <vector>

namespace livedrp {

struct BuiltinDetector {
  std::string_view name;
  std::string_view json;
};

// The JSON text of every description in resources/detectors/, compiled in.
const std::vector<BuiltinDetector>& builtin_detector_sources();

}  // namespace livedrp
