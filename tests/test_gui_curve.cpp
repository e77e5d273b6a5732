// The GUI towards a remote engine that runs with CURVE (issue 35): `livedrp --connect ENDPOINT
// --curve-server-key FILE.pub --curve-key FILE.key` is checked when the command line is (both
// keys, only with --connect, files named when wrong), and the attached window shows the state
// of an engine whose publisher admits only the GUI's key; with a key the engine does not list,
// the window hears nothing and the engine counts the refusal.
#include <QLabel>
#include <QTemporaryDir>
#include <QtTest>

#include "app/app_options.hpp"
#include "app/main_window.hpp"
#include "protocol/curve_keys.hpp"
#include "protocol/message.hpp"
#include "protocol/topics.hpp"
#include "publish/curve_server.hpp"
#include "publish/publisher.hpp"
#include "widgets/run_status_widget.hpp"
#include "widgets/stats_model.hpp"

using livedrp::app::MainWindow;
using livedrp::app::parseCommandLine;

namespace {

livedrp::protocol::Message running_status() {
  livedrp::protocol::StatusPayload status;
  status.state = "running";
  status.source = "sim:epix10ka2m";
  status.detector = "epix10ka2m";
  status.backend = "cpu";
  status.device = "CPU (2 threads)";
  return livedrp::protocol::make_status_message(status);
}

}  // namespace

class TestGuiCurve : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  QString file(const QString& name) const { return dir_.filePath(name); }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    for (const char* stem : {"engine", "gui", "stranger"})
      livedrp::protocol::write_curve_key_files(file(stem).toStdString(),
                                               livedrp::protocol::generate_curve_key_pair());
  }

  void theKeysAreCheckedWithTheCommandLine() {
    using Action = livedrp::app::CommandLine::Action;
    auto line = parseCommandLine(
        {"livedrp", "--curve-server-key", file("engine.pub"), "--curve-key", file("gui.key")});
    QCOMPARE(line.action, Action::Error);
    QVERIFY2(line.text.contains("only with --connect"), qPrintable(line.text));
    line = parseCommandLine(
        {"livedrp", "--connect", "tcp://127.0.0.1:5555", "--curve-key", file("gui.key")});
    QCOMPARE(line.action, Action::Error);
    QVERIFY2(line.text.contains("needs both"), qPrintable(line.text));
    line = parseCommandLine({"livedrp", "--connect", "tcp://127.0.0.1:5555", "--curve-server-key",
                             file("engine.pub"), "--curve-key", file("gui.pub")});
    QCOMPARE(line.action, Action::Error);
    QVERIFY2(line.text.contains("gui.pub") && line.text.contains("give the .key file"),
             qPrintable(line.text));
    line = parseCommandLine({"livedrp", "--connect", "tcp://127.0.0.1:5555", "--curve-server-key",
                             file("engine.pub"), "--curve-key", file("gui.key")});
    QCOMPARE(line.action, Action::Run);
    QVERIFY(line.options.curve.has_value());
    QCOMPARE(
        line.options.curve->server_public_key,
        livedrp::protocol::read_curve_key_file(file("engine.pub").toStdString(), false).public_key);
    QCOMPARE(
        line.options.curve->keys.secret_key,
        livedrp::protocol::read_curve_key_file(file("gui.key").toStdString(), true).secret_key);
  }

  void theWindowHearsACurveEngineWithAListedKeyOnly() {
    livedrp::CurveServer server(livedrp::load_curve_server(file("engine.key").toStdString(),
                                                           {file("gui.pub").toStdString()}));
    livedrp::Publisher publisher("tcp://127.0.0.1:*");
    const QString endpoint = QString::fromStdString(publisher.endpoint());
    {
      // A key the engine does not list: refused, nothing shown.
      const auto line = parseCommandLine({"livedrp", "--connect", endpoint, "--curve-server-key",
                                          file("engine.pub"), "--curve-key", file("stranger.key"),
                                          "--settings", file("stranger.ini")});
      QCOMPARE(line.action, livedrp::app::CommandLine::Action::Run);
      livedrp::app::AppOptions options = line.options;
      options.control.clear();  // no control socket here: nothing to wait for on close
      MainWindow window(options);
      for (int i = 0; i < 400 && server.refused() == 0; ++i) {
        publisher.publish(running_status());
        QTest::qWait(25);
      }
      QVERIFY2(server.refused() >= 1, "the stranger's handshake was not refused");
      QVERIFY(!window.model()->hasStatus());
    }
    const auto line = parseCommandLine({"livedrp", "--connect", endpoint, "--curve-server-key",
                                        file("engine.pub"), "--curve-key", file("gui.key"),
                                        "--settings", file("gui.ini")});
    QCOMPARE(line.action, livedrp::app::CommandLine::Action::Run);
    livedrp::app::AppOptions options = line.options;
    options.control.clear();
    MainWindow window(options);
    for (int i = 0; i < 400 && !window.model()->hasStatus(); ++i) {
      publisher.publish(running_status());
      QTest::qWait(25);
    }
    QVERIFY2(window.model()->hasStatus(), "no status reached the window with the listed key");
    QTRY_COMPARE(window.runStatus()->stateLabel()->text(), QStringLiteral("running"));
    QVERIFY(server.admitted() >= 1);
  }
};

QTEST_MAIN(TestGuiCurve)
#include "test_gui_curve.moc"
