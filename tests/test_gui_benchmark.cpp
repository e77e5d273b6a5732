// `livedrp --benchmark-gui`: the nearest-rank percentile on known values, the image's source time
// stamp through the `image` topic, and the benchmark on a shown image view: the clock starts at
// the first image drawn, each later image's event-to-screen time is measured from its stamp, the
// window's repaints are counted and the report says so; an image counts as drawn once the
// canvas has painted it, not when its replot is asked for.
#include <QtTest>

#include <QDateTime>
#include <QSignalSpy>
#include <QVBoxLayout>

#include "app/gui_benchmark.hpp"
#include "protocol/peaks_topic.hpp"
#include "widgets/detector_image_plot.hpp"
#include "widgets/detector_image_view.hpp"
#include "widgets/refresh_coalescer.hpp"

using namespace livedrp;
using namespace livedrp::app;

namespace {

std::shared_ptr<protocol::ImageFrame> frameAt(std::uint64_t sequence, std::int64_t source_ns) {
  auto frame = std::make_shared<protocol::ImageFrame>();
  frame->sequence = sequence;
  frame->width = 16;
  frame->height = 12;
  frame->unit = "keV";
  frame->segments = 1;
  frame->pixels.assign(16 * 12, float(sequence));
  frame->source_time_ns = source_ns;
  frame->message_time_ns = source_ns + 30'000'000;  // made 30 ms after the doorbell
  return frame;
}

qint64 nowNs() {
  return QDateTime::currentMSecsSinceEpoch() * 1'000'000;
}

// Counts the paints a widget begins.
class PaintCounter : public QObject {
 public:
  explicit PaintCounter(QWidget* widget) : QObject(widget) { widget->installEventFilter(this); }
  int paints = 0;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() == QEvent::Paint) ++paints;
    return QObject::eventFilter(watched, event);
  }
};

// A window holding one image view, shown.
struct ShownImageView {
  QWidget window;
  widgets::DetectorImageView* view = new widgets::DetectorImageView(nullptr);
  ShownImageView() {
    auto* layout = new QVBoxLayout(&window);
    layout->addWidget(view);
    window.resize(800, 600);
    window.show();
  }
  bool exposed() { return QTest::qWaitForWindowExposed(&window); }
};

}  // namespace

class TestGuiBenchmark : public QObject {
  Q_OBJECT

 private slots:
  void percentilesByNearestRank() {
    QCOMPARE(nearestRankPercentile({5, 1, 3, 2, 4}, 0.5), 3.0);
    QCOMPARE(nearestRankPercentile({5, 1, 3, 2, 4}, 0.95), 5.0);
    QCOMPARE(nearestRankPercentile({5, 1, 3, 2, 4}, 0.0), 1.0);
    QCOMPARE(nearestRankPercentile({10, 20}, 0.5), 10.0);
    QVERIFY(std::isnan(nearestRankPercentile({}, 0.5)));
  }

  void theImageCarriesItsSourceTime() {
    const auto frame = frameAt(7, 1'800'000'000'123'456'789);
    const protocol::Message sent = protocol::make_image_message(*frame);
    const protocol::ImageFrame back = protocol::image_from_message(sent);
    QCOMPARE(back.source_time_ns, std::int64_t(1'800'000'000'123'456'789));
    QCOMPARE(back.message_time_ns, sent.time_ns);  // the header's
    protocol::Message message = protocol::make_image_message(*frame);
    message.payload["source_time_ns"] = "now";
    try {
      protocol::image_from_message(message);
      QFAIL("a text time was accepted");
    } catch (const protocol::ProtocolError& error) {
      QVERIFY2(std::string(error.what()).find("source_time_ns") != std::string::npos, error.what());
    }
    auto unknown = frameAt(8, 0);  // no stamp: no field, read back as 0
    const protocol::Message without = protocol::make_image_message(*unknown);
    QVERIFY(!without.payload.contains("source_time_ns"));
    QCOMPARE(protocol::image_from_message(without).source_time_ns, std::int64_t(0));
  }

  void theBenchmarkMeasuresFromTheFirstImageDrawn() {
    ShownImageView shown;
    QVERIFY(shown.exposed());
    QWidget& window = shown.window;
    widgets::DetectorImageView* view = shown.view;
    GuiBenchmark benchmark(window, *view, 0.5);
    QSignalSpy finished(&benchmark, &GuiBenchmark::finished);
    QVERIFY(!benchmark.running());
    view->showImage(frameAt(1, nowNs() - 50'000'000));
    QTRY_VERIFY(benchmark.running());  // the first image drawn starts the clock, uncounted
    // Three more, each stamped 50 ms before it is shown.
    for (std::uint64_t k = 2; k <= 4; ++k) {
      view->showImage(frameAt(k, nowNs() - 50'000'000));
      QTRY_COMPARE(benchmark.report().images, k - 1);
    }
    QVERIFY(finished.wait(10'000));
    const GuiBenchmarkReport& report = benchmark.report();
    QCOMPARE(report.images, std::uint64_t(3));
    QCOMPARE(report.latency_ms.size(), std::size_t(3));
    for (double ms : report.latency_ms) QVERIFY2(ms >= 49.0, qPrintable(QString::number(ms)));
    // Made 30 ms after the doorbell, 20 ms before it was shown: at least 19 ms to the screen
    // (the clock reads whole milliseconds).
    QCOMPARE(report.window_ms.size(), std::size_t(3));
    for (std::size_t k = 0; k < 3; ++k) {
      QVERIFY2(report.window_ms[k] >= 19.0, qPrintable(QString::number(report.window_ms[k])));
      QCOMPARE(report.latency_ms[k] - report.window_ms[k], 30.0);
    }
    QVERIFY(report.seconds >= 0.5);
    QVERIFY(report.repaints > 0);  // the window drew each image
    const QString text = finished.at(0).at(0).toString();
    QVERIFY2(text.contains(QStringLiteral("event-to-screen over 3 images: p50 ")),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("publish-to-screen (the network and this window): p50 ")),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("window repaints: %1").arg(report.repaints)),
             qPrintable(text));
  }

  // The end point of event-to-screen is the canvas's paint of the image: imageDrawn comes after a
  // paint of the canvas that began after the image was shown (a replot only asks for one).
  void anImageCountsAsDrawnOnceTheCanvasHasPaintedIt() {
    ShownImageView shown;
    QVERIFY(shown.exposed());
    widgets::DetectorImageView* view = shown.view;
    auto* canvas_paints = new PaintCounter(view->plot()->canvas());
    int paints_when_drawn = -1;
    connect(view, &widgets::DetectorImageView::imageDrawn, this,
            [&] { paints_when_drawn = canvas_paints->paints; });
    view->showImage(frameAt(1, nowNs()));
    QTRY_VERIFY(paints_when_drawn >= 0);
    QTRY_VERIFY(!view->coalescer()->pending());

    const int paints_before = canvas_paints->paints;
    paints_when_drawn = -1;
    view->showImage(frameAt(2, nowNs()));
    QTRY_VERIFY(paints_when_drawn >= 0);
    QVERIFY2(paints_when_drawn > paints_before,
             qPrintable(QStringLiteral("%1 paints before, %2 when drawn")
                            .arg(paints_before)
                            .arg(paints_when_drawn)));
  }
};

QTEST_MAIN(TestGuiBenchmark)
#include "test_gui_benchmark.moc"
