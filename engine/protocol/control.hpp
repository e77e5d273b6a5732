#pragma once
// The control socket's messages (docs/protocol.md, "Control socket"). A request is one ZeroMQ part
// holding one UTF-8 JSON object
//   {"schema": "livedrp", "schema_version": 1, "request": "apply", "config": {...}}
// and every request gets exactly one reply, also one JSON object:
//   {"schema": "livedrp", "schema_version": 1, "ok": true, "result": {...}}
//   {"schema": "livedrp", "schema_version": 1, "ok": false, "error": "what is wrong"}
// No engine and no Qt dependency: the engine's ControlServer and any client (the GUI's
// ControlClient, a script) share these helpers.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/message.hpp"

namespace livedrp::protocol {

// The largest request the server reads. A whole pipeline configuration is a few kB; 1 MiB leaves
// room for any future request with a table in it and still refuses a runaway client's garbage.
inline constexpr std::size_t kControlMaxRequestBytes = std::size_t(1) << 20;

// The control endpoint the headless engine binds by default: loopback, next to the publisher's
// 5555.
inline constexpr std::string_view kDefaultControlEndpoint = "tcp://127.0.0.1:5556";

// Every request the server knows, in the order docs/protocol.md lists them.
inline constexpr std::array<std::string_view, 14> kControlRequests = {
    "status",          "get_config",      "apply",       "check",   "set_runtime",
    "set_calibration", "start",           "stop",        "replay",  "replay_candidates",
    "get_peak_params", "set_peak_params", "rerun_peaks", "shutdown"};

// A request with the schema fields and the name filled in; `fields` (an object) adds the
// request's own fields. Throws ProtocolError when `fields` is not an object.
nlohmann::json make_control_request(std::string_view name,
                                    const nlohmann::json& fields = nlohmann::json::object());
nlohmann::json make_control_ok(const nlohmann::json& result = nlohmann::json::object());
nlohmann::json make_control_error(const std::string& error);

struct ControlRequest {
  std::string name;     // the value of "request"
  nlohmann::json body;  // the whole request object
};

// Parses and validates the envelope of a request: JSON, an object, "schema" == "livedrp",
// "schema_version" == 1, "request" a non-empty string. The request's own fields are the server's
// to check. Throws ProtocolError naming what is wrong.
ControlRequest parse_control_request(std::string_view bytes);

// Parses and validates a reply: JSON, an object, the schema fields, "ok" a boolean, "result" an
// object when ok, "error" a string when not. Returns the reply object. Throws ProtocolError.
nlohmann::json parse_control_reply(std::string_view bytes);

}  // namespace livedrp::protocol
