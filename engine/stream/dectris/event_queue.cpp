#include "stream/dectris/event_queue.hpp"

#include <algorithm>
#include <utility>

namespace livedrp::stream::dectris {

EventQueue::EventQueue(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {}

void EventQueue::set_event_bytes(std::size_t bytes) {
  pool_.set_bytes(bytes);
  pool_.reserve(kReserved);
}

std::size_t EventQueue::event_bytes() const {
  return pool_.bytes();
}

void EventQueue::set_buffer_allocator(BufferAllocator allocator) {
  pool_.set_allocator(std::move(allocator));
  pool_.reserve(kReserved);
}

void* EventQueue::exchange_held_buffer(void* replacement) {
  const std::lock_guard lock(mutex_);
  auto* incoming = static_cast<std::byte*>(replacement);
  if (held_ == nullptr || !pool_.exchange(held_, incoming)) return nullptr;
  return std::exchange(held_, incoming);
}

std::byte* EventQueue::acquire_buffer() {
  const std::lock_guard lock(mutex_);
  if (closed_ || waiting_.size() >= capacity_) return nullptr;
  return pool_.acquire();  // nullptr until the event size is known
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
  pool_.give_back(buffer);
}

std::optional<StreamEvent> EventQueue::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (held_) pool_.give_back(std::exchange(held_, nullptr));
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
    for (const Waiting& event : waiting_) pool_.give_back(event.buffer);
    waiting_.clear();
  }
  arrived_.notify_all();
}

std::size_t EventQueue::waiting() const {
  const std::lock_guard lock(mutex_);
  return waiting_.size();
}

}  // namespace livedrp::stream::dectris
