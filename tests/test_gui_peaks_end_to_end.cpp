// Peak finding in the window with the embedded engine: a run on the simulated ePix10ka2M with
// peak finding on brings `image` messages to the detector image (the raster reads the decoded
// frame itself), `peaks` messages to the peak table, the stats' hit rate to the chart; the
// tuning panel shows the parameters in force, Apply changes them on the running run (version
// 2, same run number), the engine's refusal of a bad name shows in red, and a re-run answers
// with its counts and publishes re-run peak lists.
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "app/app_options.hpp"
#include "app/engine_host.hpp"
#include "app/main_window.hpp"
#include "app/peak_tuning_panel.hpp"
#include "app/remote_control.hpp"
#include "app/subscriber_thread.hpp"
#include "exec/engine.hpp"
#include "exec/engine_controller.hpp"
#include "publish/control_server.hpp"
#include "widgets/detector_image_plot.hpp"
#include "widgets/detector_image_view.hpp"
#include "widgets/hit_rate_model.hpp"
#include "widgets/image_raster_data.hpp"
#include "widgets/peak_finding_model.hpp"
#include "widgets/peak_table_model.hpp"
#include "widgets/peak_table_view.hpp"

using livedrp::EngineConfig;
using livedrp::app::AppOptions;
using livedrp::app::MainWindow;
using livedrp::app::PeakTuningPanel;

namespace {
// Generous limits for a loaded 2-core machine: the CPU peak finder searches 5.5 Mpixel events.
constexpr int kTimeoutMs = 60'000;

// A small run with peak finding on, every simulated event a hit.
EngineConfig peakConfig() {
  EngineConfig config;
  config.source = "sim:epix10ka2m";
  config.backend = "cpu";
  config.rate_hz = 4;
  config.publish = "tcp://127.0.0.1:*";
  config.cpu_threads = 1;
  config.simulator_pool = 2;
  config.hit_fraction = 1.0;
  config.peak_finding.enabled = true;
  config.image.publish_hz = 4;
  return config;
}
}  // namespace

class PeaksEndToEndTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void theDocksFollowTheEmbeddedEnginesPeakFinding() {
    // The window takes its engine configuration from its settings file.
    const EngineConfig config = peakConfig();
    const QString ini = dir_.filePath(QStringLiteral("peaks.ini"));
    {
      QSettings settings(ini, QSettings::IniFormat);
      settings.setValue("engine/config", QString::fromStdString(config.to_json().dump()));
    }
    AppOptions options;
    options.settings_file = ini;
    options.autostart = true;
    MainWindow window(options);

    // The tuning panel shows what the run has in force.
    PeakTuningPanel* panel = window.peakTuning();
    QTRY_VERIFY_WITH_TIMEOUT(panel->paramsVersion().has_value(), kTimeoutMs);
    QCOMPARE(*panel->paramsVersion(), std::uint64_t(1));
    QCOMPARE(*panel->engineEnabled(), true);
    QCOMPARE(double(panel->inForce().minimum_snr), 5.0);

    // Images reach the view: the raster reads the model's decoded frame itself.
    livedrp::widgets::PeakFindingModel* model = window.peakModel();
    QTRY_VERIFY_WITH_TIMEOUT(model->imageCount() > 0, kTimeoutMs);
    const auto* raster = window.detectorImageView()->plot()->rasterData();
    QCOMPARE(raster->frame().get(), model->latestImage().get());
    QVERIFY(raster->width() > 0 && raster->height() > 0);
    QCOMPARE(window.detectorImageView()->showingPlaceholder(), false);
    // Hits reach the table.
    QTRY_VERIFY_WITH_TIMEOUT(model->peaksCount() > 0, kTimeoutMs);
    QCOMPARE(std::size_t(window.peakTableView()->tableModel()->rowCount()),
             model->latestPeaks().peaks.size());
    // The hit rate reaches the chart's model.
    QTRY_VERIFY_WITH_TIMEOUT(window.hitRateModel()->sampleCount() > 0, kTimeoutMs);
    QVERIFY(window.hitRateModel()->latest().has_value());
    const auto run = window.engineHost()->currentConfig().run;

    // Apply a change: version 2 on the same run.
    qobject_cast<QDoubleSpinBox*>(panel->field("minimum_snr"))->setValue(6.5);
    QVERIFY(panel->apply());
    QTRY_COMPARE_WITH_TIMEOUT(panel->paramsVersion().value(), std::uint64_t(2), kTimeoutMs);
    QCOMPARE(double(panel->inForce().minimum_snr), 6.5);
    QVERIFY(panel->refusalText().isEmpty());
    QCOMPARE(window.engineHost()->currentConfig().run, run);
    QTRY_COMPARE_WITH_TIMEOUT(
        double(window.engineHost()->currentConfig().peak_finding.params.minimum_snr), 6.5,
        kTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(
        window.hitRateModel()->latest() && window.hitRateModel()->latest()->params_version == 2,
        kTimeoutMs);

    // The engine refuses a name it does not know, and says which.
    window.engineHost()->setPeakParams({{"params", {{"minimum_snrr", 3}}}});
    QTRY_VERIFY_WITH_TIMEOUT(panel->refusalText().contains(QStringLiteral("minimum_snrr")),
                             kTimeoutMs);
    QCOMPARE(panel->paramsVersion().value(), std::uint64_t(2));

    // A re-run on two kept frames: its reply, and re-run lists on the wire (live hits may follow
    // them at once, so every list received is looked at, not only the latest).
    std::vector<livedrp::protocol::EventPeaks> reruns;
    connect(model, &livedrp::widgets::PeakFindingModel::peaksReceived, this,
            [&](const livedrp::protocol::EventPeaks& peaks) {
              if (peaks.rerun) reruns.push_back(peaks);
            });
    panel->rerunFramesBox()->setValue(2);
    panel->rerun();
    QTRY_VERIFY_WITH_TIMEOUT(
        panel->statusText().contains(QStringLiteral("re-run with parameters v2 on 2 frame(s)")),
        kTimeoutMs);
    QTRY_COMPARE_WITH_TIMEOUT(reruns.size(), std::size_t(2), kTimeoutMs);
    QCOMPARE(reruns[0].params_version, std::uint64_t(2));
    QCOMPARE(reruns[1].params_version, std::uint64_t(2));

    window.stopRun();
    QTRY_VERIFY_WITH_TIMEOUT(!window.engineHost()->isActive(), kTimeoutMs);
  }

  void theImageScaleAndPaletteAreSavedWithTheLayout() {
    AppOptions options;
    options.autostart = false;
    options.settings_file = dir_.filePath(QStringLiteral("image.ini"));
    const QString layout = dir_.filePath(QStringLiteral("layout.ini"));
    {
      MainWindow window(options);
      window.detectorImageView()->scaleSelector()->setCurrentText(QStringLiteral("log"));
      window.detectorImageView()->paletteSelector()->setCurrentText(QStringLiteral("grey"));
      QCOMPARE(window.detectorImageView()->plot()->colourScale(),
               livedrp::widgets::ColourScale::Log);
      QVERIFY(window.saveLayout(layout));
    }
    MainWindow window(options);
    QVERIFY(window.loadLayout(layout));
    QCOMPARE(window.detectorImageView()->scaleSelector()->currentText(), QStringLiteral("log"));
    QCOMPARE(window.detectorImageView()->plot()->palette(), livedrp::widgets::ColourPalette::Grey);
  }

  void aRemoteEngineIsTunedThroughItsControlSocket() {
    livedrp::EngineController controller(peakConfig());
    livedrp::ControlServer server(controller, "tcp://127.0.0.1:*");
    QVERIFY(controller.start());
    AppOptions options;
    options.connect =
        livedrp::app::connectableEndpoint(QString::fromStdString(controller.publish_endpoint()))
            .toStdString();
    options.control = server.endpoint();
    options.settings_file = dir_.filePath(QStringLiteral("remote.ini"));
    MainWindow window(options);
    PeakTuningPanel* panel = window.peakTuning();
    QVERIFY(panel->applyButton()->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(panel->paramsVersion().has_value(), kTimeoutMs);
    QCOMPARE(*panel->paramsVersion(), std::uint64_t(1));

    qobject_cast<QSpinBox*>(panel->field("min_pixel_count"))->setValue(3);
    QVERIFY(panel->apply());
    QTRY_COMPARE_WITH_TIMEOUT(panel->paramsVersion().value(), std::uint64_t(2), kTimeoutMs);
    QCOMPARE(controller.peak_params_json().at("params").at("min_pixel_count").get<int>(), 3);
    QCOMPARE(panel->inForce().min_pixel_count, 3);

    window.remoteControl()->request(QStringLiteral("set_peak_params"),
                                    {{"params", {{"minimum_snrr", 3}}}});
    QTRY_VERIFY_WITH_TIMEOUT(panel->refusalText().contains(QStringLiteral("minimum_snrr")),
                             kTimeoutMs);

    QTRY_VERIFY_WITH_TIMEOUT(window.peakModel()->imageCount() > 0, kTimeoutMs);
    panel->rerunFramesBox()->setValue(1);
    panel->rerun();
    QTRY_VERIFY_WITH_TIMEOUT(
        panel->statusText().contains(QStringLiteral("re-run with parameters v2 on 1 frame(s)")),
        kTimeoutMs);
    controller.stop();
  }
};

QTEST_MAIN(PeaksEndToEndTest)
#include "test_gui_peaks_end_to_end.moc"
