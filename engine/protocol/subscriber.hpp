#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/message.hpp"

namespace livedrp::protocol {

// ZeroMQ subscriber that decodes protocol messages; no Qt. A malformed message is not returned but
// counted and its error kept (last_error), so a bad publisher cannot crash a viewer.
class Subscriber {
 public:
  // Connects to `endpoint` and subscribes to `topics` (all topics when empty).
  // Throws ProtocolError naming the endpoint when it cannot connect.
  explicit Subscriber(const std::string& endpoint, const std::vector<std::string>& topics = {});
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // Waits up to `timeout` for the next valid message.
  std::optional<Message> receive(std::chrono::milliseconds timeout);
  std::uint64_t malformed_count() const;
  std::string last_error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace livedrp::protocol
