#include "protocol/curve_keys.hpp"

#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>
#include <zmq.hpp>

#include "core/error.hpp"

namespace livedrp::protocol {
namespace {

// Key files are a few hundred bytes; anything much larger is not one.
constexpr std::size_t kMaxKeyFileBytes = 64 * 1024;

// The value of `name = "..."` on a line of the file (ZPL allows the quotes to be absent).
std::optional<std::string> value_of(const std::string& line, const std::string& name) {
  std::size_t at = line.find_first_not_of(" \t");
  if (at == std::string::npos || line.compare(at, name.size(), name) != 0) return std::nullopt;
  at = line.find_first_not_of(" \t", at + name.size());
  if (at == std::string::npos || line[at] != '=') return std::nullopt;
  at = line.find_first_not_of(" \t", at + 1);
  if (at == std::string::npos) return std::string();
  std::string value = line.substr(at);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t' || value.back() == '\r'))
    value.pop_back();
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
      value.back() == value.front())
    value = value.substr(1, value.size() - 2);
  return value;
}

void write_file(const std::string& path, const std::string& text, mode_t mode) {
  // O_EXCL: an existing key is never replaced (it may be the one every client trusts).
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST)
      throw InputError("key file '" + path +
                       "' exists already; remove it first or choose another name");
    throw RuntimeFault("cannot write key file '" + path + "': " + std::strerror(errno));
  }
  const ssize_t written = ::write(fd, text.data(), text.size());
  const int write_errno = errno;
  if (::close(fd) != 0 || written != ssize_t(text.size()))
    throw RuntimeFault("cannot write key file '" + path +
                       "': " + std::strerror(written < 0 ? write_errno : EIO));
}

std::string file_text(const CurveKeyPair& keys, bool with_secret) {
  std::ostringstream out;
  out << "#   livedrp ZeroMQ CURVE " << (with_secret ? "**secret** key" : "public key") << "\n";
  if (with_secret) out << "#   Keep this file to yourself (mode 0600); hand out the .pub file.\n";
  out << "\nmetadata\ncurve\n    public-key = \"" << keys.public_key << "\"\n";
  if (with_secret) out << "    secret-key = \"" << keys.secret_key << "\"\n";
  return out.str();
}

}  // namespace

bool is_z85_key(const std::string& key) {
  if (key.size() != kCurveKeyZ85Chars) return false;
  std::array<std::uint8_t, 32> decoded{};
  return zmq_z85_decode(decoded.data(), key.c_str()) != nullptr;
}

CurveKeyPair generate_curve_key_pair() {
  std::array<char, kCurveKeyZ85Chars + 1> public_key{}, secret_key{};
  if (zmq_curve_keypair(public_key.data(), secret_key.data()) != 0)
    throw RuntimeFault(std::string("cannot make a CURVE key pair: ") + zmq_strerror(zmq_errno()) +
                       " (libzmq built without CURVE?)");
  return {public_key.data(), secret_key.data()};
}

void write_curve_key_files(const std::string& stem, const CurveKeyPair& keys) {
  if (!is_z85_key(keys.public_key) || !is_z85_key(keys.secret_key))
    throw InputError("a CURVE key pair must be two 40-character Z85 keys");
  for (const char* suffix : {".key", ".pub"}) {
    struct stat info {};
    if (::stat((stem + suffix).c_str(), &info) == 0)
      throw InputError("key file '" + stem + suffix +
                       "' exists already; remove it first or choose another name");
  }
  write_file(stem + ".key", file_text(keys, true), 0600);
  write_file(stem + ".pub", file_text(keys, false), 0644);
}

CurveKeyPair read_curve_key_file(const std::string& path, bool need_secret) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read key file '" + path + "': " + std::strerror(errno));
  CurveKeyPair keys;
  std::string line;
  std::size_t bytes = 0;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    bytes += line.size() + 1;
    if (bytes > kMaxKeyFileBytes)
      throw InputError("key file '" + path + "' is over " + std::to_string(kMaxKeyFileBytes) +
                       " bytes: not a key file");
    for (const auto& [name, field] :
         {std::pair<const char*, std::string*>{"public-key", &keys.public_key},
          std::pair<const char*, std::string*>{"secret-key", &keys.secret_key}}) {
      const std::optional<std::string> value = value_of(line, name);
      if (!value) continue;
      if (!is_z85_key(*value))
        throw InputError("key file '" + path + "', line " + std::to_string(line_number) + ": " +
                         name + " is not a 40-character Z85 key");
      *field = *value;
    }
  }
  if (keys.public_key.empty())
    throw InputError("key file '" + path +
                     "' has no public-key line (make one with "
                     "`livedrp-engine keygen STEM`)");
  if (need_secret && keys.secret_key.empty())
    throw InputError("key file '" + path +
                     "' has no secret-key line: give the .key file, not the .pub file");
  if (!need_secret) {
    keys.secret_key.clear();
    return keys;
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && (info.st_mode & 077) != 0)
    throw InputError("key file '" + path + "' holds a secret key but others may read it (mode " +
                     std::to_string((info.st_mode >> 6) & 7) +
                     std::to_string((info.st_mode >> 3) & 7) + std::to_string(info.st_mode & 7) +
                     "); chmod 600 it");
  return keys;
}

CurveClient load_curve_client(const std::string& server_public_file,
                              const std::string& client_key_file) {
  CurveClient client;
  client.server_public_key = read_curve_key_file(server_public_file, false).public_key;
  client.keys = read_curve_key_file(client_key_file, true);
  return client;
}

void set_curve_key(zmq::socket_t& socket, int option, const std::string& key) {
  // Z85 text with its terminating zero (41 bytes), the form every libzmq 4.x takes.
  if (!is_z85_key(key)) throw InputError("not a 40-character Z85 CURVE key");
  if (zmq_setsockopt(socket.handle(), option, key.c_str(), key.size() + 1) != 0)
    throw RuntimeFault(std::string("cannot set a CURVE key on a socket: ") +
                       zmq_strerror(zmq_errno()));
}

void apply_curve_client(zmq::socket_t& socket, const CurveClient& client) {
  set_curve_key(socket, ZMQ_CURVE_SERVERKEY, client.server_public_key);
  set_curve_key(socket, ZMQ_CURVE_PUBLICKEY, client.keys.public_key);
  set_curve_key(socket, ZMQ_CURVE_SECRETKEY, client.keys.secret_key);
}

}  // namespace livedrp::protocol
