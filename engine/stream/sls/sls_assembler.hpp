#pragma once
// Assembles the parts that an sls detector's receivers stream per UDP port into whole events,
// without sockets (the source's receiving thread feeds it; tests feed it literal messages).
//
// Parts of one frame share its frame number and are placed by their header's row and column
// (sls_layout.hpp). An event is handed on when every port's part has come, in frame-number order:
// a complete event waits behind an older incomplete one until that one completes or is dropped.
// What does not become an event is counted (StreamCounts):
//   rejected  every message refused, by reason (sls_header.hpp, sls_layout.hpp; "wrong_detector"
//             also when two ports report the same position for one frame);
//   dropped   "missing_module": a part did not come within the module timeout, or more than
//             max_pending events were waiting (the oldest goes first);
//             "incomplete": a receiver marked its part incomplete (completeImage 0);
//             "cut_by_end": an end of acquisition came from a port whose part the event lacks
//             (or every port ended the acquisition) before the event was complete;
//             "engine_busy": the engine's queue refused the finished event;
//             "missing_frame": no port sent any part of a frame number while every port has
//             sent later ones in the same acquisition (each port's stream is in frame order, so
//             none can come: lost before the receivers' streams reached us, e.g. dropped by a
//             publisher's queue for a slow subscriber). Frames before the first one seen in an
//             acquisition are not counted (a subscriber that joins late cannot know them).
// A dropped event's later parts are absorbed quietly for one more module timeout, so that one
// lost frame is counted once.
//
// Acquisitions: each port ends its acquisition with its own end-of-acquisition message, and the
// ports' sockets are independent, so one port may end (and even start the next acquisition)
// before another port's last parts arrive. Each port therefore counts its own ends (its
// generation); an event belongs to the generation of its parts, and an acquisition has ended when
// every port has ended it. A port seen sending parts of a frame that a later generation began has
// missed an end message and is brought up to that generation.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "stream/event_buffer_pool.hpp"
#include "stream/sls/sls_layout.hpp"
#include "stream/stream_source.hpp"

namespace livedrp::stream::sls {

// Event-sized buffers, reused: the assembler takes one per event begun, the source gives it back
// once the engine is done with the event (stream/event_buffer_pool.hpp).
using stream::EventBufferPool;
using stream::PooledBuffer;

struct AssembledEvent {
  std::uint64_t frame_number = 0;
  std::int64_t timestamp_ns = 0;
  PooledBuffer data;  // layout.event_bytes()
};

struct AssemblerSettings {
  std::chrono::milliseconds module_timeout{500};
  // Events waiting for parts at most; each holds an event buffer. Past it the oldest incomplete
  // event is dropped as missing_module.
  std::size_t max_pending = 16;
  std::size_t max_message_bytes = std::size_t(1) << 30;
};

class SlsAssembler {
 public:
  using Clock = std::chrono::steady_clock;
  // Takes a finished event and returns true, or returns false (leaving it) when the engine's
  // queue is full; called on the assembler's thread with the counts' lock held (so that the event
  // is counted before anyone can take it), so it must not call counts().
  using Deliver = std::function<bool(AssembledEvent&)>;

  // `port_names` (one per port, the endpoints) name ports in problems.
  SlsAssembler(SlsLayout layout, std::vector<std::string> port_names, AssemblerSettings settings,
               EventBufferPool& pool, Deliver deliver);

  const SlsLayout& layout() const { return layout_; }
  // One message (its parts) from port `port`, received at `now`. Never throws on its content.
  void on_message(int port, std::span<const std::span<const std::byte>> parts,
                  Clock::time_point now);
  // Drops events whose parts did not all come by their deadline; forgets dropped events whose
  // late parts had their time.
  void expire(Clock::time_point now);
  // The earliest deadline of a waiting event (time_point::max() when none waits).
  Clock::time_point next_deadline() const;
  // Batches: between begin_batch() and end_batch() on_message only notes where each part's
  // pixels go; end_batch() copies them all (through `copy`, which may spread them over threads)
  // and only then hands on the events they completed. Buffers of events dropped meanwhile are
  // given back after the copies, so that none is reused while a copy into it is pending. The
  // messages' bytes must stay valid until end_batch() returns.
  struct PartCopy {
    std::byte* to;
    const std::byte* from;
    std::size_t bytes;
  };
  using CopyParts = std::function<void(const std::vector<PartCopy>&)>;
  void begin_batch();
  void end_batch(const CopyParts& copy);
  // A problem that is not about one message (the receiving thread failing), kept as last_problem.
  void note_problem(const std::string& problem);
  // Thread-safe snapshot.
  StreamCounts counts() const;
  // Events begun and waiting for parts (not dropped ones); for tests.
  std::size_t pending_events() const { return live_; }

 private:
  struct Pending {
    PooledBuffer data;               // null once the event was dropped
    std::vector<std::uint8_t> seen;  // per port position
    int parts_seen = 0;
    std::int64_t timestamp_ns = 0;
    Clock::time_point deadline;
    std::uint64_t generation = 0;
    bool dropped() const { return !data; }
  };
  using PendingMap = std::map<std::uint64_t, Pending>;

  void on_part(int port, const SlsHeader& header, const SlsPartPlace& place,
               std::span<const std::byte> pixels, Clock::time_point now);
  void on_end(int port, Clock::time_point now);
  PendingMap::iterator begin_event(int port, const SlsHeader& header, Clock::time_point now);
  // Drops a waiting event (counting `reason`); keeps it to absorb late parts until `now` +
  // timeout. Returns the next iterator.
  PendingMap::iterator drop(PendingMap::iterator it, const std::string& reason,
                            const std::string& problem, Clock::time_point now);
  void drop_oldest_waiting(Clock::time_point now);
  // An acquisition has ended on every port when the lowest port generation rises.
  void advance_generations(Clock::time_point now);
  // Hands on complete events from the front, in frame-number order.
  void release_ready();
  std::string missing_parts(const Pending& event) const;
  std::string port_at(int position) const;  // the endpoint that sends a position, when known
  void reject(const std::string& reason, const std::string& problem);
  void count_drop(const std::string& reason, const std::string& problem, std::uint64_t events = 1);
  // Frame-number bookkeeping for missing_frame: the frame `frame` of acquisition `generation`
  // came from `port`.
  void note_frame(int port, std::uint64_t frame, std::uint64_t generation);

  SlsLayout layout_;
  std::vector<std::string> port_names_;
  AssemblerSettings settings_;
  EventBufferPool& pool_;
  Deliver deliver_;

  PendingMap pending_;  // by frame number
  bool batching_ = false;
  std::vector<PartCopy> copies_;      // the batch's copies, not yet made
  std::vector<PooledBuffer> parked_;  // buffers of events dropped during the batch
  std::size_t live_ = 0;
  std::vector<std::uint64_t> port_generation_;  // ends seen per port
  std::vector<int> port_position_;              // per port: the position it sends (-1 unknown)
  std::int64_t highest_data_generation_ = -1;
  std::uint64_t ended_generation_ = 0;  // acquisitions every port has ended
  // missing_frame: per port its latest frame number and that frame's acquisition; the
  // acquisition whose frames are counted, the lowest frame number of it not yet accounted for,
  // and the frame numbers begun at or above it.
  std::vector<std::uint64_t> port_last_frame_, port_last_frame_generation_;
  std::vector<std::uint8_t> port_has_frame_;
  std::uint64_t frames_generation_ = 0;
  std::optional<std::uint64_t> unaccounted_from_;
  std::set<std::uint64_t> frames_begun_;

  mutable std::mutex counts_mutex_;
  StreamCounts counts_;
};

}  // namespace livedrp::stream::sls
