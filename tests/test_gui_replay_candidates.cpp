// The replay dock lists the candidate datasets of a file (issue 33): a file holding two sets of
// recorded simulator events (livedrp's /entry/data/data, 5 events, and CXI's
// /entry_1/data_1/data, 3 events) opened in the dock shows both with shape, element type and
// event count, the default selected and replayed; choosing the other replays that dataset (the
// engine's source names it and it hands on its 3 events). A file with nothing to replay says
// why and replays nothing. Attached to a remote engine, the list comes over its control socket.
#include <QComboBox>
#include <QLabel>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>

#include <hdf5.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "app/app_options.hpp"
#include "app/engine_host.hpp"
#include "app/main_window.hpp"
#include "app/remote_control.hpp"
#include "app/replay_transport_bar.hpp"
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
constexpr std::uint64_t kDefaultEvents = 5;
constexpr std::uint64_t kOtherEvents = 3;
const std::string kOtherDataset = "/entry_1/data_1/data";

// generic_f32: one 1024x1024 float segment, 4 MiB events; paced at 2 Hz and looping, so a replay
// is still going whatever the machine's load.
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

// `events` simulator events written by the engine's recorder into `directory`; the file.
fs::path recordSimulator(const fs::path& directory, std::uint64_t events) {
  EngineConfig c = baseConfig();
  c.publish = "";
  c.rate_hz = 0;
  c.events = events;
  c.record.directory = directory.string();
  livedrp::Engine engine(c);
  engine.start();
  engine.wait();
  if (!engine.summary().error.empty() || engine.record_status().files.size() != 1)
    qFatal("recording failed: %s", engine.summary().error.c_str());
  return engine.record_status().files.front();
}

// The dims of `dataset` in `file`, read with the HDF5 library, as "A × B × C".
QString shapeText(const fs::path& file, const std::string& dataset) {
  const hid_t f = H5Fopen(file.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t set = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
  const hid_t space = H5Dget_space(set);
  hsize_t dims[8] = {};
  const int rank = H5Sget_simple_extent_dims(space, dims, nullptr);
  H5Sclose(space);
  H5Dclose(set);
  H5Fclose(f);
  QStringList text;
  for (int k = 0; k < rank; ++k) text << QString::number(dims[k]);
  return text.join(QStringLiteral(" × "));
}
}  // namespace

class ReplayCandidatesTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  fs::path two_;  // /entry/data/data (5 events) and /entry_1/data_1/data (3 events)
  std::unique_ptr<MainWindow> window_;
  ReplayStatus replay_;  // the engine's own status as the host last reported it

  ReplayTransportBar& bar() { return *window_->transportBar(); }
  QString source() const {
    return QString::fromStdString(window_->engineHost()->currentConfig().source);
  }
  QString sourceOf(const std::string& dataset) const {
    return QString::fromStdString("replay:" + two_.string() + ":" + dataset);
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const fs::path root = dir_.path().toStdString();
    const fs::path five = recordSimulator(root / "five", kDefaultEvents);
    const fs::path three = recordSimulator(root / "three", kOtherEvents);
    two_ = root / "two.h5";
    fs::copy_file(five, two_);
    // The 3-event recording's events, also in the file as CXI puts them.
    const hid_t target = H5Fopen(two_.string().c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t from = H5Fopen(three.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t links = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(links, 1);
    QVERIFY(H5Ocopy(from, "/entry/data/data", target, kOtherDataset.c_str(), H5P_DEFAULT, links) >=
            0);
    H5Pclose(links);
    H5Fclose(from);
    H5Fclose(target);

    const QString ini = dir_.filePath("settings.ini");
    {
      QSettings settings(ini, QSettings::IniFormat);
      settings.setValue("engine/config", QString::fromStdString(baseConfig().to_json().dump()));
    }
    AppOptions options;
    options.settings_file = ini;
    options.autostart = false;
    window_ = std::make_unique<MainWindow>(options);
    window_->show();
    connect(window_->engineHost(), &livedrp::app::EngineHost::replayStatusChanged, this,
            [this](const ReplayStatus& replay, const RecordStatus&) { replay_ = replay; });
    QCOMPARE(bar().datasetCombo()->count(), 0);  // nothing opened yet
    QVERIFY(!bar().datasetCombo()->isEnabled());
  }

  void the_dock_lists_both_candidates_and_replays_the_default() {
    bar().openPath(QString::fromStdString(two_.string()));
    QComboBox* datasets = bar().datasetCombo();
    // Embedded: the list is read from the file at once.
    QCOMPARE(datasets->count(), 2);
    QCOMPARE(datasets->currentIndex(), 0);
    QVERIFY(datasets->isEnabled());
    QCOMPARE(datasets->itemText(0),
             QStringLiteral("/entry/data/data — %1 float32, 5 events (default)")
                 .arg(shapeText(two_, "/entry/data/data")));
    QCOMPARE(datasets->itemText(1),
             QStringLiteral("%1 — %2 float32, 3 events")
                 .arg(QString::fromStdString(kOtherDataset), shapeText(two_, kOtherDataset)));
    QVERIFY(shapeText(two_, "/entry/data/data").startsWith("5 × "));
    QCOMPARE(datasets->itemData(1).toString(), sourceOf(kOtherDataset));

    QTRY_COMPARE_WITH_TIMEOUT(source(), sourceOf("/entry/data/data"), kStartTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(replay_.active && replay_.handed > 0, kStartTimeoutMs);
    QCOMPARE(replay_.total_events, kDefaultEvents);
  }

  void choosing_the_other_replays_that_dataset() {
    QComboBox* datasets = bar().datasetCombo();
    datasets->setFocus();
    QTest::keyClick(datasets, Qt::Key_Down);  // the user picks the next item
    QCOMPARE(datasets->currentIndex(), 1);
    QVERIFY(datasets->currentText().startsWith(QString::fromStdString(kOtherDataset)));
    QTRY_COMPARE_WITH_TIMEOUT(source(), sourceOf(kOtherDataset), kStartTimeoutMs);
    // The new run reads that dataset: its 3 events, not the default's 5.
    QTRY_VERIFY_WITH_TIMEOUT(replay_.active && replay_.total_events == kOtherEvents,
                             kStartTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(bar().positionLabel()->text().contains("/ 3"), 5000);
  }

  void a_file_without_events_says_why_and_replays_nothing() {
    const fs::path masks = fs::path(dir_.path().toStdString()) / "masks.h5";
    const hid_t f = H5Fcreate(masks.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[2] = {4, 5};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    H5Dclose(H5Dcreate2(f, "/mask", H5T_STD_U8LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Sclose(space);
    H5Fclose(f);
    const QString before = source();
    bar().openPath(QString::fromStdString(masks.string()));
    const QString error = bar().errorLabel()->text();
    QVERIFY2(error.contains("no dataset of events found"), qPrintable(error));
    QVERIFY2(error.contains(QString::fromStdString(masks.string())), qPrintable(error));
    QCOMPARE(bar().datasetCombo()->count(), 0);
    QVERIFY(!bar().datasetCombo()->isEnabled());
    QCOMPARE(bar().datasetCombo()->placeholderText(), QStringLiteral("no dataset to replay"));
    QCOMPARE(source(), before);  // the replay going on is left alone
  }

  // Attached to a remote engine: the engine lists the file (it lives on its machine), and the
  // choice is applied there.
  void a_remote_engine_lists_the_candidates_over_its_control_socket() {
    window_->stopRun();
    EngineConfig c = baseConfig();
    c.source = "replay:" + two_.string();
    livedrp::EngineController controller(c);
    livedrp::ControlServer server(controller, "tcp://127.0.0.1:*");
    controller.start();  // replaying the file's default, named by no dataset
    QTRY_VERIFY_WITH_TIMEOUT(controller.replay_status().handed > 0, kStartTimeoutMs);
    AppOptions options;
    options.settings_file = dir_.filePath("remote.ini");
    options.connect = controller.publish_endpoint();
    options.control = server.endpoint();
    MainWindow remote(options);
    remote.show();
    ReplayTransportBar& bar = *remote.transportBar();
    bar.openPath(QString::fromStdString(two_.string()));
    QComboBox* datasets = bar.datasetCombo();
    QTRY_COMPARE_WITH_TIMEOUT(datasets->count(), 2, 5000);
    QCOMPARE(datasets->currentIndex(), 0);
    QVERIFY(datasets->itemText(0).startsWith("/entry/data/data — "));
    QVERIFY(datasets->itemText(1).endsWith(", 3 events"));
    // The default was applied; once that is answered the user picks the other.
    QTRY_COMPARE_WITH_TIMEOUT(QString::fromStdString(controller.config().source),
                              sourceOf("/entry/data/data"), kStartTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(!remote.remoteControl()->busy(), kStartTimeoutMs);
    datasets->setFocus();
    QTest::keyClick(datasets, Qt::Key_Down);
    QTRY_COMPARE_WITH_TIMEOUT(QString::fromStdString(controller.config().source),
                              sourceOf(kOtherDataset), kStartTimeoutMs);
    QTRY_COMPARE_WITH_TIMEOUT(controller.replay_status().total_events, kOtherEvents,
                              kStartTimeoutMs);
    controller.stop();
  }

  // The bar alone, answered by hand as a slow remote engine would: only the answer to the last
  // request is shown, a master file's parts together read as such, and a malformed answer or
  // one that comes after a run was opened is not taken for a list.
  void the_bar_shows_only_the_answer_to_the_last_request() {
    ReplayTransportBar bar;
    QStringList opened;
    connect(&bar, &ReplayTransportBar::openRequested, this,
            [&](const QString& source) { opened << source; });
    bar.openPath(QStringLiteral("/far/a.h5"));
    bar.openPath(QStringLiteral("/far/b.h5"));
    bar.showCandidatesError(QStringLiteral("about a.h5"));  // the answer to the first request
    QCOMPARE(bar.errorLabel()->text(), QString());
    const nlohmann::json together = {
        {"dataset", ""},
        {"source", "replay:/far/b.h5"},
        {"parts", {"/entry/data/data_000001", "/entry/data/data_000002"}},
        {"shape", {10, 2, 3}},
        {"dtype", "int32"},
        {"events", 10},
        {"default", true}};
    const nlohmann::json first_part = {{"dataset", "/entry/data/data_000001"},
                                       {"source", "replay:/far/b.h5:/entry/data/data_000001"},
                                       {"parts", {"/entry/data/data_000001"}},
                                       {"shape", {1, 2, 3}},
                                       {"dtype", "int32"},
                                       {"events", 1},
                                       {"default", false}};
    bar.showCandidates(
        {{"path", "/far/b.h5"}, {"default", 0}, {"candidates", {together, first_part}}});
    QComboBox* datasets = bar.datasetCombo();
    QCOMPARE(datasets->count(), 2);
    QCOMPARE(datasets->currentIndex(), 0);
    QCOMPARE(datasets->itemText(0),
             QStringLiteral("2 linked parts together — 10 × 2 × 3 int32, 10 events (default)"));
    QCOMPARE(datasets->itemText(1),
             QStringLiteral("/entry/data/data_000001 — 1 × 2 × 3 int32, 1 event"));
    QCOMPARE(opened, QStringList{QStringLiteral("replay:/far/b.h5")});
    bar.showCandidates({{"path", "/far/b.h5"}, {"default", 0}, {"candidates", {first_part}}});
    QCOMPARE(datasets->count(), 2);  // asked once, answered once: a second answer is not taken

    bar.openPath(QStringLiteral("/far/c.h5"));
    bar.showCandidates({{"path", "/far/c.h5"}, {"default", 0}, {"candidates", {{{"dataset", 1}}}}});
    QVERIFY2(bar.errorLabel()->text().startsWith("the engine's list of datasets cannot be read"),
             qPrintable(bar.errorLabel()->text()));
    QCOMPARE(datasets->count(), 0);
    QCOMPARE(opened.size(), 1);

    // A run opened while a file's answer is awaited: the late answer is not shown.
    bar.openPath(QStringLiteral("/far/d.h5"));
    bar.openPath(dir_.path());  // a directory: replayed at once
    QCOMPARE(opened.last(), QStringLiteral("replay:") + dir_.path());
    bar.showCandidatesError(QStringLiteral("about d.h5"));
    QCOMPARE(bar.errorLabel()->text(), QString());
  }

  void cleanupTestCase() { window_.reset(); }
};

QTEST_MAIN(ReplayCandidatesTest)
#include "test_gui_replay_candidates.moc"
