// RateStripChart: what it draws from the StatsModel (curve samples, axis ranges, the value label,
// pixels of the canvas) and how it coalesces replots.
#include <algorithm>
#include <cstdlib>

#include <QElapsedTimer>
#include <QEventLoop>
#include <QImage>
#include <QTest>
#include <QTimer>

#include <qwt_plot_curve.h>
#include <qwt_scale_div.h>

#include "protocol/topics.hpp"
#include "widgets/rate_strip_chart.hpp"
#include "widgets/refresh_coalescer.hpp"
#include "widgets/stats_model.hpp"

using livedrp::protocol::StatsPayload;
using livedrp::widgets::RateStripChart;
using livedrp::widgets::RefreshCoalescer;
using livedrp::widgets::StatsModel;

namespace {
StatsPayload stats(double elapsed_s, double rate_hz, double gbps) {
  StatsPayload s;
  s.elapsed_s = elapsed_s;
  s.event_rate_hz = rate_hz;
  s.input_gbps = gbps;
  return s;
}

// Pixels within `tolerance` (per channel) of `color`: antialiased edges blend, line centres do not.
int countPixels(const QImage& image, const QColor& color, int tolerance = 24) {
  const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
  int count = 0;
  for (int y = 0; y < rgb.height(); ++y) {
    const auto* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
    for (int x = 0; x < rgb.width(); ++x) {
      if (std::abs(qRed(line[x]) - color.red()) <= tolerance &&
          std::abs(qGreen(line[x]) - color.green()) <= tolerance &&
          std::abs(qBlue(line[x]) - color.blue()) <= tolerance) {
        ++count;
      }
    }
  }
  return count;
}

// Waits until the chart has no refresh pending (the coalescer's timer has fired).
bool settle(RateStripChart& chart) {
  return QTest::qWaitFor([&] { return !chart.coalescer()->pending(); }, 2000);
}
}  // namespace

class RateStripChartTest : public QObject {
  Q_OBJECT

 private slots:
  void curvesShowTheLastWindowOfTheModel() {
    StatsModel model;
    RateStripChart chart(&model);
    chart.resize(800, 400);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    for (int t = 0; t <= 120; ++t) model.applyStats(stats(t, 100.0 + t, 0.01 * t));
    QVERIFY(settle(chart));

    // Window of 60 s ending at t = 120: samples t = 60 ... 120.
    QCOMPARE(chart.rateCurve()->dataSize(), size_t(61));
    QCOMPARE(chart.throughputCurve()->dataSize(), size_t(61));
    QCOMPARE(chart.rateCurve()->sample(0), QPointF(60, 160));
    QCOMPARE(chart.rateCurve()->sample(60), QPointF(120, 220));
    QCOMPARE(chart.throughputCurve()->sample(60).y(), 1.2);
    const QwtScaleDiv& x = chart.axisScaleDiv(QwtAxis::XBottom);
    QCOMPARE(x.lowerBound(), 60.0);
    QCOMPARE(x.upperBound(), 120.0);
    // Both value axes start at zero and leave head room above the largest value in view.
    QCOMPARE(chart.axisScaleDiv(QwtAxis::YLeft).lowerBound(), 0.0);
    QVERIFY(chart.axisScaleDiv(QwtAxis::YLeft).upperBound() >= 220.0 * 1.15);
    QCOMPARE(chart.axisScaleDiv(QwtAxis::YRight).lowerBound(), 0.0);
    QVERIFY(chart.axisScaleDiv(QwtAxis::YRight).upperBound() >= 1.2);
    QCOMPARE(chart.currentValueText(), QStringLiteral("220 Hz · 1.20 GB/s"));
  }

  void theWindowStartsAtZeroUntilItIsFull() {
    StatsModel model;
    RateStripChart chart(&model);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    for (int t = 0; t <= 10; ++t) model.applyStats(stats(t, 50, 0.4));
    QVERIFY(settle(chart));
    QCOMPARE(chart.rateCurve()->dataSize(), size_t(11));
    QCOMPARE(chart.axisScaleDiv(QwtAxis::XBottom).lowerBound(), 0.0);
    QCOMPARE(chart.axisScaleDiv(QwtAxis::XBottom).upperBound(), 60.0);
  }

  void saysItIsWaitingBeforeAnyStats() {
    StatsModel model;
    RateStripChart chart(&model);
    QCOMPARE(chart.rateCurve()->dataSize(), size_t(0));
    QCOMPARE(chart.currentValueText(), QStringLiteral("waiting for stats"));
  }

  void aBurstOfUpdatesIsOneReplot() {
    StatsModel model;
    RateStripChart chart(&model);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QVERIFY(settle(chart));
    const auto before = chart.replotCount();
    for (int i = 1; i <= 1000; ++i) model.applyStats(stats(i * 0.01, i, 1));
    QTest::qWait(200);
    QCOMPARE(chart.coalescer()->requestCount() >= 1000, true);
    QCOMPARE(chart.replotCount() - before, std::uint64_t(1));
    QCOMPARE(chart.rateCurve()->sample(chart.rateCurve()->dataSize() - 1).y(), 1000.0);
  }

  void aSteadyFloodReplotsAtMostAboutThirtyTimesASecond() {
    StatsModel model;
    RateStripChart chart(&model);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QVERIFY(settle(chart));
    const auto before = chart.replotCount();
    int updates = 0;
    QTimer feeder;
    feeder.setInterval(1);
    connect(&feeder, &QTimer::timeout, [&] {
      ++updates;
      model.applyStats(stats(updates * 0.001, updates, 1));
    });
    QElapsedTimer clock;
    clock.start();
    feeder.start();
    QEventLoop loop;  // a real event loop: QTest::qWait would sleep in 10 ms steps
    QTimer::singleShot(1000, &loop, &QEventLoop::quit);
    loop.exec();
    feeder.stop();
    const double seconds = clock.elapsed() / 1000.0;
    const auto replots = chart.replotCount() - before;
    qInfo("%d updates, %llu replots in %.2f s", updates, (unsigned long long)replots, seconds);
    QVERIFY(updates > 200);  // a flood: several updates per replot interval
    QVERIFY(replots >= 5);  // it does keep up
    QVERIFY2(replots <= std::uint64_t(seconds * 1000.0 / RefreshCoalescer::kDefaultIntervalMs) + 2,
             qPrintable(QString::number(replots)));
  }

  void aHiddenChartDefersItsReplotUntilShown() {
    StatsModel model;
    RateStripChart chart(&model);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QVERIFY(settle(chart));
    chart.hide();
    const auto before = chart.replotCount();
    for (int t = 0; t < 5; ++t) model.applyStats(stats(t, 10, 1));
    QTest::qWait(150);
    QCOMPARE(chart.replotCount(), before);
    chart.show();
    QVERIFY(QTest::qWaitFor([&] { return chart.replotCount() > before; }, 2000));
    QCOMPARE(chart.rateCurve()->dataSize(), size_t(5));
  }

  void theCanvasShowsBothCurves() {
    StatsModel model;
    RateStripChart chart(&model);
    chart.resize(800, 400);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QVERIFY(settle(chart));
    const QImage empty = chart.canvas()->grab().toImage();
    QCOMPARE(countPixels(empty, RateStripChart::rateColor()), 0);

    // A constant rate and a ramp in throughput: two lines across the canvas.
    for (int t = 0; t <= 60; ++t) model.applyStats(stats(t, 500, 0.02 * t));
    QVERIFY(settle(chart));
    const QImage image = chart.canvas()->grab().toImage();
    const int rate_pixels = countPixels(image, RateStripChart::rateColor());
    const int gbps_pixels = countPixels(image, RateStripChart::throughputColor());
    qInfo("canvas %dx%d: %d rate pixels, %d throughput pixels", image.width(), image.height(),
          rate_pixels, gbps_pixels);
    // A 2-px line across most of the canvas width.
    QVERIFY(rate_pixels > image.width());
    QVERIFY(gbps_pixels > image.width());
    // The background is still mostly background.
    QVERIFY(countPixels(image, Qt::white, 0) > image.width() * image.height() / 2);
  }
};

QTEST_MAIN(RateStripChartTest)
#include "test_gui_rate_strip_chart.moc"
