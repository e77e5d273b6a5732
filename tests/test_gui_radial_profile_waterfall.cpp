// The profile waterfall: its raster holds one row per profile, newest first, with the message's
// intensities; it keeps at most its capacity (fewer rows of very long profiles) and drops the
// oldest; a profile on other bins restarts it; log intensity shows log10; and the image really
// draws different colours where the data differs (and the background where a bin has no pixels).
#include <cmath>
#include <limits>

#include <QCheckBox>
#include <QImage>
#include <QTest>

#include <qwt_plot_canvas.h>
#include <qwt_plot_spectrogram.h>
#include <qwt_scale_map.h>
#include <qwt_scale_widget.h>
#include <qwt_text.h>

#include "protocol/message.hpp"
#include "protocol/profile_topic.hpp"
#include "widgets/profile_model.hpp"
#include "widgets/profile_raster_data.hpp"
#include "widgets/profile_waterfall.hpp"
#include "widgets/radial_profile_view.hpp"
#include "widgets/refresh_coalescer.hpp"

using livedrp::protocol::RadialProfile;
using livedrp::protocol::RadialUnit;
using livedrp::widgets::ProfileModel;
using livedrp::widgets::ProfileRasterData;
using livedrp::widgets::ProfileWaterfall;
using livedrp::widgets::RadialProfileView;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Profile number `k` on 8 bins (2θ 1..8°): bin b holds k * 100 + b, so every row and every bin
// is told apart by its value.
RadialProfile numbered(int k) {
  RadialProfile profile;
  profile.unit = RadialUnit::TwoThetaDeg;
  profile.sequence = std::uint64_t(k);
  profile.average_window = 10;
  profile.average_events = 1;
  for (int bin = 0; bin < 8; ++bin) {
    profile.centres.push_back(1.0 + bin);
    profile.latest.push_back(k * 100.0 + bin);
    profile.average.push_back(0.0);
  }
  return profile;
}

livedrp::protocol::Message received(const RadialProfile& profile) {
  const std::vector<std::string> parts =
      livedrp::protocol::encode(livedrp::protocol::make_profile_message(profile));
  return livedrp::protocol::decode(std::vector<std::string_view>(parts.begin(), parts.end()));
}

}  // namespace

class ProfileWaterfallTest : public QObject {
  Q_OBJECT

 private slots:
  void oneRowPerProfileNewestFirst() {
    ProfileWaterfall waterfall(nullptr, 4);
    for (int k = 1; k <= 3; ++k) waterfall.appendProfile(numbered(k));
    const ProfileRasterData* raster = waterfall.rasterData();
    QCOMPARE(raster->rowCount(), std::size_t(3));
    QCOMPARE(raster->binCount(), std::size_t(8));
    QCOMPARE(raster->row(0), numbered(3).latest);
    QCOMPARE(raster->row(2), numbered(1).latest);
    // value(x, y): x is the radial coordinate, y the age; row 0 covers [0, 1).
    QCOMPARE(raster->value(6.0, 0.5), 305.0);
    QCOMPARE(raster->value(6.0, 2.5), 105.0);
    QCOMPARE(raster->value(1.0, 1.0), 200.0);
    QVERIFY(std::isnan(raster->value(6.0, 3.5)));   // older than the history
    QVERIFY(std::isnan(raster->value(9.0, 0.5)));   // past the last bin (edge at 8.5)
    QVERIFY(std::isnan(raster->value(0.25, 0.5)));  // before the first (edge at 0.5)
    // A bin reaches half-way to its neighbours.
    QCOMPARE(raster->value(6.49, 0.5), 305.0);
    QCOMPARE(raster->value(6.51, 0.5), 306.0);
    QCOMPARE(raster->interval(Qt::XAxis).minValue(), 0.5);
    QCOMPARE(raster->interval(Qt::XAxis).maxValue(), 8.5);
    QCOMPARE(raster->interval(Qt::YAxis).maxValue(), 3.0);
    QCOMPARE(raster->interval(Qt::ZAxis).minValue(), 100.0);
    QCOMPARE(raster->interval(Qt::ZAxis).maxValue(), 307.0);
    // The axes follow: the unit on x, the rows on y, the intensities on the colour bar.
    waterfall.updateAxes();
    QCOMPARE(waterfall.axisTitle(QwtAxis::XBottom).text(), QStringLiteral("2θ (°)"));
    QCOMPARE(waterfall.axisInterval(QwtAxis::YLeft).maxValue(), 3.0);
    QCOMPARE(waterfall.axisInterval(QwtAxis::YRight).maxValue(), 307.0);
    QVERIFY(waterfall.axisWidget(QwtAxis::YRight)->isColorBarEnabled());
  }

  void theOldestRowsGoBeyondTheCapacity() {
    ProfileWaterfall waterfall(nullptr, 4);
    for (int k = 1; k <= 7; ++k) waterfall.appendProfile(numbered(k));
    const ProfileRasterData* raster = waterfall.rasterData();
    QCOMPARE(raster->capacity(), std::size_t(4));
    QCOMPARE(raster->rowCount(), std::size_t(4));
    QCOMPARE(raster->row(0), numbered(7).latest);
    QCOMPARE(raster->row(3), numbered(4).latest);
    QCOMPARE(raster->interval(Qt::ZAxis).minValue(), 400.0);  // profiles 1-3 are gone
  }

  void profilesOfManyBinsKeepFewerRows() {
    // The protocol's largest profile: 65536 bins. 1200 rows of them would be 600 MiB.
    ProfileRasterData raster(ProfileRasterData::kDefaultCapacity);
    const std::size_t bins = livedrp::protocol::kMaxProfileBins;
    std::vector<double> centres(bins), values(bins, 1.0);
    for (std::size_t bin = 0; bin < bins; ++bin) centres[bin] = double(bin);
    for (int k = 0; k < 70; ++k) {
      values[0] = k;
      raster.appendRow(centres, values);
    }
    QCOMPARE(raster.capacity(), ProfileRasterData::kMaxValues / bins);  // 64
    QCOMPARE(raster.rowCount(), raster.capacity());
    QCOMPARE(raster.row(0)[0], 69.0);
    QCOMPARE(raster.row(63)[0], 6.0);
  }

  void otherBinsRestartTheHistory() {
    ProfileWaterfall waterfall(nullptr, 4);
    waterfall.appendProfile(numbered(1));
    waterfall.appendProfile(numbered(2));
    RadialProfile in_q = numbered(3);
    in_q.unit = RadialUnit::QInverseNm;
    for (double& centre : in_q.centres) centre *= 0.7;
    waterfall.appendProfile(in_q);
    QCOMPARE(waterfall.rasterData()->rowCount(), std::size_t(1));
    QCOMPARE(waterfall.rasterData()->centres(), in_q.centres);
    QCOMPARE(waterfall.axisTitle(QwtAxis::XBottom).text(), QStringLiteral("q (nm⁻¹)"));
  }

  void unevenBinsAreLookedUpByTheirEdges() {
    ProfileRasterData raster(2);
    // Edges half-way between centres, the outer ones as far out as the inner: 0.5, 1.5, 3, 6, 10.
    raster.appendRow({1, 2, 4, 8}, {10, 20, 40, 80});
    QVERIFY(std::isnan(raster.value(0.4, 0)));
    QCOMPARE(raster.value(0.6, 0), 10.0);
    QCOMPARE(raster.value(2.9, 0), 20.0);
    QCOMPARE(raster.value(3.1, 0), 40.0);
    QCOMPARE(raster.value(9.9, 0), 80.0);
    QCOMPARE(raster.interval(Qt::XAxis).maxValue(), 10.0);
  }

  void logIntensityShowsLog10AndBlanksWhatALogCannotShow() {
    ProfileWaterfall waterfall(nullptr, 4);
    RadialProfile profile = numbered(1);
    profile.latest[0] = 0.0;
    profile.latest[1] = -5.0;
    profile.latest[2] = 1000.0;
    profile.latest[3] = kNaN;
    waterfall.appendProfile(profile);
    waterfall.setLogIntensity(true);
    const ProfileRasterData* raster = waterfall.rasterData();
    QVERIFY(raster->logIntensity());
    QCOMPARE(raster->value(3.0, 0.5), 3.0);
    QVERIFY(std::isnan(raster->value(1.0, 0.5)));
    QVERIFY(std::isnan(raster->value(2.0, 0.5)));
    QVERIFY(std::isnan(raster->value(4.0, 0.5)));
    QCOMPARE(raster->interval(Qt::ZAxis).minValue(), std::log10(104.0));
    QCOMPARE(raster->interval(Qt::ZAxis).maxValue(), 3.0);
    QVERIFY(waterfall.axisTitle(QwtAxis::YRight).text().startsWith(QStringLiteral("log₁₀")));
    // The stored row is what was received; only the display is logarithmic.
    QCOMPARE(raster->row(0)[2], 1000.0);
    waterfall.setLogIntensity(false);
    QCOMPARE(raster->value(3.0, 0.5), 1000.0);
    QCOMPARE(raster->interval(Qt::ZAxis).minValue(), -5.0);
  }

  void theViewFeedsEveryProfileToTheWaterfall() {
    ProfileModel model;
    RadialProfileView view(&model);
    const ProfileRasterData* raster = view.waterfall()->rasterData();
    QCOMPARE(raster->capacity(), ProfileRasterData::kDefaultCapacity);
    for (int k = 1; k <= 25; ++k) model.apply(received(numbered(k)));
    QCOMPARE(raster->rowCount(), std::size_t(25));
    QCOMPARE(raster->row(0), numbered(25).latest);
    QCOMPARE(raster->row(24), numbered(1).latest);
    view.logColourBox()->setChecked(true);
    QVERIFY(view.waterfall()->logIntensity());
  }

  void theImageShowsDifferentColoursWhereTheDataDiffers() {
    ProfileWaterfall waterfall(nullptr, 8);
    waterfall.resize(600, 400);
    waterfall.show();
    QVERIFY(QTest::qWaitForWindowExposed(&waterfall));
    // Two rows, equal except for a bright bin 5 in the newest and a bin without pixels (7).
    RadialProfile older = numbered(1);
    for (double& value : older.latest) value = 10.0;
    RadialProfile newer = older;
    newer.latest[5] = 1000.0;
    newer.latest[7] = kNaN;
    waterfall.appendProfile(older);
    waterfall.appendProfile(newer);
    waterfall.replot();
    const QImage image = waterfall.canvas()->grab().toImage().convertToFormat(QImage::Format_RGB32);
    const QwtScaleMap x = waterfall.canvasMap(QwtAxis::XBottom);
    const QwtScaleMap y = waterfall.canvasMap(QwtAxis::YLeft);
    const auto at = [&](double radial, double age) {
      return image.pixel(int(x.transform(radial)), int(y.transform(age)));
    };
    const QRgb bright = at(6.0, 0.5);   // newest row, bin 5
    const QRgb dim_new = at(2.0, 0.5);  // newest row, bin 1
    const QRgb dim_old = at(2.0, 1.5);  // older row, bin 1: same value
    const QRgb old_5 = at(6.0, 1.5);    // older row, bin 5: 10, not 1000
    const QRgb empty = at(8.0, 0.5);    // newest row, bin 7: no pixels
    qInfo("bright %08x dim %08x/%08x old %08x empty %08x", bright, dim_new, dim_old, old_5, empty);
    QVERIFY(bright != dim_new);
    QCOMPARE(dim_new, dim_old);
    QCOMPARE(old_5, dim_old);
    QCOMPARE(empty, qRgb(255, 255, 255));  // the canvas background shows through
    QVERIFY(dim_new != qRgb(255, 255, 255));
    // The colour map runs dark to light: the bright bin is lighter.
    QVERIFY(qGray(bright) > qGray(dim_new));
  }
};

QTEST_MAIN(ProfileWaterfallTest)
#include "test_gui_radial_profile_waterfall.moc"
