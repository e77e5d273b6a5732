// RefreshCoalescer (widgets/refresh_coalescer.hpp): requests made together are one refresh; a view
// that has not refreshed for an interval refreshes on the next turn of the event loop, not an
// interval later; one that just refreshed waits the rest of the interval.
//
// The interval here is an hour, so that a refresh seen within the test can only be the one the
// next turn gives; nothing waits on the clock.
#include <QtTest>

#include "widgets/refresh_coalescer.hpp"

using livedrp::widgets::RefreshCoalescer;

namespace {
constexpr int kHourMs = 3'600'000;
}  // namespace

class TestGuiRefreshCoalescer : public QObject {
  Q_OBJECT

 private slots:
  void requestsOfOneTurnAreOneRefresh() {
    RefreshCoalescer coalescer(nullptr, kHourMs);
    for (int i = 0; i < 100; ++i) coalescer.request();
    QCOMPARE(coalescer.refreshCount(), std::uint64_t(0));  // never from inside request()
    QTRY_COMPARE(coalescer.refreshCount(), std::uint64_t(1));
    QCOMPARE(coalescer.requestCount(), std::uint64_t(100));
    QVERIFY(!coalescer.pending());
  }

  void anIdleViewRefreshesOnTheNextTurnNotAnIntervalLater() {
    RefreshCoalescer coalescer(nullptr, kHourMs);
    QSignalSpy refreshed(&coalescer, &RefreshCoalescer::refresh);
    coalescer.request();
    QVERIFY(coalescer.pending());
    QTRY_COMPARE(refreshed.count(), 1);
  }

  void aViewThatJustRefreshedWaitsTheRestOfTheInterval() {
    RefreshCoalescer coalescer(nullptr, kHourMs);
    coalescer.request();
    QTRY_COMPARE(coalescer.refreshCount(), std::uint64_t(1));
    coalescer.request();
    QVERIFY(coalescer.pending());
    QCoreApplication::processEvents();  // a turn of the event loop: not enough
    QCOMPARE(coalescer.refreshCount(), std::uint64_t(1));
    QVERIFY(coalescer.pending());
    QCOMPARE(coalescer.intervalMs(), kHourMs);
  }
};

QTEST_MAIN(TestGuiRefreshCoalescer)
#include "test_gui_refresh_coalescer.moc"
