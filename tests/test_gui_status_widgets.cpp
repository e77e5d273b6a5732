// RunStatusWidget and CountersView: the texts they show for given stats and status payloads.
#include <QLabel>
#include <QTest>

#include "protocol/topics.hpp"
#include "widgets/counters_view.hpp"
#include "widgets/number_format.hpp"
#include "widgets/refresh_coalescer.hpp"
#include "widgets/run_status_widget.hpp"
#include "widgets/stats_model.hpp"

using livedrp::protocol::StatsPayload;
using livedrp::protocol::StatusPayload;
using livedrp::widgets::CountersView;
using livedrp::widgets::RunStatusWidget;
using livedrp::widgets::StatsModel;

namespace {
StatsPayload sampleStats() {
  StatsPayload s;
  s.events_in = 12'400;
  s.events_processed = 12'345;
  s.events_dropped = 13;
  s.drops_by_reason = {{"ring_full", 10}, {"backend_busy", 3}};
  s.events_in_flight = 42;
  s.order_errors = 0;
  s.elapsed_s = 61.5;
  s.event_rate_hz = 200.4;
  s.input_gbps = 1.7345;
  s.ring_slots = 32;
  s.ring_occupancy = 5;
  s.backend = "cpu";
  s.device = "CPU (2 threads)";
  s.stages = {{"calibrate", 812.4, 1500.0, 2.5}};
  return s;
}

StatusPayload sampleStatus(const std::string& state) {
  StatusPayload s;
  s.state = state;
  s.message = "auto: no CUDA device, using CPU";
  s.source = "sim:epix10ka2m";
  s.detector = "epix10ka2m";
  s.backend = "cpu";
  s.device = "CPU (2 threads)";
  return s;
}
}  // namespace

class StatusWidgetsTest : public QObject {
  Q_OBJECT

 private slots:
  void formatsNumbersTheSameEverywhere() {
    using namespace livedrp::widgets;
    QCOMPARE(formatCount(0), QStringLiteral("0"));
    QCOMPARE(formatCount(1234567), QStringLiteral("1,234,567"));
    QCOMPARE(formatRateHz(49.84), QStringLiteral("49.8 Hz"));
    QCOMPARE(formatRateHz(33012.4), QStringLiteral("33,012 Hz"));
    QCOMPARE(formatGbps(3.4167), QStringLiteral("3.42 GB/s"));
    QCOMPARE(formatDuration(42), QStringLiteral("42.0 s"));
    QCOMPARE(formatDuration(723), QStringLiteral("12 min 03 s"));
    QCOMPARE(formatDuration(7500), QStringLiteral("2 h 05 min"));
  }

  void statusBarWaitsForTheEngineBeforeAnyMessage() {
    StatsModel model;
    RunStatusWidget status(&model);
    QCOMPARE(status.stateLabel()->text(), QStringLiteral("waiting for engine"));
    QCOMPARE(status.backendLabel()->text(), QStringLiteral("backend: -"));
    QCOMPARE(status.eventsLabel()->text(), QStringLiteral("events: 0"));
    QCOMPARE(status.dropsLabel()->text(), QStringLiteral("drops: 0"));
    QVERIFY(status.malformedLabel()->isHidden());
  }

  void statusBarShowsBackendDeviceEventsDropsAndState() {
    StatsModel model;
    RunStatusWidget status(&model);
    model.applyStatus(sampleStatus("running"));
    model.applyStats(sampleStats());
    QTRY_COMPARE(status.eventsLabel()->text(), QStringLiteral("events: 12,345"));
    QCOMPARE(status.stateLabel()->text(), QStringLiteral("running"));
    QCOMPARE(status.backendLabel()->text(), QStringLiteral("backend: cpu"));
    QCOMPARE(status.deviceLabel()->text(), QStringLiteral("device: CPU (2 threads)"));
    QCOMPARE(status.dropsLabel()->text(), QStringLiteral("drops: 13"));
    // Drop reasons in the tooltip, one per line, in name order.
    QCOMPARE(status.dropsLabel()->toolTip(), QStringLiteral("backend_busy: 3\nring_full: 10"));
    QVERIFY(status.eventsLabel()->toolTip().contains(QLatin1String("in flight: 42")));
    QCOMPARE(status.stateLabel()->toolTip(), QStringLiteral("auto: no CUDA device, using CPU"));
    QVERIFY(status.dropsLabel()->styleSheet().contains(QLatin1String("#c62828")));
  }

  void statusBarColoursTheState() {
    StatsModel model;
    RunStatusWidget status(&model);
    model.applyStatus(sampleStatus("error"));
    QTRY_COMPARE(status.stateLabel()->text(), QStringLiteral("error"));
    QVERIFY(status.stateLabel()->styleSheet().contains(RunStatusWidget::stateColor("error").name()));
    QCOMPARE(RunStatusWidget::stateColor("running"), QColor(0x2e, 0x7d, 0x32));
  }

  void statusBarCountsMalformedMessages() {
    StatsModel model;
    RunStatusWidget status(&model);
    status.setMalformedCount(3, QStringLiteral("header is not JSON"));
    QTRY_COMPARE(status.malformedLabel()->text(), QStringLiteral("3 malformed"));
    QVERIFY(!status.malformedLabel()->isHidden());
    QVERIFY(status.malformedLabel()->toolTip().contains(QLatin1String("header is not JSON")));
  }

  void statusBarUpdatesAreCoalesced() {
    StatsModel model;
    RunStatusWidget status(&model);
    const auto before = status.coalescer()->refreshCount();
    for (int i = 1; i <= 500; ++i) {
      StatsPayload s = sampleStats();
      s.events_processed = std::uint64_t(i);
      s.elapsed_s = i;
      model.applyStats(s);
    }
    QTRY_COMPARE(status.eventsLabel()->text(), QStringLiteral("events: 500"));
    QCOMPARE(status.coalescer()->refreshCount() - before, std::uint64_t(1));
  }

  void countersShowEveryCounterAndTheStages() {
    StatsModel model;
    CountersView counters(&model);
    model.applyStatus(sampleStatus("running"));
    model.applyStats(sampleStats());
    QTRY_COMPARE(counters.valueText("Events", "processed"), QStringLiteral("12,345"));
    QCOMPARE(counters.valueText("Run", "state"), QStringLiteral("running"));
    QCOMPARE(counters.valueText("Run", "source"), QStringLiteral("sim:epix10ka2m"));
    QCOMPARE(counters.valueText("Run", "elapsed"), QStringLiteral("1 min 01 s"));
    QCOMPARE(counters.valueText("Events", "in"), QStringLiteral("12,400"));
    QCOMPARE(counters.valueText("Events", "dropped"), QStringLiteral("13"));
    QCOMPARE(counters.valueText("Events", "dropped/ring_full"), QStringLiteral("10"));
    QCOMPARE(counters.valueText("Events", "dropped/backend_busy"), QStringLiteral("3"));
    QCOMPARE(counters.valueText("Events", "in flight"), QStringLiteral("42"));
    QCOMPARE(counters.valueText("Throughput", "event rate"), QStringLiteral("200 Hz"));
    QCOMPARE(counters.valueText("Throughput", "input"), QStringLiteral("1.73 GB/s"));
    QCOMPARE(counters.valueText("Ring", "occupancy"), QStringLiteral("5 / 32"));
    QCOMPARE(counters.valueText("Stages", "calibrate"), QStringLiteral("2.50 GB/s"));
    QCOMPARE(counters.valueText("Stages", "calibrate/mean time"), QString::fromUtf8("812.4 µs"));
    QCOMPARE(counters.valueText("Stages", "calibrate/max time"), QStringLiteral("1.5 ms"));
  }

  void countersDropRowsThatLeaveThePayload() {
    StatsModel model;
    CountersView counters(&model);
    model.applyStats(sampleStats());
    QTRY_COMPARE(counters.valueText("Events", "dropped/ring_full"), QStringLiteral("10"));
    StatsPayload next = sampleStats();
    next.elapsed_s = 70;
    next.drops_by_reason = {{"ring_full", 11}};
    next.stages.clear();
    model.applyStats(next);
    QTRY_COMPARE(counters.valueText("Events", "dropped/ring_full"), QStringLiteral("11"));
    QVERIFY(counters.valueText("Events", "dropped/backend_busy").isNull());
    QVERIFY(counters.valueText("Stages", "calibrate").isNull());
  }
};

QTEST_MAIN(StatusWidgetsTest)
#include "test_gui_status_widgets.moc"
