// The engine view: lane bars and labels, queues, drops, order errors and the latency chart, as
// drawn for stats messages sent through the model.
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <QLabel>
#include <QProgressBar>
#include <QTest>

#include <qwt_plot_curve.h>

#include "protocol/message.hpp"
#include "protocol/topics.hpp"
#include "widgets/engine_view.hpp"
#include "widgets/refresh_coalescer.hpp"
#include "widgets/stats_model.hpp"

using livedrp::protocol::RateBound;
using livedrp::protocol::StatsPayload;
using livedrp::widgets::EngineView;
using livedrp::widgets::StatsModel;

namespace {
StatsPayload stats(double elapsed_s, double p50_us, double p99_us) {
  StatsPayload s;
  s.events_in = 1200;
  s.events_processed = 1180;
  s.events_dropped = 12;
  s.drops_by_reason = {{"ring_full", 12}};
  s.events_in_flight = 8;
  s.elapsed_s = elapsed_s;
  s.event_rate_hz = 400;
  s.ring_slots = 32;
  s.ring_occupancy = 5;
  s.backend = "cuda";
  s.stages = {{"calibrate", 9.5, 31.0, 80.2}};
  s.latency_p50_us = p50_us;
  s.latency_p99_us = p99_us;
  s.latency_max_us = std::isfinite(p99_us) ? p99_us * 1.5 : p99_us;
  s.reorder_depth = 2;
  s.streams = {{0, 3, 4, 600}, {1, 1, 4, 580}};
  return s;
}

// Lets the coalescer deliver its pending refresh.
void settle(EngineView& view) {
  QTRY_VERIFY(!view.coalescer()->pending());
}

QColor centrePixel(QWidget* window, QWidget* child) {
  const QImage image = window->grab().toImage();
  const QPoint centre = child->mapTo(window, child->rect().center());
  // Grabs are in device pixels.
  const qreal ratio = image.devicePixelRatio();
  return image.pixelColor(int(centre.x() * ratio), int(centre.y() * ratio));
}
}  // namespace

class EngineViewTest : public QObject {
  Q_OBJECT

 private slots:
  void showsOneBarPerLaneFromTheStats() {
    StatsModel model;
    EngineView view(&model);
    view.resize(500, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(view.laneCount(), 0);

    model.applyStats(stats(1.0, 120, 480), 7);
    settle(view);
    QCOMPARE(view.laneCount(), 2);
    QCOMPARE(view.laneLabel(0)->text(), QStringLiteral("stream 0"));
    QCOMPARE(view.laneLabel(1)->text(), QStringLiteral("stream 1"));
    QCOMPARE(view.laneBar(0)->value(), 3);
    QCOMPARE(view.laneBar(0)->maximum(), 4);
    QCOMPARE(view.laneBar(0)->text(), QStringLiteral("3 / 4"));
    QCOMPARE(view.laneBar(1)->value(), 1);
    QCOMPARE(view.laneCompletedLabel(0)->text(), QStringLiteral("600 done"));
    QCOMPARE(view.laneCompletedLabel(1)->text(), QStringLiteral("580 done"));

    QCOMPARE(view.ringBar()->value(), 5);
    QCOMPARE(view.ringBar()->maximum(), 32);
    QCOMPARE(view.reorderLabel()->text(), QStringLiteral("2"));
    QCOMPARE(view.inFlightLabel()->text(), QStringLiteral("8"));
    QCOMPARE(view.dropsLabel()->text(), QStringLiteral("ring_full 12"));
    QCOMPARE(view.stagesLabel()->text(),
             QString::fromUtf8("calibrate 9.5 µs mean, 31.0 µs max, 80.20 GB/s"));
    QCOMPARE(view.latencyLabel()->text(),
             QString::fromUtf8("p50 120.0 µs · p99 480.0 µs · max 720.0 µs"));

    // A new engine with one lane: the rows follow.
    StatsPayload one = stats(0.5, 100, 200);
    one.streams = {{0, 0, 8, 12}};
    model.applyStats(one, 8);
    settle(view);
    QCOMPARE(view.laneCount(), 1);
    QCOMPARE(view.laneBar(0)->maximum(), 8);
    QCOMPARE(view.laneCompletedLabel(0)->text(), QStringLiteral("12 done"));
  }

  void orderErrorsTurnRed() {
    StatsModel model;
    EngineView view(&model);
    view.resize(500, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    model.applyStats(stats(1.0, 120, 480), 1);
    settle(view);
    QCOMPARE(view.orderErrorsLabel()->text(), QStringLiteral("0"));
    const QColor calm = centrePixel(&view, view.orderErrorsLabel());
    QVERIFY2(calm != EngineView::orderErrorColor(), qPrintable(calm.name()));

    StatsPayload bad = stats(1.25, 120, 480);
    bad.order_errors = 3;
    model.applyStats(bad, 1);
    settle(view);
    QCOMPARE(view.orderErrorsLabel()->text(), QStringLiteral("3"));
    // Sample the label's background beside the text (its left margin).
    const QImage image = view.grab().toImage();
    const QPoint corner = view.orderErrorsLabel()->mapTo(&view, QPoint(1, 1));
    const qreal ratio = image.devicePixelRatio();
    QCOMPARE(image.pixelColor(int(corner.x() * ratio), int(corner.y() * ratio)).name(),
             EngineView::orderErrorColor().name());
  }

  // The engine's verdict on what bounds the rate, from a stats message as the wire delivers it
  // (encoded and decoded), shown as sent; "-" when the stats carry none (an older engine).
  void rateBoundShowsTheEnginesVerdict() {
    StatsModel model;
    EngineView view(&model);
    view.resize(500, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(view.rateBoundLabel()->objectName(), QStringLiteral("rateBoundLabel"));
    QCOMPARE(view.rateBoundLabel()->text(), QStringLiteral("-"));

    const auto send = [&model](const StatsPayload& payload) {
      livedrp::protocol::Message message = livedrp::protocol::make_stats_message(payload);
      message.run = 4;
      const std::vector<std::string> parts = livedrp::protocol::encode(message);
      const std::vector<std::string_view> views(parts.begin(), parts.end());
      QVERIFY(model.apply(livedrp::protocol::decode(views)));
    };
    StatsPayload bound = stats(1.0, 120, 480);
    bound.rate_bound = RateBound{"peak", 0.92, "ring 97% full"};
    send(bound);
    settle(view);
    QCOMPARE(view.rateBoundLabel()->text(), QStringLiteral("peak (92% busy): ring 97% full"));
    QCOMPARE(view.stagesLabel()->text(),
             QString::fromUtf8("calibrate 9.5 µs mean, 31.0 µs max, 80.20 GB/s"));

    // For the source and the pacing the busy fraction is the pipeline's headroom.
    bound.rate_bound = RateBound{"source", 0.4, "ring 3% full"};
    send(bound);
    settle(view);
    QCOMPARE(view.rateBoundLabel()->text(),
             QStringLiteral("source (pipeline 40% busy): ring 3% full"));

    // No busy fraction (null on the wire): the verdict alone.
    bound.rate_bound = RateBound{"idle", 0.0, "no event processed in the last second"};
    send(bound);
    settle(view);
    QCOMPARE(view.rateBoundLabel()->text(),
             QStringLiteral("idle: no event processed in the last second"));
    bound.rate_bound = RateBound{"pipeline", std::numeric_limits<double>::quiet_NaN(), "why"};
    send(bound);
    settle(view);
    QCOMPARE(view.rateBoundLabel()->text(), QStringLiteral("pipeline: why"));

    send(stats(1.25, 120, 480));  // no verdict
    settle(view);
    QCOMPARE(view.rateBoundLabel()->text(), QStringLiteral("-"));
  }

  void latencyChartKeepsFiniteIntervalsOnly() {
    StatsModel model;
    EngineView view(&model);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const double nan = std::numeric_limits<double>::quiet_NaN();
    model.applyStats(stats(0.25, 100, 400), 1);
    model.applyStats(stats(0.50, nan, nan), 1);  // no event left in that interval
    model.applyStats(stats(0.75, 110, 450), 1);
    model.applyStats(stats(1.00, 130, 500), 1);
    settle(view);
    QCOMPARE(model.latencySampleCount(), std::size_t(3));
    QCOMPARE(view.p50Curve()->dataSize(), size_t(3));
    QCOMPARE(view.p99Curve()->dataSize(), size_t(3));
    QCOMPARE(view.p50Curve()->sample(1), QPointF(0.75, 110));
    QCOMPARE(view.p99Curve()->sample(2), QPointF(1.00, 500));
    QCOMPARE(view.latencyLabel()->text(), QString::fromUtf8("p50 130.0 µs · p99 500.0 µs · max 750.0 µs"));
    QCOMPARE(view.latencyAxisTitle(), QString::fromUtf8("latency (µs)"));

    // Latencies of milliseconds are drawn in milliseconds.
    model.applyStats(stats(1.25, 4000, 12'000), 1);
    settle(view);
    QCOMPARE(view.latencyAxisTitle(), QStringLiteral("latency (ms)"));
    QCOMPARE(view.p99Curve()->sample(3), QPointF(1.25, 12.0));
    QCOMPARE(view.p50Curve()->sample(0), QPointF(0.25, 0.1));

    // A new run starts a new series.
    model.applyStats(stats(0.25, 90, 300), 2);
    settle(view);
    QCOMPARE(view.p50Curve()->dataSize(), size_t(1));
    QCOMPARE(model.latestStreams().size(), std::size_t(2));
  }
};

QTEST_MAIN(EngineViewTest)
#include "test_gui_engine_view.moc"
