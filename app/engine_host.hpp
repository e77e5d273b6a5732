#pragma once
// Hosts the embedded Engine for the GUI. Every Engine call (construct, start, request_stop, wait,
// destroy) runs on the host's own worker thread, so the GUI thread only posts commands and never
// waits for the engine; results come back as queued signals.
//
// States the host reports itself (the `status` topic's vocabulary): starting (while the engine is
// constructed: detector, simulator, backend, publisher), stopping, and the end: finished, or error
// with the InputError / RuntimeFault text. In between, the engine's own `status` messages speak. The Engine of a finished run is kept until the
// next start (or the host's end), so its publisher still serves the final values to subscribers.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include <QObject>
#include <QString>

#include "exec/engine.hpp"
#include "widgets/protocol_metatypes.hpp"

namespace livedrp::app {

class EngineHost : public QObject {
  Q_OBJECT

 public:
  // How often the worker looks whether a run ended by itself (event count reached, fault).
  static constexpr std::chrono::milliseconds kFinishPoll{50};

  explicit EngineHost(QObject* parent = nullptr);
  // Stops a run in progress, destroys the engine and joins the worker. This is the one place that
  // waits for the engine; it runs when the window closes.
  ~EngineHost() override;

  // Returns false (and does nothing) while a run is active. Never blocks.
  bool start(const EngineConfig& config);
  // Asks the run to stop; events in flight are drained. Never blocks. No-op when idle.
  void stop();

  // Between start() and the run's end (finished or error), as seen from the GUI thread.
  bool isActive() const { return active_; }
  QString state() const { return state_; }
  QString endpoint() const { return endpoint_; }  // as bound by the current/last engine

 signals:
  // Every state change as a status payload (state, message, source, backend, device, config),
  // stamped with the time it happened (Unix ns) so it can be ordered with status from the wire.
  void statusChanged(livedrp::protocol::StatusPayload status, qint64 time_ns);
  // The engine is constructed and started; `endpoint` is where it publishes (port filled in).
  void started(QString endpoint, QString backend, QString device);
  // The run ended: the summary's cumulative stats, and its error text (empty when it finished).
  void runFinished(livedrp::protocol::StatsPayload summary, QString error);
  // Bad configuration or a fault (the exception's text).
  void errorOccurred(QString error);

 private:
  struct Command {
    enum class Kind { Start, Stop, Quit } kind;
    EngineConfig config;
  };
  void post(Command command);
  void workerLoop();
  // Worker-side helpers; each posts its results to the GUI thread.
  void workerStart(const EngineConfig& config);
  void workerStop();
  void workerFinish();
  void reportStatus(const QString& state, const QString& message);
  void reportError(const QString& error);

  // Shared between GUI and worker.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Command> commands_;

  // Worker only.
  std::unique_ptr<Engine> engine_;
  bool running_ = false;
  EngineConfig config_;
  QString backend_;
  QString device_;

  // GUI thread only.
  bool active_ = false;
  QString state_ = QStringLiteral("idle");
  QString endpoint_;

  std::thread worker_;  // last member: starts after everything above exists
};

}  // namespace livedrp::app
