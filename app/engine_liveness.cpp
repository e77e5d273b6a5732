#include "app/engine_liveness.hpp"

#include <algorithm>

namespace livedrp::app {

EngineLiveness::EngineLiveness(QObject* parent) : QObject(parent) {
  connect(&timer_, &QTimer::timeout, this, &EngineLiveness::check);
  timer_.start(std::max(50, timeout_ms_ / 10));
}

void EngineLiveness::setTimeoutMs(int milliseconds) {
  timeout_ms_ = std::max(1, milliseconds);
  timer_.start(std::max(10, timeout_ms_ / 10));
}

bool EngineLiveness::silenceMeansLost(const std::string& state, qint64 silent_ms, int timeout_ms) {
  const bool live =
      state.empty() || state == "starting" || state == "running" || state == "stopping";
  return live && silent_ms > timeout_ms;
}

void EngineLiveness::noteMessages(const std::string& state) {
  if (lost_) {
    lost_ = false;
    emit back(since_last_.elapsed());
  }
  last_state_ = state;
  since_last_.restart();
}

void EngineLiveness::reset() {
  since_last_.invalidate();
  last_state_.clear();
  lost_ = false;
}

void EngineLiveness::check() {
  // Nothing heard yet: "waiting for engine" is what the window says then, not "lost".
  if (lost_ || !since_last_.isValid()) return;
  const qint64 silent = since_last_.elapsed();
  if (!silenceMeansLost(last_state_, silent, timeout_ms_)) return;
  lost_ = true;
  emit lost(QString::fromStdString(last_state_.empty() ? "running" : last_state_), silent);
}

}  // namespace livedrp::app
