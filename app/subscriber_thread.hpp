#pragma once
// Owns a protocol::Subscriber on its own thread: receives, batches whatever arrived together and
// hands the batch to the GUI thread through a queued signal. The GUI thread never waits on the
// network; a flood arrives as a few batches, not thousands of events.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <QMutex>
#include <QString>
#include <QThread>

#include "widgets/protocol_metatypes.hpp"

namespace livedrp::app {

class SubscriberThread : public QThread {
  Q_OBJECT

 public:
  // How long one receive() waits: the longest a stop request waits to be seen.
  static constexpr std::chrono::milliseconds kReceiveTimeout{100};
  // Most messages handed over in one batch (the rest follow in the next one).
  static constexpr int kMaxBatch = 256;

  // `topics` empty = all topics.
  explicit SubscriberThread(QString endpoint, std::vector<std::string> topics = {},
                            QObject* parent = nullptr);
  // Asks the loop to end and waits for it (at most about kReceiveTimeout).
  ~SubscriberThread() override;

  QString endpoint() const { return endpoint_; }
  // Asks the loop to end without waiting; finished() follows within kReceiveTimeout.
  void stop() { requestInterruption(); }
  std::uint64_t receivedCount() const { return received_.load(); }
  std::uint64_t malformedCount() const { return malformed_.load(); }
  QString lastError() const;

 signals:
  void messagesReceived(livedrp::widgets::MessageBatch batch);
  // The subscriber rejected messages (not decodable, foreign schema): the running count and the
  // last reason.
  void malformedMessages(quint64 count, QString last_error);
  // The subscriber could not be set up (bad endpoint); the thread ends.
  void failed(QString error);

 protected:
  void run() override;

 private:
  const QString endpoint_;
  const std::vector<std::string> topics_;
  std::atomic<std::uint64_t> received_{0};
  std::atomic<std::uint64_t> malformed_{0};
  mutable QMutex error_mutex_;
  QString last_error_;
};

// An endpoint a subscriber can connect to for one a publisher bound: a wildcard host
// (tcp://*:5555, tcp://0.0.0.0:5555) becomes the loopback address.
QString connectableEndpoint(const QString& bound);

}  // namespace livedrp::app
