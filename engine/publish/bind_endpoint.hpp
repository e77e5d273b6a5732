#pragma once
// Endpoints the engine binds (the publisher, the control socket), checked before ZeroMQ sees
// them: ZeroMQ takes a TCP port of 99999 modulo 65536 and binds another port without a word,
// and a wildcard or outside address makes the engine reachable from other machines, which the
// operator should know (control requests are not authenticated).
#include <string>

namespace livedrp {

// Why a TCP endpoint cannot be bound as given (no host, no port of 1..65535 or '*' for any free
// port); empty when it can. Logs a warning, naming `what`, when the host is not a loopback
// address. Other transports (ipc://, inproc://) pass as they are.
std::string bind_endpoint_problem(const std::string& endpoint, const std::string& what);

// Whether a TCP endpoint's host is this machine's loopback (127.x.x.x, localhost, ::1).
bool is_loopback_endpoint(const std::string& endpoint);

}  // namespace livedrp
