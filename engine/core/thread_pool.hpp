#pragma once
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace livedrp {

// A fixed set of worker threads for data-parallel loops: parallel_for cuts [0, count) into one
// contiguous range per thread and returns when all are done. The calling thread takes a range too.
class ThreadPool {
 public:
  explicit ThreadPool(unsigned threads = std::thread::hardware_concurrency());
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return unsigned(workers_.size()) + 1; }
  void parallel_for(std::size_t count,
                    const std::function<void(std::size_t begin, std::size_t end)>& body);
  // For items of uneven cost: every thread takes `grain` items at a time, [begin, end), from a
  // shared counter until none are left, so a thread that drew cheap items takes more. Each item
  // is handed out exactly once; which thread runs it varies from call to call.
  void parallel_for_dynamic(std::size_t count, std::size_t grain,
                            const std::function<void(std::size_t begin, std::size_t end)>& body);

 private:
  void worker_loop(unsigned index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(std::size_t, std::size_t)>* body_ = nullptr;
  std::size_t count_ = 0;
  std::size_t generation_ = 0;
  unsigned pending_ = 0;
  bool stopping_ = false;
};

}  // namespace livedrp
