// The peak table: its rows are the latest list's peaks, value for value in the columns segment,
// fs, ss, intensity, pixels, max, sigma, SNR; the proxy sorts numerically (not as text); the
// summary names the event, the count found and listed, hit or not, the parameter version and a
// re-run; selecting a row reports the peak's index in the list as received, and the image view
// highlights and centres on that peak.
#include <QItemSelectionModel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTest>

#include <qwt_scale_map.h>

#include "protocol/message.hpp"
#include "protocol/peaks_topic.hpp"
#include "widgets/detector_image_plot.hpp"
#include "widgets/detector_image_view.hpp"
#include "widgets/peak_finding_model.hpp"
#include "widgets/peak_overlay.hpp"
#include "widgets/peak_table_model.hpp"
#include "widgets/peak_table_view.hpp"

using namespace livedrp::widgets;
using livedrp::protocol::EventPeaks;
using livedrp::protocol::PeakRow;

namespace {

PeakRow row(int segment, float fs, float ss, float intensity, int pixels, float max, float sigma,
            float snr) {
  PeakRow peak;
  peak.segment = segment;
  peak.fs = fs;
  peak.ss = ss;
  peak.x = fs / 2;
  peak.y = ss / 4;
  peak.intensity = intensity;
  peak.num_pixels = pixels;
  peak.max_value = max;
  peak.sigma = sigma;
  peak.snr = snr;
  return peak;
}

EventPeaks threePeaks() {
  EventPeaks peaks;
  peaks.sequence = 1234;
  peaks.pulse_id = 99;
  peaks.found = 5;  // two more than listed: max_num_peaks cut the list
  peaks.hit = true;
  peaks.min_peaks_for_hit = 3;
  peaks.params_version = 4;
  // SNRs 9, 100, 20: sorted as text "100" < "20" < "9", numerically 9 < 20 < 100.
  peaks.peaks = {row(3, 100.5f, 40.25f, 900.0f, 7, 120.0f, 3.5f, 9.0f),
                 row(0, 10.0f, 20.0f, 5000.0f, 12, 800.0f, 4.0f, 100.0f),
                 row(15, 300.0f, 5000.0f, 1500.0f, 3, 300.0f, 6.25f, 20.0f)};
  return peaks;
}

}  // namespace

class PeakTableTest : public QObject {
  Q_OBJECT

 private slots:
  void theModelHoldsThePeaksValueForValue() {
    PeakTableModel model;
    const EventPeaks peaks = threePeaks();
    model.setPeaks(peaks);
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), 8);
    const QStringList headers{"segment", "fs", "ss", "intensity", "pixels", "max", "sigma", "SNR"};
    for (int column = 0; column < 8; ++column)
      QCOMPARE(model.headerData(column, Qt::Horizontal).toString(), headers[column]);
    for (int r = 0; r < 3; ++r) {
      const PeakRow& peak = peaks.peaks[std::size_t(r)];
      const auto cell = [&](int column) { return model.index(r, column).data(); };
      QCOMPARE(cell(PeakTableModel::Segment).toInt(), peak.segment);
      QCOMPARE(cell(PeakTableModel::Fs).toDouble(), double(peak.fs));
      QCOMPARE(cell(PeakTableModel::Ss).toDouble(), double(peak.ss));
      QCOMPARE(cell(PeakTableModel::Intensity).toDouble(), double(peak.intensity));
      QCOMPARE(cell(PeakTableModel::Pixels).toInt(), peak.num_pixels);
      QCOMPARE(cell(PeakTableModel::Max).toDouble(), double(peak.max_value));
      QCOMPARE(cell(PeakTableModel::Sigma).toDouble(), double(peak.sigma));
      QCOMPARE(cell(PeakTableModel::Snr).toDouble(), double(peak.snr));
      QCOMPARE(model.index(r, 0).data(PeakTableModel::kPeakIndexRole).toInt(), r);
    }
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }

  void sortingIsNumeric() {
    PeakTableView view(nullptr);
    view.showPeaks(threePeaks());
    QSortFilterProxyModel* proxy = view.proxy();
    // Strongest first by default.
    QCOMPARE(proxy->index(0, PeakTableModel::Snr).data().toDouble(), 100.0);
    QCOMPARE(proxy->index(1, PeakTableModel::Snr).data().toDouble(), 20.0);
    QCOMPARE(proxy->index(2, PeakTableModel::Snr).data().toDouble(), 9.0);
    QCOMPARE(view.peakIndexAtRow(0).value(), std::size_t(1));
    view.table()->sortByColumn(PeakTableModel::Snr, Qt::AscendingOrder);
    QCOMPARE(proxy->index(0, PeakTableModel::Snr).data().toDouble(), 9.0);
    QCOMPARE(proxy->index(2, PeakTableModel::Snr).data().toDouble(), 100.0);
    view.table()->sortByColumn(PeakTableModel::Ss, Qt::AscendingOrder);  // 20 < 40.25 < 5000
    QCOMPARE(proxy->index(0, PeakTableModel::Ss).data().toDouble(), 20.0);
    QCOMPARE(proxy->index(1, PeakTableModel::Ss).data().toDouble(), 40.25);
    QCOMPARE(proxy->index(2, PeakTableModel::Ss).data().toDouble(), 5000.0);
    view.table()->sortByColumn(PeakTableModel::Segment, Qt::DescendingOrder);
    QCOMPARE(view.peakIndexAtRow(0).value(), std::size_t(2));  // segment 15
    QCOMPARE(view.peakIndexAtRow(2).value(), std::size_t(1));  // segment 0
    QVERIFY(!view.peakIndexAtRow(3));
  }

  void theSummaryNamesTheEvent() {
    PeakFindingModel model;
    PeakTableView view(&model);
    QVERIFY(view.summaryText().contains(QStringLiteral("no peaks yet")));
    EventPeaks peaks = threePeaks();
    const std::vector<std::string> parts =
        livedrp::protocol::encode(livedrp::protocol::make_peaks_message(peaks));
    QVERIFY(model.apply(
        livedrp::protocol::decode(std::vector<std::string_view>(parts.begin(), parts.end()))));
    QCOMPARE(view.tableModel()->rowCount(), 3);
    const QString summary = view.summaryText();
    QVERIFY2(summary.contains(QStringLiteral("event #1234")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("5 peak(s) found (3 listed")), qPrintable(summary));
    QVERIFY(summary.contains(QStringLiteral("hit")));
    QVERIFY(summary.contains(QStringLiteral("parameters v4")));
    QVERIFY(!summary.contains(QStringLiteral("re-run")));
    peaks.rerun = true;
    peaks.hit = false;
    peaks.found = 1;
    peaks.peaks.resize(1);
    model.applyPeaks(peaks);
    QCOMPARE(view.tableModel()->rowCount(), 1);
    QVERIFY(view.summaryText().contains(QStringLiteral("re-run")));
    QVERIFY(view.summaryText().contains(QStringLiteral("not a hit")));
  }

  void selectingARowHighlightsAndCentresThatPeak() {
    PeakFindingModel model;
    PeakTableView table(&model);
    DetectorImageView image(&model);
    connect(&table, &PeakTableView::peakSelected, &image, &DetectorImageView::selectPeak);
    image.resize(800, 700);
    image.show();
    QVERIFY(QTest::qWaitForWindowExposed(&image));
    auto frame = std::make_shared<livedrp::protocol::ImageFrame>();
    frame->sequence = 1234;
    frame->width = 400;
    frame->height = 1300;
    frame->segments = 1;
    frame->pixels.assign(400 * 1300, 1.0f);
    model.applyImage(frame);
    std::optional<std::size_t> selected;
    connect(&table, &PeakTableView::peakSelected, this,
            [&](const EventPeaks&, std::optional<std::size_t> index) { selected = index; });
    model.applyPeaks(threePeaks());
    QCOMPARE(image.plot()->overlay()->circleCount(), std::size_t(3));
    // Row 0 (SNR sort, descending) is peak 1 of the list: x = 5, y = 5.
    table.table()->selectRow(0);
    QCOMPARE(selected.value(), std::size_t(1));
    QCOMPARE(image.plot()->overlay()->highlighted().value(), std::size_t(1));
    const QwtInterval x = image.plot()->axisInterval(QwtAxis::XBottom);
    const QwtInterval y = image.plot()->axisInterval(QwtAxis::YLeft).normalized();
    QVERIFY(x.contains(5.0) && y.contains(5.0));
    QVERIFY2(x.width() < 400, qPrintable(QString::number(x.width())));  // zoomed in on it
    QVERIFY(image.readoutText().contains(QStringLiteral("peak 1")));
  }
};

QTEST_MAIN(PeakTableTest)
#include "test_gui_peak_table.moc"
