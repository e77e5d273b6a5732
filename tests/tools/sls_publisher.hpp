#pragma once
// Stands in for the slsDetectorPackage receivers of a Jungfrau detector: one ZeroMQ publisher per
// UDP port, sending each event's parts as the receivers do (a JSON header in the package's field
// order and the port's little-endian pixels) and the end-of-acquisition header, so that the sls
// source can be tried and tested without a detector (docs/formats.md, "Live detector streams").
// Faults can be injected per event: a part dropped, truncated, marked incomplete, or sent with the
// header of another detector or bit mode; an acquisition ended in the middle of an event; garbage.
//
// The sockets are XPUB: they send exactly as the receivers' PUB sockets do, and also tell when a
// subscriber has subscribed, so that a test can wait for the subscription instead of losing its
// first messages to PUB/SUB's slow joiner.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/detector.hpp"

namespace livedrp::tools {

struct SlsPublisherOptions {
  int ports_per_module = 1;  // 1 or 2 (Jungfrau's two 10GbE interfaces)
  // Where the ports bind. "tcp://HOST:*": a free port each. "tcp://HOST:PORT": PORT, PORT+1, ...
  // (as a receiver's rx_zmqport, then one per port). "ipc://PATH" or "inproc://NAME": PATH-0,
  // PATH-1, ...
  std::string bind = "tcp://127.0.0.1:*";
  // Jungfrau's timestamp field is a 10 MHz clock since power-on (the default: ticks since the
  // first event sent). true: the event's own time in ns since the Unix epoch instead.
  bool epoch_timestamps = false;
  int send_high_water_mark = 1000;  // messages queued per port before ZeroMQ drops (as a PUB)
  // true: the events given to send_event stay valid and unchanged while the publisher lives (a
  // pool generated ahead), so their pixels are sent without a copy (one thread copying 8 GB/s
  // cannot send a Jungfrau 4M at 1 kHz). false: each part is copied into its message.
  bool events_outlive_publisher = false;
  // How long closing waits for unsent messages to go out (not with inproc://).
  std::chrono::milliseconds linger{2000};
};

// What goes wrong with one event (send_event).
enum class PartFault {
  None,
  Drop,           // `port` sends nothing for this event
  Truncate,       // `port`'s pixel part is cut to half the header's size
  Incomplete,     // `port`'s header says completeImage 0 (packets lost), pixels sent as usual
  OtherDetector,  // `port`'s header and pixels are those of an Eiger half-module port
  BitMode32,      // `port`'s header says bit mode 32 and its pixels take 32 bits each
};

struct EventFaults {
  PartFault fault = PartFault::None;
  int port = 0;  // the port the fault hits
  // Only ports [0, ports_sent) send their part (the others send nothing for this event): with an
  // end of acquisition right after, the acquisition ends in the middle of the event. -1: all.
  int ports_sent = -1;
};

class SlsPublisher {
 public:
  // Throws InputError when the detector cannot be streamed as sls (sls_layout.hpp) or a port
  // cannot bind (naming the endpoint).
  SlsPublisher(const DetectorDescription& detector, SlsPublisherOptions options = {});
  ~SlsPublisher();
  SlsPublisher(const SlsPublisher&) = delete;
  SlsPublisher& operator=(const SlsPublisher&) = delete;

  int ports() const;
  // The endpoints bound, one per port in port order (free ports resolved), and the source string
  // that receives them: "sls:ENDPOINT,ENDPOINT,...".
  const std::vector<std::string>& endpoints() const;
  std::string source_string() const;

  // Waits until every port has a subscriber (true), or `timeout` passes (false).
  bool wait_for_subscribers(std::chrono::milliseconds timeout);

  // Sends every port's part of one event: `raw` holds detector.raw_event_bytes() in the
  // description's layout; `timestamp_ns` is the event's time since the Unix epoch.
  void send_event(std::uint64_t frame_number, const std::byte* raw, std::int64_t timestamp_ns,
                  const EventFaults& faults = {});
  // One port's part of an event (as send_event sends it), with `fault` on it.
  void send_part(std::uint64_t frame_number, const std::byte* raw, std::int64_t timestamp_ns,
                 int port, PartFault fault = PartFault::None);
  // Every port's end-of-acquisition header (the next event begins a new acquisition).
  void send_end_of_acquisition();
  // A one-part message of arbitrary bytes on `port`.
  void send_garbage(int port, std::string_view bytes);

  std::uint64_t messages_sent() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace livedrp::tools
