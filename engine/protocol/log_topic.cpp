#include "protocol/log_topic.hpp"

#include <array>

#include "protocol/payload_reader.hpp"

namespace livedrp::protocol {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw ProtocolError(std::string(kTopicLog) + " message: " + what);
}

constexpr std::array<std::pair<LogLevel, std::string_view>, 3> kLevelNames{{
    {LogLevel::Warning, "warning"},
    {LogLevel::Error, "error"},
    {LogLevel::Critical, "critical"},
}};

// Length of the UTF-8 sequence starting at text[at] (1-4), or 0 when it is not a valid one
// (stray continuation byte, overlong form, surrogate, past U+10FFFF, or cut short).
std::size_t utf8_sequence(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[at + k]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  std::uint32_t code = 0;
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code = lead & 0x0Fu;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code = lead & 0x07u;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xC0u) != 0x80u) return 0;
    code = (code << 6) | (byte(k) & 0x3Fu);
  }
  if ((length == 3 && code < 0x800) || (length == 4 && code < 0x10000) || code > 0x10FFFF ||
      (code >= 0xD800 && code <= 0xDFFF))
    return 0;
  return length;
}

}  // namespace

std::string_view to_string(LogLevel level) {
  for (const auto& [value, name] : kLevelNames)
    if (value == level) return name;
  return "warning";
}

LogLevel log_level_from_string(std::string_view name) {
  for (const auto& [value, known] : kLevelNames)
    if (known == name) return value;
  fail("level '" + std::string(name) + "' is not one of \"warning\", \"error\", \"critical\"");
}

std::string loggable_text(std::string_view text) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  static constexpr std::string_view kEllipsis = "...";
  std::string out;
  out.reserve(std::min(text.size(), kMaxLogTextBytes));
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = utf8_sequence(text, at);
    const std::string_view piece = length > 0 ? text.substr(at, length) : kReplacement;
    if (out.size() + piece.size() > kMaxLogTextBytes - kEllipsis.size() &&
        at + std::max<std::size_t>(length, 1) < text.size()) {
      out += kEllipsis;
      return out;
    }
    out += piece;
    at += std::max<std::size_t>(length, 1);
  }
  return out;
}

void validate(const LogEntry& entry) {
  if (entry.text.empty()) fail("text is empty");
  if (entry.text.size() > kMaxLogTextBytes)
    fail("text has " + std::to_string(entry.text.size()) + " bytes, more than the " +
         std::to_string(kMaxLogTextBytes) + " allowed");
  if (loggable_text(entry.text) != entry.text) fail("text is not valid UTF-8");
  if (entry.index == 0) fail("index is 0 (entries count from 1)");
  if (entry.suppressed >= entry.index)
    fail("suppressed " + std::to_string(entry.suppressed) + " is not below index " +
         std::to_string(entry.index));
}

Message make_log_message(const LogEntry& entry) {
  validate(entry);
  Message message;
  message.topic = std::string(kTopicLog);
  message.time_ns = entry.time_ns;
  message.sequence = entry.index;  // distinct per entry (subscribers skip repeats of a header)
  message.payload = {{"level", std::string(to_string(entry.level))},
                     {"logger", entry.logger},
                     {"text", entry.text},
                     {"index", entry.index},
                     {"suppressed", entry.suppressed}};
  return message;
}

LogEntry log_entry_from_message(const Message& message) {
  if (message.topic != kTopicLog) fail("topic is '" + message.topic + "'");
  if (!message.frames.empty())
    fail("has " + std::to_string(message.frames.size()) + " frames, expected none");
  const detail::PayloadReader reader(message.payload, std::string(kTopicLog));
  reader.require_object("payload");
  LogEntry entry;
  entry.level = log_level_from_string(reader.string("level"));
  entry.logger = reader.string("logger");
  entry.text = reader.string("text");
  entry.index = reader.count("index");
  entry.suppressed = reader.count("suppressed");
  entry.time_ns = message.time_ns;
  validate(entry);
  return entry;
}

}  // namespace livedrp::protocol
