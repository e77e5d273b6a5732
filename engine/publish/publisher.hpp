#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "protocol/message.hpp"
#include "publish/log_forwarder.hpp"

namespace livedrp {

// ZeroMQ publisher of protocol messages. Binds `endpoint` (tcp://HOST:PORT, tcp://127.0.0.1:* for
// any free port, ipc://PATH, inproc://NAME). publish() may be called from any thread and never
// blocks on slow subscribers. A subscriber that joins late is sent the last message of each topic
// it subscribes to, so it shows the current state at once.
class Publisher {
 public:
  // Throws InputError naming the endpoint and ZeroMQ's reason when it cannot be bound.
  explicit Publisher(const std::string& endpoint);
  ~Publisher();
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // Encodes on the caller's thread (so a bad message throws ProtocolError here) and hands the
  // parts to the sending thread; returns without waiting for the network.
  void publish(const protocol::Message& message);
  // The endpoint actually bound (the port filled in for tcp://...:*).
  std::string endpoint() const;
  // Messages given to publish() that never reached the socket because the hand-over queue to the
  // sending thread was full (the oldest is dropped). Drops at a slow subscriber's high-water mark
  // happen inside ZeroMQ, per subscriber, and cannot be seen here.
  std::uint64_t dropped_count() const;
  // From now on the process's warnings and errors go out on the `log` topic as well
  // (log_forwarder.hpp), until this publisher ends; a second call changes the limit.
  void forward_log(LogRateLimit limit = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<LogForwarder> log_forwarder_;  // after impl_: it ends first
};

}  // namespace livedrp
