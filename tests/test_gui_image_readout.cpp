// The image dock's read-out names the detector pixel under the mouse: an ePix10ka2M `image`
// message, as the engine makes it (its assembly from core/image_assembly), goes through the wire
// and the model into the dock; the mouse over a pixel of segment 0, one of segment 5 and a gap
// between segments gives their segment, ss, fs and raw pixel index (worked out from the
// detector's placement: segment 5 sits at x 392, y 360) or "gap"; a detector pixel holding NaN
// is named with "no value"; an image without the assembly says the segment is unknown; a peak's
// read-out names its segment and its ss, fs in it; the maximum and mean images keep naming
// pixels.
#include <QtTest/QtTest>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <QComboBox>

#include <qwt_plot_canvas.h>
#include <qwt_scale_map.h>

#include "core/detector.hpp"
#include "core/image_assembly.hpp"
#include "protocol/message.hpp"
#include "protocol/peaks_topic.hpp"
#include "widgets/detector_image_plot.hpp"
#include "widgets/detector_image_view.hpp"
#include "widgets/image_zoomer.hpp"
#include "widgets/peak_finding_model.hpp"

using namespace livedrp;
using namespace livedrp::widgets;

namespace {

// ePix10ka2M segments are 352 x 384 pixels; segment 5's corner is at x 392, y 360.
constexpr std::uint64_t kSegmentPixels = 352 * 384;
constexpr int kSegment5Column = 392, kSegment5Row = 360;

// Every pixel's value: its index modulo 1000, plus a half, so the read-out's value names it too.
float value_of(std::uint64_t pixel) {
  return float(pixel % 1000) + 0.5f;
}

protocol::ImageFrame epix_image(bool with_assembly) {
  const DetectorDescription detector = find_detector("epix10ka2m");
  const ImageAssembly assembly(detector);
  std::vector<float> values(detector.pixels());
  for (std::size_t pixel = 0; pixel < values.size(); ++pixel) values[pixel] = value_of(pixel);
  protocol::ImageFrame image;
  image.sequence = 77;
  image.pulse_id = 7'700;
  image.height = assembly.height();
  image.width = assembly.width();
  image.pixels.resize(image.height * image.width);
  assembly.assemble(values.data(), image.pixels.data());
  image.unit = "keV";
  image.segments = 16;
  if (with_assembly) image.assembly = assembly.layout();
  return image;
}

protocol::Message through_the_wire(const protocol::Message& message) {
  const std::vector<std::string> parts = protocol::encode(message);
  return protocol::decode(std::vector<std::string_view>(parts.begin(), parts.end()));
}

// The dock's text for the pixel at image column, row: "column C, row R: V keV · segment S, ss Y,
// fs X (raw pixel N)".
QString expected_readout(int column, int row, int segment, int ss, int fs) {
  const std::uint64_t index =
      std::uint64_t(segment) * kSegmentPixels + std::uint64_t(ss) * 384 + std::uint64_t(fs);
  return QStringLiteral("column %1, row %2: %3 keV · segment %4, ss %5, fs %6 (raw pixel %7)")
      .arg(column)
      .arg(row)
      .arg(double(value_of(index)))
      .arg(segment)
      .arg(ss)
      .arg(fs)
      .arg(index);
}

}  // namespace

class ImageReadoutTest : public QObject {
  Q_OBJECT

 private slots:
  void theReadoutNamesSegmentAndPixelOfAnEngineImage() {
    PeakFindingModel model;
    DetectorImageView view(&model);
    QVERIFY(model.apply(through_the_wire(protocol::make_image_message(epix_image(true)))));
    QVERIFY(!view.showingPlaceholder());
    ImageZoomer* zoomer = view.plot()->zoomer();
    // Segment 0, pixel (0, 0): image column 0, row 0.
    QCOMPARE(zoomer->readoutAt(QPointF(0, 0)), expected_readout(0, 0, 0, 0, 0));
    QCOMPARE(zoomer->readoutAt(QPointF(0, 0)),
             QStringLiteral("column 0, row 0: 0.5 keV · segment 0, ss 0, fs 0 (raw pixel 0)"));
    // Segment 5, ss 12, fs 300: column 392 + 300, row 360 + 12; raw pixel 5 * 135168 + 12 * 384 +
    // 300 = 680748, value 748.5.
    QCOMPARE(zoomer->readoutAt(QPointF(692.2, 371.8)),
             QStringLiteral("column 692, row 372: 748.5 keV · segment 5, ss 12, fs 300 (raw pixel "
                            "680748)"));
    QCOMPARE(zoomer->readoutAt(QPointF(kSegment5Column + 383, kSegment5Row + 351)),
             expected_readout(kSegment5Column + 383, kSegment5Row + 351, 5, 351, 383));
    // Columns 384..391 lie between segments 0 and 1: a gap.
    QCOMPARE(zoomer->readoutAt(QPointF(388, 10)),
             QStringLiteral("column 388, row 10: gap (no detector pixel)"));
  }

  void aDetectorPixelWithoutAValueIsStillNamed() {
    // NaN where the assembly puts a detector pixel (a value that was not a number upstream):
    // the pixel is named, its value said to be missing.
    protocol::ImageFrame image = epix_image(true);
    image.pixels[372 * image.width + 692] = std::numeric_limits<float>::quiet_NaN();
    PeakFindingModel model;
    DetectorImageView view(&model);
    QVERIFY(model.apply(through_the_wire(protocol::make_image_message(image))));
    QCOMPARE(view.plot()->zoomer()->readoutAt(QPointF(692, 372)),
             QStringLiteral("column 692, row 372: no value · segment 5, ss 12, fs 300 (raw pixel "
                            "680748)"));
  }

  void theMouseOverAPixelPutsItsNameInTheDock() {
    PeakFindingModel model;
    DetectorImageView view(&model);
    view.resize(900, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(model.apply(through_the_wire(protocol::make_image_message(epix_image(true)))));
    DetectorImagePlot* plot = view.plot();
    QWidget* canvas = plot->canvas();
    const auto hover = [&](int column, int row) {
      // Away first: the pixel is centred each time, and a move to where the mouse already is
      // is no move.
      QTest::mouseMove(canvas, QPoint(2, 2));
      // Zoomed in around the pixel, so that the mouse's canvas pixel lies well inside it.
      plot->zoomer()->zoom(0);
      plot->zoomer()->centreOn(QPointF(column, row));
      plot->replot();
      const QPoint at(int(std::lround(plot->canvasMap(QwtAxis::XBottom).transform(column))),
                      int(std::lround(plot->canvasMap(QwtAxis::YLeft).transform(row))));
      QTest::mouseMove(canvas, at);
    };
    hover(kSegment5Column + 300, kSegment5Row + 12);
    QTRY_COMPARE(view.readoutText(),
                 expected_readout(kSegment5Column + 300, kSegment5Row + 12, 5, 12, 300));
    hover(3, 351);  // segment 0's last row
    QTRY_COMPARE(view.readoutText(), expected_readout(3, 351, 0, 351, 3));
    hover(100, 355);  // rows 352..359 lie between segments 0 and 4
    QTRY_COMPARE(view.readoutText(),
                 QStringLiteral("column 100, row 355: gap (no detector pixel)"));
  }

  void anImageWithoutItsAssemblySaysTheSegmentIsUnknown() {
    // An engine older than the `assembly` field.
    PeakFindingModel model;
    DetectorImageView view(&model);
    const protocol::Message message = protocol::make_image_message(epix_image(false));
    QVERIFY(!message.payload.contains("assembly"));
    QVERIFY(model.apply(through_the_wire(message)));
    ImageZoomer* zoomer = view.plot()->zoomer();
    QCOMPARE(zoomer->readoutAt(QPointF(692, 372)),
             QStringLiteral("column 692, row 372: 748.5 keV · segment unknown (the image came "
                            "without its assembly)"));
    // NaN still marks a gap.
    QCOMPARE(zoomer->readoutAt(QPointF(388, 10)),
             QStringLiteral("column 388, row 10: gap (no detector pixel)"));
  }

  void aPeaksReadoutNamesItsSegmentAndPlaceInIt() {
    PeakFindingModel model;
    DetectorImageView view(&model);
    const DetectorDescription detector = find_detector("epix10ka2m");
    const ImageAssembly assembly(detector);
    protocol::ImageFrame image = epix_image(true);
    // A peak in segment 5 at its ss 12.3, fs 300.6: slab ss 5 * 352 + 12.3.
    protocol::PeakRow peak;
    peak.segment = 5;
    peak.fs = 300.6f;
    peak.ss = 5 * 352 + 12.3f;
    double x = 0, y = 0;
    assembly.slab_to_image(peak.fs, peak.ss, x, y);
    peak.x = float(x);
    peak.y = float(y);
    peak.intensity = 50;
    peak.max_value = 30;
    peak.sigma = 2;
    peak.snr = 12;
    peak.num_pixels = 4;
    image.has_peaks = true;
    image.peaks.sequence = image.sequence;
    image.peaks.pulse_id = image.pulse_id;
    image.peaks.found = 1;
    image.peaks.hit = true;
    image.peaks.min_peaks_for_hit = 1;
    image.peaks.params_version = 1;
    image.peaks.peaks = {peak};
    QVERIFY(model.apply(through_the_wire(protocol::make_image_message(image))));
    view.selectPeak(image.peaks, 0);
    // Column 392 + 300.6, row 360 + 12.3 (slab_to_image: centres at integers).
    QCOMPARE(view.readoutText(),
             QStringLiteral("peak 0: column 692.6, row 372.3 · segment 5, ss 12.3, fs 300.6 · "
                            "intensity 50, SNR 12.0"));

    // Without the assembly the segment is still the peak's own.
    image.assembly.reset();
    image.sequence = image.peaks.sequence = 78;
    QVERIFY(model.apply(through_the_wire(protocol::make_image_message(image))));
    view.selectPeak(image.peaks, 0);
    QCOMPARE(view.readoutText(),
             QStringLiteral("peak 0: column 692.6, row 372.3 · segment 5 · intensity 50, SNR "
                            "12.0"));
  }

  void theMaximumAndMeanImagesStillNamePixels() {
    PeakFindingModel model;
    DetectorImageView view(&model);
    QVERIFY(model.apply(through_the_wire(protocol::make_image_message(epix_image(true)))));
    for (const auto mode :
         {DetectorImageView::ShowMode::Maximum, DetectorImageView::ShowMode::Mean}) {
      view.showSelector()->setCurrentIndex(int(mode));
      QCOMPARE(view.plot()->zoomer()->readoutAt(QPointF(692, 372)),
               expected_readout(692, 372, 5, 12, 300));
    }
  }
};

QTEST_MAIN(ImageReadoutTest)
#include "test_gui_image_readout.moc"
