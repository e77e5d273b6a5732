#include "stream/dectris/dectris_source.hpp"

#include <cerrno>

#include "core/error.hpp"
#include "protocol/subscriber.hpp"

namespace livedrp::stream::dectris {
namespace {

// How long one receive waits before the thread looks at stopping_ again.
constexpr std::chrono::milliseconds kReceivePoll{50};

// "tcp://HOST:PORT" with a host and a port in 1..65535 (HOST may be [IPv6]).
void check_endpoint(const std::string& endpoint) {
  const auto refuse = [&](const std::string& why) {
    throw InputError("dectris source 'dectris:" + endpoint + "': " + why +
                     " (expected dectris:tcp://HOST:PORT, the detector's stream; port 31001 on "
                     "a Dectris DCU)");
  };
  const std::string scheme = "tcp://";
  if (endpoint.rfind(scheme, 0) != 0) refuse("the endpoint does not start with tcp://");
  const std::string address = endpoint.substr(scheme.size());
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) refuse("no HOST:PORT after tcp://");
  const std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  if (host.find_first_of(" \t/") != std::string::npos) refuse("malformed host '" + host + "'");
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoul(port) == 0 ||
      std::stoul(port) > 65535)
    refuse("port '" + port + "' is not a number in 1..65535");
}

std::optional<DetectorDescription> named_detector(const StreamOptions& options) {
  if (options.detector.empty()) return std::nullopt;
  return find_detector(options.detector);
}

}  // namespace

DectrisSource::DectrisSource(const std::string& endpoint, const StreamOptions& options)
    : endpoint_((check_endpoint(endpoint), endpoint)),
      queue_(options.queue_events),
      receiver_(endpoint, named_detector(options), options.max_message_bytes, queue_),
      socket_(protocol::shared_zmq_context(), zmq::socket_type::pull) {
  socket_.set(zmq::sockopt::linger, 0);  // a receiver has nothing to flush
  socket_.set(zmq::sockopt::rcvtimeo, int(kReceivePoll.count()));
  try {
    socket_.connect(endpoint_);
  } catch (const zmq::error_t& error) {
    throw InputError("dectris source 'dectris:" + endpoint_ + "': cannot connect: " + error.what());
  }
  if (!receiver_.has_detector()) {
    // The geometry comes from the stream: read it now, through the same path as every later
    // message (images of the series that completes it are queued, none is lost).
    const auto deadline = std::chrono::steady_clock::now() + options.wait_for_start;
    while (!receiver_.has_detector() && std::chrono::steady_clock::now() < deadline) receive_one();
    if (!receiver_.has_detector()) {
      const StreamCounts seen = receiver_.counts();
      const bool started = receiver_.start_message() != nullptr;
      throw InputError(
          "dectris source 'dectris:" + endpoint_ + "': " +
          (started ? "a start message came but no image of its series within "
                   : "no start message within ") +
          std::to_string(options.wait_for_start.count()) + " ms (" + std::to_string(seen.messages) +
          " messages received" +
          (seen.last_problem.empty() ? "" : "; last problem: " + seen.last_problem) +
          "). Arm the detector with its stream enabled in cbor format, or name the detector "
          "so that the source need not wait for the stream to describe it.");
    }
  }
  detector_ = receiver_.detector();
}

DectrisSource::~DectrisSource() {
  stop();
}

void DectrisSource::start() {
  if (started_ || stopped_) return;
  started_ = true;
  thread_ = std::thread([this] { receive_loop(); });
}

std::optional<StreamEvent> DectrisSource::next(std::chrono::milliseconds timeout) {
  return queue_.next(timeout);
}

void DectrisSource::stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  queue_.close();
}

void DectrisSource::receive_one() {
  zmq::message_t message;
  try {
    if (!socket_.recv(message, zmq::recv_flags::none)) return;  // the poll interval passed
  } catch (const zmq::error_t& error) {
    if (error.num() == EINTR) return;
    throw RuntimeFault("dectris " + endpoint_ + ": receiving failed: " + error.what());
  }
  receiver_.handle({static_cast<const std::byte*>(message.data()), message.size()});
}

void DectrisSource::receive_loop() {
  while (!stopping_) {
    try {
      receive_one();
    } catch (const RuntimeFault& fault) {
      // ZeroMQ itself failed (the context is going away): nothing more will come.
      receiver_.note(fault.what());
      return;
    }
  }
}

std::string DectrisSource::describe() const {
  std::string text = "dectris: " + endpoint_ + " (" + detector_.name + ", " +
                     std::to_string(detector_.rows) + "x" + std::to_string(detector_.cols) + " " +
                     std::string(to_string(detector_.encoding)) + ")";
  if (const auto acquisition = receiver_.acquisition()) {
    text += ", series " + std::to_string(acquisition->series_id) + ": " +
            std::to_string(acquisition->images_received) + " images";
    if (acquisition->images_announced > 0)
      text += " of " + std::to_string(acquisition->images_announced);
    if (acquisition->refused) text += ", refused";
    if (acquisition->ended) text += ", ended";
  }
  return text;
}

std::vector<std::uint8_t> DectrisSource::detector_bad_pixels() const {
  const std::shared_ptr<const PixelMask> mask = pixel_mask();
  if (!mask || mask->bits.size() != detector_.pixels()) return {};
  std::vector<std::uint8_t> bad(mask->bits.size());
  for (std::size_t p = 0; p < bad.size(); ++p) bad[p] = mask->bits[p] != 0 ? 1 : 0;
  return bad;
}

}  // namespace livedrp::stream::dectris

namespace livedrp::stream {

std::unique_ptr<StreamSource> open_dectris_source(const std::string& endpoint,
                                                  const StreamOptions& options) {
  return std::make_unique<dectris::DectrisSource>(endpoint, options);
}

}  // namespace livedrp::stream
