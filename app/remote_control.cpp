#include "app/remote_control.hpp"

#include <exception>

#include <QThread>

#include "app/remote_curve.hpp"
#include "protocol/control.hpp"
#include "protocol/control_client.hpp"

namespace livedrp::app {

namespace {
// The "replay" and "record" objects of a reply (docs/protocol.md, "Replay controls").
ReplayStatus replayFromJson(const nlohmann::json& j) {
  ReplayStatus s;
  s.active = j.value("active", false);
  s.position = j.value("position", std::uint64_t(0));
  s.handed = j.value("handed", std::uint64_t(0));
  s.total_events = j.value("total_events", std::uint64_t(0));
  s.loops = j.value("loops", std::uint64_t(0));
  s.paused = j.value("paused", false);
  s.pace = j.value("pace", std::string());
  s.pace_note = j.value("pace_note", std::string());
  s.disk_wait_s = j.value("disk_wait_s", 0.0);
  s.pipeline_wait_s = j.value("pipeline_wait_s", 0.0);
  s.read_gbps = j.value("read_gbps", 0.0);
  s.limited_by = j.value("limited_by", std::string());
  s.read_errors = j.value("read_errors", std::uint64_t(0));
  s.skipped_files = j.value("skipped_files", std::vector<std::string>());
  return s;
}

RecordStatus recordFromJson(const nlohmann::json& j) {
  RecordStatus s;
  s.active = j.value("active", false);
  s.events = j.value("events", std::uint64_t(0));
  s.dropped = j.value("dropped", std::uint64_t(0));
  s.files = j.value("files", std::vector<std::string>());
  return s;
}
}  // namespace

RemoteControl::RemoteControl(QString endpoint, QObject* parent)
    : QObject(parent), endpoint_(std::move(endpoint)), thread_(new QThread), worker_(new QObject) {
  thread_->setObjectName(QStringLiteral("livedrp-control"));
  worker_->moveToThread(thread_);
  thread_->start();
}

RemoteControl::~RemoteControl() {
  thread_->quit();
  thread_->wait();
  delete worker_;
  delete thread_;
  client_.reset();
}

bool RemoteControl::replay(const QString& action, const nlohmann::json& fields) {
  if (action == QLatin1String("status") && replay_in_flight_ > 0) return false;
  ++replay_in_flight_;
  QMetaObject::invokeMethod(
      worker_,
      [this, action, fields] {
        QString error;
        ReplayStatus replay;
        RecordStatus record;
        try {
          if (!client_)
            client_ =
                std::make_unique<protocol::ControlClient>(endpoint_.toStdString(), remoteCurve());
          const nlohmann::json result = client_->replay(action.toStdString(), fields);
          replay = replayFromJson(result.at("replay"));
          record = recordFromJson(result.at("record"));
        } catch (const std::exception& e) {
          error = QString::fromUtf8(e.what());
          if (error.isEmpty()) error = QStringLiteral("unknown error");
        }
        QMetaObject::invokeMethod(
            this,
            [this, action, error, replay, record] {
              --replay_in_flight_;
              if (error.isEmpty())
                emit replayStatusReceived(replay, record);
              else
                emit replayFailed(action, error);
            },
            Qt::QueuedConnection);
      },
      Qt::QueuedConnection);
  return true;
}

void RemoteControl::request(const QString& name, const nlohmann::json& fields,
                            std::chrono::milliseconds timeout) {
  QMetaObject::invokeMethod(
      worker_,
      [this, name, fields, timeout] {
        QString error;
        nlohmann::json result;
        try {
          if (!client_)
            client_ =
                std::make_unique<protocol::ControlClient>(endpoint_.toStdString(), remoteCurve());
          const nlohmann::json reply =
              client_->request(protocol::make_control_request(name.toStdString(), fields), timeout);
          if (reply.at("ok").get<bool>())
            result = reply.at("result");
          else
            error = QString::fromStdString(reply.at("error").get<std::string>());
        } catch (const std::exception& e) {
          error = QString::fromUtf8(e.what());
          if (error.isEmpty()) error = QStringLiteral("unknown error");
        }
        QMetaObject::invokeMethod(
            this,
            [this, name, error, result] {
              if (error.isEmpty())
                emit requestDone(name, result);
              else
                emit requestFailed(name, error);
            },
            Qt::QueuedConnection);
      },
      Qt::QueuedConnection);
}

bool RemoteControl::apply(const nlohmann::json& partial) {
  if (busy_) return false;
  busy_ = true;
  QMetaObject::invokeMethod(
      worker_,
      [this, partial] {
        bool ok = false;
        QString text;
        try {
          if (!client_)
            client_ =
                std::make_unique<protocol::ControlClient>(endpoint_.toStdString(), remoteCurve());
          ok = true;
          text = QString::fromStdString(client_->apply(partial, kApplyTimeout).dump());
        } catch (const std::exception& error) {
          ok = false;
          text = QString::fromUtf8(error.what());
        }
        // `this` outlives the worker: the destructor joins the thread before it goes.
        QMetaObject::invokeMethod(
            this,
            [this, ok, text] {
              busy_ = false;
              emit applyDone(ok, text);
            },
            Qt::QueuedConnection);
      },
      Qt::QueuedConnection);
  return true;
}

}  // namespace livedrp::app
