#pragma once
// The `log` topic (docs/protocol.md): the engine process's warnings and errors, as spdlog reports
// them, rate-limited so that a fault repeated per event cannot flood the subscribers:
//   payload {"level": "warning", "logger": "livedrp", "text": "...", "index": 17, "suppressed": 3}
// `index` counts every warning and error the process logged since forwarding began (1, 2, ...),
// sent or not; `suppressed` is how many of them the rate limit held back just before this one, so a
// subscriber knows exactly what it did not see (index = sum over messages of 1 + suppressed).
// The header's time_ns is when the entry was logged, its sequence the entry's index.
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/message.hpp"

namespace livedrp::protocol {

inline constexpr std::string_view kTopicLog = "log";
// Longer texts are cut (at a character boundary) and end in "..." .
inline constexpr std::size_t kMaxLogTextBytes = 4096;

enum class LogLevel : std::uint8_t { Warning, Error, Critical };
std::string_view to_string(LogLevel level);
LogLevel log_level_from_string(std::string_view name);  // throws ProtocolError naming the levels

struct LogEntry {
  LogLevel level = LogLevel::Warning;
  std::int64_t time_ns = 0;
  std::string logger;
  std::string text;  // valid UTF-8, at most kMaxLogTextBytes
  std::uint64_t index = 1;
  std::uint64_t suppressed = 0;
};

// The text as it may travel: bytes that are not UTF-8 become U+FFFD, and a text longer than
// kMaxLogTextBytes is cut at a character boundary and ends in "...".
std::string loggable_text(std::string_view text);

// Throws ProtocolError for an entry a subscriber would refuse (empty or oversized text, index 0,
// suppressed >= index).
void validate(const LogEntry& entry);
Message make_log_message(const LogEntry& entry);          // run 0: the process's, not a run's
LogEntry log_entry_from_message(const Message& message);  // validates; throws ProtocolError

}  // namespace livedrp::protocol
