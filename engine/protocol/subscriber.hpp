#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/curve_keys.hpp"
#include "protocol/message.hpp"

namespace zmq {
class context_t;
}

namespace livedrp::protocol {

// The ZeroMQ context of every livedrp socket in this process. inproc:// endpoints connect only
// sockets of one context, and the GUI talks to its embedded engine over inproc, so the Publisher
// and the Subscriber share this one. It is never terminated: terminating blocks until every socket
// is closed, and process exit must not hang on a socket that someone still holds.
zmq::context_t& shared_zmq_context();

// ZeroMQ subscriber that decodes protocol messages; no Qt. A malformed message is not returned but
// counted and its error kept (last_error), so a bad publisher cannot crash a viewer.
class Subscriber {
 public:
  // Connects to `endpoint` and subscribes to `topics` (all topics when empty); as a CURVE client
  // when `curve` is given (curve_keys.hpp). Throws ProtocolError naming the endpoint when it
  // cannot connect.
  explicit Subscriber(const std::string& endpoint, const std::vector<std::string>& topics = {},
                      const std::optional<CurveClient>& curve = std::nullopt);
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // Waits up to `timeout` for the next valid message. Topics match exactly (ZeroMQ filters by
  // prefix, so "stats" alone would also let "stats_x" through). A message identical in topic, run,
  // sequence, pulse_id and time_ns to the last one returned for its topic is skipped: it is the
  // publisher's late-joiner replay for another subscriber (docs/protocol.md).
  std::optional<Message> receive(std::chrono::milliseconds timeout);
  std::uint64_t malformed_count() const;
  std::string last_error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace livedrp::protocol
