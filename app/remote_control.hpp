#pragma once
// Requests to a remote engine's control socket, off the GUI thread: a worker thread owns the
// protocol::ControlClient (which blocks for up to its timeout per request); results come back as
// queued signals. Used in --connect mode only; the embedded engine is driven through EngineHost.
#include <chrono>
#include <memory>

#include <QObject>
#include <QString>

#include <nlohmann/json.hpp>

#include "exec/engine.hpp"
#include "protocol/control_client.hpp"

class QThread;

namespace livedrp::app {

class RemoteControl : public QObject {
  Q_OBJECT

 public:
  // How long an "apply" may take before it counts as unanswered. The engine answers once the new
  // run is built (the detector's constants, the integrator's geometry, masks read) and the running
  // one drained: seconds on an idle machine, tens on a loaded one, where the control client's 15 s
  // default would report a change that went through as a failure.
  static constexpr std::chrono::milliseconds kApplyTimeout{120'000};

  explicit RemoteControl(QString endpoint, QObject* parent = nullptr);
  // Waits for a request in flight (at most its timeout: kApplyTimeout for an apply) and joins the
  // worker.
  ~RemoteControl() override;

  QString endpoint() const { return endpoint_; }
  bool busy() const { return busy_; }
  // Sends an "apply" request with `partial` (a merge patch of the engine configuration), waiting
  // up to kApplyTimeout for the answer. Returns false while another request is in flight. Never
  // blocks.
  bool apply(const nlohmann::json& partial);
  // Sends a "replay" request (action "status", "pause", "resume", "step" with {"delta": N},
  // "seek" with {"index": N}). A "status" poll is skipped (false) while another replay request
  // is in flight, so polls do not queue up behind a slow server; controls always go out, in
  // order. Never blocks.
  bool replay(const QString& action, const nlohmann::json& fields = nlohmann::json::object());
  // Sends any other request by name (e.g. "get_peak_params", "set_peak_params" with
  // {"params": {...}}, "rerun_peaks" with {"frames": N}); answered by requestDone with the
  // server's result or requestFailed with its error (or why no answer came within `timeout`).
  // Requests go out in order, one at a time. Never blocks.
  void request(const QString& name, const nlohmann::json& fields = nlohmann::json::object(),
               std::chrono::milliseconds timeout = protocol::ControlClient::kDefaultTimeout);

 signals:
  // ok: the server's result object (as JSON text); not ok: the server's error or why no answer
  // came.
  void applyDone(bool ok, QString text);
  // A "replay" request was answered: the replay and record status the server reported.
  void replayStatusReceived(livedrp::ReplayStatus replay, livedrp::RecordStatus record);
  // A "replay" request was refused, or no answer came (the text says which).
  void replayFailed(QString action, QString error);
  void requestDone(QString name, const nlohmann::json& result);
  void requestFailed(QString name, QString error);

 private:
  const QString endpoint_;
  QThread* thread_;
  QObject* worker_;  // lives in thread_; the client is used only there
  std::unique_ptr<protocol::ControlClient> client_;
  bool busy_ = false;
  int replay_in_flight_ = 0;
};

}  // namespace livedrp::app
