// The control socket among garbage peers (issue 35): raw TCP connections that write random bytes
// (a port scanner, a confused script), and ZeroMQ peers that send messages without a request
// envelope and go away, come and go while a ControlClient asks. Every legitimate request is
// answered, the garbage never reaches the controller (nothing but the legitimate requests is
// answered), and the server closes every garbage connection itself. Plain and under CURVE.
//
// The hard case is a message without the envelope's empty delimiter from a peer that is already
// gone when the server reads it: libzmq's REP socket drops such a message but leaves its reply
// routing mid-message, so the next legitimate answer goes nowhere and that client times out.
#include <QTemporaryDir>
#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <future>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "exec/engine_controller.hpp"
#include "protocol/control.hpp"
#include "protocol/control_client.hpp"
#include "protocol/curve_keys.hpp"
#include "protocol/message.hpp"
#include "protocol/subscriber.hpp"
#include "publish/control_server.hpp"
#include "publish/curve_server.hpp"

using namespace livedrp;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr int kTrials = 8;
constexpr int kPeersPerTrial = 50;
// Generous: the answer to a status request on an idle engine comes in milliseconds; the limit is
// only there so that a lost reply fails the test instead of hanging it.
constexpr auto kReplyTimeout = 30s;
constexpr auto kDropTimeout = 30s;

EngineConfig small_config() {
  EngineConfig c;
  c.source = "sim:generic_f32";
  c.backend = "cpu";
  c.publish = "tcp://127.0.0.1:*";
  c.rate_hz = 100;
  c.simulator_pool = 2;
  c.cpu_threads = 2;
  return c;
}

int port_of(const std::string& endpoint) {
  return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
}

// A TCP connection to 127.0.0.1:port that speaks no protocol; -1 when it cannot connect.
int raw_connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Writes what it can: the server may have closed the connection already (no SIGPIPE then).
void raw_write(int fd, const std::vector<unsigned char>& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// Closes with a reset instead of an orderly FIN, as a killed scanner does.
void raw_reset(int fd) {
  const linger abort{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
  ::close(fd);
}

std::vector<unsigned char> random_bytes(std::mt19937& rng, std::size_t count) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<unsigned char> bytes(count);
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(byte(rng));
  return bytes;
}

// The garbage of peer `kind`. Each either starts with a byte other than 0xff or is at least a
// whole ZMTP 3 greeting long (64 bytes), so the server can tell at once that it is no ZeroMQ
// peer it serves (a short prefix of a greeting would only be dropped by the handshake timeout).
std::vector<unsigned char> garbage(std::mt19937& rng, int kind) {
  std::uniform_int_distribution<std::size_t> few(1, 9), some(64, 1024), many(1024, 16384);
  std::vector<unsigned char> bytes;
  switch (kind % 5) {
    case 0:  // a few bytes
      bytes = random_bytes(rng, few(rng));
      if (bytes[0] == 0xff) bytes[0] = 0x01;
      break;
    case 1:  // kilobytes
      bytes = random_bytes(rng, many(rng));
      if (bytes[0] == 0xff) bytes[0] = 0x7f;
      break;
    case 2:  // a ZMTP signature, then nonsense
      bytes = random_bytes(rng, some(rng));
      bytes[0] = 0xff;
      bytes[9] |= 0x01;
      break;
    case 3:  // ZMTP/1.0 framing: an identity, a message of two parts without the request
             // envelope's empty delimiter, then a zero length, which ends the connection
      bytes = {0x01, 0x00, 0x02, 0x01, 'A', 0x02, 0x00, 'B', 0x00};
      break;
    default:  // anything
      bytes = random_bytes(rng, some(rng));
      break;
  }
  return bytes;
}

// Waits until the server has closed each of `fds` (end of stream or a reset; what it sent before,
// its ZMTP greeting, is read and ignored). Returns how many it left open by the deadline.
int left_open_by_server(const std::vector<int>& fds, std::chrono::seconds timeout) {
  std::vector<int> open = fds;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!open.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left <= 0ms) break;
    std::vector<pollfd> items;
    for (int fd : open) items.push_back({fd, POLLIN, 0});
    if (::poll(items.data(), items.size(), static_cast<int>(left.count())) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    std::vector<int> still;
    for (const pollfd& item : items) {
      if (!(item.revents & (POLLIN | POLLHUP | POLLERR))) {
        still.push_back(item.fd);
        continue;
      }
      char buffer[4096];
      const ssize_t n = ::recv(item.fd, buffer, sizeof buffer, MSG_DONTWAIT);
      const bool closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
      if (!closed) still.push_back(item.fd);
    }
    open = std::move(still);
  }
  return static_cast<int>(open.size());
}

// A ZeroMQ peer that sends `parts` (no request envelope) and goes away at once.
void send_and_vanish(const std::string& endpoint, const std::vector<std::string>& parts,
                     const std::optional<protocol::CurveClient>& curve) {
  zmq::socket_t dealer(protocol::shared_zmq_context(), zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 1000);  // the message goes out before the connection ends
  if (curve) protocol::apply_curve_client(dealer, *curve);
  dealer.connect(endpoint);
  for (std::size_t i = 0; i < parts.size(); ++i)
    (void)dealer.send(zmq::buffer(parts[i]),
                      i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
}

// Raw peers that connect, write garbage and hang up (some with a reset) until stopped, so that
// garbage peers also come and go while a request is on its way. Paced, so that the connections
// closed in TIME_WAIT cannot use up the machine's ephemeral ports.
class Churn {
 public:
  Churn(int port, unsigned seed)
      : thread_([this, port, seed] {
          std::mt19937 rng(seed);
          for (int kind = 0; !stop_; ++kind) {
            const int fd = raw_connect(port);
            if (fd < 0) continue;
            raw_write(fd, garbage(rng, kind));
            kind % 2 ? raw_reset(fd) : static_cast<void>(::close(fd));
            std::this_thread::sleep_for(2ms);
          }
        }) {}
  ~Churn() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

class TestControlGarbagePeers : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  std::string path(const char* name) const { return (dir_.path() + "/" + name).toStdString(); }

  // kTrials times: 50 raw peers write garbage (half hang up at once, half stay connected), two
  // ZeroMQ peers send a message without the request envelope and vanish, then one legitimate
  // request must be answered, and the server must have closed every garbage connection.
  void run_trials(const std::string& endpoint, const std::optional<protocol::CurveClient>& curve,
                  const ControlServer& server) {
    const int port = port_of(endpoint);
    protocol::ControlClient client(endpoint, curve);
    const Churn churn(port, 7);
    std::mt19937 rng(35);
    for (int trial = 0; trial < kTrials; ++trial) {
      std::vector<int> kept;
      for (int peer = 0; peer < kPeersPerTrial; ++peer) {
        const int fd = raw_connect(port);
        QVERIFY2(fd >= 0, qPrintable(QString("cannot connect to port %1").arg(port)));
        raw_write(fd, garbage(rng, peer));
        if (peer % 2 == 0)
          kept.push_back(fd);
        else if (peer % 4 == 1)
          raw_reset(fd);
        else
          ::close(fd);
        if (peer == kPeersPerTrial / 2) {
          send_and_vanish(endpoint, {"A", "B"}, curve);
          send_and_vanish(endpoint, {""}, curve);
        }
      }
      json reply;
      try {
        reply = client.request(protocol::make_control_request("status"), kReplyTimeout);
      } catch (const protocol::ProtocolError& error) {
        QFAIL(qPrintable(QString("trial %1: %2").arg(trial).arg(error.what())));
      }
      QVERIFY2(reply.at("ok").get<bool>(), qPrintable(QString::fromStdString(reply.dump())));
      QCOMPARE(reply.at("result").at("state").get<std::string>(), std::string("idle"));

      const int open = left_open_by_server(kept, kDropTimeout);
      for (int fd : kept) ::close(fd);
      QVERIFY2(open == 0, qPrintable(QString("trial %1: the server left %2 of %3 garbage "
                                             "connections open")
                                         .arg(trial)
                                         .arg(open)
                                         .arg(kept.size())));
    }
    // Nothing but the legitimate requests was answered: the garbage never became a request.
    QCOMPARE(server.requests_answered(), std::uint64_t(kTrials));
    // And the socket still answers.
    QCOMPARE(client.status(kReplyTimeout).at("state").get<std::string>(), std::string("idle"));
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    protocol::write_curve_key_files(path("server"), protocol::generate_curve_key_pair());
    protocol::write_curve_key_files(path("client"), protocol::generate_curve_key_pair());
  }

  void every_request_is_answered_among_garbage_peers() {
    EngineController controller(small_config());
    const ControlServer server(controller, "tcp://127.0.0.1:*");
    run_trials(server.endpoint(), std::nullopt, server);
  }

  void every_request_is_answered_among_garbage_peers_under_curve() {
    const CurveServer curve(load_curve_server(path("server.key"), {path("client.pub")}));
    EngineController controller(small_config());
    const ControlServer server(controller, "tcp://127.0.0.1:*");
    run_trials(server.endpoint(),
               protocol::load_curve_client(path("server.pub"), path("client.key")), server);
  }

  // ZeroMQ peers that send a message without the request envelope and leave while the server is
  // busy with a slow request (a restart of the run): when the server comes to their messages
  // their connections are gone. Neither the slow request nor the next one loses its answer.
  void answers_survive_peers_that_left_while_the_server_was_busy() {
    EngineController controller(small_config());
    const ControlServer server(controller, "tcp://127.0.0.1:*");
    protocol::ControlClient client(server.endpoint()), slow_client(server.endpoint());
    QCOMPARE(client.start(kReplyTimeout).at("started").get<bool>(), true);
    for (int trial = 0; trial < kTrials; ++trial) {
      auto slow = std::async(std::launch::async, [&] {
        return slow_client.set_runtime({{"batch", 1 + trial % 2}}, kReplyTimeout);
      });
      for (int peer = 0; peer < 5; ++peer) send_and_vanish(server.endpoint(), {"A", "B"}, {});
      try {
        QCOMPARE(client.status(kReplyTimeout).at("config").at("source").get<std::string>(),
                 std::string("sim:generic_f32"));
        QCOMPARE(slow.get().at("restarted").get<bool>(), true);
      } catch (const protocol::ProtocolError& error) {
        QFAIL(qPrintable(QString("trial %1: %2").arg(trial).arg(error.what())));
      }
    }
    QCOMPARE(server.requests_answered(), std::uint64_t(1 + 2 * kTrials));
  }

  // A request in good form from a ZeroMQ peer that is no REQ socket still gets its answer, an
  // error naming what is wrong, and a reply whose client has gone is dropped without stalling.
  void a_dealer_gets_answers_and_a_vanished_client_does_not_stall_the_server() {
    EngineController controller(small_config());
    const ControlServer server(controller, "tcp://127.0.0.1:*");
    zmq::socket_t dealer(protocol::shared_zmq_context(), zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.connect(server.endpoint());
    const std::string request = protocol::make_control_request("status").dump();
    for (const std::string& body : {request, std::string("not json")}) {
      (void)dealer.send(zmq::str_buffer(""), zmq::send_flags::sndmore);
      (void)dealer.send(zmq::buffer(body), zmq::send_flags::none);
      zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::duration_cast<std::chrono::milliseconds>(kReplyTimeout));
      QVERIFY2(item.revents & ZMQ_POLLIN, "no reply to a DEALER");
      zmq::message_t delimiter, answer;
      QVERIFY(dealer.recv(delimiter) && delimiter.size() == 0 && delimiter.more());
      QVERIFY(dealer.recv(answer) && !answer.more());
      const json reply = protocol::parse_control_reply(answer.to_string_view());
      QCOMPARE(reply.at("ok").get<bool>(), body == request);
    }

    // Requests whose clients are gone before the answer: the server drops those answers.
    for (int i = 0; i < 20; ++i) {
      zmq::socket_t gone(protocol::shared_zmq_context(), zmq::socket_type::req);
      gone.set(zmq::sockopt::linger, 1000);
      gone.connect(server.endpoint());
      (void)gone.send(zmq::buffer(request), zmq::send_flags::none);
    }
    protocol::ControlClient client(server.endpoint());
    QCOMPARE(client.status(kReplyTimeout).at("state").get<std::string>(), std::string("idle"));
  }
};

QTEST_GUILESS_MAIN(TestControlGarbagePeers)
#include "test_control_garbage_peers.moc"
