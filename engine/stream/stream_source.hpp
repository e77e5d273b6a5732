#pragma once
// Live detector streams (issue 33): a detector's own network stream, received on the source's
// threads and assembled into whole events in the detector description's raw layout (segments in
// description order, each rows x cols, little-endian words of the description's encoding).
//
// A stream never waits for the engine: the receiving threads read every message as it comes;
// what the engine has not taken when the source's queue of assembled events is full is dropped
// and counted ("engine_busy"). Every message that does not become (part of) an event is counted
// with a reason, and the last such problem is kept in words that name the endpoint and what was
// wrong, so that a bad sender never crashes the engine and never silently loses data.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/detector.hpp"
#include "stream/event_buffer_pool.hpp"

namespace livedrp::stream {

// One assembled event; `data` stays valid until the next call to next() or release().
struct StreamEvent {
  std::uint64_t frame_number = 0;   // the detector's frame (image) number
  std::int64_t timestamp_ns = 0;    // detector time, ns since the Unix epoch; 0 when unknown
  const std::byte* data = nullptr;  // detector().raw_event_bytes()
};

// What the source has seen since it started.
struct StreamCounts {
  std::uint64_t messages = 0;      // every message received, good or bad
  std::uint64_t events = 0;        // assembled events handed to the engine
  std::uint64_t acquisitions = 0;  // acquisitions begun (sls: first frame after an end; dectris:
                                   // start messages)
  std::uint64_t acquisitions_ended = 0;
  // Messages refused, by reason: "malformed" (header or payload cannot be decoded), "oversized",
  // "truncated", "wrong_detector" (shape, bit depth, module position or detector that does not
  // match the engine's detector), "unsupported" (bit mode, compression the source cannot decode),
  // "foreign" (not this protocol at all), "out_of_acquisition" (an image outside start...end).
  std::map<std::string, std::uint64_t> rejected;
  // Events that were begun but not handed on, by reason: "incomplete" (the detector marked the
  // frame incomplete), "missing_module" (a module's part did not come within the timeout),
  // "cut_by_end" (an end of acquisition came before all parts), "engine_busy" (the queue to the
  // engine was full); and events the stream shows were sent but never came: "missing_frame" (sls:
  // a frame no port sent while every port sent later ones), "missing_image" (dectris: an image id
  // below the highest one of its series that came, counted when the series ends).
  std::map<std::string, std::uint64_t> dropped;
  std::string last_problem;  // names the endpoint, the message and what was wrong; empty if none

  std::uint64_t rejected_total() const;
  std::uint64_t dropped_total() const;
};

// Settings common to every stream kind (JSON "stream"; CLI --stream-*).
struct StreamOptions {
  // The engine's detector: a built-in name or a description file. sls streams need it (their
  // headers carry only module positions); a Dectris stream may leave it empty and take the
  // geometry from its first start message (see wait_for_start).
  std::string detector;
  // How long an event may wait for its last module before it is dropped as missing_module.
  std::chrono::milliseconds module_timeout{500};
  // Events begun and waiting for their last parts (sls: frames whose ports have not all sent);
  // past this the oldest is dropped as missing_module. Each holds a whole event's bytes.
  std::size_t pending_events = 32;
  // Assembled events waiting for the engine; past this they are dropped as engine_busy.
  std::size_t queue_events = 64;
  // Largest message accepted (bytes); larger ones are refused as oversized.
  std::size_t max_message_bytes = std::size_t(1) << 30;
  // Dectris without a detector: how long the constructor waits for the first start message.
  std::chrono::milliseconds wait_for_start{10000};
};

class StreamSource {
 public:
  virtual ~StreamSource() = default;
  // The engine's detector (fixed for the source's life; acquisitions that do not match it are
  // refused as wrong_detector).
  virtual const DetectorDescription& detector() const = 0;
  // Starts receiving (idempotent). Until then nothing is read from the sockets.
  virtual void start() = 0;
  // Waits up to `timeout` for the next assembled event; nullopt when none came (or after stop()).
  // The previous event's buffer is given back first.
  virtual std::optional<StreamEvent> next(std::chrono::milliseconds timeout) = 0;
  // Stops the receiving threads; next() returns nullopt from then on.
  virtual void stop() = 0;
  virtual StreamCounts counts() const = 0;
  // The engine's host allocator (pinned memory with the CUDA backend), set before start(): event
  // buffers made from then on come from it, so that exchange_event_buffer can hand one over.
  virtual void set_buffer_allocator(BufferAllocator allocator) { (void)allocator; }
  // Hands over the buffer of the event next() returned last, for good (the caller frees it with
  // set_buffer_allocator's allocator: it becomes a ring slot), and takes `replacement`
  // (detector().raw_event_bytes() long, from that allocator) in its place, to be given back
  // with that event. nullptr, and nothing changes, when it cannot (a buffer made before the
  // allocator was set, or a source without buffers of its own): the caller then copies the event.
  virtual void* exchange_event_buffer(void* replacement) {
    (void)replacement;
    return nullptr;
  }
  // Pixels the detector itself marks bad, known when the source was opened (a Dectris start
  // message's pixel mask), one flag per pixel in raw order (nonzero: bad); empty when none. The
  // engine masks them in its calibration constants at construction.
  virtual std::vector<std::uint8_t> detector_bad_pixels() const { return {}; }
  // e.g. "sls: 8 ports (tcp://...:30001, ...)"; for the status topic and the log.
  virtual std::string describe() const = 0;
};

// True for the source strings handled here ("sls:..." and "dectris:...").
bool is_stream_source(const std::string& source);

// "sls:tcp://HOST:PORT[,tcp://HOST:PORT...]" or "dectris:tcp://HOST:PORT". Throws InputError
// naming what is malformed (no endpoint, unknown kind, a detector the stream cannot feed).
std::unique_ptr<StreamSource> open_stream_source(const std::string& source,
                                                 const StreamOptions& options);

// The detector open_stream_source would give, without connecting: an sls stream's (options.detector
// or its default, checked against the endpoints), a dectris stream's when options.detector names
// one; nullopt when only the stream's start message will tell. Throws InputError as
// open_stream_source does for what it can check without the stream.
std::optional<DetectorDescription> stream_source_detector(const std::string& source,
                                                          const StreamOptions& options);

}  // namespace livedrp::stream
