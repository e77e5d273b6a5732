// The compression view: stats with known compression numbers become the strip chart's samples,
// the histogram's bars and the summary line; stats without a block show "compression off"; and
// the plots really draw (pixels of the canvases that are not background).
#include <cmath>

#include <QDockWidget>
#include <QImage>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QTemporaryDir>
#include <QTest>

#include <qwt_plot.h>
#include <qwt_plot_curve.h>
#include <qwt_plot_histogram.h>

#include "app/app_options.hpp"
#include "app/main_window.hpp"
#include "protocol/topics.hpp"
#include "widgets/compression_view.hpp"
#include "widgets/refresh_coalescer.hpp"
#include "widgets/stats_model.hpp"

using livedrp::protocol::CompressionStats;
using livedrp::protocol::StatsPayload;
using livedrp::widgets::CompressionView;
using livedrp::widgets::StatsModel;

namespace {

StatsPayload stats_at(double elapsed_s, std::uint64_t bytes_in, std::uint64_t bytes_out,
                      double compress_s) {
  StatsPayload stats;
  stats.elapsed_s = elapsed_s;
  stats.backend = "cpu";
  CompressionStats block;
  block.codec = "lossless";
  block.interval_bytes_in = bytes_in;
  block.interval_bytes_out = bytes_out;
  block.total_bytes_in = bytes_in * 10;
  block.total_bytes_out = bytes_out * 10;
  block.interval_ratio = double(bytes_in) / double(bytes_out);
  block.gbps = double(bytes_in) / compress_s / 1e9;
  block.ratio_histogram = {0, 1, 3, 7, 2, 0, 0, 0, 0, 0, 5};
  stats.compression = block;
  return stats;
}

int nonBackgroundPixels(const QImage& image) {
  const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
  const QRgb background = qRgb(255, 255, 255);
  int count = 0;
  // The frame is one pixel wide; look inside it.
  for (int y = 2; y < rgb.height() - 2; ++y) {
    const auto* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
    for (int x = 2; x < rgb.width() - 2; ++x) {
      const QRgb pixel = line[x];
      // The grid is light grey dots; count only clearly coloured pixels.
      const int spread = std::max({qRed(pixel), qGreen(pixel), qBlue(pixel)}) -
                         std::min({qRed(pixel), qGreen(pixel), qBlue(pixel)});
      if (pixel != background && spread > 40) ++count;
    }
  }
  return count;
}

}  // namespace

class CompressionViewTest : public QObject {
  Q_OBJECT

 private slots:
  void samplesAreTheRatioAndThroughputOfEachInterval() {
    CompressionView view(nullptr);
    // 4 MB -> 1 MB in 2 ms (ratio 4, 2 GB/s), then 4 MB -> 2 MB in 4 ms (ratio 2, 1 GB/s).
    view.applyStats(stats_at(0.25, 4'000'000, 1'000'000, 0.002));
    view.applyStats(stats_at(0.50, 4'000'000, 2'000'000, 0.004));
    QVERIFY(view.compressionOn());
    const QwtPlotCurve* ratio = view.ratioCurve();
    const QwtPlotCurve* gbps = view.throughputCurve();
    QCOMPARE(ratio->dataSize(), std::size_t(2));
    QCOMPARE(ratio->sample(0), QPointF(0.25, 4.0));
    QCOMPARE(ratio->sample(1), QPointF(0.50, 2.0));
    QCOMPARE(gbps->dataSize(), std::size_t(2));
    QCOMPARE(gbps->sample(0).y(), 2.0);
    QCOMPARE(gbps->sample(1).y(), 1.0);
    QCOMPARE(view.summaryText(), QStringLiteral("lossless: ratio 2.00 · codec 1.00 GB/s"));
  }

  void histogramBarsAreTheBinsOfTheLatestInterval() {
    CompressionView view(nullptr);
    view.applyStats(stats_at(1.0, 4'000'000, 1'000'000, 0.002));
    const QwtPlotHistogram* histogram = view.ratioHistogram();
    QCOMPARE(histogram->dataSize(), livedrp::protocol::kRatioHistogramBins);
    const double expected[] = {0, 1, 3, 7, 2, 0, 0, 0, 0, 0, 5};
    for (std::size_t bin = 0; bin < histogram->dataSize(); ++bin) {
      const QwtIntervalSample bar = histogram->sample(bin);
      QCOMPARE(bar.value, expected[bin]);
      QCOMPARE(bar.interval.minValue(), std::ldexp(1.0, int(bin) - 1));
      QCOMPARE(bar.interval.maxValue(), std::ldexp(1.0, int(bin)));
    }
  }

  void statsWithoutABlockShowCompressionOff() {
    CompressionView view(nullptr);
    view.applyStats(stats_at(1.0, 4'000'000, 1'000'000, 0.002));
    StatsPayload off;
    off.elapsed_s = 1.25;
    view.applyStats(off);
    QVERIFY(!view.compressionOn());
    QCOMPARE(view.summaryText(), QStringLiteral("compression off"));
    QCOMPARE(view.ratioCurve()->dataSize(), std::size_t(0));
    QCOMPARE(view.ratioHistogram()->dataSize(), std::size_t(0));
  }

  void anIntervalWithoutEventsAddsNoPoint() {
    CompressionView view(nullptr);
    StatsPayload idle = stats_at(1.0, 0, 0, 0);
    idle.compression->interval_ratio = std::nan("");
    idle.compression->gbps = std::nan("");
    view.applyStats(idle);
    QVERIFY(view.compressionOn());
    QCOMPARE(view.ratioCurve()->dataSize(), std::size_t(0));
    QCOMPARE(view.summaryText(), QStringLiteral("compression on, no event compressed yet"));
  }

  void followsTheStatsModel() {
    StatsModel model;
    CompressionView view(&model);
    model.applyStats(stats_at(0.25, 3'000'000, 1'000'000, 0.001), 1);
    QCOMPARE(view.ratioCurve()->dataSize(), std::size_t(1));
    QCOMPARE(view.ratioCurve()->sample(0), QPointF(0.25, 3.0));
  }

  void theCanvasesDrawTheData() {
    CompressionView view(nullptr);
    view.resize(640, 520);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const int empty_chart = nonBackgroundPixels(view.chartPlot()->canvas()->grab().toImage());
    const int empty_histogram =
        nonBackgroundPixels(view.histogramPlot()->canvas()->grab().toImage());
    QCOMPARE(empty_chart, 0);
    QCOMPARE(empty_histogram, 0);
    // A minute of stats fills the strip chart's window: both lines run across the canvas.
    for (int t = 1; t <= 60; ++t)
      view.applyStats(stats_at(t, 4'000'000, 500'000 + 10'000 * t, 0.002));
    // Replots are coalesced: wait for the one that follows the data.
    const std::uint64_t replots = view.replotCount();
    QTRY_VERIFY(view.replotCount() > replots && !view.coalescer()->pending());
    const int chart = nonBackgroundPixels(view.chartPlot()->canvas()->grab().toImage());
    const int histogram = nonBackgroundPixels(view.histogramPlot()->canvas()->grab().toImage());
    qInfo("chart %d, histogram %d coloured pixels", chart, histogram);
    QVERIFY(chart > view.chartPlot()->canvas()->width());
    QVERIFY(histogram > 100);
    // The whole widget too, as a user sees it.
    QVERIFY(!view.grab().toImage().isNull());
  }

  void theMainWindowHasACompressionDockFedByItsModel() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    livedrp::app::AppOptions options;
    options.autostart = false;
    options.settings_file = dir.filePath(QStringLiteral("compression.ini"));
    livedrp::app::MainWindow window(options);
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("compressionDock"));
    QVERIFY(dock);
    QCOMPARE(dock->widget(), static_cast<QWidget*>(window.compressionView()));
    QStringList view_entries;
    for (QAction* menu_action : window.menuBar()->actions())
      if (menu_action->text() == QStringLiteral("&View"))
        for (QAction* action : menu_action->menu()->actions()) view_entries << action->text();
    QVERIFY(view_entries.contains(dock->windowTitle()));

    QCOMPARE(window.compressionView()->summaryText(), QStringLiteral("compression off"));
    window.model()->applyStats(stats_at(0.25, 6'000'000, 1'000'000, 0.003), 1);
    QCOMPARE(window.compressionView()->ratioCurve()->sample(0), QPointF(0.25, 6.0));
  }
};

QTEST_MAIN(CompressionViewTest)
#include "test_gui_compression_view.moc"
