// The GUI's command line: what each option sets, and which values are refused with which message.
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include "app/app_options.hpp"

using livedrp::app::CommandLine;
using livedrp::app::parseCommandLine;

namespace {
CommandLine parse(QStringList arguments) {
  arguments.prepend(QStringLiteral("livedrp"));
  return parseCommandLine(arguments);
}

QString writeFile(const QTemporaryDir& dir, const QString& name, const std::string& text) {
  const QString path = dir.filePath(name);
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly) || file.write(text.data(), qint64(text.size())) < 0)
    qFatal("cannot write %s", qPrintable(path));
  return path;
}
}  // namespace

class AppOptionsTest : public QObject {
  Q_OBJECT

 private slots:
  void byDefaultItEmbedsAndStartsTheEngine() {
    const CommandLine line = parse({});
    QCOMPARE(int(line.action), int(CommandLine::Action::Run));
    QVERIFY(line.options.autostart);
    QVERIFY(line.options.connect.empty());
    QVERIFY(!line.options.source && !line.options.backend && !line.options.rate_hz &&
            !line.options.publish);
    QVERIFY(line.options.screenshot_file.isEmpty());
    QCOMPARE(std::string(livedrp::app::kDefaultPublishEndpoint),
             std::string("tcp://127.0.0.1:5555"));
  }

  void takesTheEmbeddedEngineSettings() {
    const CommandLine line = parse({"--source", "sim:jungfrau4m", "--backend", "CPU", "--rate",
                                    "100", "--publish", "tcp://127.0.0.1:*", "--no-autostart"});
    QCOMPARE(int(line.action), int(CommandLine::Action::Run));
    QCOMPARE(*line.options.source, std::string("sim:jungfrau4m"));
    QCOMPARE(*line.options.backend, std::string("cpu"));
    QCOMPARE(*line.options.rate_hz, 100.0);
    QCOMPARE(*line.options.publish, std::string("tcp://127.0.0.1:*"));
    QVERIFY(!line.options.autostart);
  }

  void takesARemoteEngine() {
    const CommandLine line = parse({"--connect", "tcp://beamline-host:5555"});
    QCOMPARE(int(line.action), int(CommandLine::Action::Run));
    QCOMPARE(line.options.connect, std::string("tcp://beamline-host:5555"));
  }

  void takesAScreenshotRequest() {
    const CommandLine line =
        parse({"--screenshot", "docs/screenshot.png", "--screenshot-after", "2.5"});
    QCOMPARE(line.options.screenshot_file, QStringLiteral("docs/screenshot.png"));
    QCOMPARE(line.options.screenshot_after_s, 2.5);
  }

  void refusesBadValuesSayingWhichAndWhy_data() {
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<QString>("expected");
    QTest::newRow("backend") << QStringList{"--backend", "opencl"} << "--backend: 'opencl'";
    QTest::newRow("negative rate") << QStringList{"--rate", "-5"} << "--rate: '-5'";
    QTest::newRow("rate not a number") << QStringList{"--rate", "fast"} << "--rate: 'fast'";
    QTest::newRow("publish") << QStringList{"--publish", "5555"} << "--publish: '5555'";
    QTest::newRow("connect") << QStringList{"--connect", "host"} << "--connect: 'host'";
    QTest::newRow("connect and source")
        << QStringList{"--connect", "tcp://h:1", "--source", "sim:epix10ka2m"}
        << "use one or the other";
    QTest::newRow("screenshot-after")
        << QStringList{"--screenshot-after", "soon"} << "--screenshot-after: 'soon'";
    QTest::newRow("unknown option") << QStringList{"--frobnicate"} << "frobnicate";
    QTest::newRow("positional") << QStringList{"extra"} << "unexpected argument 'extra'";
    QTest::newRow("missing value") << QStringList{"--rate"} << "rate";
  }

  void refusesBadValuesSayingWhichAndWhy() {
    QFETCH(QStringList, arguments);
    QFETCH(QString, expected);
    const CommandLine line = parse(arguments);
    QCOMPARE(int(line.action), int(CommandLine::Action::Error));
    QVERIFY2(line.text.contains(expected), qPrintable(line.text));
  }

  void takesAPipelineConfigurationFile() {
    QTemporaryDir dir;
    livedrp::EngineConfig written;
    written.source = "sim:jungfrau4m";
    written.integration.enabled = true;
    written.integration.poni = "builtin:jungfrau4m";
    written.integration.npt = 500;
    written.peak_finding.enabled = true;
    written.peak_finding.params.minimum_snr = 7;
    const QString path = writeFile(dir, "run.json", written.to_json().dump(2));
    const CommandLine line = parse({"--config", path, "--rate", "25"});
    QCOMPARE(int(line.action), int(CommandLine::Action::Run));
    QCOMPARE(line.options.config_file, path);
    QVERIFY(line.options.config.has_value());
    QCOMPARE(line.options.config->source, std::string("sim:jungfrau4m"));
    QCOMPARE(line.options.config->integration.npt, 500);
    QCOMPARE(line.options.config->peak_finding.params.minimum_snr, 7.0f);
    QVERIFY(line.options.config->to_json() == written.to_json());
    QCOMPARE(*line.options.rate_hz, 25.0);  // the options themselves stay separate
  }

  void refusesABadConfigurationFileNamingItAndTheField() {
    QTemporaryDir dir;
    nlohmann::json bad = livedrp::EngineConfig{}.to_json();
    bad["integration"]["npt"] = -3;
    const QString invalid = writeFile(dir, "invalid.json", bad.dump());
    CommandLine line = parse({"--config", invalid});
    QCOMPARE(int(line.action), int(CommandLine::Action::Error));
    QVERIFY2(line.text.contains("--config") && line.text.contains(invalid) &&
                 line.text.contains("integration.npt"),
             qPrintable(line.text));

    const QString not_json = writeFile(dir, "broken.json", "{\"source\": ");
    line = parse({"--config", not_json});
    QCOMPARE(int(line.action), int(CommandLine::Action::Error));
    QVERIFY2(line.text.contains("not valid JSON") && line.text.contains(not_json),
             qPrintable(line.text));

    line = parse({"--config", dir.filePath("missing.json")});
    QCOMPARE(int(line.action), int(CommandLine::Action::Error));
    QVERIFY2(line.text.contains("cannot read configuration file"), qPrintable(line.text));

    const QString good = writeFile(dir, "good.json", livedrp::EngineConfig{}.to_json().dump());
    line = parse({"--config", good, "--connect", "tcp://h:1"});
    QCOMPARE(int(line.action), int(CommandLine::Action::Error));
    QVERIFY2(line.text.contains("use one or the other"), qPrintable(line.text));
  }

  void answersHelp() {
    const CommandLine line = parse({"--help"});
    QCOMPARE(int(line.action), int(CommandLine::Action::ShowHelp));
    for (const char* option :
         {"--config", "--source", "--backend", "--rate", "--publish", "--connect", "--no-autostart",
          "--screenshot", "--screenshot-after"}) {
      QVERIFY2(line.text.contains(QLatin1String(option)), option);
    }
  }
};

QTEST_MAIN(AppOptionsTest)
#include "test_gui_app_options.moc"
