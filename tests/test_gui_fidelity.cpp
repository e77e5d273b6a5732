// The Compression fidelity dock (widgets/fidelity_view, app/fidelity_panel): what it draws and
// shows for a `fidelity` message (the relative difference curve point by point, every number in
// its label), what it refuses; its Apply validated with the engine's reader and sent as the
// "compression" and "fidelity" sections; and, end to end, a window attached to an engine that
// samples shows numbers equal to an offline decompress + integrate + peaks of the same event.
#include <QCheckBox>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <limits>

#include <qwt_plot_curve.h>

#include "app/analysis_panel.hpp"
#include "app/app_options.hpp"
#include "app/fidelity_panel.hpp"
#include "app/main_window.hpp"
#include "fidelity_support.hpp"
#include "protocol/fidelity_topic.hpp"
#include "stages/fidelity/fidelity_measures.hpp"
#include "widgets/fidelity_view.hpp"
#include "widgets/number_format.hpp"

using livedrp::app::FidelityPanel;
using livedrp::app::MainWindow;
using livedrp::widgets::FidelityView;
using namespace livedrp;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

protocol::FidelityReport known_report() {
  protocol::FidelityReport r;
  r.sequence = 77;
  r.pulse_id = 7700;
  r.codec = "lossy";
  r.error_bound = 0.5;
  r.samples = 9;
  r.skipped = 4;
  r.samples_hz = 2;
  r.stream_bytes = 1'000'000;
  r.uncompressed_bytes = 8'000'000;
  r.max_pixel_error = 0.49987;
  r.evaluation_ms = 250;
  r.has_profile = true;
  r.unit = protocol::RadialUnit::QInverseAngstrom;
  r.centres = {0.1, 0.2, 0.3, 0.4};
  r.original = {10.0, 20.0, kNaN, 40.0};
  r.decompressed = {10.1, 19.9, kNaN, 40.0};
  r.relative = {0.01, -0.005, kNaN, 0.0};
  r.compared_bins = 3;
  r.max_abs_relative = 0.01;
  r.mean_abs_relative = 0.005;
  r.rms_relative = std::sqrt((0.01 * 0.01 + 0.005 * 0.005) / 3);
  r.has_peaks = true;
  r.params_version = 1;
  r.match_radius_px = 2;
  r.found_original = r.peaks_original = 10;
  r.found_decompressed = r.peaks_decompressed = 9;
  r.kept = 8;
  r.lost = 2;
  r.added = 1;
  r.recall = 0.8;
  r.precision = 8.0 / 9;
  r.mean_shift_px = 0.25;
  r.max_shift_px = 1.25;
  return r;
}

// Every number of `r` as the dock must show it.
void compare_numbers(const FidelityView& view, const protocol::FidelityReport& r) {
  QCOMPARE(view.valueText("recall"), FidelityView::shareText(r.recall));
  QCOMPARE(view.valueText("precision"), FidelityView::shareText(r.precision));
  QCOMPARE(view.valueText("kept"), widgets::formatCount(r.kept));
  QCOMPARE(view.valueText("lost"), widgets::formatCount(r.lost));
  QCOMPARE(view.valueText("added"), widgets::formatCount(r.added));
  QCOMPARE(view.valueText("mean_shift_px"), FidelityView::pixelsText(r.mean_shift_px));
  QCOMPARE(view.valueText("max_shift_px"), FidelityView::pixelsText(r.max_shift_px));
  QCOMPARE(view.valueText("max_abs_relative"), FidelityView::percentText(r.max_abs_relative));
  QCOMPARE(view.valueText("mean_abs_relative"), FidelityView::percentText(r.mean_abs_relative));
  QCOMPARE(view.valueText("rms_relative"), FidelityView::percentText(r.rms_relative));
  QCOMPARE(view.valueText("max_pixel_error"), FidelityView::valueInUnitText(r.max_pixel_error));
  QCOMPARE(view.valueText("error_bound"), FidelityView::valueInUnitText(r.error_bound));
}

// The curve's points: (centre, relative in percent) of every bin with a relative difference.
void compare_curve(const FidelityView& view, const std::vector<double>& centres,
                   const std::vector<double>& relative) {
  const QwtPlotCurve* curve = view.relativeCurve();
  std::size_t point = 0;
  for (std::size_t bin = 0; bin < relative.size(); ++bin) {
    if (std::isnan(relative[bin])) continue;
    QVERIFY(point < curve->dataSize());
    QCOMPARE(curve->sample(int(point)).x(), centres[bin]);
    QVERIFY2(std::abs(curve->sample(int(point)).y() - relative[bin] * 100) <= 1e-7,
             qPrintable(QStringLiteral("bin %1").arg(bin)));
    ++point;
  }
  QCOMPARE(curve->dataSize(), point);
}

}  // namespace

class TestGuiFidelity : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void a_report_is_drawn_as_a_curve_and_shown_as_numbers() {
    FidelityView view;
    view.resize(700, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(view.valueText("recall"), QStringLiteral("n/a"));  // nothing yet
    QCOMPARE(view.relativeCurve()->dataSize(), std::size_t(0));

    const protocol::FidelityReport sent = known_report();
    protocol::Message message = protocol::make_fidelity_message(sent);
    message.run = 12;
    QVERIFY(view.apply(message));
    compare_curve(view, sent.centres, sent.relative);
    QCOMPARE(view.relativeCurve()->sample(0), QPointF(0.1, 1.0));  // 0.01 is 1 %
    compare_numbers(view, sent);
    QCOMPARE(view.valueText("recall"), QStringLiteral("0.800"));
    QCOMPARE(view.valueText("max_abs_relative"), QStringLiteral("1 %"));
    QCOMPARE(view.valueText("max_shift_px"), QStringLiteral("1.25 px"));
    QCOMPARE(view.valueText("ratio"), QStringLiteral("8.00"));
    QCOMPARE(view.valueText("skipped"), QStringLiteral("4"));
    QVERIFY(view.summaryLabel()->text().contains(QStringLiteral("Run 12, event 77")));
    const std::uint64_t replots = view.replotCount();
    QTRY_VERIFY(view.replotCount() > replots);
  }

  void undefined_numbers_read_not_available_and_a_report_without_peaks_clears_them() {
    FidelityView view;
    protocol::FidelityReport r = known_report();
    r.has_peaks = false;
    r.compared_bins = 0;
    r.relative = {kNaN, kNaN, kNaN, kNaN};
    r.max_abs_relative = r.mean_abs_relative = r.rms_relative = kNaN;
    QVERIFY(view.apply(protocol::make_fidelity_message(r)));
    QCOMPARE(view.valueText("max_abs_relative"), QStringLiteral("n/a"));
    QCOMPARE(view.valueText("recall"), QStringLiteral("n/a"));
    QCOMPARE(view.relativeCurve()->dataSize(), std::size_t(0));
  }

  void a_malformed_message_is_counted_and_the_last_report_stays() {
    FidelityView view;
    QVERIFY(view.apply(protocol::make_fidelity_message(known_report())));
    QSignalSpy rejected(&view, &FidelityView::rejected);
    protocol::Message bad = protocol::make_fidelity_message(known_report());
    bad.payload["recall"] = 3.0;
    QVERIFY(!view.apply(bad));
    QCOMPARE(view.rejectedCount(), std::uint64_t(1));
    QCOMPARE(rejected.count(), 1);
    QVERIFY(view.lastRejection().contains(QStringLiteral("recall")));
    QCOMPARE(view.valueText("recall"), QStringLiteral("0.800"));
    QCOMPARE(view.reportCount(), std::uint64_t(1));
  }

  void the_newest_report_of_a_batch_is_the_one_shown() {
    FidelityView view;
    protocol::FidelityReport older = known_report();
    protocol::FidelityReport newer = known_report();
    newer.sequence = 78;
    newer.kept = 9;
    newer.lost = 1;
    newer.added = 0;
    newer.recall = 0.9;
    newer.precision = 1.0;
    widgets::MessageBatch batch;
    batch << std::make_shared<protocol::Message>(protocol::make_fidelity_message(older))
          << std::make_shared<protocol::Message>(protocol::make_fidelity_message(newer));
    view.apply(batch);
    QCOMPARE(view.report().sequence, std::uint64_t(78));
    QCOMPARE(view.valueText("recall"), QStringLiteral("0.900"));
    QCOMPARE(view.reportCount(), std::uint64_t(1));  // the older one was not drawn first
  }

  void apply_is_validated_by_the_engines_reader_and_sends_the_bound_and_sampling() {
    FidelityPanel panel;
    std::vector<nlohmann::json> sent;
    connect(&panel, &FidelityPanel::applyRequested, this,
            [&](const nlohmann::json& sections) { sent.push_back(sections); });
    panel.boundField()->setText(QStringLiteral("-1"));
    QVERIFY(!panel.apply());
    QVERIFY2(panel.errorText().contains(QStringLiteral("compression.error_bound")),
             qPrintable(panel.errorText()));
    panel.boundField()->setText(QStringLiteral("tight"));
    QVERIFY(!panel.apply());
    QVERIFY(panel.errorText().contains(QStringLiteral("compression.error_bound")));
    panel.boundField()->setText(QStringLiteral("0.75"));
    panel.samplesHzField()->setText(QStringLiteral("0"));
    QVERIFY(!panel.apply());
    QVERIFY(panel.errorText().contains(QStringLiteral("fidelity.samples_hz")));
    QVERIFY(sent.empty());  // nothing refused is sent

    panel.samplesHzField()->setText(QStringLiteral("3"));
    panel.samplingBox()->setChecked(true);
    QVERIFY(panel.apply());
    QVERIFY(panel.errorText().isEmpty());
    QCOMPARE(sent.size(), std::size_t(1));
    const nlohmann::json& sections = sent.front();
    QCOMPARE(sections.at("compression").at("codec").get<std::string>(), std::string("lossy"));
    QCOMPARE(sections.at("compression").at("error_bound").get<double>(), 0.75);
    QCOMPARE(sections.at("fidelity").at("enabled").get<bool>(), true);
    QCOMPARE(sections.at("fidelity").at("samples_hz").get<double>(), 3.0);
  }

  void the_fields_follow_each_reports_bound_and_rate_until_edited() {
    FidelityPanel panel;
    protocol::FidelityReport report = known_report();
    report.error_bound = 0.25;
    report.samples_hz = 3;
    panel.view()->showReport(report, 1);
    QVERIFY(panel.samplingBox()->isChecked());
    QCOMPARE(panel.samplesHzField()->text(), QStringLiteral("3"));
    QCOMPARE(panel.boundField()->text(), QStringLiteral("0.25"));
    // Being edited, the fields keep what the user typed.
    panel.boundField()->setText(QStringLiteral("0.6"));
    emit panel.boundField()->textEdited(QStringLiteral("0.6"));
    report.error_bound = 0.125;
    panel.view()->showReport(report, 1);
    QCOMPARE(panel.boundField()->text(), QStringLiteral("0.6"));
  }

  void the_window_has_the_dock_subscribes_to_the_topic_and_applies_to_the_next_run() {
    livedrp::app::AppOptions options;
    options.autostart = false;
    options.settings_file = dir_.filePath(QStringLiteral("fidelity.ini"));
    MainWindow window(options);
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("fidelityDock"));
    QVERIFY(dock);
    QCOMPARE(dock->widget(), static_cast<QWidget*>(window.fidelityPanel()));
    QStringList view_entries;
    for (QAction* menu_action : window.menuBar()->actions())
      if (menu_action->text() == QStringLiteral("&View"))
        for (QAction* action : menu_action->menu()->actions()) view_entries << action->text();
    QVERIFY(view_entries.contains(dock->windowTitle()));
    const auto& topics = MainWindow::subscribedTopics();
    QVERIFY(std::find(topics.begin(), topics.end(), std::string(protocol::kTopicFidelity)) !=
            topics.end());

    // The configuration in force, wherever it comes from, is what the dock's fields show.
    EngineConfig opened = window.engineConfig();
    opened.fidelity.enabled = true;
    opened.fidelity.samples_hz = 7;
    opened.compression.error_bound = 0.9;
    window.analysis()->setConfig(opened);
    QVERIFY(window.fidelityPanel()->samplingBox()->isChecked());
    QCOMPARE(window.fidelityPanel()->samplesHzField()->text(), QStringLiteral("7"));
    QCOMPARE(window.fidelityPanel()->boundField()->text(), QStringLiteral("0.9"));

    // No run going: Apply makes it the next run's configuration.
    FidelityPanel* panel = window.fidelityPanel();
    panel->samplingBox()->setChecked(true);
    panel->samplesHzField()->setText(QStringLiteral("4"));
    panel->boundField()->setText(QStringLiteral("0.3"));
    QVERIFY(panel->apply());
    // Checked against the detector off the GUI thread first (app/engine_config_check.hpp).
    QTRY_VERIFY_WITH_TIMEOUT(!panel->isApplying(), 120'000);
    QVERIFY2(panel->errorText().isEmpty(), qPrintable(panel->errorText()));
    QCOMPARE(window.engineConfig().fidelity.enabled, true);
    QCOMPARE(window.engineConfig().fidelity.samples_hz, 4.0);
    QCOMPARE(window.engineConfig().compression.error_bound, 0.3);
    QVERIFY(!panel->isApplying());
  }

  void an_attached_window_shows_what_an_offline_decompress_integrate_and_search_gives() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    EngineConfig config = fidelity_test::fidelity_config(dir, "lossy", 1.0);
    config.events = 3;
    config.publish = "tcp://127.0.0.1:*";
    // Noise peaks near the SNR cut (fixed medium and low gains), so that some are lost and added.
    config.simulator_gain_configs = {"FH", "FM", "FL", "AHL", "AML"};
    Engine engine(config);
    livedrp::app::AppOptions options;
    options.connect = engine.publish_endpoint();
    options.settings_file = dir_.filePath(QStringLiteral("attached.ini"));
    MainWindow window(options);
    window.show();
    FidelityView* view = window.fidelityPanel()->view();
    engine.start();
    engine.wait();
    // The run's last sample is the topic's kept message: it reaches the window however late the
    // subscription came.
    while (view->reportCount() == 0) QTest::qWait(20);
    const protocol::FidelityReport shown = view->report();

    ThreadPool pool(2);
    const DetectorSimulator simulator = live_peaks_test::engine_simulator(config, pool);
    const DetectorDescription& detector = simulator.detector();
    const live_peaks_test::OfflineEvents events =
        live_peaks_test::offline_events(config, simulator, pool);
    const std::size_t index = events.index_of(shown.sequence);
    QVERIFY(index < events.sequences.size());
    const fidelity_test::Offline offline = fidelity_test::offline_sample(
        config, detector, simulator.constants(), events.raw[index], events.calibrated[index]);

    const stages::ProfileDifference difference =
        stages::compare_profiles(offline.original_profile, offline.decompressed_profile);
    const stages::PeakMatch match =
        stages::match_peaks(offline.original_peaks.peaks, offline.decompressed_peaks.peaks,
                            config.fidelity.match_radius_px);
    protocol::FidelityReport expected = shown;  // the counts and timings are the engine's own
    expected.max_pixel_error = stages::max_pixel_error(events.calibrated[index], offline.decoded);
    expected.max_abs_relative = difference.max_abs;
    expected.mean_abs_relative = difference.mean_abs;
    expected.rms_relative = difference.rms;
    expected.kept = match.kept;
    expected.lost = match.lost;
    expected.added = match.added;
    expected.recall = match.recall;
    expected.precision = match.precision;
    expected.mean_shift_px = match.mean_shift_px;
    expected.max_shift_px = match.max_shift_px;
    qInfo("shown: recall %s, precision %s, %s kept, %s lost, %s added, profile max %s",
          qPrintable(view->valueText("recall")), qPrintable(view->valueText("precision")),
          qPrintable(view->valueText("kept")), qPrintable(view->valueText("lost")),
          qPrintable(view->valueText("added")), qPrintable(view->valueText("max_abs_relative")));
    QVERIFY(match.lost + match.added > 0);  // the lists differ: the matching is exercised
    compare_numbers(*view, expected);
    compare_curve(*view, shown.centres, difference.relative);
    QCOMPARE(view->valueText("ratio"), QString::number(double(detector.pixels() * sizeof(float)) /
                                                           double(offline.stream.size()),
                                                       'f', 2));
  }
};

QTEST_MAIN(TestGuiFidelity)
#include "test_gui_fidelity.moc"
