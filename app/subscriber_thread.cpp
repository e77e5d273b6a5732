#include "app/subscriber_thread.hpp"

#include <exception>
#include <memory>
#include <optional>
#include <utility>

#include <QMutexLocker>

#include "app/remote_curve.hpp"
#include "protocol/subscriber.hpp"

namespace livedrp::app {

SubscriberThread::SubscriberThread(QString endpoint, std::vector<std::string> topics,
                                   QObject* parent)
    : QThread(parent), endpoint_(std::move(endpoint)), topics_(std::move(topics)) {
  widgets::registerProtocolMetaTypes();
  setObjectName(QStringLiteral("livedrp subscriber"));
}

SubscriberThread::~SubscriberThread() {
  requestInterruption();
  wait();
}

QString SubscriberThread::lastError() const {
  QMutexLocker lock(&error_mutex_);
  return last_error_;
}

void SubscriberThread::run() {
  // The socket is made, used and closed on this thread: ZeroMQ sockets are not thread-safe.
  std::unique_ptr<protocol::Subscriber> subscriber;
  try {
    subscriber =
        std::make_unique<protocol::Subscriber>(endpoint_.toStdString(), topics_, remoteCurve());
  } catch (const std::exception& error) {
    const QString text = QStringLiteral("cannot subscribe to %1: %2")
                             .arg(endpoint_, QString::fromUtf8(error.what()));
    {
      QMutexLocker lock(&error_mutex_);
      last_error_ = text;
    }
    emit failed(text);
    return;
  }

  std::uint64_t malformed_seen = 0;
  while (!isInterruptionRequested()) {
    widgets::MessageBatch batch;
    try {
      std::optional<protocol::Message> message = subscriber->receive(kReceiveTimeout);
      while (message) {
        batch.push_back(std::make_shared<const protocol::Message>(std::move(*message)));
        if (batch.size() >= kMaxBatch || isInterruptionRequested()) break;
        message = subscriber->receive(std::chrono::milliseconds{0});
      }
    } catch (const std::exception& error) {
      // receive() reports malformed messages through its counter; anything thrown is the socket
      // itself failing. Say so once and end: a dead socket would fail forever.
      const QString text = QStringLiteral("subscriber on %1 failed: %2")
                               .arg(endpoint_, QString::fromUtf8(error.what()));
      {
        QMutexLocker lock(&error_mutex_);
        last_error_ = text;
      }
      if (!batch.isEmpty()) emit messagesReceived(batch);
      emit failed(text);
      return;
    }
    if (!batch.isEmpty()) {
      received_ += std::uint64_t(batch.size());
      emit messagesReceived(batch);
    }
    const std::uint64_t malformed = subscriber->malformed_count();
    if (malformed != malformed_seen) {
      malformed_seen = malformed;
      malformed_ = malformed;
      const QString text = QString::fromStdString(subscriber->last_error());
      {
        QMutexLocker lock(&error_mutex_);
        last_error_ = text;
      }
      emit malformedMessages(malformed, text);
    }
  }
}

QString connectableEndpoint(const QString& bound) {
  QString endpoint = bound;
  for (const char* wildcard : {"tcp://*:", "tcp://0.0.0.0:"}) {
    if (endpoint.startsWith(QLatin1String(wildcard))) {
      endpoint = QStringLiteral("tcp://127.0.0.1:") + endpoint.mid(int(qstrlen(wildcard)));
    }
  }
  return endpoint;
}

}  // namespace livedrp::app
