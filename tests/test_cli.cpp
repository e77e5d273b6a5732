// livedrp-engine on the command line: bad input of every kind gives exit status 2 and a message
// naming the problem; a good run prints its summary and exits 0.
#include <QRegularExpression>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"

#include "protocol/control_client.hpp"

class TestCli : public QObject {
  Q_OBJECT

  using Result = CliResult;
  static Result run(const QStringList& arguments, int timeout_ms = 120000) {
    return run_cli("LIVEDRP_ENGINE_EXE", arguments, timeout_ms);
  }

  QTemporaryDir dir_;

  QString write(const char* name, const QByteArray& content) {
    const QString path = dir_.path() + "/" + name;
    QFile file(path);
    file.open(QIODevice::WriteOnly);
    file.write(content);
    return path;
  }

  void expect_bad_input(const QStringList& arguments, const QString& expected_text) {
    EXPECT_BAD_INPUT(run(arguments), expected_text);
  }

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(qEnvironmentVariable("LIVEDRP_ENGINE_EXE")),
             "set LIVEDRP_ENGINE_EXE to the livedrp-engine executable (CTest does)");
  }

  // Every tool says its version (the project's, from CMake) and exits 0.
  void version_is_printed() {
    for (const char* variable : {"LIVEDRP_ENGINE_EXE", "LIVEDRP_CODEC_EXE"}) {
      const CliResult r = run_cli(variable, {"--version"});
      QCOMPARE(r.exit_code, 0);
      const QRegularExpression expected(R"(^livedrp-(engine|codec) \d+\.\d+\.\d+\s*$)");
      QVERIFY2(expected.match(r.out).hasMatch(), qPrintable(r.out + r.err));
    }
  }

  void unreadable_config_is_named() {
    expect_bad_input({"run", "--config", "/nonexistent/pipeline.json"},
                     "/nonexistent/pipeline.json");
  }
  void malformed_config_is_reported_as_invalid_json() {
    const QString path = write("broken.json", "{ \"source\": ");
    expect_bad_input({"run", "--config", path}, "not valid JSON");
  }
  void config_with_unknown_field_names_it() {
    const QString path = write("typo.json", R"({"schema_version": 1, "evnets": 10})");
    expect_bad_input({"run", "--config", path}, "unknown field 'evnets'");
  }
  void unknown_detector_is_named() {
    expect_bad_input({"run", "--source", "sim:pilatus6m", "--backend", "cpu"}, "pilatus6m");
  }
  void read_only_control_needs_a_control_socket() {
    expect_bad_input(
        {"run", "--source", "sim:jungfrau4m", "--backend", "cpu", "--control-read-only"},
        "--control-read-only needs --control");
    expect_bad_input(
        {"run", "--source", "sim:jungfrau4m", "--backend", "cpu", "--control-root", "/tmp"},
        "--control-root needs --control");
    expect_bad_input({"run", "--source", "sim:jungfrau4m", "--backend", "cpu", "--control",
                      "tcp://127.0.0.1:*", "--control-root", "/no/such/folder"},
                     "--control-root '/no/such/folder' is not an existing folder");
  }

  void bad_endpoint_is_named() {
    expect_bad_input(
        {"run", "--source", "sim:jungfrau4m", "--backend", "cpu", "--publish", "bogus://x"},
        "bogus://x");
  }
  void bad_control_endpoint_is_named() {
    expect_bad_input({"run", "--source", "sim:generic_f32", "--backend", "cpu", "--publish",
                      "tcp://127.0.0.1:*", "--control", "bogus://x"},
                     "bogus://x");
  }
  void bad_backend_is_named() { expect_bad_input({"run", "--backend", "opencl"}, "opencl"); }
  void negative_rate_is_refused() {
    expect_bad_input({"run", "--rate", "-3", "--backend", "cpu"}, "--rate");
  }
  void unknown_option_is_refused() { expect_bad_input({"run", "--frobnicate"}, "frobnicate"); }
  void missing_subcommand_is_refused() { expect_bad_input({}, "subcommand"); }

  void good_run_prints_a_summary_and_exits_zero() {
    const QString summary = dir_.path() + "/summary.json";
    const Result r = run({"run", "--source", "sim:jungfrau4m", "--events", "12", "--backend", "cpu",
                          "--publish", "tcp://127.0.0.1:*", "--summary-json", summary});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("processed: 12"), qPrintable(r.out));
    QVERIFY(r.out.contains("dropped: 0"));
    QVERIFY(r.out.contains("events/s"));
    QFile file(summary);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QJsonObject json = QJsonDocument::fromJson(file.readAll()).object();
    QCOMPARE(json["events_processed"].toInt(), 12);
    QCOMPARE(json["config"].toObject()["source"].toString(), QString("sim:jungfrau4m"));
    // What bounded the rate while the run ran (flat out on the CPU: a stage or the pipeline).
    const QJsonObject bound = json["rate_bound"].toObject();
    QVERIFY2(!bound["by"].toString().isEmpty() && bound["by"].toString() != "idle" &&
                 !bound["why"].toString().isEmpty(),
             qPrintable(QJsonDocument(bound).toJson()));
    QVERIFY2(r.out.contains("rate bound by " + bound["by"].toString()), qPrintable(r.out));
    // Source-to-result latency over the whole run: ordered quantiles of 12 real latencies.
    QVERIFY(r.out.contains("latency (source to result, whole run)"));
    const double p50 = json["latency_p50_us"].toDouble(), p99 = json["latency_p99_us"].toDouble(),
                 max = json["latency_max_us"].toDouble();
    QVERIFY2(p50 > 0 && p50 <= p99 && p99 <= max,
             qPrintable(QString("p50 %1 p99 %2 max %3").arg(p50).arg(p99).arg(max)));
  }

  // With --control the process serves until a "shutdown" request, then prints the last run's
  // summary and exits 0. The bound control endpoint is read from stderr.
  void control_socket_serves_status_and_shutdown() {
    const QString summary = dir_.path() + "/controlled.json";
    QProcess process;
    process.setReadChannel(QProcess::StandardError);
    process.start(
        qEnvironmentVariable("LIVEDRP_ENGINE_EXE"),
        {"run", "--source", "sim:generic_f32", "--backend", "cpu", "--rate", "100", "--publish",
         "tcp://127.0.0.1:*", "--control", "tcp://127.0.0.1:*", "--summary-json", summary});
    const auto cleanup = qScopeGuard([&process] {
      if (process.state() != QProcess::NotRunning) {
        process.kill();
        process.waitForFinished(5000);
      }
    });
    QString err;
    const QString announced = await_control_endpoint(process, err);
    QVERIFY2(!announced.isEmpty(), qPrintable("no control endpoint announced: " + err));
    const std::string endpoint = announced.toStdString();
    QVERIFY2(endpoint.rfind("tcp://127.0.0.1:", 0) == 0 && endpoint.back() != '*',
             endpoint.c_str());

    livedrp::protocol::ControlClient client(endpoint);
    nlohmann::json status;
    for (QDeadlineTimer running(10000); !running.hasExpired(); QTest::qWait(50)) {
      status = client.status(std::chrono::seconds(5));
      if (status.at("stats").at("events_processed").get<std::uint64_t>() > 0) break;
    }
    QCOMPARE(status.at("state").get<std::string>(), std::string("running"));
    QCOMPARE(status.at("run").get<int>(), 1);
    QVERIFY(status.at("stats").at("events_processed").get<std::uint64_t>() > 0);
    QCOMPARE(status.at("config").at("source").get<std::string>(), std::string("sim:generic_f32"));

    client.shutdown(std::chrono::seconds(5));
    QVERIFY(process.waitForFinished(30000));
    err += QString::fromUtf8(process.readAllStandardError());
    QCOMPARE(process.exitStatus(), QProcess::NormalExit);
    QVERIFY2(process.exitCode() == 0, qPrintable(err));
    const QString out = QString::fromUtf8(process.readAllStandardOutput());
    QVERIFY2(out.contains("events in: ") && out.contains("processed: "), qPrintable(out));
    QFile file(summary);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QJsonObject json = QJsonDocument::fromJson(file.readAll()).object();
    QVERIFY(json["events_processed"].toInt() > 0);
    QCOMPARE(json["events_in"].toInt(),
             json["events_processed"].toInt() + json["events_dropped"].toInt());
    QCOMPARE(json["config"].toObject()["run"].toInt(), 1);
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
