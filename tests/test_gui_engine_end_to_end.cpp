// The embedded engine under the GUI: EngineHost runs a real Engine on the simulated ePix10ka2M (CPU
// backend), the SubscriberThread brings its `stats` and `status` to the model, the window shows a
// live rate, and Start/Stop never hold up the event loop.
#include <QAction>
#include <QElapsedTimer>
#include <QLabel>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <qwt_plot_curve.h>

#include "app/app_options.hpp"
#include "app/engine_host.hpp"
#include "app/main_window.hpp"
#include "app/run_control_widget.hpp"
#include "app/subscriber_thread.hpp"
#include "exec/engine.hpp"
#include "publish/publisher.hpp"
#include "widgets/rate_strip_chart.hpp"
#include "widgets/run_status_widget.hpp"
#include "widgets/stats_model.hpp"

using livedrp::EngineConfig;
using livedrp::app::EngineHost;
using livedrp::app::MainWindow;
using livedrp::app::SubscriberThread;
using livedrp::widgets::StatsModel;

namespace {
// Start and Stop hand the engine's set-up and teardown to the host's worker thread. The checks
// below hold without a wall-clock bound (a loaded 2-core machine holds a healthy event loop up for
// a hundred milliseconds now and then): a start that waited for the engine would hold the loop for
// most of the time until the run goes (the engine's construction), so the longest gap must stay
// under half of that time; a stop that waited would return with the run finished, so the run must
// still be stopping when it returns. The gaps are printed for the record.
constexpr double kMaxGapShareOfStart = 0.5;
// Generous limits for a loaded 2-core CI machine; a healthy run takes a fraction of them.
constexpr int kStartTimeoutMs = 30'000;
constexpr int kStopTimeoutMs = 15'000;

// A small, quick run: 50 Hz, one calibration thread, two simulated events cycled.
EngineConfig smallConfig() {
  EngineConfig config;
  config.source = "sim:epix10ka2m";
  config.backend = "cpu";
  config.rate_hz = 50;
  config.publish = "tcp://127.0.0.1:*";
  config.cpu_threads = 1;
  config.simulator_pool = 2;
  return config;
}

// Measures the longest gap between ticks of a 5 ms timer: how long the event loop was held up.
class LoopWatch {
 public:
  LoopWatch() {
    timer_.setInterval(5);
    timer_.setTimerType(Qt::PreciseTimer);
    QObject::connect(&timer_, &QTimer::timeout, [this] {
      const qint64 now = clock_.elapsed();
      max_gap_ = std::max(max_gap_, now - last_);
      last_ = now;
    });
  }
  void start() {
    clock_.start();
    last_ = 0;
    max_gap_ = 0;
    timer_.start();
  }
  qint64 stop() {
    timer_.stop();
    return std::max(max_gap_, clock_.elapsed() - last_);
  }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 last_ = 0;
  qint64 max_gap_ = 0;
};

bool hasLiveRate(const StatsModel& model) {
  return model.hasStats() && model.latestStats().event_rate_hz > 0;
}
}  // namespace

class EngineEndToEndTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void theHostRunsTheEngineAndTheModelShowsItsRate() {
    EngineHost host;
    StatsModel model;
    connect(&host, &EngineHost::statusChanged, &model,
            [&](const livedrp::protocol::StatusPayload& status, qint64 time_ns) {
              model.applyStatus(status, time_ns);
            });
    QSignalSpy started(&host, &EngineHost::started);
    QSignalSpy finished(&host, &EngineHost::runFinished);

    LoopWatch starting;
    starting.start();
    QElapsedTimer call;
    call.start();
    QVERIFY(host.start(smallConfig()));
    const qint64 start_call_ms = call.elapsed();
    QVERIFY(host.isActive());
    QVERIFY(!host.start(smallConfig()));  // one run at a time
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, kStartTimeoutMs);
    {
      const qint64 until_started_ms = call.elapsed();
      const qint64 gap = starting.stop();
      qInfo(
          "start() returned after %lld ms; the engine started after %lld ms; longest event-loop "
          "gap %lld ms",
          (long long)start_call_ms, (long long)until_started_ms, (long long)gap);
      QVERIFY2(double(gap) < kMaxGapShareOfStart * double(until_started_ms),
               "the event loop stood still while the engine was set up");
    }
    const QString endpoint = started.at(0).at(0).toString();
    QVERIFY2(endpoint.startsWith(QLatin1String("tcp://127.0.0.1:")) &&
                 !endpoint.endsWith(QLatin1Char('*')),
             qPrintable(endpoint));
    QCOMPARE(started.at(0).at(1).toString(), QStringLiteral("cpu"));
    QCOMPARE(host.endpoint(), endpoint);

    SubscriberThread subscriber(endpoint, MainWindow::subscribedTopics());
    connect(&subscriber, &SubscriberThread::messagesReceived, &model,
            [&](const livedrp::widgets::MessageBatch& batch) { model.apply(batch); });
    subscriber.start();

    QTRY_VERIFY_WITH_TIMEOUT(hasLiveRate(model), kStartTimeoutMs);
    const auto processed = model.latestStats().events_processed;
    QTRY_VERIFY_WITH_TIMEOUT(model.latestStats().events_processed > processed, 5000);
    const auto& stats = model.latestStats();
    qInfo("rate %.1f Hz, %.3f GB/s, %llu processed, %llu dropped", stats.event_rate_hz,
          stats.input_gbps, (unsigned long long)stats.events_processed,
          (unsigned long long)stats.events_dropped);
    QVERIFY(stats.event_rate_hz < 200);  // paced at 50 Hz
    QVERIFY(stats.input_gbps > 0);
    QCOMPARE(stats.backend, std::string("cpu"));
    QCOMPARE(model.latestStatus().state, std::string("running"));
    QCOMPARE(model.latestStatus().source, std::string("sim:epix10ka2m"));

    LoopWatch watch;
    watch.start();
    host.stop();
    QVERIFY2(host.state() != QStringLiteral("finished") && finished.count() == 0,
             "stop() returned with the run already finished: it waited for the engine");
    QTRY_COMPARE_WITH_TIMEOUT(host.state(), QStringLiteral("finished"), kStopTimeoutMs);
    const qint64 gap = watch.stop();
    qInfo("longest event-loop gap while stopping: %lld ms", (long long)gap);
    QVERIFY(!host.isActive());
    QTRY_COMPARE(model.latestStatus().state, std::string("finished"));
    QTRY_COMPARE(finished.count(), 1);
    const auto summary = qvariant_cast<livedrp::protocol::StatsPayload>(finished.at(0).at(0));
    QVERIFY(summary.events_processed >= processed);
    QCOMPARE(summary.events_in, summary.events_processed + summary.events_dropped);
    QVERIFY(finished.at(0).at(1).toString().isEmpty());
  }

  void aRunWithAnEventCountEndsByItself() {
    EngineHost host;
    QSignalSpy finished(&host, &EngineHost::runFinished);
    EngineConfig config = smallConfig();
    config.events = 20;
    config.rate_hz = 0;  // as fast as possible; a full ring then waits, so nothing is dropped
    QVERIFY(host.start(config));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kStartTimeoutMs);
    const auto summary = qvariant_cast<livedrp::protocol::StatsPayload>(finished.at(0).at(0));
    QCOMPARE(summary.events_in, std::uint64_t(20));
    QCOMPARE(summary.events_processed, std::uint64_t(20));
    QCOMPARE(summary.events_dropped, std::uint64_t(0));
    QTRY_COMPARE(host.state(), QStringLiteral("finished"));
    QVERIFY(!host.isActive());
  }

  void aBadSourceIsReportedWithItsReason() {
    EngineHost host;
    QSignalSpy errors(&host, &EngineHost::errorOccurred);
    EngineConfig config = smallConfig();
    config.source = "sim:no_such_detector";
    QVERIFY(host.start(config));
    QTRY_COMPARE_WITH_TIMEOUT(errors.count(), 1, kStartTimeoutMs);
    const QString error = errors.at(0).at(0).toString();
    QVERIFY2(error.contains(QLatin1String("no_such_detector")), qPrintable(error));
    QTRY_COMPARE(host.state(), QStringLiteral("error"));
    QVERIFY(!host.isActive());
  }

  void anEndpointInUseIsReported() {
    livedrp::Publisher squatter("tcp://127.0.0.1:*");
    EngineHost host;
    QSignalSpy errors(&host, &EngineHost::errorOccurred);
    EngineConfig config = smallConfig();
    config.publish = squatter.endpoint();
    QVERIFY(host.start(config));
    QTRY_COMPARE_WITH_TIMEOUT(errors.count(), 1, kStartTimeoutMs);
    const QString error = errors.at(0).at(0).toString();
    QVERIFY2(error.contains(QString::fromStdString(squatter.endpoint())), qPrintable(error));
    QVERIFY2(error.startsWith(QLatin1String("configuration error")), qPrintable(error));
  }

  void theSubscriberStopsWithinOneReceiveTimeout() {
    SubscriberThread subscriber(QStringLiteral("tcp://127.0.0.1:1"));
    subscriber.start();
    QTest::qWait(50);
    QVERIFY(subscriber.isRunning());
    QElapsedTimer clock;
    clock.start();
    subscriber.stop();
    QVERIFY(subscriber.wait(2000));
    QVERIFY(clock.elapsed() < 2 * SubscriberThread::kReceiveTimeout.count() + 50);
  }

  void aSubscriberThatCannotConnectSaysWhy() {
    SubscriberThread subscriber(QStringLiteral("nonsense://nowhere"));
    QSignalSpy failed(&subscriber, &SubscriberThread::failed);
    subscriber.start();
    QTRY_COMPARE(failed.count(), 1);
    QVERIFY(failed.at(0).at(0).toString().contains(QLatin1String("nonsense://nowhere")));
    QVERIFY(subscriber.wait(2000));
  }

  void theWindowStartsShowsAndStopsTheEmbeddedEngine() {
    // The saved settings carry what the command line does not set (one CPU thread, a small pool).
    const QString settings_path = dir_.filePath(QStringLiteral("window.ini"));
    {
      QSettings settings(settings_path, QSettings::IniFormat);
      settings.setValue("engine/config", QString::fromStdString(smallConfig().to_json().dump()));
    }
    livedrp::app::AppOptions options;
    options.settings_file = settings_path;
    options.source = "sim:epix10ka2m";
    options.backend = "cpu";
    options.rate_hz = 50;
    options.publish = "tcp://127.0.0.1:*";
    MainWindow window(options);  // starts the engine at once
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCOMPARE(window.engineConfig().cpu_threads, 1u);
    QVERIFY(window.engineHost()->isActive());
    QVERIFY(!window.runControl()->startAction()->isEnabled());

    QTRY_VERIFY_WITH_TIMEOUT(hasLiveRate(*window.model()), kStartTimeoutMs);
    const auto processed = window.model()->latestStats().events_processed;
    QTRY_VERIFY_WITH_TIMEOUT(window.model()->latestStats().events_processed > processed, 5000);
    auto* status = window.runStatus();
    QTRY_COMPARE(status->stateLabel()->text(), QStringLiteral("running"));
    QTRY_COMPARE(status->backendLabel()->text(), QStringLiteral("backend: cpu"));
    QTRY_VERIFY(window.chart()->rateCurve()->dataSize() > 0);
    const auto* curve = window.chart()->rateCurve();
    QTRY_VERIFY(curve->sample(curve->dataSize() - 1).y() > 0);
    QVERIFY(window.runControl()->stopAction()->isEnabled());

    // Stop: the click returns at once and the event loop keeps turning while the engine drains.
    LoopWatch watch;
    watch.start();
    window.runControl()->stopAction()->trigger();
    QVERIFY2(status->stateLabel()->text() != QStringLiteral("finished"),
             "Stop returned with the run already finished: it waited for the engine");
    QTRY_COMPARE_WITH_TIMEOUT(status->stateLabel()->text(), QStringLiteral("finished"),
                              kStopTimeoutMs);
    qint64 gap = watch.stop();
    qInfo("longest event-loop gap while stopping: %lld ms", (long long)gap);
    QVERIFY(window.runControl()->startAction()->isEnabled());
    QVERIFY(!window.runControl()->stopAction()->isEnabled());
    QVERIFY(window.logText().contains(QLatin1String("run summary")));

    // Start again: a new engine on a new port, a fresh chart, the subscriber follows.
    watch.start();
    QElapsedTimer click;
    click.start();
    window.runControl()->startAction()->trigger();
    QVERIFY(!hasLiveRate(*window.model()));  // the previous run's numbers are gone
    QTRY_VERIFY_WITH_TIMEOUT(hasLiveRate(*window.model()), kStartTimeoutMs);
    const qint64 until_live_ms = click.elapsed();
    gap = watch.stop();
    qInfo("longest event-loop gap while restarting: %lld ms of %lld ms", (long long)gap,
          (long long)until_live_ms);
    QVERIFY2(double(gap) < kMaxGapShareOfStart * double(until_live_ms),
             "the event loop stood still while the engine was set up");
    QTRY_COMPARE(status->stateLabel()->text(), QStringLiteral("running"));
    window.runControl()->stopAction()->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(status->stateLabel()->text(), QStringLiteral("finished"),
                              kStopTimeoutMs);
  }
};

QTEST_MAIN(EngineEndToEndTest)
#include "test_gui_engine_end_to_end.moc"
