// The radial-profile dock: profile messages (made with the protocol's encoder, sent through
// encode/decode as the subscriber would get them) become curves whose samples are the message's
// numbers; the unit is the x axis title; log y swaps the scale engine; the crosshair read-out
// reports the position and the bin under it; the canvas really draws the curves where the data
// says; and the main window shows a "Radial profile" dock, with its placeholder until a profile
// arrives, fed by the subscriber.
#include <cmath>
#include <limits>

#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QImage>
#include <QMenu>
#include <QMenuBar>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <qwt_plot_canvas.h>
#include <qwt_plot_curve.h>
#include <qwt_scale_engine.h>
#include <qwt_scale_map.h>
#include <qwt_text.h>

#include "app/app_options.hpp"
#include "app/main_window.hpp"
#include "protocol/message.hpp"
#include "protocol/profile_topic.hpp"
#include "publish/publisher.hpp"
#include "widgets/profile_model.hpp"
#include "widgets/profile_raster_data.hpp"
#include "widgets/profile_waterfall.hpp"
#include "widgets/radial_profile_picker.hpp"
#include "widgets/radial_profile_plot.hpp"
#include "widgets/radial_profile_view.hpp"
#include "widgets/refresh_coalescer.hpp"

using livedrp::protocol::Message;
using livedrp::protocol::RadialProfile;
using livedrp::protocol::RadialUnit;
using livedrp::widgets::ProfileModel;
using livedrp::widgets::RadialProfilePlot;
using livedrp::widgets::RadialProfileView;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// 11 bins from 0.05 to 1.05 Å⁻¹: a flat latest profile of 10 with one peak of 100 in the middle
// (bin 5, q = 0.55), and a flat average of 50.
RadialProfile peakProfile(std::uint64_t sequence = 1000) {
  RadialProfile profile;
  profile.unit = RadialUnit::QInverseAngstrom;
  profile.sequence = sequence;
  profile.pulse_id = 70'000 + sequence;
  profile.average_window = 100;
  profile.average_events = 37;
  for (int bin = 0; bin <= 10; ++bin) {
    profile.centres.push_back(0.05 + 0.1 * bin);
    profile.latest.push_back(bin == 5 ? 100.0 : 10.0);
    profile.average.push_back(50.0);
  }
  return profile;
}

// What a subscriber hands the model: the message after the wire.
Message received(const RadialProfile& profile, std::int64_t run = 4) {
  Message message = livedrp::protocol::make_profile_message(profile);
  message.run = run;
  const std::vector<std::string> parts = livedrp::protocol::encode(message);
  return livedrp::protocol::decode(std::vector<std::string_view>(parts.begin(), parts.end()));
}

// Antialiased thin lines blend with the white background, so pixels are classed by hue, not
// matched exactly: the latest curve is blue, the average orange, the grid grey.
bool isBlue(QRgb pixel) {
  return qBlue(pixel) - qRed(pixel) > 60 && qBlue(pixel) > qGreen(pixel);
}
bool isOrange(QRgb pixel) {
  return qRed(pixel) - qBlue(pixel) > 80 && qRed(pixel) > qGreen(pixel);
}

// Pixels of `image` within `box` of the colour class.
int pixelsWhere(const QImage& image, const QRect& box, bool (*colour)(QRgb)) {
  const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
  int count = 0;
  const QRect inside = box.intersected(rgb.rect());
  for (int y = inside.top(); y <= inside.bottom(); ++y) {
    const auto* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
    for (int x = inside.left(); x <= inside.right(); ++x)
      if (colour(line[x])) ++count;
  }
  return count;
}

void waitForReplot(RadialProfileView& view) {
  const std::uint64_t replots = view.replotCount();
  QTRY_VERIFY(view.replotCount() > replots && !view.coalescer()->pending());
}

}  // namespace

class RadialProfileTest : public QObject {
  Q_OBJECT

 private slots:
  void curvesHoldTheMessagesNumbers() {
    ProfileModel model;
    RadialProfileView view(&model);
    const RadialProfile sent = peakProfile();
    QVERIFY(model.apply(received(sent)));
    const RadialProfilePlot* plot = view.plot();
    const QwtPlotCurve* latest = plot->latestCurve();
    const QwtPlotCurve* average = plot->averageCurve();
    QCOMPARE(latest->dataSize(), sent.centres.size());
    QCOMPARE(average->dataSize(), sent.centres.size());
    for (std::size_t bin = 0; bin < sent.centres.size(); ++bin) {
      QCOMPARE(latest->sample(bin), QPointF(sent.centres[bin], sent.latest[bin]));
      QCOMPARE(average->sample(bin), QPointF(sent.centres[bin], sent.average[bin]));
    }
    // The legend says which is which and how many events the average holds.
    QCOMPARE(latest->title().text(), QStringLiteral("latest event (#1000)"));
    QCOMPARE(average->title().text(), QStringLiteral("average of 37 events (filling to 100)"));
    QCOMPARE(view.summaryText(),
             QStringLiteral("run 4 · event #1000 · pulse 71000 · average of 37 of 100 events · "
                            "11 bins"));
  }

  void theRunningAverageCurveFollowsEachMessage() {
    ProfileModel model;
    RadialProfileView view(&model);
    for (std::uint64_t event = 1; event <= 3; ++event) {
      RadialProfile profile = peakProfile(event);
      profile.average_events = event;
      profile.average_window = 3;
      for (double& value : profile.average) value = 20.0 * double(event);
      model.apply(received(profile));
    }
    const QwtPlotCurve* average = view.plot()->averageCurve();
    QCOMPARE(average->dataSize(), std::size_t(11));
    for (std::size_t bin = 0; bin < average->dataSize(); ++bin)
      QCOMPARE(average->sample(bin).y(), 60.0);
    QCOMPARE(average->title().text(), QStringLiteral("average of 3 events"));
    QCOMPARE(model.profileCount(), std::uint64_t(3));
  }

  void binsWithoutPixelsAreLeftOutNotDrawnAsZero() {
    RadialProfileView view(nullptr);
    RadialProfile profile = peakProfile();
    profile.latest[2] = kNaN;
    view.applyProfile(profile);
    const QwtPlotCurve* latest = view.plot()->latestCurve();
    QCOMPARE(latest->dataSize(), std::size_t(10));
    QCOMPARE(latest->sample(1).x(), profile.centres[1]);
    QCOMPARE(latest->sample(2).x(), profile.centres[3]);
  }

  void theUnitTheDataCarriesIsOnTheXAxisAndInTheSelector() {
    RadialProfileView view(nullptr);
    const QComboBox* selector = view.unitSelector();
    QVERIFY(!selector->isEnabled());  // nothing to send a change to until the window says so
    QVERIFY(selector->toolTip().contains(QStringLiteral("asks the engine")));
    QCOMPARE(selector->count(), 4);
    const std::pair<RadialUnit, QString> expected[] = {
        {RadialUnit::TwoThetaDeg, QStringLiteral("2θ (°)")},
        {RadialUnit::QInverseNm, QStringLiteral("q (nm⁻¹)")},
        {RadialUnit::QInverseAngstrom, QStringLiteral("q (Å⁻¹)")},
        {RadialUnit::RadiusMm, QStringLiteral("r (mm)")}};
    for (const auto& [unit, title] : expected) {
      RadialProfile profile = peakProfile();
      profile.unit = unit;
      view.applyProfile(profile);
      QCOMPARE(view.plot()->axisTitle(QwtAxis::XBottom).text(), title);
      QCOMPARE(selector->currentText(), title);
      QCOMPARE(selector->currentData().toString(),
               QString::fromUtf8(std::string(livedrp::protocol::to_string(unit)).c_str()));
      // The numbers are the message's whatever the unit: no conversion.
      QCOMPARE(view.plot()->latestCurve()->sample(0).x(), 0.05);
    }
  }

  // Choosing a unit asks the engine (the window applies integration.unit); the data's unit stays
  // on the axis until profiles in the new unit arrive, and the choice is not undone meanwhile.
  void choosingAUnitAsksTheEngineAndWaitsForItsData() {
    RadialProfileView view(nullptr);
    QSignalSpy requested(&view, &RadialProfileView::unitRequested);
    QComboBox* selector = view.unitSelector();
    view.applyProfile(peakProfile());  // q_A^-1 or whatever peakProfile carries
    const QString shown = selector->currentData().toString();
    view.setUnitChangeAvailable(true);
    QVERIFY(selector->isEnabled());
    const int two_theta = selector->findData(QStringLiteral("2th_deg"));
    QVERIFY(two_theta >= 0);
    QVERIFY(shown != QStringLiteral("2th_deg"));
    selector->setCurrentIndex(two_theta);
    emit selector->activated(two_theta);  // what a user's pick sends
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.at(0).at(0).toString(), QStringLiteral("2th_deg"));
    QCOMPARE(view.pendingUnit(), QStringLiteral("2th_deg"));
    // Another profile in the old unit (the old run draining): the choice stays, the axis follows
    // the data.
    view.applyProfile(peakProfile());
    QCOMPARE(selector->currentData().toString(), QStringLiteral("2th_deg"));
    QCOMPARE(view.plot()->axisTitle(QwtAxis::XBottom).text(),
             selector->itemText(selector->findData(shown)));
    // The new run's profiles: nothing pending any more.
    RadialProfile profile = peakProfile();
    profile.unit = RadialUnit::TwoThetaDeg;
    view.applyProfile(profile);
    QVERIFY(view.pendingUnit().isEmpty());
    QCOMPARE(view.plot()->axisTitle(QwtAxis::XBottom).text(), QStringLiteral("2θ (°)"));
    // Picking the unit already shown asks nothing.
    emit selector->activated(two_theta);
    QCOMPARE(requested.count(), 1);
  }

  void logYSwitchesTheScaleEngine() {
    RadialProfileView view(nullptr);
    RadialProfile profile = peakProfile();
    profile.latest[0] = 0.0;    // cannot be shown on a log axis
    profile.average[1] = -3.0;  // a background-subtracted profile can go negative
    view.applyProfile(profile);
    RadialProfilePlot* plot = view.plot();
    QVERIFY(dynamic_cast<const QwtLinearScaleEngine*>(plot->axisScaleEngine(QwtAxis::YLeft)));
    QCOMPARE(plot->latestCurve()->dataSize(), std::size_t(11));

    view.logYBox()->setChecked(true);
    QVERIFY(plot->logY());
    QVERIFY(dynamic_cast<const QwtLogScaleEngine*>(plot->axisScaleEngine(QwtAxis::YLeft)));
    QCOMPARE(plot->latestCurve()->dataSize(), std::size_t(10));
    QCOMPARE(plot->averageCurve()->dataSize(), std::size_t(10));
    QCOMPARE(plot->latestCurve()->sample(0).x(), profile.centres[1]);

    view.logYBox()->setChecked(false);
    QVERIFY(dynamic_cast<const QwtLinearScaleEngine*>(plot->axisScaleEngine(QwtAxis::YLeft)));
    QCOMPARE(plot->latestCurve()->dataSize(), std::size_t(11));
  }

  void theReadoutSaysWhereTheMouseIsAndWhatTheBinHolds() {
    RadialProfileView view(nullptr);
    view.resize(700, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.applyProfile(peakProfile());
    waitForReplot(view);
    RadialProfilePlot* plot = view.plot();
    QCOMPARE(plot->readoutAt(QPointF(0.56, 42.0)),
             QStringLiteral("q = 0.56 Å⁻¹, I = 42 · bin at 0.55: latest 100, average 50"));

    // A mouse move over the canvas: the crosshair's position in plot coordinates reaches the
    // read-out label.
    QWidget* canvas = plot->canvas();
    const QwtScaleMap x_map = plot->canvasMap(QwtAxis::XBottom);
    const QwtScaleMap y_map = plot->canvasMap(QwtAxis::YLeft);
    const QPoint at(int(std::lround(x_map.transform(0.25))), int(std::lround(y_map.transform(10))));
    QMouseEvent move(QEvent::MouseMove, QPointF(at), canvas->mapToGlobal(QPointF(at)), Qt::NoButton,
                     Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(canvas, &move);
    QApplication::sendEvent(canvas, &move);  // the tracker begins on the first, moves on the next
    const QString text = view.readoutText();
    QVERIFY2(text.startsWith(QStringLiteral("q = 0.2")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("bin at 0.25: latest 10, average 50")), qPrintable(text));
  }

  void theCanvasDrawsTheCurvesWhereTheDataIs() {
    RadialProfileView view(nullptr);
    view.resize(800, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.applyProfile(peakProfile());
    waitForReplot(view);
    RadialProfilePlot* plot = view.plot();
    const QImage canvas = plot->canvas()->grab().toImage();
    const QwtScaleMap x_map = plot->canvasMap(QwtAxis::XBottom);
    const QwtScaleMap y_map = plot->canvasMap(QwtAxis::YLeft);
    const int peak_x = int(x_map.transform(0.55));
    const int flat_x = int(x_map.transform(0.15));
    const int peak_y = int(y_map.transform(100));
    const int flat_y = int(y_map.transform(10));
    const int average_y = int(y_map.transform(50));
    qInfo("canvas %dx%d, peak at (%d, %d), flat at (%d, %d), average y %d", canvas.width(),
          canvas.height(), peak_x, peak_y, flat_x, flat_y, average_y);
    QVERIFY(flat_y - peak_y > 100);  // the peak is well above the baseline on screen

    // The latest curve: blue at the top of the peak and along the baseline, not in between
    // away from the peak.
    QVERIFY(pixelsWhere(canvas, QRect(peak_x - 3, peak_y - 3, 7, 7), isBlue) > 0);
    QVERIFY(pixelsWhere(canvas, QRect(flat_x - 3, flat_y - 3, 7, 7), isBlue) > 0);
    QCOMPARE(pixelsWhere(canvas, QRect(flat_x - 3, peak_y - 3, 7, 7), isBlue), 0);
    // The average: an orange line across at 50, nothing orange at the baseline.
    QVERIFY(pixelsWhere(canvas, QRect(flat_x - 3, average_y - 3, 7, 7), isOrange) > 0);
    QCOMPARE(pixelsWhere(canvas, QRect(flat_x - 3, flat_y - 3, 7, 7), isOrange), 0);
    // Across the whole width: an orange line is at least as wide as the data's range on screen.
    const int line_width = int(x_map.transform(1.05)) - int(x_map.transform(0.05));
    QVERIFY(pixelsWhere(canvas, canvas.rect(), isOrange) >= line_width);

    // A different profile draws differently: a lower peak moves the blue pixels down.
    RadialProfile lower = peakProfile();
    lower.latest[5] = 60;
    view.applyProfile(lower);
    waitForReplot(view);
    const QImage after = plot->canvas()->grab().toImage();
    QVERIFY(after != canvas);
    // The axes were rescaled (and the canvas may have changed width with the labels).
    const QwtScaleMap x_after = plot->canvasMap(QwtAxis::XBottom);
    const QwtScaleMap y_after = plot->canvasMap(QwtAxis::YLeft);
    const int peak_x_after = int(x_after.transform(0.55));
    QVERIFY(y_after.transform(100) < 0);  // 100 is above the canvas now
    QVERIFY(pixelsWhere(after, QRect(peak_x_after - 3, int(y_after.transform(60)) - 3, 7, 7),
                        isBlue) > 0);
    // Lower down, the spike's sides are tens of pixels away from its centre column.
    QCOMPARE(
        pixelsWhere(after, QRect(peak_x_after - 3, int(y_after.transform(40)) - 3, 7, 7), isBlue),
        0);
  }

  void aPlaceholderUntilTheFirstProfileAndAfterAClear() {
    ProfileModel model;
    RadialProfileView view(&model);
    QVERIFY(view.showingPlaceholder());
    QCOMPARE(view.placeholderText(),
             QStringLiteral("no profile data yet: azimuthal integration is not configured"));
    model.apply(received(peakProfile()));
    QVERIFY(!view.showingPlaceholder());
    model.clear();
    QVERIFY(view.showingPlaceholder());
    QCOMPARE(view.plot()->latestCurve()->dataSize(), std::size_t(0));
    QCOMPARE(view.waterfall()->rasterData()->rowCount(), std::size_t(0));
  }

  void refusedProfilesAreSaidSoNotCalledUnconfigured() {
    ProfileModel model;
    RadialProfileView view(&model);
    Message bad = received(peakProfile());
    bad.payload["unit"] = "chi_deg";
    QVERIFY(!model.apply(bad));
    QCOMPARE(model.rejectedCount(), std::uint64_t(1));
    QVERIFY(view.showingPlaceholder());
    QVERIFY2(view.placeholderText().contains(QStringLiteral("1 profile message(s) refused")),
             qPrintable(view.placeholderText()));
    QVERIFY(view.placeholderText().contains(QStringLiteral("field 'unit'")));
    // Other topics are not profiles and not errors.
    Message stats;
    stats.topic = "stats";
    QVERIFY(!model.apply(stats));
    QCOMPARE(model.rejectedCount(), std::uint64_t(1));
  }

  void theMainWindowHasARadialProfileDock() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    livedrp::app::AppOptions options;
    options.autostart = false;
    options.settings_file = dir.filePath(QStringLiteral("profile.ini"));
    livedrp::app::MainWindow window(options);
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("radialProfileDock"));
    QVERIFY(dock);
    QCOMPARE(dock->windowTitle(), QStringLiteral("Radial profile"));
    QCOMPARE(dock->widget(), static_cast<QWidget*>(window.radialProfileView()));
    QStringList view_entries;
    for (QAction* menu_action : window.menuBar()->actions())
      if (menu_action->text() == QStringLiteral("&View"))
        for (QAction* action : menu_action->menu()->actions()) view_entries << action->text();
    QVERIFY(view_entries.contains(QStringLiteral("Radial profile")));
    const auto& topics = livedrp::app::MainWindow::subscribedTopics();
    QVERIFY(std::find(topics.begin(), topics.end(), "profile") != topics.end());

    // The embedded engine's default integrates with the shipped geometry: the dock says so.
    QVERIFY(window.radialProfileView()->showingPlaceholder());
    QVERIFY2(window.radialProfileView()->placeholderText().startsWith(
                 QStringLiteral("no profile data yet: integration with builtin:epix10ka2m")),
             qPrintable(window.radialProfileView()->placeholderText()));
    window.profileModel()->apply(received(peakProfile()));
    QVERIFY(!window.radialProfileView()->showingPlaceholder());
    QCOMPARE(window.radialProfileView()->plot()->latestCurve()->dataSize(), std::size_t(11));
  }

  void theLogTogglesAreSavedWithTheLayout() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    livedrp::app::AppOptions options;
    options.autostart = false;
    options.settings_file = dir.filePath(QStringLiteral("settings.ini"));
    const QString layout = dir.filePath(QStringLiteral("layout.ini"));
    {
      livedrp::app::MainWindow window(options);
      window.radialProfileView()->logYBox()->setChecked(true);
      QVERIFY(window.saveLayout(layout));
    }
    livedrp::app::MainWindow window(options);
    QVERIFY(!window.radialProfileView()->logYBox()->isChecked());
    QVERIFY(window.loadLayout(layout));
    QVERIFY(window.radialProfileView()->logYBox()->isChecked());
    QVERIFY(window.radialProfileView()->plot()->logY());
    QVERIFY(!window.radialProfileView()->logColourBox()->isChecked());
  }

  void profilesAPublisherSendsReachTheDock() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    livedrp::Publisher publisher("tcp://127.0.0.1:*");
    livedrp::app::AppOptions options;
    options.connect = publisher.endpoint();
    options.settings_file = dir.filePath(QStringLiteral("attached.ini"));
    livedrp::app::MainWindow window(options);
    RadialProfileView* view = window.radialProfileView();
    QVERIFY(view->showingPlaceholder());
    // ZeroMQ connects in the background: publish until the window has heard something.
    std::uint64_t sequence = 0;
    for (int i = 0; i < 200 && !window.profileModel()->hasProfile(); ++i) {
      Message message = livedrp::protocol::make_profile_message(peakProfile(++sequence));
      message.run = 9;
      publisher.publish(message);
      QTest::qWait(25);
    }
    QVERIFY2(window.profileModel()->hasProfile(), "no profile reached the window in 5 s");
    QVERIFY(!view->showingPlaceholder());
    QCOMPARE(window.profileModel()->run(), std::int64_t(9));
    QCOMPARE(view->plot()->latestCurve()->dataSize(), std::size_t(11));
    QCOMPARE(view->plot()->latestCurve()->sample(5), QPointF(0.55, 100.0));
    QVERIFY(view->waterfall()->rasterData()->rowCount() >= 1);
  }
};

QTEST_MAIN(RadialProfileTest)
#include "test_gui_radial_profile.moc"
