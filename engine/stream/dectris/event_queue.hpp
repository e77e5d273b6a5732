#pragma once
// Assembled events between a stream's receiving thread and the engine: buffers of one event's
// bytes each, allocated as the backlog first needs them and reused after, never more than
// `capacity` waiting. The receiving thread never waits here: when `capacity` events wait, it gets
// no buffer and drops the event (the caller counts it as engine_busy).
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "stream/event_buffer_pool.hpp"
#include "stream/stream_source.hpp"

namespace livedrp::stream::dectris {

class EventQueue {
 public:
  explicit EventQueue(std::size_t capacity);

  // The size of every event; set once, before the first acquire_buffer().
  void set_event_bytes(std::size_t bytes);
  std::size_t event_bytes() const;

  // Buffers made from now on come from `allocator` (the engine's pinned memory).
  void set_buffer_allocator(BufferAllocator allocator);
  // Engine: StreamSource::exchange_event_buffer for the event next() returned last.
  void* exchange_held_buffer(void* replacement);

  // Receiving thread: a buffer of event_bytes() to fill, or nullptr when `capacity` events wait.
  std::byte* acquire_buffer();
  // Receiving thread: hands a filled buffer to the engine, or gives an unfilled one back.
  void publish(std::byte* buffer, std::uint64_t frame_number, std::int64_t timestamp_ns);
  void give_back(std::byte* buffer);

  // Engine: the next event, waiting up to `timeout`; the previous one's buffer is reused first.
  // nullopt when none came in time or after close().
  std::optional<StreamEvent> next(std::chrono::milliseconds timeout);
  // Wakes next() and makes it return nullopt from now on; waiting events are dropped.
  void close();
  std::size_t waiting() const;

 private:
  struct Waiting {
    std::byte* buffer;
    std::uint64_t frame_number;
    std::int64_t timestamp_ns;
  };
  // Buffers made ahead (pinned allocations are slow): one being decoded into, one the engine
  // holds, a few waiting.
  static constexpr std::size_t kReserved = 4;
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  EventBufferPool pool_;  // before waiting_ and held_, whose buffers it owns
  std::deque<Waiting> waiting_;
  std::byte* held_ = nullptr;  // the buffer of the event next() returned last
  bool closed_ = false;
};

}  // namespace livedrp::stream::dectris
