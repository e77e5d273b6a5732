#include "tools/sls_publisher.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "core/error.hpp"
#include "protocol/subscriber.hpp"
#include "stream/sls/sls_layout.hpp"

namespace livedrp::tools {
namespace {

using Json = nlohmann::ordered_json;  // keeps the receiver's field order

// The JSON header version of slsDetectorPackage 8.x and 9.x.
constexpr int kJsonVersion = 5;
// What the Jungfrau UDP header carries in "version".
constexpr int kDetectorHeaderVersion = 2;
constexpr std::uint64_t kEigerDetType = 1;
// A Jungfrau UDP packet carries 8192 bytes of pixels: packets caught per part = bytes / 8192.
constexpr std::size_t kJungfrauPacketBytes = 8192;

// The endpoint port `index` binds, from options.bind.
std::string bind_endpoint(const std::string& bind, int index) {
  if (bind.rfind("tcp://", 0) == 0) {
    const std::size_t colon = bind.rfind(':');
    const std::string port = bind.substr(colon + 1);
    if (colon <= 5 || port.empty())
      throw InputError("sls publisher: bind '" + bind + "' is not tcp://HOST:PORT or tcp://HOST:*");
    if (port == "*") return bind;
    int first = 0;
    const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), first);
    if (error != std::errc() || end != port.data() + port.size() || first < 1 ||
        first + index > 65535)
      throw InputError("sls publisher: bind '" + bind + "' has no usable port number");
    return bind.substr(0, colon + 1) + std::to_string(first + index);
  }
  if (bind.rfind("ipc://", 0) == 0 || bind.rfind("inproc://", 0) == 0)
    return bind + "-" + std::to_string(index);
  throw InputError("sls publisher: bind '" + bind +
                   "' is not tcp://HOST:PORT, tcp://HOST:*, ipc://PATH or inproc://NAME");
}

}  // namespace

struct SlsPublisher::Impl {
  stream::sls::SlsLayout layout;
  SlsPublisherOptions options;
  // Its own ZeroMQ context, terminated when the publisher goes: terminating is what makes closing
  // wait (up to the linger) until the last messages, the end of acquisition among them, are sent;
  // the process-wide context is never terminated, so a tool that exits right after sending would
  // lose them. inproc:// must share the receiver's context, and then has no such wait.
  std::unique_ptr<zmq::context_t> own_context;
  std::vector<zmq::socket_t> sockets;
  std::vector<std::string> endpoints;
  std::vector<bool> subscribed;
  bool have_first_time = false;
  std::int64_t first_time_ns = 0;
  std::uint64_t first_frame_of_acquisition = 0;
  bool acquisition_open = false;
  std::uint64_t messages = 0;

  Impl(const DetectorDescription& detector, SlsPublisherOptions options_)
      : layout(detector, options_.ports_per_module), options(std::move(options_)) {
    const bool in_process = options.bind.rfind("inproc://", 0) == 0;
    // An I/O thread per port up to 8: one thread moves about 4.6 GB/s to TCP sockets, less than
    // a Jungfrau 4M sends at 1 kHz (8.4 GB/s).
    if (!in_process) own_context = std::make_unique<zmq::context_t>(std::min(layout.ports(), 8));
    zmq::context_t& context = in_process ? protocol::shared_zmq_context() : *own_context;
    for (int port = 0; port < layout.ports(); ++port) {
      zmq::socket_t socket(context, zmq::socket_type::xpub);
      socket.set(zmq::sockopt::sndhwm, options.send_high_water_mark);
      socket.set(zmq::sockopt::linger, int(options.linger.count()));
      // IPv6 only when asked for: with it on, an IPv4 bind reports itself as [::ffff:a.b.c.d].
      if (options.bind.find('[') != std::string::npos) socket.set(zmq::sockopt::ipv6, 1);
      const std::string endpoint = bind_endpoint(options.bind, port);
      try {
        socket.bind(endpoint);
      } catch (const zmq::error_t& error) {
        throw InputError("sls publisher: cannot bind '" + endpoint + "': " + error.what());
      }
      endpoints.push_back(socket.get(zmq::sockopt::last_endpoint));
      sockets.push_back(std::move(socket));
    }
    subscribed.assign(sockets.size(), false);
  }

  // The receiver's header for one port's part of a frame (docs/formats.md).
  Json data_header(int port, std::uint64_t frame, std::uint64_t timestamp) const {
    const int segment = port / layout.ports_per_module();
    const int half = port % layout.ports_per_module();
    const stream::sls::SlsPortPosition position = layout.position_of(segment, half);
    Json header;
    header["jsonversion"] = kJsonVersion;
    header["bitmode"] = 16;
    header["fileIndex"] = 0;
    header["detshape"] = {layout.port_columns(), layout.port_rows()};
    header["shape"] = {layout.part_columns(), layout.part_rows()};
    header["size"] = layout.part_bytes();
    header["acqIndex"] = frame;
    header["frameIndex"] = frame - first_frame_of_acquisition;
    header["progress"] = 0.0;  // the receiver's percentage of the frames it expects; not known
    header["fname"] = "";
    header["data"] = 1;
    header["completeImage"] = 1;
    header["frameNumber"] = frame;
    header["expLength"] = 0;
    header["packetNumber"] = layout.part_bytes() / kJungfrauPacketBytes;
    header["detSpec1"] = 0;
    header["timestamp"] = timestamp;
    header["modId"] = segment;
    header["row"] = position.row;
    header["column"] = position.column;
    header["detSpec2"] = 0;
    header["detSpec3"] = 0;
    header["detSpec4"] = 0;
    header["detType"] = stream::sls::kJungfrauDetType;
    header["version"] = kDetectorHeaderVersion;
    header["flipRows"] = 0;
    header["quad"] = 0;
    header["rx_roi"] = {-1, -1, -1, -1};  // no receiver ROI
    return header;
  }

  std::uint64_t timestamp_field(std::int64_t timestamp_ns) {
    if (options.epoch_timestamps) return std::uint64_t(std::max<std::int64_t>(timestamp_ns, 0));
    if (!have_first_time) {
      have_first_time = true;
      first_time_ns = timestamp_ns;
    }
    return std::uint64_t(std::max<std::int64_t>(timestamp_ns - first_time_ns, 0) / 100);
  }

  // `borrowed`: `pixels` lie in an event that outlives the publisher (events_outlive_publisher).
  void send(int port, const std::string& header, const void* pixels, std::size_t bytes,
            bool with_pixels, bool borrowed = false) {
    zmq::socket_t& socket = sockets.at(std::size_t(port));
    // A PUB (and XPUB) socket never blocks: at its high-water mark it drops, as a receiver does.
    socket.send(zmq::buffer(header),
                with_pixels ? zmq::send_flags::sndmore : zmq::send_flags::none);
    if (with_pixels && borrowed) {
      // Sent from the caller's memory: no free function, the data outlives the publisher.
      zmq::message_t message(const_cast<void*>(pixels), bytes, nullptr, nullptr);
      socket.send(message, zmq::send_flags::none);
    } else if (with_pixels) {
      socket.send(zmq::const_buffer(pixels, bytes), zmq::send_flags::none);
    }
    ++messages;
  }
};

SlsPublisher::SlsPublisher(const DetectorDescription& detector, SlsPublisherOptions options)
    : impl_(std::make_unique<Impl>(detector, std::move(options))) {}

SlsPublisher::~SlsPublisher() {
  impl_->sockets.clear();  // closed first, so that the context's end waits only for their linger
  impl_->own_context.reset();
}

int SlsPublisher::ports() const {
  return impl_->layout.ports();
}
const std::vector<std::string>& SlsPublisher::endpoints() const {
  return impl_->endpoints;
}
std::uint64_t SlsPublisher::messages_sent() const {
  return impl_->messages;
}

std::string SlsPublisher::source_string() const {
  std::string text = "sls:";
  for (std::size_t i = 0; i < impl_->endpoints.size(); ++i)
    text += (i > 0 ? "," : "") + impl_->endpoints[i];
  return text;
}

bool SlsPublisher::wait_for_subscribers(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::vector<zmq::pollitem_t> items;
    for (zmq::socket_t& socket : impl_->sockets)
      items.push_back({socket.handle(), 0, ZMQ_POLLIN, 0});
    for (std::size_t port = 0; port < impl_->sockets.size(); ++port) {
      // An XPUB reads subscriptions: a first byte 1 is a subscribe.
      zmq::message_t message;
      while (impl_->sockets[port].recv(message, zmq::recv_flags::dontwait)) {
        if (message.size() > 0 && static_cast<const std::uint8_t*>(message.data())[0] == 1)
          impl_->subscribed[port] = true;
      }
    }
    if (std::all_of(impl_->subscribed.begin(), impl_->subscribed.end(), [](bool s) { return s; }))
      return true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left <= std::chrono::milliseconds::zero()) return false;
    zmq::poll(items, std::min(left, std::chrono::milliseconds(50)));
  }
}

void SlsPublisher::send_event(std::uint64_t frame_number, const std::byte* raw,
                              std::int64_t timestamp_ns, const EventFaults& faults) {
  const int ports_sent = faults.ports_sent < 0 ? ports() : std::min(faults.ports_sent, ports());
  for (int port = 0; port < ports_sent; ++port)
    send_part(frame_number, raw, timestamp_ns, port,
              port == faults.port ? faults.fault : PartFault::None);
}

void SlsPublisher::send_part(std::uint64_t frame_number, const std::byte* raw,
                             std::int64_t timestamp_ns, int port, PartFault fault) {
  Impl& impl = *impl_;
  const auto& layout = impl.layout;
  if (port < 0 || port >= layout.ports())
    throw InputError("sls publisher: no port " + std::to_string(port) + " (" +
                     std::to_string(layout.ports()) + " ports)");
  if (!impl.acquisition_open) {
    impl.acquisition_open = true;
    impl.first_frame_of_acquisition = frame_number;
  }
  const std::uint64_t timestamp = impl.timestamp_field(timestamp_ns);
  // Port p carries half p % ports_per_module of module p / ports_per_module (outer half first).
  const int segment = port / layout.ports_per_module();
  const int half = port % layout.ports_per_module();
  const std::size_t segment_bytes = layout.detector().pixels_per_segment() * 2;
  const std::byte* pixels =
      raw + std::size_t(segment) * segment_bytes + std::size_t(half) * layout.part_bytes();
  std::size_t bytes = layout.part_bytes();
  Json header = impl.data_header(port, frame_number, timestamp);
  std::vector<std::byte> widened;  // the pixels as 32-bit words (BitMode32)

  switch (fault) {
    case PartFault::None:
      break;
    case PartFault::Drop:
      return;
    case PartFault::Truncate:
      bytes /= 2;
      break;
    case PartFault::Incomplete:
      header["completeImage"] = 0;
      header["packetNumber"] = layout.part_bytes() / kJungfrauPacketBytes - 1;
      break;
    case PartFault::OtherDetector: {
      // One port of an Eiger half-module: 512 x 256 pixels, two such ports per half-module.
      constexpr int kEigerPortColumns = 512, kEigerPortRows = 256;
      header["detType"] = kEigerDetType;
      header["detshape"] = {2, 2};
      header["shape"] = {kEigerPortColumns, kEigerPortRows};
      bytes = std::size_t(kEigerPortColumns) * kEigerPortRows * 2;
      header["size"] = bytes;
      break;
    }
    case PartFault::BitMode32: {
      const std::size_t pixel_count = layout.part_bytes() / 2;
      widened.resize(pixel_count * 4);
      for (std::size_t i = 0; i < pixel_count; ++i) {
        std::uint16_t word;
        std::memcpy(&word, pixels + 2 * i, 2);
        const std::uint32_t wide = word;
        std::memcpy(widened.data() + 4 * i, &wide, 4);
      }
      header["bitmode"] = 32;
      header["size"] = widened.size();
      pixels = widened.data();
      bytes = widened.size();
      break;
    }
  }
  impl.send(port, header.dump(), pixels, bytes, true,
            impl.options.events_outlive_publisher && widened.empty());
}

void SlsPublisher::send_end_of_acquisition() {
  Impl& impl = *impl_;
  impl.acquisition_open = false;
  for (int port = 0; port < impl.layout.ports(); ++port) {
    // The receiver's dummy header: every field zero but "data" 0 and the version, one part.
    Json header = impl.data_header(port, 0, 0);
    for (auto& [key, value] : header.items()) {
      if (value.is_array()) {
        for (auto& element : value) element = 0;
      } else if (value.is_string()) {
        value = "";
      } else {
        value = 0;
      }
    }
    header["jsonversion"] = kJsonVersion;
    header["data"] = 0;
    impl.send(port, header.dump(), nullptr, 0, false);
  }
}

void SlsPublisher::send_garbage(int port, std::string_view bytes) {
  impl_->send(port, std::string(bytes), nullptr, 0, false);
}

}  // namespace livedrp::tools
