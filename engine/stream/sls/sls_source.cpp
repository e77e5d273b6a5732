#include "stream/sls/sls_source.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "protocol/subscriber.hpp"
#include "stream/sls/sls_assembler.hpp"
#include "stream/sls/sls_layout.hpp"

namespace livedrp::stream {
namespace {

using sls::AssembledEvent;
using sls::SlsAssembler;
using Clock = std::chrono::steady_clock;

constexpr const char* kDefaultDetector = "jungfrau4m";
// The longest the receiving thread sleeps in zmq_poll when no deadline is nearer: how soon it
// notices stop().
constexpr std::chrono::milliseconds kLongestPoll{50};
// Rounds over the ports (one message each) between two looks at the deadlines and stop().
constexpr int kPassesPerPoll = 64;

bool valid_port_number(std::string_view text) {
  unsigned value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() && value >= 1 && value <= 65535;
}

// Why `endpoint` is not one the source can connect to; empty when it is.
std::string endpoint_problem(std::string_view endpoint) {
  const auto starts = [&](std::string_view prefix) {
    return endpoint.substr(0, prefix.size()) == prefix;
  };
  if (starts("tcp://")) {
    const std::string_view address = endpoint.substr(6);
    const std::size_t colon = address.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return "has no HOST:PORT after tcp://";
    if (!valid_port_number(address.substr(colon + 1)))
      return "has port '" + std::string(address.substr(colon + 1)) + "', not a number 1-65535";
    return {};
  }
  if (starts("ipc://") || starts("inproc://")) {
    return endpoint.size() > endpoint.find("://") + 3 ? std::string() : "names no path";
  }
  return "is not tcp://HOST:PORT (nor ipc://PATH or inproc://NAME)";
}

class SlsSource final : public StreamSource {
 public:
  SlsSource(std::vector<std::string> endpoints, sls::SlsLayout layout, const StreamOptions& options)
      : endpoints_(std::move(endpoints)),
        detector_(layout.detector()),
        options_(options),
        pool_(layout.event_bytes()),
        assembler_(std::move(layout), endpoints_,
                   sls::AssemblerSettings{options.module_timeout, options.pending_events,
                                          options.max_message_bytes},
                   pool_, [this](AssembledEvent& event) { return queue_for_engine(event); }) {
    // A Jungfrau 4M at 1 kHz sends 8 GB/s over its ports; one ZeroMQ I/O thread moves a few GB/s,
    // so the ports are spread over threads of the source's own context. inproc:// endpoints
    // connect only within the process's shared context.
    const bool inproc = std::any_of(endpoints_.begin(), endpoints_.end(), [](const std::string& e) {
      return e.rfind("inproc://", 0) == 0;
    });
    if (!inproc)
      own_context_ = std::make_unique<zmq::context_t>(int(std::clamp<std::size_t>(
          std::min<std::size_t>(endpoints_.size(), std::thread::hardware_concurrency() / 2), 1,
          kMaxIoThreads)));
    zmq::context_t& context = own_context_ ? *own_context_ : protocol::shared_zmq_context();
    const unsigned copy_threads =
        std::clamp(std::thread::hardware_concurrency() / 4, 2u, kMaxCopyThreads);
    if (pool_.bytes() >= kParallelCopyBytes)
      copy_pool_ = std::make_unique<ThreadPool>(copy_threads);
    sockets_.reserve(endpoints_.size());
    for (const std::string& endpoint : endpoints_) {
      zmq::socket_t socket(context, zmq::socket_type::sub);
      socket.set(zmq::sockopt::linger, 0);  // a subscriber has nothing to flush
      socket.set(zmq::sockopt::ipv6, 1);    // receivers may be named by IPv6 address
      socket.set(zmq::sockopt::subscribe, "");
      try {
        socket.connect(endpoint);
      } catch (const zmq::error_t& error) {
        throw InputError("sls source: cannot connect to '" + endpoint + "': " + error.what());
      }
      sockets_.push_back(std::move(socket));
    }
  }

  ~SlsSource() override { stop(); }

  const DetectorDescription& detector() const override { return detector_; }

  void start() override {
    const std::lock_guard lock(mutex_);
    if (started_ || closed_) return;
    started_ = true;
    thread_ = std::thread([this] { receive(); });
  }

  std::optional<StreamEvent> next(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mutex_);
    lent_.reset();
    ready_.wait_for(lock, timeout, [this] { return closed_ || !queue_.empty(); });
    if (closed_ || queue_.empty()) return std::nullopt;
    AssembledEvent event = std::move(queue_.front());
    queue_.pop_front();
    lent_ = std::move(event.data);
    return StreamEvent{event.frame_number, event.timestamp_ns, lent_.get()};
  }

  void stop() override {
    {
      const std::lock_guard lock(mutex_);
      if (closed_) return;
      closed_ = true;
    }
    ready_.notify_all();
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
    sockets_.clear();  // closes them (linger 0)
  }

  StreamCounts counts() const override { return assembler_.counts(); }

  void set_buffer_allocator(BufferAllocator allocator) override {
    pool_.set_allocator(std::move(allocator));
    // Every event that may wait for parts, and a few the engine's queue holds.
    pool_.reserve(std::max<std::size_t>(options_.pending_events, 1) + kReservedForQueue);
  }

  void* exchange_event_buffer(void* replacement) override {
    const std::lock_guard lock(mutex_);
    auto* incoming = static_cast<std::byte*>(replacement);
    if (!lent_ || !pool_.exchange(lent_.get(), incoming)) return nullptr;
    std::byte* handed_over = lent_.release();
    lent_ = PooledBuffer(pool_, incoming);
    return handed_over;
  }

  std::string describe() const override {
    const auto& layout = assembler_.layout();
    std::string text = "sls: " + detector_.name + ", " + std::to_string(layout.ports()) +
                       " ports (" + std::to_string(layout.ports_per_module()) + " per module): ";
    for (std::size_t i = 0; i < endpoints_.size(); ++i) text += (i > 0 ? ", " : "") + endpoints_[i];
    return text;
  }

 private:
  // Called on the receiving thread with a finished event.
  bool queue_for_engine(AssembledEvent& event) {
    {
      const std::lock_guard lock(mutex_);
      if (queue_.size() >= std::max<std::size_t>(options_.queue_events, 1)) return false;
      queue_.push_back(std::move(event));
    }
    ready_.notify_one();
    return true;
  }

  void receive() {
    try {
      receive_until_stopped();
    } catch (const std::exception& error) {
      // Nothing a sender does gets here (messages are checked, not trusted); this is the socket
      // library failing. The source then delivers nothing more, and says why.
      const std::string problem = "sls source: receiving stopped: " + std::string(error.what());
      spdlog::error("{}", problem);
      assembler_.note_problem(problem);
    }
  }

  void receive_until_stopped() {
    std::vector<zmq::pollitem_t> items;
    for (zmq::socket_t& socket : sockets_) items.push_back({socket.handle(), 0, ZMQ_POLLIN, 0});
    std::vector<zmq::message_t> parts;
    std::vector<std::span<const std::byte>> views;
    while (!stopping_) {
      Clock::time_point now = Clock::now();
      assembler_.expire(now);
      const Clock::time_point deadline = assembler_.next_deadline();
      auto wait = kLongestPoll;
      if (deadline != Clock::time_point::max())
        wait = std::clamp(std::chrono::ceil<std::chrono::milliseconds>(deadline - now),
                          std::chrono::milliseconds(0), kLongestPoll);
      try {
        zmq::poll(items, wait);
      } catch (const zmq::error_t& error) {
        if (error.num() != EINTR) throw;
        continue;
      }
      // One message from each port in turn: the ports send the parts of a frame at the same
      // time, so taking them in step completes events one after the other instead of beginning
      // many with one port's backlog (which would outgrow the events allowed to wait). Each
      // round's pixel parts (about one event) are copied together, spread over the copy threads.
      for (int pass = 0; pass < kPassesPerPoll; ++pass) {
        bool received = false;
        round_.clear();
        assembler_.begin_batch();
        for (std::size_t port = 0; port < sockets_.size(); ++port) {
          parts.clear();
          if (!zmq::recv_multipart(sockets_[port], std::back_inserter(parts),
                                   zmq::recv_flags::dontwait))
            continue;
          received = true;
          views.clear();
          for (const zmq::message_t& part : parts)
            views.emplace_back(static_cast<const std::byte*>(part.data()), part.size());
          assembler_.on_message(int(port), views, Clock::now());
          round_.push_back(std::move(parts));  // its bytes stay valid until the copies are made
          parts = std::vector<zmq::message_t>();
        }
        assembler_.end_batch(
            [this](const std::vector<SlsAssembler::PartCopy>& copies) { copy_parts(copies); });
        if (!received) break;
      }
    }
  }

  // Small rounds (a few hundred kB) are copied here; larger ones a part per copy thread.
  void copy_parts(const std::vector<SlsAssembler::PartCopy>& copies) {
    std::size_t bytes = 0;
    for (const auto& part : copies) bytes += part.bytes;
    if (!copy_pool_ || copies.size() < 2 || bytes < kParallelCopyBytes) {
      for (const auto& part : copies) std::memcpy(part.to, part.from, part.bytes);
      return;
    }
    copy_pool_->parallel_for_dynamic(copies.size(), 1, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i)
        std::memcpy(copies[i].to, copies[i].from, copies[i].bytes);
    });
  }

  std::vector<std::string> endpoints_;
  DetectorDescription detector_;
  StreamOptions options_;
  sls::EventBufferPool pool_;
  SlsAssembler assembler_;  // used by the receiving thread only (its counts by anyone)
  static constexpr std::size_t kMaxIoThreads = 8;
  std::unique_ptr<zmq::context_t> own_context_;  // before the sockets: they close first
  std::vector<zmq::socket_t> sockets_;
  // One thread copies a few GB/s; a Jungfrau 4M at 1 kHz sends 8 GB/s of pixels.
  static constexpr unsigned kMaxCopyThreads = 4;
  static constexpr std::size_t kReservedForQueue = 8;
  static constexpr std::size_t kParallelCopyBytes = std::size_t(1) << 20;
  std::unique_ptr<ThreadPool> copy_pool_;
  std::vector<std::vector<zmq::message_t>> round_;  // the current round's messages
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<AssembledEvent> queue_;  // finished events for the engine
  PooledBuffer lent_;                 // the event next() handed out last
  bool started_ = false, closed_ = false;
};

}  // namespace

std::vector<std::string> parse_sls_endpoint_list(std::string_view list) {
  const std::string quoted_list = "'sls:" + std::string(list) + "'";
  if (list.empty())
    throw InputError(quoted_list +
                     " names no endpoint (expected sls:tcp://HOST:PORT[,tcp://HOST:PORT...])");
  std::vector<std::string> endpoints;
  std::set<std::string, std::less<>> seen;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = list.find(',', begin);
    const std::string_view endpoint = list.substr(
        begin, comma == std::string_view::npos ? std::string_view::npos : comma - begin);
    const std::string number = std::to_string(endpoints.size() + 1);
    if (endpoint.empty()) throw InputError(quoted_list + ": endpoint " + number + " is empty");
    if (const std::string problem = endpoint_problem(endpoint); !problem.empty())
      throw InputError(quoted_list + ": endpoint " + number + " '" + std::string(endpoint) + "' " +
                       problem);
    if (!seen.emplace(endpoint).second)
      throw InputError(quoted_list + ": endpoint '" + std::string(endpoint) + "' is listed twice");
    endpoints.emplace_back(endpoint);
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  return endpoints;
}

namespace {

// The layout open_sls_source connects with, checked as it checks it.
sls::SlsLayout checked_sls_layout(const std::vector<std::string>& endpoints,
                                  const StreamOptions& options) {
  if (options.module_timeout <= std::chrono::milliseconds::zero())
    throw InputError("sls source: module timeout " +
                     std::to_string(options.module_timeout.count()) + " ms; it must be positive");
  for (const std::string& endpoint : endpoints)
    if (const std::string problem = endpoint_problem(endpoint); !problem.empty())
      throw InputError("sls source: endpoint '" + endpoint + "' " + problem);
  const DetectorDescription detector =
      find_detector(options.detector.empty() ? kDefaultDetector : options.detector);
  return sls::SlsLayout(detector, sls::SlsLayout::ports_per_module_for(detector, endpoints.size()));
}

}  // namespace

std::unique_ptr<StreamSource> open_sls_source(const std::vector<std::string>& endpoints,
                                              const StreamOptions& options) {
  return std::make_unique<SlsSource>(endpoints, checked_sls_layout(endpoints, options), options);
}

DetectorDescription sls_source_detector(const std::vector<std::string>& endpoints,
                                        const StreamOptions& options) {
  return checked_sls_layout(endpoints, options).detector();
}

}  // namespace livedrp::stream
