#pragma once
// Event-sized host buffers for a live stream's assembled events, reused from event to event.
// Their memory comes from an allocator the engine may set (the CUDA backend's pinned memory), so
// that an assembled event's buffer can become a ring slot as it is, exchanged for the slot's
// own buffer, as replay hands its read buffers over, instead of being copied into the slot on
// the engine's single producer thread (a Jungfrau 4M at 1 kHz is 8 GB/s, more than one thread
// copies).
#include <cstddef>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace livedrp::stream {

// How buffers are made and freed; both or neither.
struct BufferAllocator {
  std::function<void*(std::size_t)> allocate;
  std::function<void(void*)> free;
};

// Thread-safe. Owns every buffer it made or took in an exchange, and frees each with the
// allocator it came from when it is destroyed, so it must outlive every buffer it lent.
class EventBufferPool {
 public:
  explicit EventBufferPool(std::size_t bytes = 0);
  ~EventBufferPool();
  EventBufferPool(const EventBufferPool&) = delete;
  EventBufferPool& operator=(const EventBufferPool&) = delete;

  // The size of every buffer; set once, before the first acquire() (a Dectris stream learns it
  // from its start message). Throws RuntimeFault when buffers of another size exist.
  void set_bytes(std::size_t bytes);
  std::size_t bytes() const;
  // Buffers made from now on come from `allocator`; those made before keep their own.
  void set_allocator(BufferAllocator allocator);

  // Makes buffers ahead until `count` are free (pinned allocations take milliseconds, too long
  // for a receiving thread at detector rate); nothing when bytes() is 0.
  void reserve(std::size_t count);
  // A buffer of bytes() (not zeroed), reused when one is free; nullptr when bytes() is 0.
  std::byte* acquire();
  void give_back(std::byte* buffer);
  // `taken`, a buffer acquired from this pool and made by the allocator set last, leaves the
  // pool for good (the caller frees it with that allocator: it becomes a ring slot), and
  // `replacement` (bytes() long, from the same allocator) joins the pool in its place, lent to
  // the caller as `taken` was. False, and nothing changes, when `taken` was made otherwise (before
  // the allocator was set), so that no buffer is freed by the wrong allocator.
  bool exchange(std::byte* taken, std::byte* replacement);

 private:
  std::byte* make_locked();  // a new buffer from the allocator set last; mutex_ held
  mutable std::mutex mutex_;
  std::size_t bytes_;
  std::vector<BufferAllocator> allocators_;              // [0]: operator new; set_allocator appends
  std::unordered_map<std::byte*, std::size_t> made_by_;  // every buffer owned -> its allocator
  std::vector<std::byte*> free_;
};

// One buffer of a pool, given back to it when destroyed or reset. Move-only.
class PooledBuffer {
 public:
  PooledBuffer() = default;
  PooledBuffer(EventBufferPool& pool, std::byte* data) : pool_(&pool), data_(data) {}
  PooledBuffer(PooledBuffer&& other) noexcept;
  PooledBuffer& operator=(PooledBuffer&& other) noexcept;
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;
  ~PooledBuffer() { reset(); }

  std::byte* get() const { return data_; }
  std::byte& operator[](std::size_t i) const { return data_[i]; }
  explicit operator bool() const { return data_ != nullptr; }
  void reset();          // gives the buffer back now
  std::byte* release();  // lets go of the buffer without giving it back

 private:
  EventBufferPool* pool_ = nullptr;
  std::byte* data_ = nullptr;
};

}  // namespace livedrp::stream
