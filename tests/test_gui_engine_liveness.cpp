// The window notices an engine that went away (issue 35: 45 s after `kill -9` the GUI still said
// "running" at the last rate, and re-attached without a word): attached to a publisher that sends
// status and stats and then falls silent in a running state, the status bar reads "engine lost"
// in red with the reason, the log says so, and when messages come again the state returns and the
// log says that too. The rule itself: a finished, idle or failed engine may be silent.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <QLabel>

#include "app/app_options.hpp"
#include "app/engine_liveness.hpp"
#include "app/main_window.hpp"
#include "protocol/message.hpp"
#include "protocol/topics.hpp"
#include "publish/publisher.hpp"
#include "widgets/run_status_widget.hpp"
#include "widgets/stats_model.hpp"

using livedrp::app::EngineLiveness;
using livedrp::app::MainWindow;

namespace {

livedrp::protocol::StatusPayload status_in(const std::string& state) {
  livedrp::protocol::StatusPayload status;
  status.state = state;
  status.source = "sim:epix10ka2m";
  status.detector = "epix10ka2m";
  status.backend = "cpu";
  status.device = "CPU (2 threads)";
  return status;
}

}  // namespace

class TestGuiEngineLiveness : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  // The rule: silence longer than the timeout in a live state (or before any status) is a loss;
  // finished, idle and error engines may be silent.
  void silenceRule() {
    for (const char* live : {"", "starting", "running", "stopping"}) {
      QVERIFY(EngineLiveness::silenceMeansLost(live, 5001, 5000));
      QVERIFY(!EngineLiveness::silenceMeansLost(live, 5000, 5000));
    }
    for (const char* quiet : {"finished", "idle", "error"})
      QVERIFY(!EngineLiveness::silenceMeansLost(quiet, 60000, 5000));
  }

  void lostThenBack() {
    EngineLiveness liveness;
    liveness.setTimeoutMs(200);
    QSignalSpy lost(&liveness, &EngineLiveness::lost);
    QSignalSpy back(&liveness, &EngineLiveness::back);
    liveness.noteMessages("running");
    QTRY_COMPARE(lost.count(), 1);
    QCOMPARE(lost.at(0).at(0).toString(), QStringLiteral("running"));
    QVERIFY(lost.at(0).at(1).toLongLong() > 200);
    QVERIFY(liveness.isLost());
    liveness.noteMessages("running");
    QCOMPARE(back.count(), 1);
    QVERIFY(!liveness.isLost());
    // Another engine: nothing is known of it until it speaks.
    liveness.reset();
    QVERIFY(!liveness.isLost());
  }

  void theWindowShowsAndLogsIt() {
    livedrp::Publisher publisher("tcp://127.0.0.1:*");
    livedrp::app::AppOptions options;
    options.connect = publisher.endpoint();
    options.settings_file = dir_.filePath(QStringLiteral("liveness.ini"));
    MainWindow window(options);
    window.liveness()->setTimeoutMs(600);
    QLabel* state = window.runStatus()->stateLabel();

    // Until the window hears the running engine (ZeroMQ connects in the background).
    auto speak = [&] {
      publisher.publish(livedrp::protocol::make_status_message(status_in("running")));
    };
    for (int i = 0; i < 400 && !window.model()->hasStatus(); ++i) {
      speak();
      QTest::qWait(25);
    }
    QVERIFY2(window.model()->hasStatus(), "no status reached the window");
    QTRY_COMPARE(state->text(), QStringLiteral("running"));

    // The engine falls silent while running.
    QTRY_COMPARE_WITH_TIMEOUT(state->text(), QStringLiteral("engine lost"), 20000);
    QVERIFY2(state->toolTip().contains(QStringLiteral("while it was running")),
             qPrintable(state->toolTip()));
    QVERIFY(state->styleSheet().contains(
        livedrp::widgets::RunStatusWidget::stateColor(QStringLiteral("error")).name()));
    QVERIFY(window.logText().contains(QStringLiteral("engine lost: no message from the engine")));

    // It speaks again: the state comes back and the log says so.
    QTRY_VERIFY_WITH_TIMEOUT((speak(), state->text() == QStringLiteral("running")), 20000);
    QVERIFY(window.logText().contains(QStringLiteral("engine heard again after")));
  }
};

QTEST_MAIN(TestGuiEngineLiveness)
#include "test_gui_engine_liveness.moc"
