#include "app/remote_curve.hpp"

#include <mutex>

namespace livedrp::app {
namespace {
std::mutex curve_mutex;
std::optional<protocol::CurveClient> curve_keys;  // guarded by curve_mutex
}  // namespace

void setRemoteCurve(std::optional<protocol::CurveClient> curve) {
  std::lock_guard lock(curve_mutex);
  curve_keys = std::move(curve);
}

std::optional<protocol::CurveClient> remoteCurve() {
  std::lock_guard lock(curve_mutex);
  return curve_keys;
}

}  // namespace livedrp::app
