// StatsModel: what it keeps from `stats` and `status` messages, how its time series is bounded, and
// that it signals once per update.
#include <QSignalSpy>
#include <QTest>

#include "protocol/message.hpp"
#include "protocol/topics.hpp"
#include "widgets/stats_model.hpp"

using livedrp::protocol::Message;
using livedrp::protocol::StatsPayload;
using livedrp::protocol::StatusPayload;
using livedrp::widgets::MessageBatch;
using livedrp::widgets::StatsModel;

namespace {
StatsPayload stats(double elapsed_s, double rate_hz, double gbps = 1.0) {
  StatsPayload s;
  s.elapsed_s = elapsed_s;
  s.event_rate_hz = rate_hz;
  s.input_gbps = gbps;
  s.events_in = s.events_processed = std::uint64_t(elapsed_s * rate_hz);
  s.backend = "cpu";
  s.device = "CPU (2 threads)";
  return s;
}

Message statsMessage(double elapsed_s, double rate_hz, std::int64_t run = 1) {
  Message message = livedrp::protocol::make_stats_message(stats(elapsed_s, rate_hz));
  message.run = run;
  return message;
}

Message statusMessage(const std::string& state, std::int64_t time_ns) {
  StatusPayload status;
  status.state = state;
  status.backend = "cpu";
  Message message = livedrp::protocol::make_status_message(status);
  message.time_ns = time_ns;
  return message;
}
}  // namespace

class StatsModelTest : public QObject {
  Q_OBJECT

 private slots:
  void keepsTheLatestStatsOfAMessage() {
    StatsModel model;
    QSignalSpy updated(&model, &StatsModel::updated);
    Message message = statsMessage(2.5, 1234.5);
    message.run = 7;
    QVERIFY(model.apply(message));
    QCOMPARE(updated.count(), 1);
    QVERIFY(model.hasStats());
    QCOMPARE(model.latestStats().event_rate_hz, 1234.5);
    QCOMPARE(model.latestStats().events_processed, std::uint64_t(2.5 * 1234.5));
    QCOMPARE(model.latestStats().backend, std::string("cpu"));
    QCOMPARE(model.run(), std::int64_t(7));
    QCOMPARE(model.sampleCount(), std::size_t(1));
    QCOMPARE(model.sample(0).time_s, 2.5);
    QCOMPARE(model.sample(0).event_rate_hz, 1234.5);
    QCOMPARE(model.sample(0).input_gbps, 1.0);
  }

  void aBatchSignalsOnce() {
    StatsModel model;
    QSignalSpy updated(&model, &StatsModel::updated);
    MessageBatch batch;
    for (int i = 1; i <= 50; ++i) {
      batch.push_back(std::make_shared<const Message>(statsMessage(i * 0.25, 100.0 + i)));
    }
    batch.push_back(std::make_shared<const Message>(statusMessage("running", 1)));
    QVERIFY(model.apply(batch));
    QCOMPARE(updated.count(), 1);
    QCOMPARE(model.sampleCount(), std::size_t(50));
    QCOMPARE(model.latestStats().event_rate_hz, 150.0);
    QCOMPARE(model.latestStatus().state, std::string("running"));
  }

  void dropsSamplesOlderThanTheHistory() {
    StatsModel model(600.0, 1'000'000);
    for (int t = 0; t <= 1000; ++t) model.applyStats(stats(t, t));
    QCOMPARE(model.sampleCount(), std::size_t(601));  // t = 400 ... 1000
    QCOMPARE(model.sample(0).time_s, 400.0);
    QCOMPARE(model.sample(model.sampleCount() - 1).time_s, 1000.0);
  }

  void boundsTheSampleCountWhateverTheTimes() {
    StatsModel model(600.0, 100);
    for (int i = 1; i <= 1000; ++i) model.applyStats(stats(i * 0.001, i));
    QCOMPARE(model.sampleCount(), std::size_t(100));
    QCOMPARE(model.sample(0).event_rate_hz, 901.0);
    QCOMPARE(model.sample(99).event_rate_hz, 1000.0);
  }

  void theDefaultHistoryIsTenMinutes() {
    StatsModel model;
    QCOMPARE(model.historySeconds(), 600.0);
    for (int i = 0; i <= 4 * 900; ++i) model.applyStats(stats(i * 0.25, 50));  // 15 min at 4 Hz
    QCOMPARE(model.sample(0).time_s, 300.0);
    QCOMPARE(model.sampleCount(), std::size_t(4 * 600 + 1));
  }

  void elapsedTimeGoingBackwardsStartsANewSeries() {
    StatsModel model;
    for (int t = 1; t <= 10; ++t) model.applyStats(stats(t, 100));
    model.applyStats(stats(0.25, 42));
    QCOMPARE(model.sampleCount(), std::size_t(1));
    QCOMPARE(model.sample(0).event_rate_hz, 42.0);
  }

  void anotherRunStartsANewSeries() {
    StatsModel model;
    for (int t = 1; t <= 10; ++t) model.apply(statsMessage(t, 100, 1));
    model.apply(statsMessage(11, 60, 2));
    QCOMPARE(model.sampleCount(), std::size_t(1));
    QCOMPARE(model.run(), std::int64_t(2));
  }

  void aRepeatedIntervalUpdatesCountersWithoutANewPoint() {
    StatsModel model;
    model.applyStats(stats(5, 100));
    StatsPayload again = stats(5, 100);
    again.events_dropped = 3;
    model.applyStats(again);
    QCOMPARE(model.sampleCount(), std::size_t(1));
    QCOMPARE(model.latestStats().events_dropped, std::uint64_t(3));
  }

  void findsTheFirstSampleOfAWindow() {
    StatsModel model;
    for (int t = 0; t < 10; ++t) model.applyStats(stats(t, 1));
    QCOMPARE(model.firstSampleAtOrAfter(-1), std::size_t(0));
    QCOMPARE(model.firstSampleAtOrAfter(3), std::size_t(3));
    QCOMPARE(model.firstSampleAtOrAfter(3.5), std::size_t(4));
    QCOMPARE(model.firstSampleAtOrAfter(100), std::size_t(10));
  }

  void rejectsAPayloadThatDoesNotDecodeAndCountsIt() {
    StatsModel model;
    Message bad = statsMessage(1, 1);
    bad.payload["event_rate_hz"] = "fast";
    bad.sequence = 99;
    QSignalSpy updated(&model, &StatsModel::updated);
    model.apply(bad);
    QCOMPARE(model.rejectedCount(), std::uint64_t(1));
    QVERIFY(!model.hasStats());
    QVERIFY2(model.lastRejection().contains(QLatin1String("stats")), qPrintable(model.lastRejection()));
    QVERIFY2(model.lastRejection().contains(QLatin1String("sequence 99")),
             qPrintable(model.lastRejection()));
    QCOMPARE(updated.count(), 1);  // the views show the rejection count
    model.apply(statsMessage(2, 5));
    QCOMPARE(model.latestStats().event_rate_hz, 5.0);
  }

  void ignoresStaleStatus() {
    StatsModel model;
    model.apply(statusMessage("finished", 2'000));
    QVERIFY(!model.apply(statusMessage("running", 1'000)));  // older: a report still in flight
    QCOMPARE(model.latestStatus().state, std::string("finished"));
    QVERIFY(model.apply(statusMessage("starting", 3'000)));
    QCOMPARE(model.latestStatus().state, std::string("starting"));
  }

  void ignoresOtherTopics() {
    StatsModel model;
    QSignalSpy updated(&model, &StatsModel::updated);
    Message image;
    image.topic = "image";
    QVERIFY(!model.apply(image));
    QCOMPARE(updated.count(), 0);
    QCOMPARE(model.revision(), std::uint64_t(0));
  }

  void clearForgetsEverything() {
    StatsModel model;
    model.apply(statsMessage(1, 10));
    model.apply(statusMessage("running", 5));
    model.clear();
    QVERIFY(!model.hasStats());
    QVERIFY(!model.hasStatus());
    QCOMPARE(model.sampleCount(), std::size_t(0));
  }
};

QTEST_MAIN(StatsModelTest)
#include "test_gui_stats_model.moc"
