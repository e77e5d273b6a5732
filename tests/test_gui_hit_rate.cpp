// The hit-rate chart: its model keeps one sample per stats interval with peak finding (hit rate
// in %, peaks per event), none for intervals without searched events or without the block;
// another run starts over; the curves read exactly the values fed; the corner text says what
// the latest interval was, or that peak finding is off.
#include <cmath>
#include <limits>

#include <QTest>

#include <qwt_plot_curve.h>

#include "protocol/message.hpp"
#include "protocol/topics.hpp"
#include "widgets/hit_rate_chart.hpp"
#include "widgets/hit_rate_model.hpp"

using namespace livedrp::widgets;
using livedrp::protocol::PeakFindingStats;
using livedrp::protocol::StatsPayload;

namespace {

StatsPayload statsAt(double time_s, std::uint64_t events, std::uint64_t hits, std::uint64_t peaks) {
  StatsPayload stats;
  stats.elapsed_s = time_s;
  PeakFindingStats block;
  block.interval_events = events;
  block.interval_hits = hits;
  block.interval_peaks = peaks;
  block.total_events = events * 10;
  block.total_hits = hits * 10;
  block.total_peaks = peaks * 10;
  block.interval_hit_rate =
      events > 0 ? double(hits) / double(events) : std::numeric_limits<double>::quiet_NaN();
  block.params_version = 2;
  stats.peak_finding = block;
  return stats;
}

}  // namespace

class HitRateTest : public QObject {
  Q_OBJECT

 private slots:
  void theModelHoldsTheValuesFed() {
    HitRateModel model;
    model.applyStats(statsAt(0.25, 100, 25, 1000), 7);
    model.applyStats(statsAt(0.5, 50, 5, 100), 7);
    model.applyStats(statsAt(0.75, 0, 0, 0), 7);  // nothing searched: no sample
    StatsPayload off = statsAt(1.0, 10, 1, 1);
    off.peak_finding.reset();
    model.applyStats(off, 7);  // no block: no sample
    QCOMPARE(model.sampleCount(), std::size_t(2));
    QCOMPARE(model.sample(0).time_s, 0.25);
    QCOMPARE(model.sample(0).hit_rate_pct, 25.0);
    QCOMPARE(model.sample(0).peaks_per_event, 10.0);
    QCOMPARE(model.sample(1).hit_rate_pct, 10.0);
    QCOMPARE(model.sample(1).peaks_per_event, 2.0);
    QVERIFY(!model.latest());
    // Another run starts a new series.
    model.applyStats(statsAt(0.25, 4, 1, 8), 8);
    QCOMPARE(model.sampleCount(), std::size_t(1));
    QCOMPARE(model.sample(0).hit_rate_pct, 25.0);
  }

  void statsMessagesAreDecoded() {
    HitRateModel model;
    const std::vector<std::string> parts =
        livedrp::protocol::encode(livedrp::protocol::make_stats_message(statsAt(2.0, 40, 3, 60)));
    const auto message =
        livedrp::protocol::decode(std::vector<std::string_view>(parts.begin(), parts.end()));
    QVERIFY2(model.apply(message), qPrintable(model.lastRejection()));
    QCOMPARE(model.sampleCount(), std::size_t(1));
    QCOMPARE(model.sample(0).hit_rate_pct, 7.5);
    QCOMPARE(model.sample(0).peaks_per_event, 1.5);
    QCOMPARE(model.latest()->params_version, std::uint64_t(2));
  }

  void theCurvesReadTheModel() {
    HitRateModel model;
    HitRateChart chart(&model);
    chart.resize(600, 300);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QCOMPARE(chart.currentValueText(), QStringLiteral("waiting for stats"));
    const double rates[] = {10, 30, 20, 60};
    for (int i = 0; i < 4; ++i)
      model.applyStats(statsAt(1.0 + i, 100, std::uint64_t(rates[i]), 500 + 100 * i));
    QTRY_VERIFY(chart.replotCount() >= 2);
    QTRY_COMPARE(chart.hitRateCurve()->dataSize(), size_t(4));
    for (int i = 0; i < 4; ++i) {
      QCOMPARE(chart.hitRateCurve()->sample(size_t(i)), QPointF(1.0 + i, rates[i]));
      QCOMPARE(chart.peaksCurve()->sample(size_t(i)).y(), (500.0 + 100 * i) / 100.0);
    }
    QVERIFY2(chart.currentValueText().startsWith(QStringLiteral("hit rate 60.0 % · 8.0 peaks")),
             qPrintable(chart.currentValueText()));
    // The left axis holds the largest rate.
    QVERIFY(chart.axisInterval(QwtAxis::YLeft).maxValue() >= 60.0);
    StatsPayload off = statsAt(6, 1, 1, 1);
    off.peak_finding.reset();
    model.applyStats(off);
    QTRY_COMPARE(chart.currentValueText(), HitRateChart::offText());
  }
};

QTEST_MAIN(HitRateTest)
#include "test_gui_hit_rate.moc"
