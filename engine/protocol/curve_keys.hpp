#pragma once
// ZeroMQ CURVE keys for the publish and control sockets (libzmq's own CURVE mechanism, RFC 26):
// key pairs, the files they live in, and the client side of a socket. The server side (the
// engine's sockets and the authenticator that admits only listed clients) is in
// publish/curve_server.hpp.
//
// Key files use the text format of ZeroMQ's certificates (CZMQ's zcert, a ZPL file): a
// "curve" section with `public-key = "<40 Z85 characters>"` and, in the secret file only,
// `secret-key = "..."`. `livedrp-engine keygen STEM` writes STEM.key (both keys, mode 0600)
// and STEM.pub (the public key, to hand to the other side).
#include <optional>
#include <string>

namespace zmq {
class socket_t;
}

namespace livedrp::protocol {

inline constexpr std::size_t kCurveKeyZ85Chars = 40;  // a 32-byte key in Z85

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters; empty when only the public key is known
};

// A new key pair from libzmq (RuntimeFault when libzmq was built without CURVE).
CurveKeyPair generate_curve_key_pair();

// Writes STEM.key (mode 0600) and STEM.pub. Refuses (InputError, naming the file) to overwrite
// an existing file; RuntimeFault when a file cannot be written.
void write_curve_key_files(const std::string& stem, const CurveKeyPair& keys);

// Reads a key file: the public key always, the secret key when `need_secret`. Throws InputError
// naming the file and what is wrong (missing key, not 40 Z85 characters, a secret file readable
// by others).
CurveKeyPair read_curve_key_file(const std::string& path, bool need_secret);

// Whether `key` is a 40-character Z85 key that decodes.
bool is_z85_key(const std::string& key);

// A client's CURVE settings: the server's public key and its own key pair.
struct CurveClient {
  std::string server_public_key;
  CurveKeyPair keys;
};
// From the server's .pub file and the client's .key file (InputError naming a bad file).
CurveClient load_curve_client(const std::string& server_public_file,
                              const std::string& client_key_file);

// Sets one of ZMQ_CURVE_SERVERKEY, _PUBLICKEY, _SECRETKEY from a Z85 key.
void set_curve_key(zmq::socket_t& socket, int option, const std::string& key);

// Makes `socket` a CURVE client of `client`'s server (before it connects).
void apply_curve_client(zmq::socket_t& socket, const CurveClient& client);

}  // namespace livedrp::protocol
