#include "publish/curve_server.hpp"

#include <array>
#include <filesystem>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "core/error.hpp"
#include "protocol/subscriber.hpp"

namespace livedrp {
namespace {

// Where libzmq asks for authentication (RFC 27), in the context of the sockets it guards.
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
// The ZAP domain of livedrp's server sockets (a handler answers for it).
constexpr const char* kZapDomain = "livedrp";
// The ZAP domain of plain server sockets that refuse ZMTP 1.0 and 2.0 peers
// (refuse_pre_zmtp3_peers): the handler admits their NULL-mechanism clients.
constexpr const char* kPlainZapDomain = "livedrp-plain";
// How often the handler looks at its stop flag while no handshake comes.
constexpr int kZapPollMs = 100;
// Refusals logged one by one; after that every kLogEveryRefusals-th (a scan must not flood).
constexpr std::uint64_t kLoggedRefusals = 10;
constexpr std::uint64_t kLogEveryRefusals = 1000;

std::mutex active_mutex;
const CurveServerSettings* active_settings = nullptr;  // guarded by active_mutex

void add_client_key(const std::filesystem::path& file, std::set<std::string>& authorized) {
  authorized.insert(protocol::read_curve_key_file(file.string(), false).public_key);
}

}  // namespace

CurveServerSettings load_curve_server(const std::string& key_file,
                                      const std::vector<std::string>& client_paths) {
  CurveServerSettings settings;
  settings.keys = protocol::read_curve_key_file(key_file, true);
  for (const std::string& path : client_paths) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      std::size_t found = 0;
      for (const auto& entry : std::filesystem::directory_iterator(path, error))
        if (entry.path().extension() == ".pub") {
          add_client_key(entry.path(), settings.authorized);
          ++found;
        }
      if (error)
        throw InputError("cannot list client key folder '" + path + "': " + error.message());
      if (found == 0) throw InputError("client key folder '" + path + "' holds no .pub file");
    } else {
      add_client_key(path, settings.authorized);
    }
  }
  if (settings.authorized.empty())
    throw InputError(
        "CURVE needs the public keys of the clients it admits (--curve-clients FILE.pub or "
        "FOLDER); none was given");
  return settings;
}

struct CurveServer::Impl {
  CurveServerSettings settings;
  zmq::socket_t handler;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> admitted{0}, refused{0};
  std::thread thread;

  explicit Impl(CurveServerSettings settings_)
      : settings(std::move(settings_)),
        handler(protocol::shared_zmq_context(), zmq::socket_type::rep) {
    handler.set(zmq::sockopt::linger, 0);
    try {
      handler.bind(kZapEndpoint);
    } catch (const zmq::error_t& e) {
      throw RuntimeFault(std::string("cannot start the CURVE authenticator on ") + kZapEndpoint +
                         ": " + e.what() + " (another one in this process?)");
    }
    thread = std::thread([this] { serve(); });
  }

  ~Impl() {
    stopping = true;
    if (thread.joinable()) thread.join();
  }

  void serve() {
    while (!stopping) {
      zmq::pollitem_t item{handler.handle(), 0, ZMQ_POLLIN, 0};
      try {
        if (zmq::poll(&item, 1, std::chrono::milliseconds(kZapPollMs)) <= 0) continue;
        std::vector<zmq::message_t> request;
        if (!zmq::recv_multipart(handler, std::back_inserter(request))) continue;
        answer(request);
      } catch (const zmq::error_t& e) {
        if (e.num() == ETERM) return;
        spdlog::warn("CURVE authenticator: {}", e.what());
      }
    }
  }

  // RFC 27: version, request id, domain, address, identity, mechanism, credentials...; the
  // reply is version, request id, status code, status text, user id, metadata.
  void answer(const std::vector<zmq::message_t>& request) {
    const auto frame = [&](std::size_t i) {
      return i < request.size() ? request[i].to_string() : std::string();
    };
    std::string status = "400", text = "unknown client";
    const std::string domain = frame(2), address = frame(3), mechanism = frame(5);
    std::string client;
    if (frame(0) != "1.0") {
      text = "ZAP version not 1.0";
    } else if (domain == kPlainZapDomain && mechanism == "NULL") {
      // A plain socket bound while no CurveServer was alive: its clients were never asked for a
      // key, and are not now (neither admitted nor refused in the counts).
      send_reply(frame(1), "200", "OK");
      return;
    } else if (mechanism != "CURVE" || request.size() < 7 || request[6].size() != 32) {
      text = "CURVE required";
    } else {
      std::array<char, protocol::kCurveKeyZ85Chars + 1> z85{};
      zmq_z85_encode(z85.data(), request[6].data<std::uint8_t>(), 32);
      client = z85.data();
      if (settings.authorized.count(client) > 0) {
        status = "200";
        text = "OK";
      }
    }
    if (status == "200") {
      admitted.fetch_add(1);
    } else {
      const std::uint64_t n = refused.fetch_add(1) + 1;
      if (n <= kLoggedRefusals || n % kLogEveryRefusals == 0)
        spdlog::warn("CURVE: refused a {} client from {}{} ({} refused so far)",
                     mechanism.empty() ? "?" : mechanism, address.empty() ? "?" : address,
                     client.empty() ? "" : " with unlisted key " + client, n);
    }
    send_reply(frame(1), status, text);
  }

  void send_reply(const std::string& request_id, const std::string& status,
                  const std::string& text) {
    const std::array<zmq::const_buffer, 6> reply{zmq::str_buffer("1.0"), zmq::buffer(request_id),
                                                 zmq::buffer(status),    zmq::buffer(text),
                                                 zmq::str_buffer(""),    zmq::str_buffer("")};
    zmq::send_multipart(handler, reply);
  }
};

CurveServer::CurveServer(CurveServerSettings settings) {
  std::lock_guard lock(active_mutex);
  if (active_settings) throw RuntimeFault("a CURVE server is already active in this process");
  impl_ = std::make_unique<Impl>(std::move(settings));
  active_settings = &impl_->settings;
}

CurveServer::~CurveServer() {
  {
    std::lock_guard lock(active_mutex);
    active_settings = nullptr;
  }
  impl_.reset();
}

std::uint64_t CurveServer::admitted() const {
  return impl_->admitted.load();
}
std::uint64_t CurveServer::refused() const {
  return impl_->refused.load();
}
const std::string& CurveServer::public_key() const {
  return impl_->settings.keys.public_key;
}

std::size_t CurveServer::client_count() const {
  return impl_->settings.authorized.size();
}

bool apply_curve_server(zmq::socket_t& socket) {
  std::lock_guard lock(active_mutex);
  if (!active_settings) return false;
  socket.set(zmq::sockopt::curve_server, 1);
  protocol::set_curve_key(socket, ZMQ_CURVE_SECRETKEY, active_settings->keys.secret_key);
  socket.set(zmq::sockopt::zap_domain, kZapDomain);
  return true;
}

void refuse_pre_zmtp3_peers(zmq::socket_t& socket) {
  socket.set(zmq::sockopt::zap_domain, kPlainZapDomain);
}

bool curve_server_active() {
  std::lock_guard lock(active_mutex);
  return active_settings != nullptr;
}

}  // namespace livedrp
