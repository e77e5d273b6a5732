#include "protocol/subscriber.hpp"

#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <tuple>

#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace livedrp::protocol {

namespace {

// Messages ZeroMQ holds for a viewer that reads slower than the publisher sends; beyond this it
// drops new ones. 1000 is ZeroMQ's own default, stated here so it is a decision: at the few-Hz
// stats rate and rate-limited images it is many seconds of backlog, and a viewer that far behind
// is better served by dropping than by showing ever older data.
constexpr int kReceiveHighWaterMark = 1000;

// What makes two messages the same message (the late-joiner replay of the last one).
using MessageIdentity = std::tuple<std::int64_t, std::uint64_t, std::uint64_t, std::int64_t>;

MessageIdentity identity_of(const Message& message) {
  return {message.run, message.sequence, message.pulse_id, message.time_ns};
}

}  // namespace

zmq::context_t& shared_zmq_context() {
  // Deliberately leaked; see the header for why it is never terminated.
  static auto* const context = new zmq::context_t(1);
  return *context;
}

struct Subscriber::Impl {
  std::string endpoint;
  std::set<std::string, std::less<>> topics;  // empty: every topic
  zmq::socket_t socket;
  std::map<std::string, MessageIdentity, std::less<>> last_returned;
  std::atomic<std::uint64_t> malformed{0};
  mutable std::mutex error_mutex;  // last_error may be read from another thread (a GUI timer)
  std::string last_error;

  Impl(const std::string& endpoint_, const std::vector<std::string>& topics_,
       const std::optional<CurveClient>& curve)
      : endpoint(endpoint_),
        topics(topics_.begin(), topics_.end()),
        socket(shared_zmq_context(), zmq::socket_type::sub) {
    socket.set(zmq::sockopt::linger, 0);  // nothing to flush: a subscriber only receives
    socket.set(zmq::sockopt::rcvhwm, kReceiveHighWaterMark);
    if (curve) apply_curve_client(socket, *curve);
    if (topics.empty()) {
      socket.set(zmq::sockopt::subscribe, "");
    } else {
      for (const std::string& topic : topics) socket.set(zmq::sockopt::subscribe, topic);
    }
    try {
      socket.connect(endpoint);
    } catch (const zmq::error_t& error) {
      throw ProtocolError("cannot connect subscriber to '" + endpoint + "': " + error.what());
    }
  }

  void reject(const std::string& reason) {
    malformed.fetch_add(1, std::memory_order_relaxed);
    const std::lock_guard lock(error_mutex);
    last_error = reason;
  }

  // One multipart message if one is waiting; never blocks.
  std::optional<std::vector<zmq::message_t>> try_receive_parts() {
    std::vector<zmq::message_t> parts;
    const auto received =
        zmq::recv_multipart(socket, std::back_inserter(parts), zmq::recv_flags::dontwait);
    if (!received) return std::nullopt;
    return parts;
  }

  // The decoded message if it is valid and wanted; counts it when it is malformed.
  std::optional<Message> accept(const std::vector<zmq::message_t>& parts) {
    std::vector<std::string_view> views;
    views.reserve(parts.size());
    for (const zmq::message_t& part : parts) views.push_back(part.to_string_view());

    Message message;
    try {
      message = decode(views);
    } catch (const ProtocolError& error) {
      reject(error.what());
      return std::nullopt;
    } catch (const std::exception& error) {
      // decode() reports malformed input as ProtocolError; anything else (memory) is still about
      // this one message and must not take the viewer down.
      reject(std::string("cannot decode message: ") + error.what());
      return std::nullopt;
    }

    if (!topics.empty() && !topics.contains(message.topic)) return std::nullopt;
    const MessageIdentity identity = identity_of(message);
    const auto [position, inserted] = last_returned.try_emplace(message.topic, identity);
    if (!inserted) {
      if (position->second == identity) return std::nullopt;
      position->second = identity;
    }
    return message;
  }
};

Subscriber::Subscriber(const std::string& endpoint, const std::vector<std::string>& topics,
                       const std::optional<CurveClient>& curve)
    : impl_(std::make_unique<Impl>(endpoint, topics, curve)) {}

Subscriber::~Subscriber() = default;

std::optional<Message> Subscriber::receive(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    // Drain what is already queued before waiting, so a zero timeout still returns a message.
    while (auto parts = impl_->try_receive_parts()) {
      if (auto message = impl_->accept(*parts)) return message;
    }
    const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (remaining <= std::chrono::milliseconds::zero()) return std::nullopt;

    zmq::pollitem_t item{impl_->socket.handle(), 0, ZMQ_POLLIN, 0};
    try {
      zmq::poll(&item, 1, remaining);
    } catch (const zmq::error_t& error) {
      if (error.num() != EINTR) {
        throw ProtocolError("subscriber on '" + impl_->endpoint +
                            "': cannot wait for messages: " + error.what());
      }
    }
  }
}

std::uint64_t Subscriber::malformed_count() const {
  return impl_->malformed.load(std::memory_order_relaxed);
}

std::string Subscriber::last_error() const {
  const std::lock_guard lock(impl_->error_mutex);
  return impl_->last_error;
}

}  // namespace livedrp::protocol
