// ThreadPool: parallel_for and parallel_for_dynamic hand out every item of [0, count) exactly
// once, in ranges inside [0, count), for pools of one to four threads, counts from 0 to several
// thousand and grains from 1 to more than the count; in the dynamic form a thread stuck on one
// slow item does not hold the others' share.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/thread_pool.hpp"

using livedrp::ThreadPool;

namespace {

// How many times each item was handed out; -1 when a range fell outside [0, count).
std::vector<int> visits(ThreadPool& pool, std::size_t count, std::size_t grain, bool dynamic) {
  std::vector<std::atomic<int>> seen(count);
  std::atomic<bool> outside{false};
  const auto body = [&](std::size_t begin, std::size_t end) {
    if (begin >= end || end > count) outside = true;
    for (std::size_t i = begin; i < end && i < count; ++i) ++seen[i];
  };
  if (dynamic)
    pool.parallel_for_dynamic(count, grain, body);
  else
    pool.parallel_for(count, body);
  std::vector<int> out;
  for (auto& s : seen) out.push_back(s.load());
  if (outside) out.push_back(-1);
  return out;
}

}  // namespace

class TestThreadPool : public QObject {
  Q_OBJECT

 private slots:
  void every_item_is_handed_out_once() {
    for (const unsigned threads : {1u, 2u, 3u, 4u}) {
      ThreadPool pool(threads);
      QCOMPARE(pool.size(), threads);
      for (const std::size_t count : {0u, 1u, 2u, 5u, 64u, 1000u, 4097u}) {
        const std::vector<int> once(count, 1);
        QVERIFY(visits(pool, count, 0, false) == once);
        for (const std::size_t grain : {0u, 1u, 3u, 16u, 1000u, 5000u})
          QVERIFY2(visits(pool, count, grain, true) == once,
                   qPrintable(
                       QString("threads %1 count %2 grain %3").arg(threads).arg(count).arg(grain)));
      }
    }
  }

  // Two threads, 40 items of grain 1: item 0 waits until the 39 others are done. With a fixed
  // split its thread would also hold items 1-19 and the wait would run out; drawn one at a time,
  // the other thread runs them all. (No timing: the wait ends as soon as the others are done.)
  void a_slow_item_does_not_hold_the_others() {
    ThreadPool pool(2);
    std::atomic<int> done{0};
    std::atomic<bool> waited_out{false};
    pool.parallel_for_dynamic(40, 1, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        if (i != 0) {
          ++done;
          continue;
        }
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (done.load() < 39) {
          if (std::chrono::steady_clock::now() > give_up) {
            waited_out = true;
            break;
          }
          std::this_thread::yield();
        }
      }
    });
    QVERIFY(!waited_out);
    QCOMPARE(done.load(), 39);
  }
};

QTEST_APPLESS_MAIN(TestThreadPool)
#include "test_thread_pool.moc"
