#include "app/engine_liveness.hpp"

#include <algorithm>

#include "widgets/run_status_widget.hpp"

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
  if (status_) status_->setEngineLost(QString());
}

void EngineLiveness::showIn(widgets::RunStatusWidget& status,
                            std::function<void(const QString&)> log) {
  status_ = &status;
  connect(this, &EngineLiveness::lost, this, [this, log](const QString& state, qint64 silent_ms) {
    const QString why = tr("no message from the engine for %1 s while it was %2")
                            .arg(double(silent_ms) / 1000.0, 0, 'f', 1)
                            .arg(state);
    status_->setEngineLost(why);
    log(tr("engine lost: %1").arg(why));
  });
  connect(this, &EngineLiveness::back, this, [this, log](qint64 silent_ms) {
    status_->setEngineLost(QString());
    log(tr("engine heard again after %1 s of silence").arg(double(silent_ms) / 1000.0, 0, 'f', 1));
  });
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
