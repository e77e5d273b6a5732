#pragma once
// The server side of ZeroMQ CURVE (protocol/curve_keys.hpp) for the sockets the engine binds:
// while a CurveServer is alive, the Publisher and the ControlServer bind as CURVE servers with
// its key pair, and a ZAP handler (RFC 27, on the process's shared ZeroMQ context) admits only
// clients whose public key is listed. A client without the server's public key cannot complete
// the handshake, one with an unlisted key is refused by the handler: neither sees a message nor
// reaches the controller. One CurveServer at a time per process (livedrp-engine run makes it
// from --curve-key and --curve-clients before it binds anything).
#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "protocol/curve_keys.hpp"

namespace zmq {
class socket_t;
}

namespace livedrp {

struct CurveServerSettings {
  protocol::CurveKeyPair keys;       // the server's, secret key included
  std::set<std::string> authorized;  // the clients' public keys, Z85
};

// The server's .key file and the clients' keys: .pub (or .key) files, or folders whose *.pub
// files are read. Throws InputError naming the file, or when no client key is given (a CURVE
// server that admits nobody is a mistake, not a policy).
CurveServerSettings load_curve_server(const std::string& key_file,
                                      const std::vector<std::string>& client_paths);

class CurveServer {
 public:
  // Starts the ZAP handler. Throws RuntimeFault when another CurveServer is alive or the
  // handler's endpoint cannot be bound.
  explicit CurveServer(CurveServerSettings settings);
  ~CurveServer();  // stops the handler; sockets bound afterwards are plain again
  CurveServer(const CurveServer&) = delete;
  CurveServer& operator=(const CurveServer&) = delete;

  std::uint64_t admitted() const;  // handshakes of listed clients
  std::uint64_t refused() const;   // handshakes refused (unlisted key, not CURVE)
  const std::string& public_key() const;
  std::size_t client_count() const;  // public keys admitted

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Makes `socket` a CURVE server with the live CurveServer's keys, before it binds; leaves it
// as it is when none is alive. Returns whether it did.
bool apply_curve_server(zmq::socket_t& socket);
bool curve_server_active();

// Makes a plain (not CURVE) server `socket`, before it binds, refuse peers that speak ZMTP 1.0 or
// 2.0 (libzmq refuses them on any socket with a ZAP domain). Bytes that are no ZeroMQ then end the
// handshake and libzmq closes the connection, instead of decoding them as ZMTP 1.0 messages from a
// peer that stays. Clients of ZMTP 3 (libzmq 4 and everything current) are not affected: with no
// CurveServer there is no ZAP handler and libzmq admits them unasked (ZMQ_ZAP_ENFORCE_DOMAIN is
// off); a CurveServer's handler admits every NULL-mechanism client of this socket's domain.
void refuse_pre_zmtp3_peers(zmq::socket_t& socket);

}  // namespace livedrp
