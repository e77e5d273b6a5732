// What bounds the rate (engine/exec/rate_bound.hpp): each rule of the verdict on synthetic stats
// intervals with known answers, its thresholds at their edges, and an interval without events.
#include <QtTest/QtTest>

#include <cmath>
#include <limits>
#include <string>

#include "exec/rate_bound.hpp"
#include "protocol/topics.hpp"

using livedrp::rate_bound;
using livedrp::RateBoundFacts;
using livedrp::protocol::RateBound;
using livedrp::protocol::StatsPayload;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// One lane at 4 kHz: calibrate 50 µs (20 % busy) and peak 150 µs (60 % busy), 80 % together.
// The ring of 32 slots holds `occupancy` events.
StatsPayload interval(std::uint64_t occupancy, double rate_hz = 4000) {
  StatsPayload stats;
  stats.event_rate_hz = rate_hz;
  stats.ring_slots = 32;
  stats.ring_occupancy = occupancy;
  stats.stages = {{"calibrate", 50.0, 80.0, 20.0}, {"peak", 150.0, 300.0, 5.0}};
  stats.streams = {{0, 1, 4, 1000}};
  return stats;
}

RateBoundFacts unpaced() {
  return {};
}

RateBoundFacts paced_at(double rate_hz) {
  RateBoundFacts facts;
  facts.paced_rate_hz = rate_hz;
  return facts;
}

// Host-fed, 1 MB events over a link measured at 10 GB/s.
RateBoundFacts with_copy() {
  RateBoundFacts facts;
  facts.copy_gbps = 10.0;
  facts.event_bytes = 1'000'000;
  return facts;
}

bool near(double a, double b) {
  return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b));
}

}  // namespace

class TestRateBound : public QObject {
  Q_OBJECT

 private slots:
  void noEventProcessedIsIdle() {
    StatsPayload stats = interval(0, 0.0);
    RateBound bound = rate_bound(stats, unpaced());
    QCOMPARE(bound.by, std::string("idle"));
    QCOMPARE(bound.busy_fraction, 0.0);
    QCOMPARE(bound.why, std::string("no event processed in the last second"));

    // A rate that is not a number (before the first interval) is no event either.
    stats = interval(32, kNan);
    bound = rate_bound(stats, paced_at(1000));
    QCOMPARE(bound.by, std::string("idle"));
    QCOMPARE(bound.why,
             std::string("no event processed in the last second while 32 events wait in the ring"));
  }

  void pacedAndKeepingUpIsPacing() {
    const RateBound bound = rate_bound(interval(4), paced_at(4000));
    QCOMPARE(bound.by, std::string("pacing"));
    QVERIFY2(near(bound.busy_fraction, 0.8), std::to_string(bound.busy_fraction).c_str());
    QCOMPARE(bound.why,
             std::string("paced at 4.0 kHz and keeping up (4.0 kHz); the pipeline is 80% busy"));
  }

  // 95 % of the pace still keeps up; less does not (and the mostly empty ring then says the
  // source cannot keep its pace).
  void pacingKeepsUpDownToItsFraction() {
    QCOMPARE(rate_bound(interval(4, 950), paced_at(1000)).by, std::string("pacing"));
    const RateBound short_of_pace = rate_bound(interval(4, 949.5), paced_at(1000));
    QCOMPARE(short_of_pace.by, std::string("source"));
    QVERIFY2(short_of_pace.why.find("the source cannot keep its pace") != std::string::npos,
             short_of_pace.why.c_str());
  }

  // At low paces one event of the rate window is more than 5 %: 1 Hz short still keeps up.
  void pacingAllowsOneHertzAtLowRates() {
    QCOMPARE(rate_bound(interval(1, 9.0), paced_at(10)).by, std::string("pacing"));
    QCOMPARE(rate_bound(interval(1, 8.9), paced_at(10)).by, std::string("source"));
  }

  // A full ring means events wait for the pipeline, whatever the rate window says.
  void pacedWithFullRingIsNotPacing() {
    const RateBound bound = rate_bound(interval(30, 4000), paced_at(4000));
    QCOMPARE(bound.by, std::string("peak"));
  }

  void mostlyEmptyRingUnpacedIsSource() {
    const RateBound bound = rate_bound(interval(8), unpaced());  // 8 / 32 = the edge, 25 %
    QCOMPARE(bound.by, std::string("source"));
    QVERIFY(near(bound.busy_fraction, 0.8));
    QCOMPARE(bound.why, std::string("ring 25% full while the source runs unpaced: the stages "
                                    "wait for events; the pipeline is 80% busy"));
  }

  // Even a saturated pipeline is not the bound while the ring stays mostly empty: an unpaced
  // producer would fill it if it could.
  void emptyRingBeatsBusyStages() {
    StatsPayload stats = interval(2);
    stats.stages[1].mean_us = 230.0;  // 92 % + 20 %
    QCOMPARE(rate_bound(stats, unpaced()).by, std::string("source"));
  }

  void nearFullRingNamesTheLargestStage() {
    const RateBound bound = rate_bound(interval(24), unpaced());  // 24 / 32 = the edge, 75 %
    QCOMPARE(bound.by, std::string("peak"));
    QVERIFY2(near(bound.busy_fraction, 0.6), std::to_string(bound.busy_fraction).c_str());
    QCOMPARE(bound.why, std::string("ring 75% full: the stages keep 1 lane 80% busy at 4.0 kHz; "
                                    "peak takes 150.0 µs of their 200.0 µs per event"));
  }

  // Between the ring's thresholds the pipeline's busy fraction decides, at 90 %.
  void middleRingNeedsASaturatedPipeline() {
    StatsPayload stats = interval(23);  // 72 %: neither near full nor mostly empty
    QCOMPARE(rate_bound(stats, unpaced()).by, std::string("source"));  // 80 % busy
    stats.stages[1].mean_us = 175.0;                                   // 20 % + 70 % = 90 %
    QCOMPARE(rate_bound(stats, unpaced()).by, std::string("peak"));
    stats.stages[1].mean_us = 174.9;
    const RateBound bound = rate_bound(stats, unpaced());
    QCOMPARE(bound.by, std::string("source"));
    QCOMPARE(bound.why, std::string("ring 72% full and the pipeline is 90% busy, below "
                                    "saturation: the stages wait for events"));
  }

  // A stage's busy fraction is its share of the lanes' time: rate x mean / lanes.
  void lanesShareTheStageTime() {
    StatsPayload stats = interval(32, 20000);
    stats.stages = {{"calibrate", 100.0, 120.0, 50.0}};  // 2 s of stage time per second
    RateBoundFacts facts;
    facts.lanes = 4;
    RateBound bound = rate_bound(stats, facts);
    QCOMPARE(bound.by, std::string("calibrate"));
    QCOMPARE(bound.busy_fraction, 0.5);

    // Lanes 0: one per stream of the interval.
    stats.streams = {{0, 4, 4, 10}, {1, 4, 4, 10}};
    bound = rate_bound(stats, unpaced());
    QCOMPARE(bound.busy_fraction, 1.0);
    QVERIFY2(bound.why.find("2 lanes 100% busy") != std::string::npos, bound.why.c_str());
  }

  void equalStagesNameTheFirst() {
    StatsPayload stats = interval(32);
    stats.stages = {{"calibrate", 100.0, 0, 0}, {"compress", 100.0, 0, 0}};
    QCOMPARE(rate_bound(stats, unpaced()).by, std::string("calibrate"));
  }

  // `by` is never empty (decoders refuse that): an unnamed stage is named by its place.
  void unnamedStageIsNamedByItsPlace() {
    StatsPayload stats = interval(32);
    stats.stages[1].name.clear();
    QCOMPARE(rate_bound(stats, unpaced()).by, std::string("stages[1]"));
  }

  // The copy bounds from 90 % of the measured bandwidth: 9000 events/s x 1 MB = 9 GB/s of 10.
  void copyBoundsFromNinetyPercentOfItsBandwidth() {
    const RateBound bound = rate_bound(interval(32, 9000), with_copy());
    QCOMPARE(bound.by, std::string("copy"));
    QCOMPARE(bound.busy_fraction, 0.9);
    QCOMPARE(bound.why, std::string("ring 100% full: 9.0 GB/s of host-to-device copies, 90% of "
                                    "the 10.0 GB/s measured"));

    // Just below, the largest stage (peak, 150 µs x 8990 Hz = 135 %) is named instead.
    QCOMPARE(rate_bound(interval(32, 8990), with_copy()).by, std::string("peak"));
  }

  void copyCountsOnlyWhenKnownAndHostFed() {
    RateBoundFacts facts = with_copy();
    facts.device_resident = true;
    QCOMPARE(rate_bound(interval(32, 9500), facts).by, std::string("peak"));
    facts = with_copy();
    facts.copy_gbps = 0;  // not measured
    QCOMPARE(rate_bound(interval(32, 9500), facts).by, std::string("peak"));
    facts = with_copy();
    facts.event_bytes = 0;
    QCOMPARE(rate_bound(interval(32, 9500), facts).by, std::string("peak"));
  }

  // The copy's busy fraction takes part in the pipeline's: a saturated copy with the ring in
  // between bounds too.
  void saturatedCopyBoundsWithTheRingInBetween() {
    StatsPayload stats = interval(16, 9500);
    stats.stages = {{"calibrate", 10.0, 0, 0}};
    QCOMPARE(rate_bound(stats, with_copy()).by, std::string("copy"));
  }

  // With a full ring, stages that keep the lanes less than half busy do not explain the rate.
  void fullRingWithLittleStageTimeIsPipeline() {
    StatsPayload stats = interval(32);
    stats.stages = {{"calibrate", 60.0, 0, 0}, {"peak", 50.0, 0, 0}};  // 24 % + 20 %
    const RateBound bound = rate_bound(stats, unpaced());
    QCOMPARE(bound.by, std::string("pipeline"));
    QVERIFY2(near(bound.busy_fraction, 0.44), std::to_string(bound.busy_fraction).c_str());
    QCOMPARE(bound.why, std::string("ring 100% full but the stages keep 1 lane only 44% busy: the "
                                    "time goes between them (launches, host submission and "
                                    "retirement, a ring too shallow for the latency)"));
    stats.stages[1].mean_us = 64.9;  // 24 % + 25.96 %: just below the edge
    QCOMPARE(rate_bound(stats, unpaced()).by, std::string("pipeline"));
    stats.stages[1].mean_us = 65.0;  // 24 % + 26 % = the edge, 50 %
    QCOMPARE(rate_bound(stats, unpaced()).by, std::string("peak"));
  }

  void fullRingWithoutStageTimesIsPipelineOfUnknownBusy() {
    StatsPayload stats = interval(32);
    stats.stages = {{"calibrate", 0.0, 0, 0}, {"peak", kNan, kNan, kNan}, {"x", -5.0, 0, 0}};
    const RateBound bound = rate_bound(stats, unpaced());
    QCOMPARE(bound.by, std::string("pipeline"));
    QVERIFY(std::isnan(bound.busy_fraction));
    QCOMPARE(bound.why, std::string("ring 100% full and no stage times in this interval"));
  }

  void noFiguresAtAllIsUnknown() {
    StatsPayload stats = interval(16);
    stats.stages.clear();
    RateBound bound = rate_bound(stats, unpaced());
    QCOMPARE(bound.by, std::string("unknown"));
    QVERIFY(std::isnan(bound.busy_fraction));
    stats.ring_slots = 0;  // a ring of unknown size
    bound = rate_bound(stats, unpaced());
    QCOMPARE(bound.by, std::string("unknown"));
    QCOMPARE(bound.why, std::string("ring size unknown and no stage times in this interval"));
  }

  // Without a ring size, the busy fraction alone decides.
  void unknownRingFallsBackOnBusyFraction() {
    StatsPayload stats = interval(0);
    stats.ring_slots = 0;
    QCOMPARE(rate_bound(stats, unpaced()).by, std::string("source"));  // 80 %
    stats.stages[1].mean_us = 200.0;                                   // 20 % + 80 %
    QCOMPARE(rate_bound(stats, unpaced()).by, std::string("peak"));
  }
};

QTEST_GUILESS_MAIN(TestRateBound)
#include "test_rate_bound.moc"
