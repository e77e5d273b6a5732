#include "core/thread_pool.hpp"

#include <algorithm>
#include <atomic>

namespace livedrp {
namespace {
std::pair<std::size_t, std::size_t> share(std::size_t count, unsigned parts, unsigned index) {
  const std::size_t base = count / parts, extra = count % parts;
  const std::size_t begin = index * base + std::min<std::size_t>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}
}  // namespace

ThreadPool::ThreadPool(unsigned threads) {
  threads = std::max(1u, threads);
  for (unsigned i = 0; i + 1 < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::parallel_for(std::size_t count,
                              const std::function<void(std::size_t, std::size_t)>& body) {
  if (count == 0) return;
  if (workers_.empty() || count == 1) {
    body(0, count);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    body_ = &body;
    count_ = count;
    pending_ = unsigned(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  // The caller works on the last share while the workers take theirs.
  const auto [begin, end] = share(count, size(), size() - 1);
  if (begin < end) body(begin, end);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  body_ = nullptr;
}

void ThreadPool::parallel_for_dynamic(std::size_t count, std::size_t grain,
                                      const std::function<void(std::size_t, std::size_t)>& body) {
  if (count == 0) return;
  grain = std::max<std::size_t>(grain, 1);
  if (workers_.empty() || count <= grain) {
    body(0, count);
    return;
  }
  std::atomic<std::size_t> next{0};
  parallel_for(size(), [&](std::size_t, std::size_t) {
    for (;;) {
      const std::size_t begin = next.fetch_add(grain, std::memory_order_relaxed);
      if (begin >= count) return;
      body(begin, std::min(begin + grain, count));
    }
  });
}

void ThreadPool::worker_loop(unsigned index) {
  std::size_t seen = 0;
  for (;;) {
    const std::function<void(std::size_t, std::size_t)>* body;
    std::size_t count;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      body = body_;
      count = count_;
    }
    const auto [begin, end] = share(count, size(), index);
    if (begin < end) (*body)(begin, end);
    {
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

}  // namespace livedrp
