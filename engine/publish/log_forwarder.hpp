#pragma once
// Forwards the process's spdlog warnings and errors as `log` messages (protocol/log_topic.hpp), so
// that a GUI, embedded or remote, shows what the engine complains about. A token bucket limits
// the rate: an error repeated for every event must not flood the subscribers or the publisher's
// queue; what it holds back is counted into the next message sent (and into a last message when
// the forwarder ends), so nothing disappears unaccounted for.
#include <cstdint>
#include <functional>
#include <memory>

#include "protocol/message.hpp"

namespace livedrp {

struct LogRateLimit {
  double per_second = 5.0;   // messages a second, sustained
  std::uint64_t burst = 20;  // messages at once after a quiet spell
};

class LogForwarder {
 public:
  using Send = std::function<void(const protocol::Message&)>;
  // Attaches to spdlog's default logger (through one process-wide distributing sink, so that
  // forwarders come and go safely while other threads log). Throws InputError for a limit that
  // is not finite and positive, or a burst of 0.
  explicit LogForwarder(Send send, LogRateLimit limit = {});
  // Detaches; no call of `send` is running or follows once it returns.
  ~LogForwarder();
  LogForwarder(const LogForwarder&) = delete;
  LogForwarder& operator=(const LogForwarder&) = delete;

  std::uint64_t logged() const;  // warnings and errors seen since construction
  std::uint64_t sent() const;    // messages handed to `send`

 private:
  class Sink;
  std::shared_ptr<Sink> sink_;
};

}  // namespace livedrp
