// The recorder's disk fills during a run (issue 35): `livedrp-engine run --record` under a file
// size limit (`ulimit -f`, SIGXFSZ ignored, so a write past it fails as on a full disk). The
// recording stops with an error naming the file, the run goes on and processes every event that
// entered, the events not recorded are counted as such (not blamed on a full queue), and the
// process exits 1 saying so, not with a crash in HDF5's exit handler.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"

class TestEngineRecordFaults : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(cli_executable("LIVEDRP_ENGINE_EXE")),
             "set LIVEDRP_ENGINE_EXE to the livedrp-engine executable (CTest does)");
  }

  void aFullDiskStopsTheRecordingNotTheRun() {
    QTemporaryDir dir;
    const QString records = dir.filePath("records");
    const QString summary = dir.filePath("summary.json");
    constexpr int kEvents = 40;
    // About 20 MB of file: four or five ePix10ka2M events (4.3 MB each) fit.
    const QString script =
        QString(
            "trap '' XFSZ; ulimit -f 20000; exec \"$0\" run --source sim:epix10ka2m "
            "--backend cpu --events %1 --rate 0 --publish '' --record \"$1\" "
            "--summary-json \"$2\"")
            .arg(kEvents);
    QProcess process;
    process.start("/bin/sh",
                  {"-c", script, cli_executable("LIVEDRP_ENGINE_EXE"), records, summary});
    QVERIFY(process.waitForFinished(300000));
    const QString err = QString::fromUtf8(process.readAllStandardError());
    const QString out = QString::fromUtf8(process.readAllStandardOutput());
    QCOMPARE(process.exitStatus(), QProcess::NormalExit);  // no crash at exit
    QVERIFY2(process.exitCode() == 1, qPrintable(QString::number(process.exitCode()) + err));
    QVERIFY2(err.contains("recording stopped") && err.contains("run0001-000.h5"), qPrintable(err));
    QVERIFY2(out.contains("not recorded (recording stopped)") && !out.contains("queue full"),
             qPrintable(out));

    std::ifstream in(summary.toStdString());
    QVERIFY(in.good());
    const nlohmann::json json = nlohmann::json::parse(in);
    const auto& stats = json;
    const std::uint64_t events_in = stats.at("events_in");
    QCOMPARE(events_in, std::uint64_t(kEvents));
    QCOMPARE(stats.at("events_processed").get<std::uint64_t>(), std::uint64_t(kEvents));
    QCOMPARE(stats.at("events_dropped").get<std::uint64_t>(), std::uint64_t(0));
    const auto& record = json.at("record");
    const std::uint64_t written = record.at("events"), dropped = record.at("dropped"),
                        failed = record.at("failed");
    QVERIFY2(written >= 1 && failed >= 1, qPrintable(QString::fromStdString(record.dump())));
    QCOMPARE(written + dropped + failed, std::uint64_t(kEvents));
    QVERIFY(record.at("error").get<std::string>().find("run0001-000.h5") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestEngineRecordFaults)
#include "test_engine_record_faults.moc"
