#pragma once
// Client of the engine's control socket (docs/protocol.md, "Control socket"): what the GUI uses to
// drive a remote (or embedded) engine. No engine and no Qt dependency.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/curve_keys.hpp"
#include "protocol/message.hpp"

namespace livedrp::protocol {

// A ZeroMQ REQ socket connected to a ControlServer, in the process-wide shared_zmq_context() (so
// inproc:// endpoints reach an engine in the same process). Calls block the calling thread for at
// most their timeout; they are serialised by an internal mutex, so the client may be shared between
// threads (one request at a time goes out).
class ControlClient {
 public:
  // How long the convenience calls wait. Generous: "apply" builds a new engine (the simulator's
  // constants, ~1 s on a small machine) and drains the old run before it answers.
  static constexpr std::chrono::milliseconds kDefaultTimeout{15000};

  // Connects (ZeroMQ connects lazily: no server needs to be there yet), as a CURVE client when
  // `curve` is given (curve_keys.hpp). Throws ProtocolError naming the endpoint when it is
  // malformed.
  explicit ControlClient(std::string endpoint, std::optional<CurveClient> curve = std::nullopt);
  ~ControlClient();
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  const std::string& endpoint() const;

  // Sends `body` (a JSON object; "schema" and "schema_version" are added when it lacks them) and
  // returns the validated reply object, whether "ok" is true or false. Throws ProtocolError when
  // `body` is not an object, when no reply came within `timeout`, or when the reply is malformed;
  // after a timeout the socket is replaced, so the next request goes out normally.
  nlohmann::json request(const nlohmann::json& body,
                         std::chrono::milliseconds timeout = kDefaultTimeout);
  // Sends `parts` as they are (one ZeroMQ message of parts.size() parts; for diagnostics and tests
  // of the server's validation) and returns the validated reply like request().
  nlohmann::json request_raw(const std::vector<std::string>& parts,
                             std::chrono::milliseconds timeout = kDefaultTimeout);

  // Conveniences: send the named request and return its "result" object. Throw ProtocolError with
  // the server's error text when the reply has ok=false (and as request() does otherwise).
  nlohmann::json status(std::chrono::milliseconds timeout = kDefaultTimeout);
  nlohmann::json get_config(std::chrono::milliseconds timeout = kDefaultTimeout);
  // `partial`: only the given keys change; "runtime", "calibration", "simulator" merge key by key.
  nlohmann::json apply(const nlohmann::json& partial,
                       std::chrono::milliseconds timeout = kDefaultTimeout);
  nlohmann::json set_runtime(const nlohmann::json& runtime,
                             std::chrono::milliseconds timeout = kDefaultTimeout);
  nlohmann::json set_calibration(const nlohmann::json& calibration,
                                 std::chrono::milliseconds timeout = kDefaultTimeout);
  nlohmann::json start(std::chrono::milliseconds timeout = kDefaultTimeout);
  nlohmann::json stop(std::chrono::milliseconds timeout = kDefaultTimeout);
  // Replay controls: `action` is "status", "pause", "resume", "step" (fields {"delta": N}) or
  // "seek" (fields {"index": N}); the result carries "replay" and "record" (docs/protocol.md).
  nlohmann::json replay(const std::string& action,
                        const nlohmann::json& fields = nlohmann::json::object(),
                        std::chrono::milliseconds timeout = kDefaultTimeout);
  nlohmann::json shutdown(std::chrono::milliseconds timeout = kDefaultTimeout);

 private:
  nlohmann::json call(const std::string& name, const nlohmann::json& fields,
                      std::chrono::milliseconds timeout);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace livedrp::protocol
