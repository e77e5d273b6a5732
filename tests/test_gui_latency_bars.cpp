// Per-pulse latency: the `stats` payload's `recent_events` (round trip, refusals), the split of
// an event's latency into its stages, its wait and its way to the window (known inputs), the bars
// drawn in each segment's colour at widths in proportion to the times, and an engine that reports
// its newest events with the stage list of its pipeline.
#include <QtTest>

#include <algorithm>
#include <mutex>

#include "exec/engine.hpp"
#include "protocol/topics.hpp"
#include "widgets/latency_bars.hpp"

using namespace livedrp;
using namespace livedrp::widgets;
using protocol::RecentEvent;

namespace {

constexpr std::int64_t kSource = 1'800'000'000'000'000'000;

RecentEvent eventOf(std::uint64_t sequence) {
  RecentEvent event;
  event.sequence = sequence;
  event.pulse_id = 3 * sequence;
  event.source_time_ns = kSource;
  event.latency_us = 1000;
  event.stage_us = {{"calibrate", 100}, {"peak", 300}, {"compress", 150}, {"integrate", 50}};
  return event;
}

}  // namespace

class TestGuiLatencyBars : public QObject {
  Q_OBJECT

 private slots:
  void recentEventsTravelAndBadOnesAreRefused() {
    protocol::StatsPayload stats;
    stats.recent_events = {eventOf(7), eventOf(8)};
    const protocol::StatsPayload back = protocol::stats_from_json(protocol::to_json(stats));
    QCOMPARE(back.recent_events.size(), std::size_t(2));
    QCOMPARE(back.recent_events[1].sequence, std::uint64_t(8));
    QCOMPARE(back.recent_events[1].pulse_id, std::uint64_t(24));
    QCOMPARE(back.recent_events[1].source_time_ns, kSource);
    QCOMPARE(back.recent_events[1].stage_us, eventOf(8).stage_us);

    nlohmann::json payload = protocol::to_json(stats);
    payload["recent_events"][0]["source_time_ns"] = "yesterday";
    try {
      protocol::stats_from_json(payload);
      QFAIL("a text time was accepted");
    } catch (const protocol::ProtocolError& error) {
      QVERIFY2(
          std::string(error.what()).find("recent_events[0].source_time_ns") != std::string::npos,
          error.what());
    }
    payload = protocol::to_json(stats);
    payload["recent_events"] = nlohmann::json::array();
    for (int k = 0; k < 65; ++k)
      payload["recent_events"].push_back(protocol::to_json(stats)["recent_events"][0]);
    try {
      protocol::stats_from_json(payload);
      QFAIL("65 recent events were accepted");
    } catch (const protocol::ProtocolError& error) {
      QVERIFY2(std::string(error.what()).find("more than 64") != std::string::npos, error.what());
    }
  }

  void anEventsLatencySplitsIntoStagesWaitAndTheWayHere() {
    // Latency 1000 us of which the stages take 600: 400 waiting. The stats came 1500 us after
    // the doorbell: 500 us from the result to this window.
    const auto rows = latencyRows({eventOf(5)}, kSource + 1'500'000);
    QCOMPARE(rows.size(), std::size_t(1));
    const auto& segments = rows[0].segments;
    QCOMPARE(segments.size(), std::size_t(6));
    QCOMPARE(segments[0].name, QStringLiteral("calibrate"));
    QCOMPARE(segments[1].us, 300.0);
    QCOMPARE(segments[4].name, QStringLiteral("wait"));
    QCOMPARE(segments[4].us, 400.0);
    QCOMPARE(segments[5].name, QStringLiteral("to this window"));
    QCOMPARE(segments[5].us, 500.0);
    QCOMPARE(rows[0].total_us(), 1500.0);
    // A clock behind the engine's (or stage times above the latency) draws no negative part.
    RecentEvent odd = eventOf(6);
    odd.latency_us = 500;  // below the 600 us of its stages
    const auto clipped = latencyRows({odd}, kSource);
    QCOMPARE(clipped[0].segments[4].us, 0.0);
    QCOMPARE(clipped[0].segments[5].us, 0.0);
  }

  void theBarsAreDrawnInTheSegmentsColoursAndProportions() {
    LatencyBars bars(nullptr);
    bars.resize(600, 160);
    bars.setEvents({eventOf(1), eventOf(2)}, kSource + 1'500'000);
    QCOMPARE(bars.scaleUs(), 2000.0);  // 1.5 ms rounded up to a readable scale
    const QImage image = bars.grab().toImage();
    for (int row = 0; row < 2; ++row) {
      for (int k = 0; k < 6; ++k) {
        const QRect rect = bars.segmentRect(row, k);
        QVERIFY(!rect.isEmpty());
        const QColor drawn = image.pixelColor(rect.center());
        QCOMPARE(drawn.name(),
                 bars.rows()[std::size_t(row)].segments[std::size_t(k)].colour.name());
      }
    }
    // Widths in proportion: peak (300 us) three times calibrate (100 us), within a pixel each.
    const int calibrate = bars.segmentRect(0, 0).width(), peak = bars.segmentRect(0, 1).width();
    QVERIFY2(std::abs(peak - 3 * calibrate) <= 3,
             qPrintable(QString("%1 vs %2").arg(peak).arg(calibrate)));
    // Segments follow one another without gaps.
    QCOMPARE(bars.segmentRect(0, 1).left(), bars.segmentRect(0, 0).right() + 1);
  }

  void anEngineReportsItsNewestEventsWithItsStages() {
    EngineConfig config;
    config.source = "sim:epix10ka2m";
    config.backend = "cpu";
    config.publish = "";
    config.simulator_pool = 2;
    config.stats_interval_s = 0.05;
    config.cpu_threads = 2;
    config.events = 6;
    config.full_ring = "wait";
    config.compression.codec = "lossless";
    std::mutex mutex;
    std::vector<RecentEvent> seen;
    Engine engine(config);
    engine.set_progress_callback([&](const protocol::StatsPayload& stats) {
      std::lock_guard lock(mutex);
      seen.insert(seen.end(), stats.recent_events.begin(), stats.recent_events.end());
    });
    engine.start();
    engine.wait();
    std::lock_guard lock(mutex);
    // Every event is reported once (6 events, at most 16 an interval), in order.
    QCOMPARE(seen.size(), std::size_t(6));
    for (std::size_t k = 0; k < seen.size(); ++k) {
      QCOMPARE(seen[k].sequence, std::uint64_t(k));
      QCOMPARE(seen[k].stage_us.size(), std::size_t(2));
      QCOMPARE(seen[k].stage_us[0].first, std::string("calibrate"));
      QCOMPARE(seen[k].stage_us[1].first, std::string("compress"));
      QVERIFY(seen[k].stage_us[0].second > 0 && seen[k].stage_us[1].second > 0);
      QVERIFY(seen[k].latency_us > 0);
      QVERIFY(seen[k].source_time_ns > 1'700'000'000'000'000'000);
    }
  }
};

QTEST_MAIN(TestGuiLatencyBars)
#include "test_gui_latency_bars.moc"
