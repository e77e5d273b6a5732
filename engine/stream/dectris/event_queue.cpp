#include "stream/dectris/event_queue.hpp"

#include <algorithm>

namespace livedrp::stream::dectris {

EventQueue::EventQueue(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {}

void EventQueue::set_event_bytes(std::size_t bytes) {
  const std::lock_guard lock(mutex_);
  event_bytes_ = bytes;
}

std::size_t EventQueue::event_bytes() const {
  const std::lock_guard lock(mutex_);
  return event_bytes_;
}

std::byte* EventQueue::acquire_buffer() {
  const std::lock_guard lock(mutex_);
  if (closed_ || waiting_.size() >= capacity_ || event_bytes_ == 0) return nullptr;
  if (!free_.empty()) {
    std::byte* buffer = free_.back();
    free_.pop_back();
    return buffer;
  }
  // At most capacity waiting + one held by the engine + one being filled.
  owned_.push_back(std::make_unique_for_overwrite<std::byte[]>(event_bytes_));
  return owned_.back().get();
}

void EventQueue::publish(std::byte* buffer, std::uint64_t frame_number, std::int64_t timestamp_ns) {
  {
    const std::lock_guard lock(mutex_);
    waiting_.push_back({buffer, frame_number, timestamp_ns});
  }
  arrived_.notify_one();
}

void EventQueue::give_back(std::byte* buffer) {
  const std::lock_guard lock(mutex_);
  free_.push_back(buffer);
}

std::optional<StreamEvent> EventQueue::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (held_) {
    free_.push_back(held_);
    held_ = nullptr;
  }
  arrived_.wait_for(lock, timeout, [&] { return closed_ || !waiting_.empty(); });
  if (closed_ || waiting_.empty()) return std::nullopt;
  const Waiting event = waiting_.front();
  waiting_.pop_front();
  held_ = event.buffer;
  return StreamEvent{event.frame_number, event.timestamp_ns, event.buffer};
}

void EventQueue::close() {
  {
    const std::lock_guard lock(mutex_);
    closed_ = true;
    for (const Waiting& event : waiting_) free_.push_back(event.buffer);
    waiting_.clear();
  }
  arrived_.notify_all();
}

std::size_t EventQueue::waiting() const {
  const std::lock_guard lock(mutex_);
  return waiting_.size();
}

}  // namespace livedrp::stream::dectris
