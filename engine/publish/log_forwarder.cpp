#include "publish/log_forwarder.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <string>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "protocol/log_topic.hpp"

namespace livedrp {

namespace {

// Set while a forwarder's sink runs on this thread: whatever `send` logs is not forwarded again
// (it would re-enter the sink's lock).
thread_local bool forwarding = false;

// One distributing sink on the default logger for the whole process; forwarders add and remove
// themselves there. Re-attached if the default logger was replaced since.
std::shared_ptr<spdlog::sinks::dist_sink_mt> distributing_sink() {
  static std::mutex mutex;
  static std::shared_ptr<spdlog::sinks::dist_sink_mt> sink;
  const std::lock_guard lock(mutex);
  if (!sink) sink = std::make_shared<spdlog::sinks::dist_sink_mt>();
  const std::shared_ptr<spdlog::logger> logger = spdlog::default_logger();
  auto& sinks = logger->sinks();
  if (std::find(sinks.begin(), sinks.end(), sink) == sinks.end()) sinks.push_back(sink);
  return sink;
}

protocol::LogLevel level_of(spdlog::level::level_enum level) {
  if (level >= spdlog::level::critical) return protocol::LogLevel::Critical;
  if (level >= spdlog::level::err) return protocol::LogLevel::Error;
  return protocol::LogLevel::Warning;
}

std::int64_t unix_ns(std::chrono::system_clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

}  // namespace

class LogForwarder::Sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  Sink(Send send, LogRateLimit limit)
      : send_(std::move(send)), limit_(limit), tokens_(double(limit.burst)) {
    set_level(spdlog::level::warn);
  }

  // The entries held back at the end, in one last message.
  void finish() {
    const std::lock_guard lock(mutex_);
    if (held_back_ == 0) return;
    protocol::LogEntry entry;
    entry.level = protocol::LogLevel::Warning;
    entry.time_ns = unix_ns(std::chrono::system_clock::now());
    entry.logger = "livedrp";
    entry.text = std::to_string(held_back_) +
                 " more warnings and errors were held back by the log topic's rate limit";
    ++logged_;
    entry.index = logged_;
    entry.suppressed = held_back_;
    held_back_ = 0;
    deliver(entry);
  }

  std::uint64_t logged() {
    const std::lock_guard lock(mutex_);
    return logged_;
  }
  std::uint64_t sent() {
    const std::lock_guard lock(mutex_);
    return sent_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (forwarding) return;
    ++logged_;
    const auto now = msg.time;
    if (refilled_.time_since_epoch().count() != 0) {
      const double seconds = std::chrono::duration<double>(now - refilled_).count();
      tokens_ =
          std::min(double(limit_.burst), tokens_ + std::max(seconds, 0.0) * limit_.per_second);
    }
    refilled_ = now;
    if (tokens_ < 1.0) {
      ++held_back_;
      return;
    }
    tokens_ -= 1.0;
    protocol::LogEntry entry;
    entry.level = level_of(msg.level);
    entry.time_ns = unix_ns(msg.time);
    entry.logger = msg.logger_name.size() > 0
                       ? std::string(msg.logger_name.data(), msg.logger_name.size())
                       : std::string("livedrp");
    entry.text = protocol::loggable_text(std::string_view(msg.payload.data(), msg.payload.size()));
    if (entry.text.empty()) entry.text = "(empty message)";
    entry.index = logged_;
    entry.suppressed = held_back_;
    held_back_ = 0;
    deliver(entry);
  }
  void flush_() override {}

 private:
  void deliver(const protocol::LogEntry& entry) {
    forwarding = true;
    try {
      send_(protocol::make_log_message(entry));
      ++sent_;
    } catch (...) {
      // A message that cannot be sent is counted as held back in the next one; logging the
      // failure here would come straight back to this sink.
      held_back_ += 1 + entry.suppressed;
    }
    forwarding = false;
  }

  Send send_;
  LogRateLimit limit_;
  double tokens_;
  std::chrono::system_clock::time_point refilled_{};
  std::uint64_t logged_ = 0, sent_ = 0, held_back_ = 0;
};

LogForwarder::LogForwarder(Send send, LogRateLimit limit) {
  if (!std::isfinite(limit.per_second) || limit.per_second <= 0)
    throw InputError("log forwarding: per_second " + std::to_string(limit.per_second) +
                     " must be finite and > 0");
  if (limit.burst == 0) throw InputError("log forwarding: burst must be at least 1");
  if (!send) throw InputError("log forwarding: no sending function");
  sink_ = std::make_shared<Sink>(std::move(send), limit);
  distributing_sink()->add_sink(sink_);
}

LogForwarder::~LogForwarder() {
  // Removed under the distributing sink's lock: no entry is being handed to this sink after it.
  distributing_sink()->remove_sink(sink_);
  sink_->finish();
}

std::uint64_t LogForwarder::logged() const {
  return sink_->logged();
}

std::uint64_t LogForwarder::sent() const {
  return sink_->sent();
}

}  // namespace livedrp
