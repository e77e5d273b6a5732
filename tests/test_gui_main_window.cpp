// The main window attached to a publisher: what it shows for real `stats` and `status` messages
// sent over ZeroMQ (model, chart curve, status bar, counters, canvas pixels), how it treats
// malformed messages, and how its layout and engine configuration persist.
#include <cstdlib>
#include <string>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QImage>
#include <QLabel>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <qwt_plot_curve.h>

#include "app/app_options.hpp"
#include "app/main_window.hpp"
#include "app/replay_transport_bar.hpp"
#include "app/run_control_widget.hpp"
#include "app/subscriber_thread.hpp"
#include "gui_window_options.hpp"
#include "protocol/message.hpp"
#include "protocol/subscriber.hpp"
#include "protocol/topics.hpp"
#include "publish/publisher.hpp"
#include "widgets/counters_view.hpp"
#include "widgets/rate_strip_chart.hpp"
#include "widgets/run_status_widget.hpp"
#include "widgets/stats_model.hpp"

using livedrp::app::AppOptions;
using livedrp::app::MainWindow;
using livedrp::app::ReplayTransportBar;
using livedrp::protocol::StatsPayload;
using livedrp::protocol::StatusPayload;
using livedrp::widgets::RateStripChart;

namespace {
int countPixels(const QImage& image, const QColor& color, int tolerance = 24) {
  const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
  int count = 0;
  for (int y = 0; y < rgb.height(); ++y) {
    const auto* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
    for (int x = 0; x < rgb.width(); ++x) {
      if (std::abs(qRed(line[x]) - color.red()) <= tolerance &&
          std::abs(qGreen(line[x]) - color.green()) <= tolerance &&
          std::abs(qBlue(line[x]) - color.blue()) <= tolerance) {
        ++count;
      }
    }
  }
  return count;
}

StatsPayload runningStats(double elapsed_s) {
  StatsPayload s;
  s.elapsed_s = elapsed_s;
  s.event_rate_hz = 321.0;
  s.input_gbps = 2.75;
  s.events_in = 9'900;
  s.events_processed = 9'876;
  s.events_dropped = 4;
  s.drops_by_reason = {{"ring_full", 4}};
  s.events_in_flight = 20;
  s.ring_slots = 32;
  s.ring_occupancy = 3;
  s.backend = "cpu";
  s.device = "CPU (2 threads)";
  s.stages = {{"calibrate", 900.0, 1200.0, 9.6}};
  return s;
}

StatusPayload runningStatus() {
  StatusPayload s;
  s.state = "running";
  s.source = "sim:epix10ka2m";
  s.detector = "epix10ka2m";
  s.backend = "cpu";
  s.device = "CPU (2 threads)";
  s.config = {{"source", "sim:epix10ka2m"}, {"rate_hz", 120.0}, {"backend", "auto"}};
  return s;
}
}  // namespace

class MainWindowTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  AppOptions attachedTo(const std::string& endpoint) {
    AppOptions options;
    options.connect = endpoint;
    options.settings_file = dir_.filePath(QStringLiteral("attached.ini"));
    return options;
  }

  AppOptions embeddedIdle(const QString& settings_name) {
    return idle_window_options(dir_, settings_name);
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void everyShortcutIsListedAndTheReplayOnesDriveTheTransport() {
    AppOptions options;
    options.settings_file = dir_.filePath(QStringLiteral("shortcuts.ini"));
    options.publish = "tcp://127.0.0.1:*";
    options.autostart = false;
    MainWindow window(options);
    window.show();
    QApplication::setActiveWindow(&window);
    QVERIFY(QTest::qWaitForWindowActive(&window));
    const QString text = window.keyboardShortcutsText();
    for (const char* line :
         {"Ctrl+O\tFile > Open Configuration...", "Ctrl+S\tFile > Save Configuration...",
          "Ctrl+Q\tFile > Quit", "Ctrl+R\tRun > ", "Ctrl+.\tRun > ", "Ctrl+Space\tReplay > Play",
          "Ctrl+Shift+Space\tReplay > Pause", "Ctrl+Left\tReplay > Step Back",
          "Ctrl+Right\tReplay > Step Forward"})
      QVERIFY2(text.contains(QLatin1String(line)),
               qPrintable(line + QStringLiteral(" in:\n") + text));

    ReplayTransportBar* transport = window.transportBar();
    QSignalSpy steps(transport, &ReplayTransportBar::stepRequested);
    QSignalSpy pauses(transport, &ReplayTransportBar::pauseRequested);
    QSignalSpy resumes(transport, &ReplayTransportBar::resumeRequested);
    // No replay running: the transport is disabled, and so are its shortcuts.
    QTest::keyClick(&window, Qt::Key_Right, Qt::ControlModifier);
    QCOMPARE(steps.count(), 0);
    transport->setRunActive(true, /*replay_source=*/true);
    QTest::keyClick(&window, Qt::Key_Right, Qt::ControlModifier);
    QTest::keyClick(&window, Qt::Key_Left, Qt::ControlModifier);
    QCOMPARE(steps.count(), 2);
    QCOMPARE(steps.at(0).at(0).toLongLong(), 1LL);
    QCOMPARE(steps.at(1).at(0).toLongLong(), -1LL);
    QTest::keyClick(&window, Qt::Key_Space, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(pauses.count(), 1);
    QTest::keyClick(&window, Qt::Key_Space, Qt::ControlModifier);
    QCOMPARE(resumes.count(), 1);
  }

  void showsTheStatsAPublisherSends() {
    livedrp::Publisher publisher("tcp://127.0.0.1:*");
    MainWindow window(attachedTo(publisher.endpoint()));
    window.resize(1200, 760);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));

    // ZeroMQ connects in the background: publish until the window has heard something.
    double elapsed = 0;
    auto publishOne = [&] {
      elapsed += 0.25;
      livedrp::protocol::Message stats =
          livedrp::protocol::make_stats_message(runningStats(elapsed));
      stats.run = 3;
      publisher.publish(stats);
      publisher.publish(livedrp::protocol::make_status_message(runningStatus()));
    };
    for (int i = 0; i < 200 && !window.model()->hasStats(); ++i) {
      publishOne();
      QTest::qWait(25);
    }
    QVERIFY2(window.model()->hasStats(), "no stats reached the window in 5 s");
    for (int i = 0; i < 8; ++i) publishOne();
    QTRY_COMPARE(window.model()->latestStats().elapsed_s, elapsed);

    // The model holds what was sent.
    const StatsPayload& latest = window.model()->latestStats();
    QCOMPARE(latest.event_rate_hz, 321.0);
    QCOMPARE(latest.input_gbps, 2.75);
    QCOMPARE(latest.events_processed, std::uint64_t(9'876));
    QCOMPARE(window.model()->run(), std::int64_t(3));
    QCOMPARE(window.model()->latestStatus().state, std::string("running"));

    // The chart draws it: one curve point per stats message, the last one the value sent.
    RateStripChart* chart = window.chart();
    QTRY_COMPARE(chart->rateCurve()->dataSize(), window.model()->sampleCount());
    QVERIFY(chart->rateCurve()->dataSize() >= 9);
    const QPointF last = chart->rateCurve()->sample(chart->rateCurve()->dataSize() - 1);
    QCOMPARE(last, QPointF(elapsed, 321.0));
    QCOMPARE(chart->throughputCurve()->sample(chart->throughputCurve()->dataSize() - 1).y(), 2.75);
    QTRY_COMPARE(chart->currentValueText(), QStringLiteral("321 Hz · 2.75 GB/s"));

    // The status bar and the counters say it in words.
    auto* status = window.runStatus();
    QTRY_COMPARE(status->eventsLabel()->text(), QStringLiteral("events: 9,876"));
    QCOMPARE(status->dropsLabel()->text(), QStringLiteral("drops: 4"));
    QCOMPARE(status->dropsLabel()->toolTip(), QStringLiteral("ring_full: 4"));
    QCOMPARE(status->backendLabel()->text(), QStringLiteral("backend: cpu"));
    QCOMPARE(status->deviceLabel()->text(), QStringLiteral("device: CPU (2 threads)"));
    QCOMPARE(status->stateLabel()->text(), QStringLiteral("running"));
    QTRY_COMPARE(window.counters()->valueText("Throughput", "event rate"),
                 QStringLiteral("321 Hz"));
    QCOMPARE(window.counters()->valueText("Run", "detector"), QStringLiteral("epix10ka2m"));
    // Run control shows what the remote engine runs, read-only.
    auto* control = window.runControl();
    QCOMPARE(control->sourceCombo()->currentText(), QStringLiteral("sim:epix10ka2m"));
    QCOMPARE(control->backendCombo()->currentText(), QStringLiteral("cpu"));
    QCOMPARE(control->rateSpin()->value(), 120.0);
    QVERIFY(!control->sourceCombo()->isEnabled());
    // The simulated detectors offered: the two raw-ADC detectors and a photon-counting one.
    for (const char* offered : {"sim:epix10ka2m", "sim:jungfrau4m", "sim:eiger2x4m"})
      QVERIFY2(control->sourceCombo()->findText(QString::fromLatin1(offered)) >= 0, offered);

    // And the canvas has the rate curve's colour on it, not only background.
    const QImage canvas = chart->canvas()->grab().toImage();
    const int rate_pixels = countPixels(canvas, RateStripChart::rateColor());
    const int gbps_pixels = countPixels(canvas, RateStripChart::throughputColor());
    qInfo("canvas %dx%d: %d rate pixels, %d throughput pixels", canvas.width(), canvas.height(),
          rate_pixels, gbps_pixels);
    QVERIFY(rate_pixels > 20);
    QVERIFY(gbps_pixels > 20);
  }

  void rejectsMalformedMessagesAndKeepsGoing() {
    zmq::context_t context;
    zmq::socket_t publisher(context, zmq::socket_type::pub);
    publisher.set(zmq::sockopt::linger, 0);
    publisher.bind("tcp://127.0.0.1:*");
    const std::string endpoint = publisher.get(zmq::sockopt::last_endpoint);
    MainWindow window(attachedTo(endpoint));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));

    auto* malformed = window.runStatus()->malformedLabel();
    double elapsed = 0;
    for (int i = 0; i < 200 && (!window.model()->hasStats() || malformed->isHidden()); ++i) {
      // Garbage on the stats topic, then a valid message.
      std::vector<zmq::const_buffer> garbage{zmq::str_buffer("stats"),
                                             zmq::str_buffer("{not json")};
      zmq::send_multipart(publisher, garbage);
      elapsed += 0.25;
      const auto parts =
          livedrp::protocol::encode(livedrp::protocol::make_stats_message(runningStats(elapsed)));
      std::vector<zmq::const_buffer> valid;
      for (const std::string& part : parts) valid.push_back(zmq::buffer(part));
      zmq::send_multipart(publisher, valid);
      QTest::qWait(25);
    }
    QVERIFY(window.model()->hasStats());
    QTRY_VERIFY(!malformed->isHidden());
    QVERIFY(window.subscriber()->malformedCount() >= 1);
    QVERIFY2(malformed->text().endsWith(QLatin1String(" malformed")),
             qPrintable(malformed->text()));
    QVERIFY(window.logText().contains(QLatin1String("malformed")));
    QCOMPARE(window.model()->latestStats().event_rate_hz, 321.0);
  }

  void anAttachedWindowLeavesRunControlToTheRemoteEngine() {
    MainWindow window(attachedTo("tcp://127.0.0.1:1"));
    QVERIFY(window.isAttached());
    QVERIFY(window.engineHost() == nullptr);
    QVERIFY(!window.runControl()->startAction()->isEnabled());
    QVERIFY(!window.runControl()->stopAction()->isEnabled());
    QVERIFY(!window.runControl()->sourceCombo()->isEnabled());
    QVERIFY(window.windowTitle().contains(QLatin1String("tcp://127.0.0.1:1")));
    QCOMPARE(window.runStatus()->stateLabel()->text(), QStringLiteral("waiting for engine"));
    // Nothing local pretends to describe the remote run before it reports.
    QCOMPARE(window.runControl()->sourceCombo()->currentText(), QString());
    QCOMPARE(window.runControl()->backendCombo()->currentIndex(), -1);
  }

  void anAttachedWindowKeepsTheEmbeddedEngineSettings() {
    AppOptions embedded = embeddedIdle(QStringLiteral("shared.ini"));
    {
      MainWindow first(embedded);
      first.runControl()->rateSpin()->setValue(42);
      first.close();
    }
    {
      AppOptions attached = attachedTo("tcp://127.0.0.1:1");
      attached.settings_file = embedded.settings_file;
      MainWindow remote(attached);
      remote.close();  // writes the layout, not the remote run as our engine configuration
    }
    MainWindow again(embedded);
    QCOMPARE(again.runControl()->rateSpin()->value(), 42.0);
    QCOMPARE(again.runControl()->sourceCombo()->currentText(), QStringLiteral("sim:epix10ka2m"));
  }

  void anIdleEmbeddedWindowOffersStart() {
    MainWindow window(embeddedIdle(QStringLiteral("idle.ini")));
    QVERIFY(window.engineHost() != nullptr);
    QVERIFY(window.runControl()->startAction()->isEnabled());
    QVERIFY(!window.runControl()->stopAction()->isEnabled());
    QCOMPARE(window.engineConfig().publish, std::string("tcp://127.0.0.1:*"));
  }

  void layoutAndEngineConfigurationRoundTripThroughOneFile() {
    const QString path = dir_.filePath(QStringLiteral("layout.ini"));
    MainWindow window(embeddedIdle(QStringLiteral("roundtrip.ini")));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* counters_dock = window.findChild<QDockWidget*>(QStringLiteral("countersDock"));
    QVERIFY(counters_dock);
    window.runControl()->sourceCombo()->setCurrentText(QStringLiteral("sim:jungfrau4m"));
    window.runControl()->backendCombo()->setCurrentText(QStringLiteral("cpu"));
    window.runControl()->rateSpin()->setValue(123);
    counters_dock->hide();
    QVERIFY(window.saveLayout(path));

    // The file carries the engine configuration as JSON, next to the window state.
    QSettings saved(path, QSettings::IniFormat);
    const auto config =
        nlohmann::json::parse(saved.value("engine/config").toString().toStdString());
    QCOMPARE(config.at("source").get<std::string>(), std::string("sim:jungfrau4m"));
    QCOMPARE(config.at("rate_hz").get<double>(), 123.0);
    QVERIFY(!saved.value("window/state").toByteArray().isEmpty());

    window.runControl()->sourceCombo()->setCurrentText(QStringLiteral("sim:epix10ka2m"));
    window.runControl()->backendCombo()->setCurrentText(QStringLiteral("auto"));
    window.runControl()->rateSpin()->setValue(5);
    counters_dock->show();
    QVERIFY(window.loadLayout(path));
    QCOMPARE(window.runControl()->sourceCombo()->currentText(), QStringLiteral("sim:jungfrau4m"));
    QCOMPARE(window.runControl()->backendCombo()->currentText(), QStringLiteral("cpu"));
    QCOMPARE(window.runControl()->rateSpin()->value(), 123.0);
    QVERIFY(counters_dock->isHidden());
  }

  void settingsPersistAcrossSessionsAndTheCommandLineWins() {
    {
      MainWindow first(embeddedIdle(QStringLiteral("sessions.ini")));
      first.runControl()->rateSpin()->setValue(77);
      first.runControl()->backendCombo()->setCurrentText(QStringLiteral("cpu"));
      first.close();  // writes the settings
    }
    {
      MainWindow second(embeddedIdle(QStringLiteral("sessions.ini")));
      QCOMPARE(second.runControl()->rateSpin()->value(), 77.0);
      QCOMPARE(second.runControl()->backendCombo()->currentText(), QStringLiteral("cpu"));
    }
    AppOptions options = embeddedIdle(QStringLiteral("sessions.ini"));
    options.rate_hz = 5;
    MainWindow third(options);
    QCOMPARE(third.runControl()->rateSpin()->value(), 5.0);
    QCOMPARE(third.runControl()->backendCombo()->currentText(), QStringLiteral("cpu"));
  }

  void aMissingLayoutFileIsReportedNotLoaded() {
    MainWindow window(embeddedIdle(QStringLiteral("missing.ini")));
    QVERIFY(!window.loadLayout(dir_.filePath(QStringLiteral("no/such/layout.ini"))));
    QVERIFY(window.logText().contains(QLatin1String("cannot read the layout")));
  }

  void wildcardEndpointsBecomeLoopbackForSubscribers() {
    using livedrp::app::connectableEndpoint;
    QCOMPARE(connectableEndpoint("tcp://*:5555"), QStringLiteral("tcp://127.0.0.1:5555"));
    QCOMPARE(connectableEndpoint("tcp://0.0.0.0:6000"), QStringLiteral("tcp://127.0.0.1:6000"));
    QCOMPARE(connectableEndpoint("tcp://10.0.0.2:5555"), QStringLiteral("tcp://10.0.0.2:5555"));
    QCOMPARE(connectableEndpoint("inproc://livedrp"), QStringLiteral("inproc://livedrp"));
  }
};

QTEST_MAIN(MainWindowTest)
#include "test_gui_main_window.moc"
