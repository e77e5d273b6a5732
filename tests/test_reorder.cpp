// The reorder stage: completions in any order leave in admission order, nothing is lost or
// released twice, and misuse is refused rather than silently absorbed.
#include <QtTest>

#include <algorithm>
#include <random>
#include <vector>

#include "exec/reorder_buffer.hpp"

using namespace livedrp;

class TestReorder : public QObject {
  Q_OBJECT
 private slots:
  void in_order_completions_pass_straight_through() {
    ReorderBuffer<int> reorder;
    for (int i = 0; i < 5; ++i) {
      reorder.insert(std::uint64_t(i), i * 10);
      const auto out = reorder.pop_ready();
      QVERIFY(out.has_value());
      QCOMPARE(*out, i * 10);
      QCOMPARE(reorder.depth(), std::size_t(0));
    }
    QCOMPARE(reorder.next_admission(), std::uint64_t(5));
  }

  void a_late_predecessor_holds_back_its_successors() {
    ReorderBuffer<int> reorder;
    reorder.insert(1, 101);
    reorder.insert(2, 102);
    QVERIFY(!reorder.pop_ready().has_value());
    QCOMPARE(reorder.depth(), std::size_t(2));
    reorder.insert(0, 100);
    QCOMPARE(*reorder.pop_ready(), 100);
    QCOMPARE(*reorder.pop_ready(), 101);
    QCOMPARE(*reorder.pop_ready(), 102);
    QVERIFY(!reorder.pop_ready().has_value());
  }

  // 100000 admissions completed in a random order with a bounded window (as several streams
  // would): the output is exactly 0..N-1, and the held depth never exceeds the window.
  void shuffled_completions_leave_in_admission_order() {
    constexpr std::uint64_t kCount = 100000;
    constexpr std::size_t kWindow = 64;
    std::mt19937_64 random(7);
    std::vector<std::uint64_t> order(kCount);
    for (std::uint64_t i = 0; i < kCount; ++i) order[i] = i;
    for (std::size_t begin = 0; begin < kCount; begin += kWindow)
      std::shuffle(order.begin() + std::ptrdiff_t(begin),
                   order.begin() + std::ptrdiff_t(std::min<std::size_t>(begin + kWindow, kCount)),
                   random);
    ReorderBuffer<std::uint64_t> reorder;
    std::vector<std::uint64_t> released;
    std::size_t max_depth = 0;
    for (std::uint64_t admission : order) {
      reorder.insert(admission, admission * 3);
      max_depth = std::max(max_depth, reorder.depth());
      while (auto item = reorder.pop_ready()) released.push_back(*item / 3);
    }
    QCOMPARE(released.size(), std::size_t(kCount));
    for (std::uint64_t i = 0; i < kCount; ++i) QCOMPARE(released[i], i);
    QVERIFY(max_depth <= kWindow);
    QCOMPARE(reorder.depth(), std::size_t(0));
  }

  void duplicate_admission_is_refused() {
    ReorderBuffer<int> reorder;
    reorder.insert(3, 1);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, reorder.insert(3, 2));
  }

  void released_admission_is_refused() {
    ReorderBuffer<int> reorder;
    reorder.insert(0, 1);
    QVERIFY(reorder.pop_ready().has_value());
    QVERIFY_THROWS_EXCEPTION(std::logic_error, reorder.insert(0, 1));
  }

  void a_reorder_can_start_at_any_admission() {
    ReorderBuffer<int> reorder(1000);
    reorder.insert(1000, 5);
    QCOMPARE(*reorder.pop_ready(), 5);
    QCOMPARE(reorder.next_admission(), std::uint64_t(1001));
  }
};

QTEST_GUILESS_MAIN(TestReorder)
#include "test_reorder.moc"
