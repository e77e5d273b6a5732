#include "app/remote_control.hpp"

#include <exception>

#include <QThread>

#include "protocol/control_client.hpp"

namespace livedrp::app {

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

bool RemoteControl::apply(const nlohmann::json& partial) {
  if (busy_) return false;
  busy_ = true;
  QMetaObject::invokeMethod(
      worker_,
      [this, partial] {
        bool ok = false;
        QString text;
        try {
          if (!client_) client_ = std::make_unique<protocol::ControlClient>(endpoint_.toStdString());
          ok = true;
          text = QString::fromStdString(client_->apply(partial).dump());
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
