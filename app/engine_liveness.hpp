#pragma once
// Whether the engine the window listens to is still there. While a run is live (the last status
// said starting, running or stopping) the engine publishes `status` every second and `stats` at
// its interval, so a silence longer than the timeout means it is gone: killed, hung, or cut off.
// The window then shows it lost and logs it, and logs it again when messages come back (the
// engine restarted, or the network healed). A finished or idle engine may be silent: no alarm.
#include <functional>
#include <string>

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

namespace livedrp::widgets {
class RunStatusWidget;
}

namespace livedrp::app {

class EngineLiveness : public QObject {
  Q_OBJECT

 public:
  // Five status periods: a loaded machine may delay one or two, not five.
  static constexpr int kDefaultTimeoutMs = 5000;

  explicit EngineLiveness(QObject* parent = nullptr);

  void setTimeoutMs(int milliseconds);
  int timeoutMs() const { return timeout_ms_; }
  // Messages arrived; `state` is the run state of the latest status ("" when none came yet,
  // taken as live once stats come).
  void noteMessages(const std::string& state);
  // Listening to another engine (or the embedded one restarted): nothing is known of it yet.
  void reset();
  // Shows a loss in `status` (its state reads "engine lost", the reason in the tooltip) and
  // writes losses and returns to `log`, from now on.
  void showIn(widgets::RunStatusWidget& status, std::function<void(const QString&)> log);
  bool isLost() const { return lost_; }

  // Whether a silence of `silent_ms` in run state `state` means the engine is gone.
  static bool silenceMeansLost(const std::string& state, qint64 silent_ms, int timeout_ms);

 signals:
  void lost(QString last_state, qint64 silent_ms);
  void back(qint64 silent_ms);

 private:
  void check();

  QTimer timer_;
  QElapsedTimer since_last_;
  std::string last_state_;
  int timeout_ms_ = kDefaultTimeoutMs;
  bool lost_ = false;
  widgets::RunStatusWidget* status_ = nullptr;  // showIn's
};

}  // namespace livedrp::app
