// The gain-mode occupancy view: one stacked bar per segment whose parts are the image message's
// fractions (in %), mode names as bar titles in the legend ("bad" last, in red); the summary
// names the segment with most bad pixels; an image without occupancy leaves the placeholder
// saying so.
#include <QTest>

#include <qwt_column_symbol.h>
#include <qwt_plot_multi_barchart.h>
#include <qwt_text.h>

#include "protocol/message.hpp"
#include "protocol/peaks_topic.hpp"
#include "widgets/gain_occupancy_view.hpp"
#include "widgets/peak_finding_model.hpp"

using namespace livedrp::widgets;
using livedrp::protocol::ImageFrame;

namespace {

ImageFrame imageWithOccupancy() {
  ImageFrame image;
  image.sequence = 77;
  image.width = 4;
  image.height = 3;
  image.pixels.assign(12, 1.0f);
  image.unit = "keV";
  image.gain_modes = {"FH", "FM", "AHL-H", "bad"};
  image.segments = 3;
  image.gain_occupancy = {0.5f,  0.25f, 0.125f, 0.125f,  // segment 0
                          1.0f,  0.0f,  0.0f,   0.0f,    // segment 1
                          0.25f, 0.25f, 0.0f,   0.5f};   // segment 2: half bad
  return image;
}

}  // namespace

class GainOccupancyTest : public QObject {
  Q_OBJECT

 private slots:
  void theBarsAreTheFractions() {
    PeakFindingModel model;
    GainOccupancyView view(&model);
    QVERIFY(view.showingPlaceholder());
    const ImageFrame image = imageWithOccupancy();
    const std::vector<std::string> parts =
        livedrp::protocol::encode(livedrp::protocol::make_image_message(image));
    QVERIFY(model.apply(
        livedrp::protocol::decode(std::vector<std::string_view>(parts.begin(), parts.end()))));
    QVERIFY(!view.showingPlaceholder());
    const QwtPlotMultiBarChart* chart = view.chart();
    QCOMPARE(chart->dataSize(), size_t(3));
    for (std::size_t segment = 0; segment < 3; ++segment) {
      const QwtSetSample sample = chart->sample(segment);
      QCOMPARE(sample.value, double(segment));
      QCOMPARE(sample.set.size(), qsizetype(4));
      for (std::size_t mode = 0; mode < 4; ++mode)
        QCOMPARE(sample.set[qsizetype(mode)],
                 100.0 * double(image.gain_occupancy[segment * 4 + mode]));
    }
    const QList<QwtText> titles = chart->barTitles();
    QCOMPARE(titles.size(), qsizetype(4));
    QCOMPARE(titles[0].text(), QStringLiteral("FH"));
    QCOMPARE(titles[3].text(), QStringLiteral("bad"));
    QCOMPARE(chart->symbol(3)->palette().color(QPalette::Window),
             GainOccupancyView::modeColor(3, 4));
    QCOMPARE(GainOccupancyView::modeColor(3, 4), QColor(0xd6, 0x27, 0x28));
    QVERIFY2(view.summaryText().contains(QStringLiteral("segment 2, 50.00 %")),
             qPrintable(view.summaryText()));
  }

  void anImageWithoutModesSaysSo() {
    GainOccupancyView view(nullptr);
    ImageFrame image = imageWithOccupancy();
    image.gain_modes.clear();
    image.gain_occupancy.clear();
    view.showOccupancy(image);
    QVERIFY(view.showingPlaceholder());
    QVERIFY(view.placeholderText().contains(QStringLiteral("event #77")));
    QCOMPARE(view.chart()->dataSize(), size_t(0));
  }
};

QTEST_MAIN(GainOccupancyTest)
#include "test_gui_gain_occupancy.moc"
