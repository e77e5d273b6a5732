// The detector image view: the raster data reads the frame's own floats (pixel centres at
// integers, NaN off the image and in gaps); what is drawn on the canvas is the colour map's
// colour for each value on the linear, log and percentile scales; gaps show the background;
// pixels stay square; the found peaks are circles centred on their x, y; the read-out names the
// pixel under the mouse; the model feeds the view from decoded `image` and `peaks` messages.
#include <cmath>
#include <limits>
#include <memory>

#include <QElapsedTimer>
#include <QImage>
#include <QTest>

#include <qwt_plot_canvas.h>
#include <qwt_scale_div.h>
#include <qwt_scale_map.h>

#include "protocol/message.hpp"
#include "protocol/peaks_topic.hpp"
#include "widgets/colour_scale.hpp"
#include "widgets/detector_image_plot.hpp"
#include "widgets/detector_image_view.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QPushButton>
#include "widgets/image_raster_data.hpp"
#include "widgets/image_zoomer.hpp"
#include "widgets/peak_finding_model.hpp"
#include "widgets/peak_overlay.hpp"

using namespace livedrp::widgets;
using livedrp::protocol::EventPeaks;
using livedrp::protocol::ImageFrame;
using livedrp::protocol::PeakRow;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::shared_ptr<ImageFrame> frameOf(std::uint64_t width, std::uint64_t height, float fill) {
  auto frame = std::make_shared<ImageFrame>();
  frame->sequence = 42;
  frame->pulse_id = 4200;
  frame->width = width;
  frame->height = height;
  frame->unit = "keV";
  frame->segments = 1;  // an image names its segments even without gain modes
  frame->pixels.assign(width * height, fill);
  return frame;
}

void setPixel(ImageFrame& frame, std::size_t column, std::size_t row, float value) {
  frame.pixels[row * frame.width + column] = value;
}

PeakRow peakAt(float x, float y, int pixels) {
  PeakRow peak;
  peak.x = x;
  peak.y = y;
  peak.fs = x + 100;
  peak.ss = y + 200;
  peak.num_pixels = pixels;
  peak.intensity = 50;
  peak.snr = 12;
  peak.max_value = 30;
  peak.sigma = 2;
  return peak;
}

// The colour drawn on the canvas at image coordinates (column, row).
struct Canvas {
  QImage image;
  QwtScaleMap x, y;
  QRgb at(double column, double row) const {
    return image.pixel(int(x.transform(column)), int(y.transform(row)));
  }
};

Canvas grab(DetectorImagePlot& plot) {
  plot.replot();
  return {plot.canvas()->grab().toImage().convertToFormat(QImage::Format_RGB32),
          plot.canvasMap(QwtAxis::XBottom), plot.canvasMap(QwtAxis::YLeft)};
}

QString hex(QRgb rgb) {
  return QString::number(rgb & 0xffffff, 16);
}

}  // namespace

class DetectorImageTest : public QObject {
  Q_OBJECT

 private slots:
  void theRasterReturnsTheFramesValuesAtPixelCentres() {
    auto frame = frameOf(5, 4, 0);
    for (std::size_t row = 0; row < 4; ++row)
      for (std::size_t column = 0; column < 5; ++column)
        setPixel(*frame, column, row, float(row * 10 + column) + 0.25f);
    setPixel(*frame, 3, 2, kNaN);  // a gap
    ImageRasterData raster;
    raster.setFrame(frame);
    for (std::size_t row = 0; row < 4; ++row) {
      for (std::size_t column = 0; column < 5; ++column) {
        if (row == 2 && column == 3) continue;
        const double expected = double(row * 10 + column) + 0.25;
        QCOMPARE(raster.value(double(column), double(row)), expected);
        // Anywhere inside the pixel reads the same pixel.
        QCOMPARE(raster.value(column + 0.49, row - 0.49), expected);
      }
    }
    QVERIFY(std::isnan(raster.value(3, 2)));
    QVERIFY(std::isnan(raster.value(-0.51, 0)));
    QVERIFY(std::isnan(raster.value(4.5, 0)));
    QVERIFY(std::isnan(raster.value(0, 3.5)));
    QCOMPARE(raster.interval(Qt::XAxis).minValue(), -0.5);
    QCOMPARE(raster.interval(Qt::XAxis).maxValue(), 4.5);
    QCOMPARE(raster.interval(Qt::YAxis).maxValue(), 3.5);
    // The raster holds the frame itself, not a copy.
    QCOMPARE(raster.frame().get(), frame.get());
  }

  void scaleRangesComeFromTheFiniteValues() {
    std::vector<float> values(1000);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = float(i);
    values[17] = kNaN;
    values[18] = std::numeric_limits<float>::infinity();  // not finite: left out too
    const QwtInterval linear = colourRange(values, ColourScale::Linear);
    QCOMPARE(linear.minValue(), 0.0);
    QCOMPARE(linear.maxValue(), 999.0);
    const QwtInterval log = colourRange(values, ColourScale::Log);
    QCOMPARE(log.minValue(), 1.0);  // the smallest positive
    QCOMPARE(log.maxValue(), 999.0);
    // 998 finite values: nearest ranks round(0.01 * 997) = 10 and round(0.995 * 997) = 992 of
    // the sorted finite values 0..16, 19..999.
    const QwtInterval clip = colourRange(values, ColourScale::Percentile, 1.0, 99.5);
    QCOMPARE(clip.minValue(), 10.0);
    QCOMPARE(clip.maxValue(), 994.0);
    QCOMPARE(colourPosition(502, QwtInterval(10, 994), ColourScale::Percentile), 0.5);
    QCOMPARE(colourPosition(100, QwtInterval(1, 1000), ColourScale::Log), 2.0 / 3.0);
    QCOMPARE(colourPosition(-3, QwtInterval(1, 1000), ColourScale::Log), 0.0);
    QVERIFY(std::isnan(colourPosition(kNaN, QwtInterval(0, 1), ColourScale::Linear)));
  }

  void linearScaleDrawsTheTopColourOnTheBrightRegionAndTheBottomElsewhere() {
    DetectorImagePlot plot;
    plot.resize(700, 560);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    auto frame = frameOf(64, 48, 0.0f);
    for (std::size_t row = 10; row < 20; ++row)
      for (std::size_t column = 20; column < 30; ++column) setPixel(*frame, column, row, 100.0f);
    for (std::size_t row = 30; row < 40; ++row) setPixel(*frame, 50, row, kNaN);  // a gap
    plot.setColourScale(ColourScale::Linear);
    plot.setPalette(ColourPalette::Viridis);
    plot.setFrame(frame);
    QCOMPARE(plot.colourRange().minValue(), 0.0);
    QCOMPARE(plot.colourRange().maxValue(), 100.0);
    const Canvas canvas = grab(plot);
    const QRgb top = colourAtPosition(ColourPalette::Viridis, 1.0);
    const QRgb bottom = colourAtPosition(ColourPalette::Viridis, 0.0);
    QCOMPARE(top, qRgb(0xfd, 0xe7, 0x25));
    QCOMPARE(hex(canvas.at(25, 15)), hex(top));
    QCOMPARE(hex(canvas.at(20, 10)), hex(top));
    QCOMPARE(hex(canvas.at(5, 40)), hex(bottom));
    QCOMPARE(hex(canvas.at(35, 15)), hex(bottom));
    // The gap is the canvas background, no palette colour.
    QCOMPARE(hex(canvas.at(50, 35)), hex(plot.canvasBackground().color().rgb()));
    // Another palette: the same places, that palette's ends.
    plot.setPalette(ColourPalette::Grey);
    const Canvas grey = grab(plot);
    QCOMPARE(hex(grey.at(25, 15)), hex(qRgb(255, 255, 255)));
    QCOMPARE(hex(grey.at(5, 40)), hex(qRgb(0, 0, 0)));
  }

  void logScaleMapsDecadesToEvenColourSteps() {
    DetectorImagePlot plot;
    plot.resize(700, 560);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    // Four bands of 1, 10, 100, 1000 across the columns, and one non-positive band.
    auto frame = frameOf(50, 20, 0.0f);
    const float bands[] = {1.0f, 10.0f, 100.0f, 1000.0f, -5.0f};
    for (std::size_t row = 0; row < 20; ++row)
      for (std::size_t column = 0; column < 50; ++column)
        setPixel(*frame, column, row, bands[column / 10]);
    plot.setColourScale(ColourScale::Log);
    plot.setPalette(ColourPalette::Inferno);
    plot.setFrame(frame);
    QCOMPARE(plot.colourRange().minValue(), 1.0);
    QCOMPARE(plot.colourRange().maxValue(), 1000.0);
    const Canvas canvas = grab(plot);
    for (int band = 0; band < 4; ++band)
      QCOMPARE(hex(canvas.at(band * 10 + 5, 10)),
               hex(colourAtPosition(ColourPalette::Inferno, band / 3.0)));
    QCOMPARE(hex(canvas.at(45, 10)), hex(colourAtPosition(ColourPalette::Inferno, 0.0)));
  }

  void percentileScaleClipsTheExtremes() {
    DetectorImagePlot plot;
    plot.resize(700, 560);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    // 40 x 25 = 1000 pixels holding 0..999: the 1 % and 99.5 % ranks are 10 and 994.
    auto frame = frameOf(40, 25, 0.0f);
    for (std::size_t i = 0; i < frame->pixels.size(); ++i) frame->pixels[i] = float(i);
    plot.setColourScale(ColourScale::Percentile);
    plot.setPalette(ColourPalette::Viridis);
    plot.setFrame(frame);
    QCOMPARE(plot.colourRange().minValue(), 10.0);
    QCOMPARE(plot.colourRange().maxValue(), 994.0);
    const Canvas canvas = grab(plot);
    const auto at_value = [&](int value) { return canvas.at(value % 40, value / 40); };
    QCOMPARE(hex(at_value(502)), hex(colourAtPosition(ColourPalette::Viridis, 0.5)));
    QCOMPARE(hex(at_value(5)), hex(colourAtPosition(ColourPalette::Viridis, 0.0)));    // clipped
    QCOMPARE(hex(at_value(998)), hex(colourAtPosition(ColourPalette::Viridis, 1.0)));  // clipped
    QCOMPARE(hex(at_value(10 + 246)), hex(colourAtPosition(ColourPalette::Viridis, 0.25)));
  }

  void pixelsStaySquareAndRowZeroIsAtTheTop() {
    DetectorImagePlot plot;
    plot.resize(900, 400);  // a wide canvas for a tall image
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    plot.setFrame(frameOf(100, 300, 1.0f));
    plot.replot();
    QTest::qWait(50);  // the axes' new labels re-lay the plot out; the zoom follows the canvas
    const QwtScaleMap x = plot.canvasMap(QwtAxis::XBottom);
    const QwtScaleMap y = plot.canvasMap(QwtAxis::YLeft);
    const double x_pixels_per_unit = std::abs(x.transform(1) - x.transform(0));
    const double y_pixels_per_unit = std::abs(y.transform(1) - y.transform(0));
    QVERIFY2(std::abs(x_pixels_per_unit - y_pixels_per_unit) < 0.01 * y_pixels_per_unit,
             qPrintable(QStringLiteral("%1 vs %2").arg(x_pixels_per_unit).arg(y_pixels_per_unit)));
    QVERIFY(y.transform(0) < y.transform(299));  // row 0 above row 299
    // The whole image is in view.
    QVERIFY(y.transform(-0.5) >= -1 && y.transform(299.5) <= plot.canvas()->height() + 1);
    // A zoom keeps them square.
    plot.zoomer()->zoom(QRectF(10, 10, 40, 20));
    plot.replot();
    QTest::qWait(50);
    const QwtScaleMap zx = plot.canvasMap(QwtAxis::XBottom);
    const QwtScaleMap zy = plot.canvasMap(QwtAxis::YLeft);
    QVERIFY(std::abs(std::abs(zx.transform(1) - zx.transform(0)) -
                     std::abs(zy.transform(1) - zy.transform(0))) < 0.05);
    QCOMPARE(squarePixelRect(QRectF(0, 0, 10, 10), QSizeF(200, 100)), QRectF(-5, 0, 20, 10));
  }

  void peaksAreCirclesCentredOnTheirXY() {
    DetectorImagePlot plot;
    auto frame = frameOf(64, 48, 1.0f);
    frame->has_peaks = true;
    frame->peaks.sequence = frame->sequence;
    frame->peaks.found = 3;
    frame->peaks.peaks = {peakAt(10.5f, 12.25f, 4), peakAt(40, 30, 49), peakAt(60, 2, 1)};
    plot.setFrame(frame);
    const PeakOverlay* overlay = plot.overlay();
    QCOMPARE(overlay->circleCount(), std::size_t(3));
    QCOMPARE(overlay->circle(0).centre, QPointF(10.5, 12.25));
    QCOMPARE(overlay->circle(1).centre, QPointF(40, 30));
    QCOMPARE(overlay->circle(2).centre, QPointF(60, 2));
    QCOMPARE(overlay->circle(0).radius, 3.0);  // sqrt(4) = 2 < the minimum 3
    QCOMPARE(overlay->circle(1).radius, 7.0);  // sqrt(49)
    QCOMPARE(plot.peaksSequence().value(), std::uint64_t(42));
    // The circles are drawn: the overlay colour appears on the ring of the large peak.
    plot.resize(700, 560);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    plot.setPalette(ColourPalette::Grey);
    const Canvas canvas = grab(plot);
    int ring_pixels = 0;
    const int cx = int(canvas.x.transform(40)), cy = int(canvas.y.transform(30));
    const int r = int(std::lround(std::abs(canvas.x.transform(47) - canvas.x.transform(40))));
    for (int dx = -r - 2; dx <= r + 2; ++dx) {
      const QColor c(canvas.image.pixel(cx + dx, cy));
      if (c.green() > 200 && c.red() < 100 && c.blue() < 150) ++ring_pixels;
    }
    QVERIFY2(ring_pixels >= 2, qPrintable(QString::number(ring_pixels)));
    // A frame of another event without peaks: the old circles go.
    auto next = frameOf(64, 48, 1.0f);
    next->sequence = 43;
    plot.setFrame(next);
    QCOMPARE(plot.overlay()->circleCount(), std::size_t(0));
  }

  void aLargeFrameIsDrawnFromItsOwnPixels() {
    DetectorImagePlot plot;
    plot.resize(900, 800);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    // 2048 x 2048: larger than an assembled ePix10ka2M. A ramp, so the colour range is known.
    auto frame = frameOf(2048, 2048, 0.0f);
    for (std::size_t i = 0; i < frame->pixels.size(); ++i) frame->pixels[i] = float(i % 2048);
    const float* pixels = frame->pixels.data();
    QElapsedTimer clock;
    clock.start();
    plot.setColourScale(ColourScale::Linear);
    plot.setFrame(frame);
    plot.replot();
    const qint64 elapsed = clock.elapsed();
    qInfo("2048 x 2048 frame: colour range and first replot in %lld ms", (long long)elapsed);
    // The view reads the very floats received: no copy was made.
    QCOMPARE(plot.rasterData()->frame()->pixels.data(), pixels);
    QCOMPARE(plot.colourRange().maxValue(), 2047.0);
    QCOMPARE(plot.rasterData()->value(1000, 7), 1000.0);
    // Generous for a loaded 2-core machine; the point is that it is not seconds.
    QVERIFY2(elapsed < 2000, qPrintable(QString::number(elapsed)));
  }

  void theReadoutNamesThePixelUnderTheMouse() {
    DetectorImagePlot plot;
    auto frame = frameOf(8, 6, 2.5f);
    setPixel(*frame, 3, 4, 17.125f);
    setPixel(*frame, 5, 1, kNaN);
    plot.setFrame(frame);
    // frameOf sends no assembly (an older engine's image): the segment cannot be named
    // (test_gui_image_readout has images that name it).
    QCOMPARE(plot.zoomer()->readoutAt(QPointF(3.2, 3.9)),
             QStringLiteral("column 3, row 4: 17.125 keV · segment unknown (the image came "
                            "without its assembly)"));
    QCOMPARE(plot.zoomer()->readoutAt(QPointF(5, 1)),
             QStringLiteral("column 5, row 1: gap (no detector pixel)"));
    QVERIFY(plot.zoomer()->readoutAt(QPointF(9, 1)).isEmpty());
  }

  void theViewFollowsTheModelsDecodedMessages() {
    PeakFindingModel model;
    DetectorImageView view(&model);
    QVERIFY(view.showingPlaceholder());
    auto frame = frameOf(16, 12, 3.0f);
    setPixel(*frame, 7, 5, 9.5f);
    const auto wire = [](const livedrp::protocol::Message& message) {
      const std::vector<std::string> parts = livedrp::protocol::encode(message);
      return livedrp::protocol::decode(std::vector<std::string_view>(parts.begin(), parts.end()));
    };
    QVERIFY(model.apply(wire(livedrp::protocol::make_image_message(*frame))));
    QVERIFY(!view.showingPlaceholder());
    const ImageRasterData* raster = view.plot()->rasterData();
    QCOMPARE(raster->width(), std::size_t(16));
    QCOMPARE(raster->value(7, 5), 9.5);
    QCOMPARE(raster->value(0, 0), 3.0);
    QVERIFY(view.summaryText().contains(QStringLiteral("event #42")));
    // The `peaks` message of the event shown puts its circles on it.
    EventPeaks peaks;
    peaks.sequence = 42;
    peaks.found = 2;
    peaks.hit = true;
    peaks.min_peaks_for_hit = 1;
    peaks.params_version = 1;
    peaks.peaks = {peakAt(7, 5, 9), peakAt(2, 3, 4)};
    QVERIFY(model.apply(wire(livedrp::protocol::make_peaks_message(peaks))));
    QCOMPARE(view.plot()->overlay()->circleCount(), std::size_t(2));
    QCOMPARE(view.plot()->overlay()->circle(0).centre, QPointF(7, 5));
    // Another event's list does not.
    peaks.sequence = 41;
    peaks.peaks = {peakAt(1, 1, 4)};
    QVERIFY(model.apply(wire(livedrp::protocol::make_peaks_message(peaks))));
    QCOMPARE(view.plot()->overlay()->circleCount(), std::size_t(2));
    // A message that does not decode is counted and named, not shown.
    livedrp::protocol::Message bad = livedrp::protocol::make_image_message(*frame);
    bad.payload["width"] = 17;
    QVERIFY(!model.apply(bad));
    QCOMPARE(model.rejectedCount(), std::uint64_t(1));
    QVERIFY(model.lastRejection().contains(QStringLiteral("image")));
    QCOMPARE(raster->width(), std::size_t(16));
  }

  void anImageArrivingDuringADecodeWaitsAndANewerOneReplacesIt() {
    PeakFindingModel model;
    const auto batchOf = [](std::uint64_t sequence) {
      auto frame = frameOf(4, 4, float(sequence));
      frame->sequence = sequence;
      return MessageBatch{std::make_shared<const livedrp::protocol::Message>(
          livedrp::protocol::make_image_message(*frame))};
    };
    std::vector<std::uint64_t> shown;
    connect(&model, &PeakFindingModel::imageReceived, this,
            [&](const ImageFramePtr& image) { shown.push_back(image->sequence); });
    model.apply(batchOf(1));
    QVERIFY(model.decodingImage());
    model.apply(batchOf(2));  // waits
    model.apply(batchOf(3));  // replaces 2
    QTRY_COMPARE(shown.size(), std::size_t(2));
    QTRY_VERIFY(!model.decodingImage());
    QCOMPARE(shown, (std::vector<std::uint64_t>{1, 3}));
    QCOMPARE(model.imagesSkipped(), std::uint64_t(1));
    // A bad image from a batch is refused on the GUI thread, named.
    auto frame = frameOf(4, 4, 1.0f);
    livedrp::protocol::Message bad = livedrp::protocol::make_image_message(*frame);
    bad.payload["height"] = 5;
    model.apply(MessageBatch{std::make_shared<const livedrp::protocol::Message>(bad)});
    QTRY_COMPARE(model.rejectedCount(), std::uint64_t(1));
    QCOMPARE(model.imageCount(), std::uint64_t(2));
  }

  void onlyTheNewestImageOfABatchIsDecoded() {
    PeakFindingModel model;
    MessageBatch batch;
    for (std::uint64_t k = 1; k <= 3; ++k) {
      auto frame = frameOf(4, 4, float(k));
      frame->sequence = k;
      batch.push_back(std::make_shared<const livedrp::protocol::Message>(
          livedrp::protocol::make_image_message(*frame)));
    }
    model.apply(batch);  // decoded off the GUI thread
    QTRY_COMPARE(model.imageCount(), std::uint64_t(1));
    QVERIFY(!model.decodingImage());
    QCOMPARE(model.imagesSkipped(), std::uint64_t(2));
    QCOMPARE(model.latestImage()->sequence, std::uint64_t(3));
    QCOMPARE(model.latestImage()->pixels[0], 3.0f);
  }

  void aFixedColourRangeIsDrawnAndABadOneNamed() {
    DetectorImageView view(nullptr);
    view.resize(900, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    auto frame = frameOf(64, 48, 0.0f);
    for (std::size_t row = 10; row < 20; ++row)
      for (std::size_t column = 20; column < 30; ++column) setPixel(*frame, column, row, 100.0f);
    view.plot()->setPalette(ColourPalette::Grey);
    view.scaleSelector()->setCurrentIndex(int(ColourScale::Linear));
    view.showImage(frame);
    QCOMPARE(view.plot()->colourRange().maxValue(), 100.0);  // automatic: the frame's maximum
    view.fixedRangeBox()->setChecked(true);
    view.rangeMinimumBox()->setValue(0);
    view.rangeMaximumBox()->setValue(200);
    QCOMPARE(view.plot()->colourRange().minValue(), 0.0);
    QCOMPARE(view.plot()->colourRange().maxValue(), 200.0);
    // 100 is half way up 0..200: the grey palette's middle there, black around it.
    const Canvas canvas = grab(*view.plot());
    const QColor middle(canvas.at(25, 15));
    QVERIFY2(std::abs(middle.red() - 128) <= 2, qPrintable(hex(canvas.at(25, 15))));
    QCOMPARE(hex(canvas.at(5, 40)), hex(qRgb(0, 0, 0)));
    // The colour bar shows the fixed range.
    QCOMPARE(view.plot()->axisScaleDiv(QwtAxis::YRight).upperBound(), 200.0);
    // A minimum at or above the maximum is named, and the automatic range comes back.
    view.rangeMinimumBox()->setValue(300);
    QVERIFY2(view.rangeProblem().contains(QStringLiteral("minimum must be below")),
             qPrintable(view.rangeProblem()));
    QCOMPARE(view.plot()->colourRange().maxValue(), 100.0);
    // On the log scale a minimum of 0 cannot be.
    view.rangeMinimumBox()->setValue(0);
    view.scaleSelector()->setCurrentIndex(int(ColourScale::Log));
    QVERIFY(view.rangeProblem().contains(QStringLiteral("log scale")));
    view.rangeMinimumBox()->setValue(1);
    QVERIFY(view.rangeProblem().isEmpty());
    QCOMPARE(view.plot()->colourRange().minValue(), 1.0);
    view.fixedRangeBox()->setChecked(false);
    QVERIFY(!view.plot()->fixedRange().has_value());
  }

  void aFrozenImageStaysAndTheNewestComesBackOnUnfreezing() {
    DetectorImageView view(nullptr);
    auto first = frameOf(8, 6, 1.0f);
    first->sequence = 10;
    view.showImage(first, 3);
    view.freezeButton()->setChecked(true);
    for (std::uint64_t k = 11; k <= 13; ++k) {
      auto next = frameOf(8, 6, float(k));
      next->sequence = k;
      view.showImage(next, 3);
    }
    QCOMPARE(view.plot()->rasterData()->frame()->sequence, std::uint64_t(10));
    QCOMPARE(view.imagesHeldBack(), std::uint64_t(3));
    QVERIFY2(view.summaryText().contains(QStringLiteral("frozen: 3 newer image(s) not shown")),
             qPrintable(view.summaryText()));
    view.freezeButton()->setChecked(false);
    QCOMPARE(view.plot()->rasterData()->frame()->sequence, std::uint64_t(13));
    QCOMPARE(view.plot()->rasterData()->pixel(2, 2), 13.0);
    QVERIFY(!view.summaryText().contains(QStringLiteral("frozen")));
  }

  void theMaximumSinceResetIsEachPixelsLargestValue() {
    DetectorImageView view(nullptr);
    // Three images, each bright in another place, with the same gap in all of them.
    const std::size_t bright[3][2] = {{1, 1}, {4, 2}, {6, 5}};
    for (std::uint64_t k = 0; k < 3; ++k) {
      auto frame = frameOf(8, 6, float(k));  // background 0, 1, 2
      frame->sequence = 100 + k;
      setPixel(*frame, bright[k][0], bright[k][1], 50.0f + float(k));
      setPixel(*frame, 7, 0, kNaN);
      view.showImage(frame, 5);
    }
    view.showSelector()->setCurrentIndex(int(DetectorImageView::ShowMode::Maximum));
    const ImageRasterData* raster = view.plot()->rasterData();
    QCOMPARE(raster->pixel(1, 1), 50.0);
    QCOMPARE(raster->pixel(4, 2), 51.0);
    QCOMPARE(raster->pixel(6, 5), 52.0);
    QCOMPARE(raster->pixel(0, 0), 2.0);        // the largest background
    QVERIFY(std::isnan(raster->pixel(7, 0)));  // a gap in every image stays a gap
    QVERIFY2(view.summaryText().contains(QStringLiteral("maximum of 3 image(s) since reset, events "
                                                        "#100 to #102")),
             qPrintable(view.summaryText()));
    // A new image folds in at once; Reset starts again from the newest.
    auto later = frameOf(8, 6, 0.5f);
    later->sequence = 103;
    view.showImage(later, 5);
    QCOMPARE(raster->pixel(1, 1), 50.0);
    QTest::mouseClick(view.resetMaximumButton(), Qt::LeftButton);
    QCOMPARE(view.plot()->rasterData()->pixel(1, 1), 0.5);
    QVERIFY(view.summaryText().contains(QStringLiteral("maximum of 1 image(s) since reset")));
    // An image of another size starts a new maximum; back to the latest image shows it alone.
    auto other = frameOf(4, 4, 9.0f);
    other->sequence = 104;
    view.showImage(other, 5);
    QCOMPARE(view.plot()->rasterData()->width(), std::size_t(4));
    QCOMPARE(view.plot()->rasterData()->pixel(3, 3), 9.0);
    view.showSelector()->setCurrentIndex(int(DetectorImageView::ShowMode::Latest));
    QCOMPARE(view.plot()->rasterData()->frame()->sequence, std::uint64_t(104));
  }

  void theMeanSinceResetIsEachPixelsMeanOfItsFiniteValues() {
    DetectorImageView view(nullptr);
    // Values 1, 2 and 6 at every pixel but two: one is NaN in the second image only (its mean is
    // that of the other two), one is NaN in all of them (a gap).
    const float values[3] = {1.0f, 2.0f, 6.0f};
    for (std::uint64_t k = 0; k < 3; ++k) {
      auto frame = frameOf(5, 4, values[k]);
      frame->sequence = 200 + k;
      if (k == 1) setPixel(*frame, 2, 2, kNaN);
      setPixel(*frame, 4, 3, kNaN);
      view.showImage(frame, 8);
    }
    view.showSelector()->setCurrentIndex(int(DetectorImageView::ShowMode::Mean));
    const ImageRasterData* raster = view.plot()->rasterData();
    QCOMPARE(raster->pixel(0, 0), 3.0);
    QCOMPARE(raster->pixel(2, 2), 3.5);
    QVERIFY(std::isnan(raster->pixel(4, 3)));
    QVERIFY2(view.summaryText().contains(
                 QStringLiteral("mean of 3 image(s) since reset, events #200 to #202")),
             qPrintable(view.summaryText()));
    // Reset starts again from the newest; the maximum is unaffected by the mode shown.
    QTest::mouseClick(view.resetMaximumButton(), Qt::LeftButton);
    QCOMPARE(view.plot()->rasterData()->pixel(0, 0), 6.0);
    auto next = frameOf(5, 4, 2.0f);
    next->sequence = 203;
    view.showImage(next, 8);
    QCOMPARE(view.plot()->rasterData()->pixel(0, 0), 4.0);
    view.showSelector()->setCurrentIndex(int(DetectorImageView::ShowMode::Maximum));
    QCOMPARE(view.plot()->rasterData()->pixel(0, 0), 6.0);
  }
};

QTEST_MAIN(DetectorImageTest)
#include "test_gui_detector_image.moc"
