#include "protocol/control_client.hpp"

#include <cerrno>
#include <mutex>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "protocol/control.hpp"
#include "protocol/subscriber.hpp"

namespace livedrp::protocol {

namespace {

using Clock = std::chrono::steady_clock;

// A request that never left (no server) is thrown away with the socket: nothing to flush.
constexpr int kLingerMs = 0;

std::chrono::milliseconds remaining_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left < std::chrono::milliseconds::zero() ? std::chrono::milliseconds::zero() : left;
}

}  // namespace

struct ControlClient::Impl {
  std::string endpoint;
  std::optional<CurveClient> curve;
  std::mutex mutex;  // one request at a time on the socket
  std::unique_ptr<zmq::socket_t> socket;

  // A REQ socket that sent a request and never got the reply cannot send again (it insists on
  // the reply first), so after a timeout the socket is replaced by a fresh one.
  void open_socket() {
    auto fresh = std::make_unique<zmq::socket_t>(shared_zmq_context(), zmq::socket_type::req);
    fresh->set(zmq::sockopt::linger, kLingerMs);
    if (curve) apply_curve_client(*fresh, *curve);
    try {
      fresh->connect(endpoint);
    } catch (const zmq::error_t& error) {
      throw ProtocolError("cannot connect control client to '" + endpoint + "': " + error.what());
    }
    socket = std::move(fresh);
  }

  // Waits until `events` are possible on the socket or the deadline passes.
  bool wait_for(short events, Clock::time_point deadline) {
    for (;;) {
      zmq::pollitem_t item{socket->handle(), 0, events, 0};
      try {
        zmq::poll(&item, 1, remaining_until(deadline));
      } catch (const zmq::error_t& error) {
        if (error.num() == EINTR) continue;
        throw ProtocolError("control client on '" + endpoint + "': cannot wait: " + error.what());
      }
      if (item.revents & events) return true;
      if (Clock::now() >= deadline) return false;
    }
  }

  [[noreturn]] void timed_out(std::chrono::milliseconds timeout, const char* what) {
    open_socket();
    throw ProtocolError("control request to '" + endpoint + "': " + what + " within " +
                        std::to_string(timeout.count()) +
                        " ms (is the engine's control socket there?)");
  }

  nlohmann::json exchange(const std::vector<std::string>& parts,
                          std::chrono::milliseconds timeout) {
    if (parts.empty()) throw ProtocolError("a control request needs at least one part");
    const auto deadline = Clock::now() + timeout;
    if (!wait_for(ZMQ_POLLOUT, deadline)) timed_out(timeout, "the request could not be sent");
    try {
      for (std::size_t i = 0; i < parts.size(); ++i) {
        const auto flags = i + 1 < parts.size()
                               ? (zmq::send_flags::dontwait | zmq::send_flags::sndmore)
                               : zmq::send_flags::dontwait;
        if (!socket->send(zmq::buffer(parts[i]), flags))
          timed_out(timeout, "the request could not be sent");
      }
    } catch (const zmq::error_t& error) {
      open_socket();
      throw ProtocolError("control request to '" + endpoint +
                          "' could not be sent: " + error.what());
    }
    if (!wait_for(ZMQ_POLLIN, deadline)) timed_out(timeout, "no reply");
    std::vector<zmq::message_t> reply;
    try {
      if (!zmq::recv_multipart(*socket, std::back_inserter(reply), zmq::recv_flags::dontwait))
        timed_out(timeout, "no complete reply");
    } catch (const zmq::error_t& error) {
      open_socket();
      throw ProtocolError("control reply from '" + endpoint +
                          "' could not be read: " + error.what());
    }
    if (reply.size() != 1)
      throw ProtocolError("control reply from '" + endpoint + "' has " +
                          std::to_string(reply.size()) + " parts, expected 1");
    try {
      return parse_control_reply(reply.front().to_string_view());
    } catch (const ProtocolError& error) {
      throw ProtocolError("control reply from '" + endpoint + "': " + error.what());
    }
  }
};

ControlClient::ControlClient(std::string endpoint, std::optional<CurveClient> curve)
    : impl_(std::make_unique<Impl>()) {
  impl_->endpoint = std::move(endpoint);
  impl_->curve = std::move(curve);
  impl_->open_socket();
}

ControlClient::~ControlClient() = default;

const std::string& ControlClient::endpoint() const {
  return impl_->endpoint;
}

nlohmann::json ControlClient::request(const nlohmann::json& body,
                                      std::chrono::milliseconds timeout) {
  if (!body.is_object())
    throw ProtocolError("a control request must be a JSON object, got " +
                        std::string(body.type_name()));
  nlohmann::json full = body;
  if (!full.contains("schema")) full["schema"] = kSchemaName;
  if (!full.contains("schema_version")) full["schema_version"] = kSchemaVersion;
  return request_raw({full.dump()}, timeout);
}

nlohmann::json ControlClient::request_raw(const std::vector<std::string>& parts,
                                          std::chrono::milliseconds timeout) {
  const std::lock_guard lock(impl_->mutex);
  return impl_->exchange(parts, timeout);
}

nlohmann::json ControlClient::call(const std::string& name, const nlohmann::json& fields,
                                   std::chrono::milliseconds timeout) {
  const nlohmann::json reply = request(make_control_request(name, fields), timeout);
  if (!reply.at("ok").get<bool>())
    throw ProtocolError("control request '" + name + "' to '" + impl_->endpoint +
                        "' refused: " + reply.at("error").get<std::string>());
  return reply.at("result");
}

nlohmann::json ControlClient::status(std::chrono::milliseconds timeout) {
  return call("status", nlohmann::json::object(), timeout);
}
nlohmann::json ControlClient::get_config(std::chrono::milliseconds timeout) {
  return call("get_config", nlohmann::json::object(), timeout);
}
nlohmann::json ControlClient::apply(const nlohmann::json& partial,
                                    std::chrono::milliseconds timeout) {
  return call("apply", {{"config", partial}}, timeout);
}
nlohmann::json ControlClient::set_runtime(const nlohmann::json& runtime,
                                          std::chrono::milliseconds timeout) {
  return call("set_runtime", {{"runtime", runtime}}, timeout);
}
nlohmann::json ControlClient::set_calibration(const nlohmann::json& calibration,
                                              std::chrono::milliseconds timeout) {
  return call("set_calibration", {{"calibration", calibration}}, timeout);
}
nlohmann::json ControlClient::start(std::chrono::milliseconds timeout) {
  return call("start", nlohmann::json::object(), timeout);
}
nlohmann::json ControlClient::stop(std::chrono::milliseconds timeout) {
  return call("stop", nlohmann::json::object(), timeout);
}
nlohmann::json ControlClient::replay(const std::string& action, const nlohmann::json& fields,
                                     std::chrono::milliseconds timeout) {
  nlohmann::json body = fields.is_object() ? fields : nlohmann::json::object();
  body["action"] = action;
  return call("replay", body, timeout);
}
nlohmann::json ControlClient::shutdown(std::chrono::milliseconds timeout) {
  return call("shutdown", nlohmann::json::object(), timeout);
}

}  // namespace livedrp::protocol
