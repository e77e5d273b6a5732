// io::WriterQueue, the queue in front of each live writer's thread (--write-hits,
// --write-profiles): items are written in commit order; under the drop policy a full queue drops
// the new item and counts it, never blocking the caller; under the wait policy the caller waits
// and nothing is dropped; a failing write keeps its error, counts the failed item and everything
// after it, and close() reports it. The writer is held on a gate so that "full" is a state the
// test sets up, not a race.
#include <QtTest>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "io/writer_queue.hpp"

using livedrp::io::WriterQueue;

namespace {

// Holds the writer thread until opened; records what was written.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int entered = 0;  // writes started
  std::vector<int> written;

  void write(int value) {
    std::unique_lock lock(mutex);
    ++entered;
    changed.notify_all();
    changed.wait(lock, [this] { return open; });
    written.push_back(value);
  }
  void wait_entered(int n) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return entered >= n; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};

bool offer(WriterQueue<int>& queue, int value) {
  int* item = queue.acquire();
  if (!item) return false;
  *item = value;
  queue.commit(item);
  return true;
}

}  // namespace

class TestWriterQueue : public QObject {
  Q_OBJECT
 private slots:
  void a_full_queue_drops_and_counts_under_drop() {
    Gate gate;
    WriterQueue<int> queue(2, false, [&gate](int& v) { gate.write(v); });
    QVERIFY(offer(queue, 1));
    gate.wait_entered(1);  // 1 is being written: 2 items may wait
    QVERIFY(offer(queue, 2));
    QVERIFY(offer(queue, 3));
    QVERIFY(!offer(queue, 4));
    QVERIFY(!offer(queue, 5));
    QCOMPARE(queue.dropped(), std::uint64_t(2));
    gate.release();
    queue.close();
    QCOMPARE(gate.written, (std::vector<int>{1, 2, 3}));
    QCOMPARE(queue.written(), std::uint64_t(3));
    QCOMPARE(queue.failed(), std::uint64_t(0));
  }

  void a_full_queue_waits_under_wait_and_loses_nothing() {
    Gate gate;
    WriterQueue<int> queue(1, true, [&gate](int& v) { gate.write(v); });
    QVERIFY(offer(queue, 1));
    gate.wait_entered(1);
    QVERIFY(offer(queue, 2));
    bool third = false;
    std::thread producer([&] { third = offer(queue, 3); });  // waits for a free item
    gate.release();
    producer.join();
    QVERIFY(third);
    queue.close();
    QCOMPARE(gate.written, (std::vector<int>{1, 2, 3}));
    QCOMPARE(queue.dropped(), std::uint64_t(0));
  }

  void a_failed_write_counts_the_rest_as_failed_and_close_reports_it() {
    Gate gate;
    WriterQueue<int> queue(4, false, [&gate](int& v) {
      gate.write(v);
      if (v == 2) throw livedrp::RuntimeFault("writing 'x.cxi' failed (disk full)");
    });
    QVERIFY(offer(queue, 1));
    gate.wait_entered(1);
    QVERIFY(offer(queue, 2));
    QVERIFY(offer(queue, 3));
    QVERIFY(offer(queue, 4));
    gate.release();
    // After the failure every new item is refused as failed, never written.
    for (;;) {
      if (queue.error().empty()) {
        std::this_thread::yield();
        continue;
      }
      break;
    }
    QVERIFY(!offer(queue, 5));
    QCOMPARE(queue.written(), std::uint64_t(1));
    QCOMPARE(queue.failed(), std::uint64_t(4));  // 2 (failed), 3 and 4 (queued), 5 (refused)
    QCOMPARE(QString::fromStdString(queue.error()), QString("writing 'x.cxi' failed (disk full)"));
    bool threw = false;
    try {
      queue.close();
    } catch (const livedrp::RuntimeFault& e) {
      threw = QString(e.what()).contains("disk full");
    }
    QVERIFY(threw);
    QCOMPARE(gate.written, (std::vector<int>{1, 2}));
  }
};

QTEST_GUILESS_MAIN(TestWriterQueue)
#include "test_writer_queue.moc"
