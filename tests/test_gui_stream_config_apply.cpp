// Apply from the stream-configuration panel on the embedded engine: the running engine restarts
// with the new runtime and the next run number, subscribers stay connected, the engine view shows
// the new engine's lanes; a configuration the engine refuses leaves the run as it was.
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "app/app_options.hpp"
#include "app/engine_host.hpp"
#include "app/main_window.hpp"
#include "app/stream_config_panel.hpp"
#include "app/subscriber_thread.hpp"
#include "exec/backend.hpp"
#include "exec/engine.hpp"
#include "widgets/engine_view.hpp"
#include "widgets/stats_model.hpp"

using livedrp::EngineConfig;
using livedrp::app::AppOptions;
using livedrp::app::MainWindow;

namespace {
// Generous limits for a loaded 2-core CI machine.
constexpr int kStartTimeoutMs = 30'000;
// Apply must not hold up the event loop: it only posts to the host's worker.
constexpr qint64 kMaxCallMs = 100;

EngineConfig smallConfig() {
  EngineConfig config;
  config.source = "sim:epix10ka2m";
  config.backend = "cpu";
  config.rate_hz = 50;
  config.publish = "tcp://127.0.0.1:*";
  config.cpu_threads = 1;
  config.simulator_pool = 2;
  return config;
}

bool statusConfigHasStreams(const livedrp::widgets::StatsModel& model, int streams) {
  if (!model.hasStatus()) return false;
  const auto& config = model.latestStatus().config;
  return model.latestStatus().state == "running" && config.contains("runtime") &&
         config["runtime"].value("streams", 0) == streams;
}
}  // namespace

class StreamConfigApplyTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::unique_ptr<MainWindow> window_;

  livedrp::widgets::StatsModel& model() { return *window_->model(); }
  livedrp::app::StreamConfigPanel& panel() { return *window_->streamConfig(); }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const QString ini = dir_.filePath("settings.ini");
    {
      QSettings settings(ini, QSettings::IniFormat);
      settings.setValue("engine/config", QString::fromStdString(smallConfig().to_json().dump()));
      settings.setValue("configurations/directory", dir_.filePath("configurations"));
    }
    AppOptions options;
    options.settings_file = ini;
    window_ = std::make_unique<MainWindow>(options);
    window_->show();
    QCOMPARE(window_->configurationsDirectory(), dir_.filePath("configurations"));
    QTRY_VERIFY_WITH_TIMEOUT(model().hasStats() && statusConfigHasStreams(model(), 1), kStartTimeoutMs);
    QCOMPARE(window_->engineHost()->currentConfig().run, std::int64_t(1));
  }

  void cleanupTestCase() { window_.reset(); }

  void applyRestartsTheRunningEngineWithTheNewRuntime() {
    const QString endpoint = window_->subscriber()->endpoint();
    // The engine view shows the CPU backend's one lane from the live stats.
    QTRY_COMPARE(window_->engineView()->laneCount(), 1);
    QVERIFY(window_->engineView()->laneBar(0)->maximum() >= 1);

    panel().streamsSpin()->setValue(3);
    panel().slotsSpin()->setValue(2);
    panel().launchCombo()->setCurrentText(QStringLiteral("graph"));
    QElapsedTimer call;
    call.start();
    panel().applyButton()->click();
    QVERIFY2(call.elapsed() < kMaxCallMs, "Apply waited for the engine");
    QVERIFY(panel().statusText().startsWith(QStringLiteral("applying")));

    QTRY_VERIFY_WITH_TIMEOUT(statusConfigHasStreams(model(), 3), kStartTimeoutMs);
    const auto& config = model().latestStatus().config;
    QCOMPARE(config["runtime"]["launch"].get<std::string>(), std::string("graph"));
    QCOMPARE(config["runtime"]["slots_per_stream"].get<int>(), 2);
    QCOMPARE(config["run"].get<int>(), 2);
    QCOMPARE(config["rate_hz"].get<double>(), 50.0);  // the run-control fields are kept
    QTRY_VERIFY_WITH_TIMEOUT(model().hasStats() && model().run() == 2, kStartTimeoutMs);
    QCOMPARE(window_->engineHost()->currentConfig().run, std::int64_t(2));
    QCOMPARE(window_->engineHost()->currentConfig().runtime.streams, 3);
    QVERIFY2(panel().statusText().startsWith(QStringLiteral("applied: run 2 with 3 streams, graph")),
             qPrintable(panel().statusText()));
    QVERIFY(panel().errorText().isEmpty());
    QCOMPARE(window_->engineConfig().runtime.streams, 3);  // the next Start uses it too
    // Same publisher: the subscriber never had to move.
    QCOMPARE(window_->subscriber()->endpoint(), endpoint);
    QVERIFY(window_->logText().contains(QStringLiteral("applied: run 2")));
  }

  void aConfigurationTheEngineRefusesKeepsTheRunning() {
    if (!livedrp::cuda_unavailable_reason()) QSKIP("CUDA is usable here: backend cuda is not an error");
    const std::int64_t run = window_->engineHost()->currentConfig().run;
    const int streams = window_->engineHost()->currentConfig().runtime.streams;
    panel().backendCombo()->setCurrentText(QStringLiteral("cuda"));
    panel().streamsSpin()->setValue(5);
    panel().applyButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(!panel().errorText().isEmpty(), kStartTimeoutMs);
    QVERIFY2(panel().errorText().contains(QStringLiteral("CUDA")), qPrintable(panel().errorText()));
    QVERIFY(panel().errorText().startsWith(QStringLiteral("not applied")));
    QVERIFY(window_->logText().contains(QStringLiteral("stream configuration not applied")));
    QVERIFY(window_->engineHost()->isActive());
    QCOMPARE(window_->engineHost()->currentConfig().run, run);
    QCOMPARE(window_->engineHost()->currentConfig().runtime.streams, streams);
    // The old run goes on: more stats of the same run arrive.
    const auto processed = model().latestStats().events_processed;
    QTRY_VERIFY_WITH_TIMEOUT(model().latestStats().events_processed > processed, 5000);
    QCOMPARE(model().run(), run);
    QVERIFY(statusConfigHasStreams(model(), streams));
    QCOMPARE(window_->engineConfig().backend, std::string("cpu"));
    QVERIFY(panel().applyButton()->isEnabled());
  }

  void aSavedFileWithStreamsOutOfRangeIsRefusedBeforeItReachesTheEngine() {
    const QString directory = window_->configurationsDirectory();
    QVERIFY(QDir().mkpath(directory));
    nlohmann::json json = smallConfig().to_json();
    json["runtime"]["streams"] = 17;
    {
      QFile file(directory + "/seventeen.json");
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write(QByteArray::fromStdString(json.dump()));
    }
    panel().refreshSavedList();
    const std::int64_t run = window_->engineHost()->currentConfig().run;
    panel().backendCombo()->setCurrentText(QStringLiteral("cpu"));
    panel().streamsSpin()->setValue(2);
    QVERIFY(!panel().loadSaved(QStringLiteral("seventeen")));
    QVERIFY2(panel().errorText().contains(QStringLiteral("runtime.streams")), qPrintable(panel().errorText()));
    QVERIFY(panel().errorText().contains(QStringLiteral("17")));
    QCOMPARE(panel().streamsSpin()->value(), 2);
    QTest::qWait(300);
    QCOMPARE(window_->engineHost()->currentConfig().run, run);
  }
};

QTEST_MAIN(StreamConfigApplyTest)
#include "test_gui_stream_config_apply.moc"
