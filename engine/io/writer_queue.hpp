#pragma once
// A bounded queue in front of one writer thread, for the live writers: the engine thread takes a
// free item (its buffers kept from earlier use, so a full queue allocates nothing), fills it and
// commits it; the writer thread writes committed items in commit order. When every item is taken
// the policy decides: drop the new one and count it (the engine thread never waits for the disk)
// or wait for the writer (back-pressure). Every item asked for is written, or counted as dropped
// (queue full) or failed (the writer had failed; its error is kept and close() throws it).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"

namespace livedrp::io {

template <typename Item>
class WriterQueue {
 public:
  using Write = std::function<void(Item&)>;

  // `depth` items may wait besides the one being written.
  WriterQueue(std::size_t depth, bool wait_when_full, Write write)
      : wait_when_full_(wait_when_full), write_(std::move(write)) {
    for (std::size_t i = 0; i < depth + 1; ++i) {
      items_.push_back(std::make_unique<Item>());
      free_.push_back(items_.back().get());
    }
    thread_ = std::thread([this] { run(); });
  }
  ~WriterQueue() {
    try {
      close();
    } catch (...) {
      // close() explicitly to see the error
    }
  }
  WriterQueue(const WriterQueue&) = delete;
  WriterQueue& operator=(const WriterQueue&) = delete;

  // A free item, or null: the queue was full under the drop policy (counted in dropped()) or the
  // writer has failed (counted in failed()).
  Item* acquire() {
    std::unique_lock lock(mutex_);
    if (closing_) throw RuntimeFault("writer: closed");
    if (free_.empty() && wait_when_full_ && error_.empty())
      changed_.wait(lock, [this] { return !free_.empty() || !error_.empty(); });
    if (!error_.empty()) {
      ++failed_;
      return nullptr;
    }
    if (free_.empty()) {
      ++dropped_;
      return nullptr;
    }
    Item* item = free_.front();
    free_.pop_front();
    return item;
  }
  // Queues an item from acquire() for writing.
  void commit(Item* item) {
    std::lock_guard lock(mutex_);
    if (!error_.empty()) {
      free_.push_back(item);
      ++failed_;
    } else {
      queue_.push_back(item);
    }
    changed_.notify_all();
  }
  // Gives an item from acquire() back unwritten (counted as dropped).
  void abandon(Item* item) {
    std::lock_guard lock(mutex_);
    free_.push_back(item);
    ++dropped_;
    changed_.notify_all();
  }
  // Writes what is queued and stops the thread; idempotent. Throws the writer's error, if any.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
      changed_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mutex_);
    if (!error_.empty()) throw RuntimeFault(error_);
  }

  std::uint64_t written() const { return written_; }
  std::uint64_t dropped() const {
    std::lock_guard lock(mutex_);
    return dropped_;
  }
  std::uint64_t failed() const {
    std::lock_guard lock(mutex_);
    return failed_;
  }
  std::string error() const {
    std::lock_guard lock(mutex_);
    return error_;
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [this] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing, and everything queued is written
      Item* item = queue_.front();
      queue_.pop_front();
      lock.unlock();
      std::string failure;
      try {
        write_(*item);
        ++written_;
      } catch (const std::exception& e) {
        failure = e.what();
      }
      lock.lock();
      free_.push_back(item);
      if (!failure.empty()) {
        // The failed item and everything still queued are not written: counted, and the error is
        // the writer's from now on.
        error_ = failure;
        failed_ += 1 + queue_.size();
        for (Item* left : queue_) free_.push_back(left);
        queue_.clear();
        changed_.notify_all();
        return;
      }
      changed_.notify_all();
    }
  }

  const bool wait_when_full_;
  Write write_;
  std::vector<std::unique_ptr<Item>> items_;
  mutable std::mutex mutex_;  // guards the fields below
  std::condition_variable changed_;
  std::deque<Item*> free_, queue_;
  std::string error_;
  bool closing_ = false;
  std::uint64_t dropped_ = 0, failed_ = 0;
  std::atomic<std::uint64_t> written_{0};
  std::thread thread_;
};

}  // namespace livedrp::io
