// The replay transport bar in the main window, on the embedded engine: simulator events recorded
// with the engine library are opened in the GUI; pause, seek (the slider), step forward and back
// and play move the engine's replay where they say, and the slider and labels follow the engine's
// status; the recent files persist in QSettings; the record button records a live source into the
// chosen directory.
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSlider>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>

#include <filesystem>

#include "app/app_options.hpp"
#include "app/engine_host.hpp"
#include "app/main_window.hpp"
#include "app/replay_transport_bar.hpp"
#include "app/run_control_widget.hpp"
#include "exec/engine.hpp"
#include "exec/engine_controller.hpp"
#include "publish/control_server.hpp"

using livedrp::EngineConfig;
using livedrp::RecordStatus;
using livedrp::ReplayStatus;
using livedrp::app::AppOptions;
using livedrp::app::MainWindow;
using livedrp::app::ReplayTransportBar;
namespace fs = std::filesystem;

namespace {
constexpr int kStartTimeoutMs = 30'000;  // a loaded 2-core machine builds engines slowly
constexpr std::uint64_t kEvents = 5;

// generic_f32: one 1024x1024 float segment, quick simulator constants, 4 MiB events. The replay
// is paced at 2 Hz and loops, so it is still going (and slow enough to pause early) whatever
// the machine's load.
EngineConfig baseConfig() {
  EngineConfig c;
  c.source = "sim:generic_f32";
  c.backend = "cpu";
  c.rate_hz = 2;
  c.publish = "tcp://127.0.0.1:*";
  c.cpu_threads = 1;
  c.simulator_pool = 2;
  c.stats_interval_s = 0.1;
  c.replay.pace = "rate";
  c.replay.loop = true;
  return c;
}

// kEvents simulator events written by the engine's recorder, as an operator would record them.
void recordSimulator(const fs::path& directory) {
  EngineConfig c = baseConfig();
  c.publish = "";
  c.rate_hz = 0;
  c.events = kEvents;
  c.record.directory = directory.string();
  livedrp::Engine engine(c);
  engine.start();
  engine.wait();
  if (!engine.summary().error.empty())
    qFatal("recording failed: %s", engine.summary().error.c_str());
}
}  // namespace

class ReplayTransportTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString ini_;
  fs::path recorded_;
  std::unique_ptr<MainWindow> window_;
  // The engine's own status as the host last reported it.
  ReplayStatus replay_;
  RecordStatus record_;

  ReplayTransportBar& bar() { return *window_->transportBar(); }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    recorded_ = fs::path(dir_.path().toStdString()) / "recorded";
    recordSimulator(recorded_);
    ini_ = dir_.filePath("settings.ini");
    {
      QSettings settings(ini_, QSettings::IniFormat);
      settings.setValue("engine/config", QString::fromStdString(baseConfig().to_json().dump()));
    }
    AppOptions options;
    options.settings_file = ini_;
    options.autostart = false;
    window_ = std::make_unique<MainWindow>(options);
    window_->show();
    connect(window_->engineHost(), &livedrp::app::EngineHost::replayStatusChanged, this,
            [this](const ReplayStatus& replay, const RecordStatus& record) {
              replay_ = replay;
              record_ = record;
            });
    // The bar shows the configuration's replay options.
    QCOMPARE(bar().paceCombo()->currentData().toString(), QStringLiteral("rate"));
    QVERIFY(bar().loopBox()->isChecked());
    QVERIFY(!bar().pauseButton()->isEnabled());  // nothing to control yet
  }

  void opening_a_run_replays_it_and_shows_its_length() {
    const QString path = QString::fromStdString(recorded_.string());
    bar().openPath(path);
    QTRY_VERIFY_WITH_TIMEOUT(replay_.active && replay_.handed > 0, kStartTimeoutMs);
    QCOMPARE(replay_.total_events, kEvents);
    QCOMPARE(QString::fromStdString(window_->engineHost()->currentConfig().source),
             QStringLiteral("replay:") + path);
    QCOMPARE(bar().seekSlider()->maximum(), int(kEvents) - 1);
    QCOMPARE(bar().progressBar()->maximum(), int(kEvents));
    QVERIFY(bar().pauseButton()->isEnabled());
    QVERIFY(!bar().recordButton()->isEnabled());  // a replay is not recorded again
    QCOMPARE(bar().recentPaths().value(0), path);
  }

  void pause_seek_and_step_move_the_engine_and_the_widgets() {
    QTest::mouseClick(bar().pauseButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(replay_.paused, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(bar().positionLabel()->text().contains("paused"), 5000);
    QVERIFY(bar().playButton()->isEnabled());
    QTest::qWait(600);  // an event the source took before the pause (2 Hz) has entered by now

    // Seek with the slider as a drag does it (pressed, moved, released), then step onto it.
    QSlider* slider = bar().seekSlider();
    slider->setSliderDown(true);
    slider->setValue(3);
    slider->setSliderDown(false);  // released: the seek goes out
    QTest::qWait(200);             // the seek reaches the worker before the step
    QTest::mouseClick(bar().stepForwardButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(replay_.position, std::uint64_t(3), 5000);
    QTRY_COMPARE_WITH_TIMEOUT(slider->value(), 3, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(bar().positionLabel()->text().startsWith("4 / 5"), 5000);
    QCOMPARE(bar().progressBar()->value(), 4);
    const std::uint64_t handed = replay_.handed;

    QTest::mouseClick(bar().stepBackButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(replay_.position, std::uint64_t(2), 5000);
    QTRY_COMPARE_WITH_TIMEOUT(slider->value(), 2, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(bar().positionLabel()->text().startsWith("3 / 5, paused"), 5000);
    QCOMPARE(replay_.handed, handed + 1);  // one event per step
    QTest::qWait(800);                     // paused at 2 Hz: nothing else enters
    QCOMPARE(replay_.handed, handed + 1);
    QVERIFY(replay_.paused);

    QTest::mouseClick(bar().playButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!replay_.paused, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(replay_.handed > handed + 1, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(!bar().positionLabel()->text().contains("paused"), 5000);
  }

  void a_seek_past_the_end_is_refused_and_shown() {
    // The slider cannot go there; the host's own call can, and the refusal reaches the bar.
    window_->engineHost()->seekReplay(kEvents);
    QLabel* error = bar().findChild<QLabel*>("replayError");
    QVERIFY(error);
    QTRY_VERIFY_WITH_TIMEOUT(error->text().contains("seek to event 5"), 5000);
  }

  void record_button_records_a_live_source() {
    window_->stopRun();
    QTRY_VERIFY_WITH_TIMEOUT(!window_->engineHost()->isActive(), kStartTimeoutMs);
    EngineConfig live = window_->engineConfig();
    live.source = "sim:generic_f32";
    live.rate_hz = 20;
    window_->runControl()->setConfig(live);
    window_->startRun();
    QTRY_COMPARE_WITH_TIMEOUT(window_->engineHost()->state(), QStringLiteral("running"),
                              kStartTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(bar().recordButton()->isEnabled(), 5000);
    QVERIFY(!bar().pauseButton()->isEnabled());  // no replay controls on a live source

    const fs::path directory = fs::path(dir_.path().toStdString()) / "live";
    bar().setRecording(QString::fromStdString(directory.string()));  // the dialog's result
    QTRY_COMPARE_WITH_TIMEOUT(window_->engineHost()->currentConfig().record.directory,
                              directory.string(), kStartTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(record_.active && record_.events >= 2, kStartTimeoutMs);
    QVERIFY(bar().recordButton()->isChecked());
    QTRY_VERIFY_WITH_TIMEOUT(bar().recordLabel()->text().startsWith("recorded"), 5000);

    window_->stopRun();
    QTRY_VERIFY_WITH_TIMEOUT(!record_.files.empty(), kStartTimeoutMs);
    const fs::path file = record_.files.front();
    QCOMPARE(file.parent_path(), directory);
    QVERIFY(fs::exists(file) && fs::file_size(file) > 0);
    QTRY_VERIFY_WITH_TIMEOUT(bar().recordLabel()->text().contains("1 file(s)"), 5000);
  }

  // Attached to a remote engine (--connect, --control): the same bar drives the engine's
  // control socket ("replay" requests) and shows the position it polls from there.
  void the_bar_drives_a_remote_engine_through_the_control_socket() {
    EngineConfig c = baseConfig();
    c.source = "replay:" + recorded_.string();
    livedrp::EngineController controller(c);
    livedrp::ControlServer server(controller, "tcp://127.0.0.1:*");
    controller.start();
    QTRY_VERIFY_WITH_TIMEOUT(controller.replay_status().handed > 0, kStartTimeoutMs);

    AppOptions options;
    options.settings_file = dir_.filePath("remote.ini");
    options.connect = controller.publish_endpoint();
    options.control = server.endpoint();
    MainWindow remote(options);
    remote.show();
    ReplayTransportBar& bar = *remote.transportBar();
    QTRY_VERIFY_WITH_TIMEOUT(bar.pauseButton()->isEnabled(), 5000);  // the poll saw a replay
    QCOMPARE(bar.seekSlider()->maximum(), int(kEvents) - 1);

    QTest::mouseClick(bar.pauseButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(controller.replay_status().paused, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(bar.positionLabel()->text().contains("paused"), 5000);
    QTest::qWait(600);  // an event the source took before the pause has entered by now
    QSlider* slider = bar.seekSlider();
    slider->setSliderDown(true);
    slider->setValue(1);
    slider->setSliderDown(false);
    QTest::qWait(200);
    QTest::mouseClick(bar.stepForwardButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(controller.replay_status().position, std::uint64_t(1), 5000);
    QTRY_COMPARE_WITH_TIMEOUT(slider->value(), 1, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(bar.positionLabel()->text().startsWith("2 / 5, paused"), 5000);

    QTest::mouseClick(bar.playButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!controller.replay_status().paused, 5000);
    controller.stop();
  }

  // The recent list is most recent first, without duplicates, at most kMaxRecent long, and a new
  // bar on the same settings reads it back.
  void recent_paths_persist_in_settings() {
    const QString ini = dir_.filePath("recent.ini");
    QSettings settings(ini, QSettings::IniFormat);
    ReplayTransportBar first;
    first.setSettings(&settings);
    // A file is not replayed before its datasets are listed: the bar asks for them.
    QStringList asked;
    connect(&first, &ReplayTransportBar::candidatesRequested, this,
            [&](const QString& path) { asked << path; });
    for (int i = 0; i < ReplayTransportBar::kMaxRecent + 2; ++i)
      first.openPath(QStringLiteral("/data/run%1.h5").arg(i));
    first.openPath(QStringLiteral("/data/run3.h5"));
    QCOMPARE(asked.size(), ReplayTransportBar::kMaxRecent + 3);
    QCOMPARE(asked.last(), QStringLiteral("/data/run3.h5"));
    QCOMPARE(first.recentPaths().size(), ReplayTransportBar::kMaxRecent);
    QCOMPARE(first.recentPaths().front(), QStringLiteral("/data/run3.h5"));
    QCOMPARE(first.recentPaths().count(QStringLiteral("/data/run3.h5")), 1);
    QVERIFY(!first.recentPaths().contains(QStringLiteral("/data/run0.h5")));
    settings.sync();
    QSettings again(ini, QSettings::IniFormat);
    ReplayTransportBar second;
    second.setSettings(&again);
    QCOMPARE(second.recentPaths(), first.recentPaths());
  }

  void cleanupTestCase() { window_.reset(); }
};

QTEST_MAIN(ReplayTransportTest)
#include "test_gui_replay_transport.moc"
