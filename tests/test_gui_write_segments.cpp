// The embedded engine's live writers across restarts (issue 36): the GUI's EngineHost gives each
// later start of a run with the same write paths a segment, as `livedrp-engine run --control`
// does (exec/write_segments.hpp; docs/formats.md, "Segments of a controlled run"). A window on
// the simulated generic_f32 detector (CPU backend) with write.profiles set is started, stopped
// and started again with the same settings: the first run writes profiles.h5, the second
// profiles.seg002.h5 instead of being refused because the file exists, both hold rows, and the
// window shows both runs' files in the Run control dock and the Log.
#include <hdf5.h>

#include <filesystem>
#include <string>

#include <QAction>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "app/engine_host.hpp"
#include "app/main_window.hpp"
#include "app/run_control_widget.hpp"
#include "exec/engine.hpp"
#include "gui_window_options.hpp"
#include "hit_file_support.hpp"
#include "io/segment_names.hpp"
#include "widgets/stats_model.hpp"

using livedrp::EngineConfig;
using livedrp::WriteSegment;
using livedrp::app::EngineHost;
using livedrp::app::MainWindow;

namespace {

// Generous for a loaded 2-core machine; a healthy run takes a fraction.
constexpr int kRunTimeoutMs = 120'000;
constexpr std::uint64_t kEventsPerRun = 3;  // at least, before the run is stopped

EngineConfig writingConfig(const std::string& profiles) {
  EngineConfig config;
  config.source = "sim:generic_f32";
  config.backend = "cpu";
  config.rate_hz = 20;
  config.cpu_threads = 1;
  config.simulator_pool = 2;
  config.stats_interval_s = 0.2;
  config.integration.enabled = true;
  config.integration.poni = "builtin:generic_f32";
  config.integration.npt = 100;
  config.write.profiles = profiles;
  config.write.when_full = "wait";  // every processed event's profile is written
  return config;
}

// Rows of a profile series file (/entry/profiles/pulse_id), -1 when unreadable.
long long profileRows(const std::string& path) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) return -1;
  const auto read = livedrp::hit_file_test::read_dataset<std::uint64_t>(
      file, "/entry/profiles/pulse_id", H5T_NATIVE_UINT64);
  H5Fclose(file);
  return read.ok && read.shape.size() == 1 ? (long long)read.shape[0] : -1;
}

}  // namespace

class WriteSegmentsTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  // Starts the window's run, waits for kEventsPerRun processed events, stops it and waits for
  // its writers' end report. The count is the host's own report of the engine it started
  // (`processed`, reset here): the window's model, fed from the wire, may still take the
  // previous run's last stats (more than kEventsPerRun processed) after this start.
  static bool runOnce(MainWindow& window, QSignalSpy& reports, int ended_before,
                      std::uint64_t& processed) {
    processed = 0;
    window.startRun();
    if (!QTest::qWaitFor([&] { return processed >= kEventsPerRun; }, kRunTimeoutMs)) return false;
    window.stopRun();
    return QTest::qWaitFor(
        [&] {
          int ended = 0;
          for (const QList<QVariant>& report : reports) ended += report.at(1).toBool() ? 1 : 0;
          return ended == ended_before + 1 && !window.engineHost()->isActive();
        },
        kRunTimeoutMs);
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void aRestartWithTheSameProfilesFileWritesTheNextSegment() {
    const std::string profiles = dir_.filePath(QStringLiteral("profiles.h5")).toStdString();
    const std::string second = livedrp::io::segment_file_path(profiles, 2);
    QCOMPARE(std::filesystem::path(second).filename().string(), std::string("profiles.seg002.h5"));

    livedrp::app::AppOptions options = idle_window_options(dir_, QStringLiteral("segments.ini"));
    options.config = writingConfig(profiles);
    MainWindow window(options);
    EngineHost* host = window.engineHost();
    QVERIFY(host);
    QSignalSpy reports(host, &EngineHost::writersReported);
    QSignalSpy errors(host, &EngineHost::errorOccurred);
    // Each stats report of the engine the host runs now; the previous run's reports were all
    // delivered before its writers' end report, which runOnce waits for.
    std::uint64_t processed = 0;
    host->setStatsForwarding(true);
    connect(host, &EngineHost::statsReported, this,
            [&processed](const livedrp::protocol::StatsPayload& stats, qint64) {
              processed = stats.events_processed;
            });

    QVERIFY(runOnce(window, reports, 0, processed));
    QVERIFY(std::filesystem::exists(profiles));
    QVERIFY(!std::filesystem::exists(second));
    // The same settings again: not refused ("exists"), the next segment's name instead.
    QVERIFY(runOnce(window, reports, 1, processed));
    QVERIFY2(errors.isEmpty(), errors.isEmpty() ? "" : qPrintable(errors.first().at(0).toString()));
    QVERIFY(std::filesystem::exists(second));

    const long long first_rows = profileRows(profiles), second_rows = profileRows(second);
    QVERIFY2(first_rows >= (long long)kEventsPerRun, qPrintable(QString::number(first_rows)));
    QVERIFY2(second_rows >= (long long)kEventsPerRun, qPrintable(QString::number(second_rows)));

    // The host's record of both runs: segment 1 then 2, each with its file and its rows.
    const std::vector<WriteSegment>& segments = host->writeSegments();
    QCOMPARE(segments.size(), std::size_t(2));
    QCOMPARE(segments[0].segment, 1);
    QCOMPARE(segments[1].segment, 2);
    QCOMPARE(segments[1].status.profiles.files, std::vector<std::string>{second});
    QCOMPARE((long long)segments[0].status.profiles.written, first_rows);
    QCOMPARE((long long)segments[1].status.profiles.written, second_rows);
    QCOMPARE(host->currentConfig().write.segment, 2);

    // The window shows the files where it shows the run: the Run control dock and the Log.
    const QString shown = window.runControl()->writtenFilesLabel()->text();
    QVERIFY2(shown.contains(QString::fromStdString(profiles)) &&
                 shown.contains(QString::fromStdString(second)) &&
                 shown.contains(QStringLiteral("segment 2")),
             qPrintable(shown));
    QVERIFY(!window.runControl()->writtenFilesLabel()->isHidden());
    auto* log = window.findChild<QPlainTextEdit*>(QStringLiteral("log"));
    QVERIFY(log);
    const QString text = log->toPlainText();
    QVERIFY2(text.contains(QStringLiteral("writes segment 2: profiles -> ") +
                           QString::fromStdString(second)),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("(segment 2, ")) &&
                 text.contains(QStringLiteral("profiles %1 written -> %2")
                                   .arg(second_rows)
                                   .arg(QString::fromStdString(second))),
             qPrintable(text));
  }
};

QTEST_MAIN(WriteSegmentsTest)
#include "test_gui_write_segments.moc"
