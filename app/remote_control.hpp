#pragma once
// Requests to a remote engine's control socket, off the GUI thread: a worker thread owns the
// protocol::ControlClient (which blocks for up to its timeout per request); results come back as
// queued signals. Used in --connect mode only; the embedded engine is driven through EngineHost.
#include <memory>

#include <QObject>
#include <QString>

#include <nlohmann/json.hpp>

class QThread;

namespace livedrp::protocol {
class ControlClient;
}

namespace livedrp::app {

class RemoteControl : public QObject {
  Q_OBJECT

 public:
  explicit RemoteControl(QString endpoint, QObject* parent = nullptr);
  // Waits for a request in flight (at most the client's timeout) and joins the worker.
  ~RemoteControl() override;

  QString endpoint() const { return endpoint_; }
  bool busy() const { return busy_; }
  // Sends an "apply" request with `partial` (a merge patch of the engine configuration). Returns
  // false while another request is in flight. Never blocks.
  bool apply(const nlohmann::json& partial);

 signals:
  // ok: the server's result object (as JSON text); not ok: the server's error or why no answer came.
  void applyDone(bool ok, QString text);

 private:
  const QString endpoint_;
  QThread* thread_;
  QObject* worker_;  // lives in thread_; the client is used only there
  std::unique_ptr<protocol::ControlClient> client_;
  bool busy_ = false;
};

}  // namespace livedrp::app
