// The GUI's command line: what each option sets, and which values are refused with which message.
#include <QTest>

#include "app/app_options.hpp"

using livedrp::app::CommandLine;
using livedrp::app::parseCommandLine;

namespace {
CommandLine parse(QStringList arguments) {
  arguments.prepend(QStringLiteral("livedrp"));
  return parseCommandLine(arguments);
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
    QCOMPARE(std::string(livedrp::app::kDefaultPublishEndpoint), std::string("tcp://127.0.0.1:5555"));
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
    QTest::newRow("screenshot-after") << QStringList{"--screenshot-after", "soon"}
                                      << "--screenshot-after: 'soon'";
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

  void answersHelp() {
    const CommandLine line = parse({"--help"});
    QCOMPARE(int(line.action), int(CommandLine::Action::ShowHelp));
    for (const char* option : {"--source", "--backend", "--rate", "--publish", "--connect",
                               "--no-autostart", "--screenshot", "--screenshot-after"}) {
      QVERIFY2(line.text.contains(QLatin1String(option)), option);
    }
  }
};

QTEST_MAIN(AppOptionsTest)
#include "test_gui_app_options.moc"
