#include "stream/event_buffer_pool.hpp"

#include <new>
#include <string>
#include <utility>

#include "core/error.hpp"

namespace livedrp::stream {

EventBufferPool::EventBufferPool(std::size_t bytes) : bytes_(bytes) {
  allocators_.push_back({[](std::size_t size) { return ::operator new(size); },
                         [](void* pointer) { ::operator delete(pointer); }});
}

EventBufferPool::~EventBufferPool() {
  for (const auto& [buffer, allocator] : made_by_) allocators_[allocator].free(buffer);
}

void EventBufferPool::set_bytes(std::size_t bytes) {
  const std::lock_guard lock(mutex_);
  if (bytes == bytes_) return;
  if (!made_by_.empty())
    throw RuntimeFault("stream buffers: event size changed from " + std::to_string(bytes_) +
                       " to " + std::to_string(bytes) + " bytes after buffers were made");
  bytes_ = bytes;
}

std::size_t EventBufferPool::bytes() const {
  const std::lock_guard lock(mutex_);
  return bytes_;
}

void EventBufferPool::set_allocator(BufferAllocator allocator) {
  if (!allocator.allocate || !allocator.free)
    throw RuntimeFault("stream buffers: an allocator needs both functions");
  const std::lock_guard lock(mutex_);
  allocators_.push_back(std::move(allocator));
  // Free buffers of an earlier allocator are not reused: new ones come from this one.
  std::vector<std::byte*> keep;
  for (std::byte* buffer : free_) {
    if (made_by_.at(buffer) + 1 == allocators_.size()) {
      keep.push_back(buffer);
    } else {
      allocators_[made_by_.at(buffer)].free(buffer);
      made_by_.erase(buffer);
    }
  }
  free_ = std::move(keep);
}

void EventBufferPool::reserve(std::size_t count) {
  const std::lock_guard lock(mutex_);
  while (bytes_ > 0 && free_.size() < count) free_.push_back(make_locked());
}

std::byte* EventBufferPool::make_locked() {
  const std::size_t allocator = allocators_.size() - 1;
  auto* buffer = static_cast<std::byte*>(allocators_[allocator].allocate(bytes_));
  if (buffer == nullptr)
    throw RuntimeFault("stream buffers: cannot allocate an event buffer of " +
                       std::to_string(bytes_) + " bytes");
  made_by_.emplace(buffer, allocator);
  return buffer;
}

std::byte* EventBufferPool::acquire() {
  const std::lock_guard lock(mutex_);
  if (bytes_ == 0) return nullptr;
  if (!free_.empty()) {
    std::byte* buffer = free_.back();
    free_.pop_back();
    return buffer;
  }
  return make_locked();
}

void EventBufferPool::give_back(std::byte* buffer) {
  if (buffer == nullptr) return;
  const std::lock_guard lock(mutex_);
  const auto it = made_by_.find(buffer);
  if (it != made_by_.end() && it->second + 1 != allocators_.size()) {
    // Made before the allocator changed: not lent again, so that every buffer lent from now on
    // can be handed over.
    allocators_[it->second].free(buffer);
    made_by_.erase(it);
    return;
  }
  free_.push_back(buffer);
}

bool EventBufferPool::exchange(std::byte* taken, std::byte* replacement) {
  const std::lock_guard lock(mutex_);
  const auto it = made_by_.find(taken);
  if (replacement == nullptr || allocators_.size() < 2 || it == made_by_.end() ||
      it->second + 1 != allocators_.size())
    return false;
  made_by_.erase(it);
  made_by_.emplace(replacement, allocators_.size() - 1);
  return true;
}

PooledBuffer::PooledBuffer(PooledBuffer&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)), data_(std::exchange(other.data_, nullptr)) {}

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::exchange(other.pool_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

void PooledBuffer::reset() {
  if (data_ != nullptr && pool_ != nullptr) pool_->give_back(data_);
  data_ = nullptr;
}

std::byte* PooledBuffer::release() {
  return std::exchange(data_, nullptr);
}

}  // namespace livedrp::stream
