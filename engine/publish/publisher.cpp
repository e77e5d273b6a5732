#include "publish/publisher.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "core/error.hpp"
#include "protocol/subscriber.hpp"
#include "publish/bind_endpoint.hpp"
#include "publish/curve_server.hpp"

namespace livedrp {

// Threading: ZeroMQ sockets are not thread-safe, and an XPUB socket must also be *read* (the
// subscription notices that drive the late-joiner replay) even while nobody publishes. So one
// internal thread owns the socket: it waits on the socket and on a wake-up pipe, answers new
// subscriptions, and sends what publish() queued. publish() only encodes, takes a mutex for a
// deque push and writes one byte to a pipe; it never touches ZeroMQ, so it cannot block on it.
// (A mutex around non-blocking sends would serve publish() but leave subscriptions unanswered
// until the next publish, which for a status published once a second is a visible delay.)

namespace {

// Messages ZeroMQ keeps per subscriber before it drops new ones for that subscriber. The topics
// together run at roughly 30 messages a second (stats and status a few Hz, profile, peaks and
// rate-limited images about 10 Hz at most), so 200 is several seconds of backlog; more would only
// hold stale images (8.6 MB each for an epix10ka2M) in memory for a subscriber that is not reading.
constexpr int kSendHighWaterMark = 200;

// How long ZeroMQ may keep trying to deliver queued messages after the publisher is destroyed.
// Short, so that a final "finished" status still leaves, but a dead subscriber costs nothing:
// the shared context is never terminated, so closing never waits for this.
constexpr int kLingerOnCloseMs = 100;

// Bound of the hand-over queue between publish() and the sending thread. The thread sends without
// blocking, so the queue only fills if that thread is starved of CPU; then the oldest (stalest)
// messages go first.
constexpr std::size_t kMaxQueuedMessages = 1000;

// ZeroMQ's XPUB subscription notice: one byte (1 = subscribe, 0 = unsubscribe), then the prefix.
constexpr unsigned char kSubscribeNotice = 1;

// A topic's last message is replayed for late joiners at most this often: XPUB sends a replay to
// every matching subscriber, so answering each notice at once would let a client that subscribes
// thousands of times flood every viewer with copies (and the engine's memory with queued images).
// Notices within the period are answered together at its end, so each joiner still gets every
// topic within a quarter of a second.
constexpr auto kReplayPeriod = std::chrono::milliseconds(250);

using EncodedParts = std::vector<std::string>;

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

struct Publisher::Impl {
  std::string bound_endpoint;
  zmq::socket_t socket;  // after construction, used only by `sender`
  int wake_read_fd = -1;
  int wake_write_fd = -1;

  std::mutex queue_mutex;
  std::deque<EncodedParts> queue;  // guarded by queue_mutex
  bool stopping = false;           // guarded by queue_mutex
  std::atomic<std::uint64_t> dropped{0};

  std::map<std::string, EncodedParts, std::less<>> last_by_topic;  // `sender` only
  // Topics asked for by notices not answered yet, and when the next replay may go (`sender`).
  std::set<std::string, std::less<>> replay_pending;
  std::chrono::steady_clock::time_point next_replay{};
  std::thread sender;

  explicit Impl(const std::string& endpoint)
      : socket(protocol::shared_zmq_context(), zmq::socket_type::xpub) {
    socket.set(zmq::sockopt::sndhwm, kSendHighWaterMark);
    socket.set(zmq::sockopt::linger, kLingerOnCloseMs);
    // Pass every subscription up, repeats included: a second viewer subscribing to "status" must
    // get the replay as well, and without VERBOSE ZeroMQ reports only the first.
    socket.set(zmq::sockopt::xpub_verbose, 1);
    apply_curve_server(socket);  // CURVE when the process has a CurveServer (curve_server.hpp)
    if (const std::string problem = bind_endpoint_problem(endpoint, "publish"); !problem.empty())
      throw InputError("cannot bind publisher to '" + endpoint + "': " + problem);
    try {
      socket.bind(endpoint);
    } catch (const zmq::error_t& error) {
      throw InputError("cannot bind publisher to '" + endpoint + "': " + error.what());
    }
    bound_endpoint = socket.get(zmq::sockopt::last_endpoint);

    std::array<int, 2> pipe_fds{};
    if (pipe2(pipe_fds.data(), O_NONBLOCK | O_CLOEXEC) != 0) {
      throw RuntimeFault("publisher on '" + bound_endpoint +
                         "': cannot create its wake-up pipe: " + errno_text());
    }
    wake_read_fd = pipe_fds[0];
    wake_write_fd = pipe_fds[1];

    // Starting the thread is a full memory barrier, which is what ZeroMQ asks for when a socket
    // moves between threads.
    sender = std::thread([this] { run_sender(); });
  }

  ~Impl() {
    {
      const std::lock_guard lock(queue_mutex);
      stopping = true;
    }
    wake_sender();
    if (sender.joinable()) sender.join();
    close(wake_read_fd);
    close(wake_write_fd);
  }

  void enqueue(EncodedParts parts) {
    bool was_empty = false;
    {
      const std::lock_guard lock(queue_mutex);
      if (queue.size() >= kMaxQueuedMessages) {
        queue.pop_front();
        dropped.fetch_add(1, std::memory_order_relaxed);
      }
      was_empty = queue.empty();
      queue.push_back(std::move(parts));
    }
    // One wake-up per batch: while the queue is non-empty the sender has a wake-up pending or is
    // about to take the whole queue.
    if (was_empty) wake_sender();
  }

  void wake_sender() const {
    const char byte = 0;
    // EAGAIN means the pipe is full of wake-ups already; the sender will wake either way.
    [[maybe_unused]] const auto written = write(wake_write_fd, &byte, 1);
  }

  void drain_wake_pipe() const {
    std::array<char, 64> bytes{};
    while (read(wake_read_fd, bytes.data(), bytes.size()) > 0) {
    }
  }

  void send(const EncodedParts& parts) {
    for (std::size_t index = 0; index < parts.size(); ++index) {
      const bool last = index + 1 == parts.size();
      const auto flags =
          last ? zmq::send_flags::dontwait : (zmq::send_flags::dontwait | zmq::send_flags::sndmore);
      // ZeroMQ copies the bytes into its own message. Handing it our buffer instead (zero-copy with
      // a free callback) would save one memcpy per part on this thread, about 10 ms a second at
      // ten 8.6 MB images a second, but the callback then runs on ZeroMQ's I/O thread and shares
      // ownership across a lock-free queue that ThreadSanitizer cannot see into.
      const std::string& bytes = parts[index];
      bool sent = false;
      try {
        sent = socket.send(zmq::message_t(bytes.data(), bytes.size()), flags).has_value();
      } catch (const zmq::error_t&) {
        // This thread has nobody to throw to; a message that cannot be sent is a dropped one.
      }
      if (!sent) {
        // XPUB drops per subscriber at the HWM instead of refusing, so this is not expected; if
        // it happens it happens on the first part (ZeroMQ sends multipart messages atomically).
        dropped.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
  }

  // False when no notice is waiting (or the socket cannot be read, which this thread can only
  // survive, not report).
  bool receive_notice(zmq::message_t& notice) {
    try {
      return socket.recv(notice, zmq::recv_flags::dontwait).has_value();
    } catch (const zmq::error_t&) {
      return false;
    }
  }

  // Late joiners: the last message of every topic a new subscription's prefix matches is due
  // for a replay. XPUB sends to every matching subscriber, so existing ones see a repeat;
  // Subscriber skips it.
  void take_subscriptions() {
    zmq::message_t notice;
    while (receive_notice(notice)) {
      if (notice.size() == 0 || *notice.data<unsigned char>() != kSubscribeNotice) continue;
      const std::string_view prefix(notice.data<char>() + 1, notice.size() - 1);
      for (const auto& [topic, parts] : last_by_topic)
        if (topic.starts_with(prefix)) replay_pending.insert(topic);
    }
  }

  // Sends the replays that are due; returns how long to wait for the next (-1: none pending).
  std::chrono::milliseconds replay_due() {
    if (replay_pending.empty()) return std::chrono::milliseconds(-1);
    const auto now = std::chrono::steady_clock::now();
    if (now < next_replay) return std::chrono::ceil<std::chrono::milliseconds>(next_replay - now);
    for (const std::string& topic : replay_pending)
      if (const auto it = last_by_topic.find(topic); it != last_by_topic.end()) send(it->second);
    replay_pending.clear();
    next_replay = now + kReplayPeriod;
    return std::chrono::milliseconds(-1);
  }

  void run_sender() {
    bool stop = false;
    auto wait = std::chrono::milliseconds(-1);
    while (!stop) {
      std::array<zmq::pollitem_t, 2> items{{
          {socket.handle(), 0, ZMQ_POLLIN, 0},
          {nullptr, wake_read_fd, ZMQ_POLLIN, 0},
      }};
      try {
        zmq::poll(items.data(), items.size(), wait);
      } catch (const zmq::error_t& error) {
        if (error.num() == EINTR) continue;
        // Nothing sensible is left to do with a socket that cannot be polled; drop what comes.
        break;
      }
      if (items[1].revents & ZMQ_POLLIN) drain_wake_pipe();
      if (items[0].revents & ZMQ_POLLIN) take_subscriptions();
      wait = replay_due();

      std::deque<EncodedParts> batch;
      {
        const std::lock_guard lock(queue_mutex);
        batch.swap(queue);
        stop = stopping;  // messages queued before the destructor still go out below
      }
      for (EncodedParts& parts : batch) {
        send(parts);
        std::string topic = parts.front();
        last_by_topic.insert_or_assign(std::move(topic), std::move(parts));
      }
    }
    socket.close();  // in the thread that used it
  }
};

Publisher::Publisher(const std::string& endpoint) : impl_(std::make_unique<Impl>(endpoint)) {}

Publisher::~Publisher() {
  log_forwarder_.reset();  // its last message (what the rate limit held back) still goes out
}

void Publisher::publish(const protocol::Message& message) {
  impl_->enqueue(protocol::encode(message));
}

std::string Publisher::endpoint() const {
  return impl_->bound_endpoint;
}

void Publisher::forward_log(LogRateLimit limit) {
  log_forwarder_.reset();
  Impl* impl = impl_.get();
  log_forwarder_ = std::make_unique<LogForwarder>(
      [impl](const protocol::Message& message) { impl->enqueue(protocol::encode(message)); }, limit);
}

std::uint64_t Publisher::dropped_count() const {
  return impl_->dropped.load(std::memory_order_relaxed);
}

}  // namespace livedrp
