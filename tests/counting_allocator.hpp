#pragma once
// A stream::BufferAllocator for tests that counts what it makes and frees: which buffers are
// still live, how many were made, and frees of a buffer it does not hold (twice, or never made).
#include <cstddef>
#include <memory>
#include <set>

#include "stream/event_buffer_pool.hpp"

namespace livedrp::testing {

struct CountingAllocator {
  struct Counts {
    std::set<void*> live;
    int made = 0;
    int freed_unknown = 0;
  };
  std::shared_ptr<Counts> counts = std::make_shared<Counts>();

  stream::BufferAllocator allocator() const {
    return {[c = counts](std::size_t bytes) {
              void* buffer = ::operator new(bytes);
              ++c->made;
              c->live.insert(buffer);
              return buffer;
            },
            [c = counts](void* buffer) {
              if (c->live.erase(buffer) == 0) ++c->freed_unknown;
              ::operator delete(buffer);
            }};
  }
};

}  // namespace livedrp::testing
