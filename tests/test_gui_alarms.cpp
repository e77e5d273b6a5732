// The operator's alarms: the monitor's verdicts on known inputs (thresholds, the interval's drop
// fraction, the hit-rate band, engine errors with what the log's rate limit held back), the
// indicator painted amber and red with its reasons, and an attached window that shows an
// engine's errors from the `log` topic in its Log dock and turns its indicator red.
#include <QtTest>

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <spdlog/spdlog.h>

#include "app/alarm_monitor.hpp"
#include "app/alarm_panel.hpp"
#include "app/app_options.hpp"
#include "app/main_window.hpp"
#include "core/error.hpp"
#include "protocol/log_topic.hpp"
#include "protocol/peaks_topic.hpp"
#include "protocol/topics.hpp"
#include "publish/publisher.hpp"
#include "widgets/protocol_metatypes.hpp"

using namespace livedrp;
using namespace livedrp::app;
using protocol::LogEntry;
using protocol::LogLevel;
using protocol::StatsPayload;

namespace {

StatsPayload stats(double rate_hz, std::uint64_t in, std::uint64_t dropped,
                   std::optional<double> hit_rate = std::nullopt) {
  StatsPayload s;
  s.event_rate_hz = rate_hz;
  s.events_in = in;
  s.events_dropped = dropped;
  s.events_processed = in - dropped;
  if (dropped > 0) s.drops_by_reason = {{"ring_full", dropped}};
  if (hit_rate) {
    protocol::PeakFindingStats peaks;
    peaks.interval_events = 100;
    peaks.interval_hits = std::uint64_t(*hit_rate * 100);
    peaks.total_events = 100;
    peaks.total_hits = peaks.interval_hits;
    peaks.interval_hit_rate = *hit_rate;
    s.peak_finding = peaks;
  }
  return s;
}

widgets::MessageBatch batch_of(const protocol::Message& message) {
  return {std::make_shared<const protocol::Message>(message)};
}

LogEntry entry(LogLevel level, std::string text, std::uint64_t index, std::uint64_t suppressed) {
  LogEntry e;
  e.level = level;
  e.text = std::move(text);
  e.logger = "livedrp";
  e.index = index;
  e.suppressed = suppressed;
  e.time_ns = 1'800'000'000'000'000'000;
  return e;
}

// The indicator's background where no text is drawn (its left padding).
QColor background(QLabel* label) {
  label->resize(label->sizeHint());
  const QImage image = label->grab().toImage();
  return image.pixelColor(1, image.height() / 2);
}

bool near(const QColor& a, const QColor& b) {
  return std::abs(a.red() - b.red()) <= 8 && std::abs(a.green() - b.green()) <= 8 &&
         std::abs(a.blue() - b.blue()) <= 8;
}

// An event's image with gain occupancy: three segments, modes as the ePix10ka's AHL
// configuration names them, then "bad"; each row sums to 1.
protocol::ImageFrame occupancy_image(float segment1_low) {
  protocol::ImageFrame image;
  image.height = 2;
  image.width = 2;
  image.pixels = {0, 1, 2, 3};
  image.gain_modes = {"AHL-H", "AHL-L", "bad"};
  image.segments = 3;
  image.gain_occupancy = {0.98f,
                          0.02f,
                          0.0f,  // segment 0
                          0.993f - segment1_low,
                          segment1_low,
                          0.007f,  // segment 1
                          1.0f,
                          0.0f,
                          0.0f};  // segment 2
  return image;
}

// What the monitor says of `settings`: the refusal's text, or "accepted".
std::string refusal_of(AlarmMonitor& monitor, const AlarmSettings& settings) {
  try {
    monitor.set_settings(settings);
  } catch (const InputError& error) {
    return error.what();
  }
  return "accepted";
}

const QColor kAmber(0xff, 0xbf, 0x00);
const QColor kRed(0xd3, 0x2f, 0x2f);

}  // namespace

class TestGuiAlarms : public QObject {
  Q_OBJECT

 private slots:
  void settings_are_validated() {
    AlarmMonitor monitor;
    const auto refusal = [&](const AlarmSettings& s) { return refusal_of(monitor, s); };
    AlarmSettings s;
    s.rate_floor_hz = -1;
    QVERIFY(refusal(s).find("event-rate floor") != std::string::npos);
    s = {};
    s.hit_rate_min_pct = 30;
    s.hit_rate_max_pct = 20;
    QVERIFY(refusal(s).find("minimum above its maximum") != std::string::npos);
    s = {};
    s.drop_ceiling_pct = 101;
    QVERIFY(refusal(s).find("above 100") != std::string::npos);
    s = {};
    s.red_after_s = std::nan("");
    QVERIFY(refusal(s).find("red after") != std::string::npos);
    QCOMPARE(refusal(AlarmSettings{}), std::string("accepted"));
  }

  void a_breach_is_amber_then_red_and_ends_with_the_breach() {
    AlarmMonitor monitor;
    AlarmSettings s;
    s.rate_floor_hz = 1000;
    s.red_after_s = 10;
    monitor.set_settings(s);
    monitor.on_stats(stats(1500, 100, 0), 0.0);
    QCOMPARE(monitor.state(0.5).level, AlarmLevel::Ok);
    monitor.on_stats(stats(400, 200, 0), 1.0);
    AlarmState state = monitor.state(1.0);
    QCOMPARE(state.level, AlarmLevel::Amber);
    QCOMPARE(state.reasons.at(0), std::string("event rate 400.0 /s below the floor of 1000.0 /s"));
    monitor.on_stats(stats(450, 300, 0), 6.0);  // still low: the breach dates from 1.0
    QCOMPARE(monitor.state(10.9).level, AlarmLevel::Amber);
    state = monitor.state(11.0);
    QCOMPARE(state.level, AlarmLevel::Red);
    QCOMPARE(state.reasons.at(0),
             std::string("event rate 450.0 /s below the floor of 1000.0 /s for 10 s"));
    monitor.on_stats(stats(1200, 400, 0), 12.0);
    QCOMPARE(monitor.state(12.0).level, AlarmLevel::Ok);
    // A stopped run is not a low rate.
    monitor.on_stats(stats(0, 400, 0), 13.0);
    QCOMPARE(monitor.state(13.0).level, AlarmLevel::Amber);
    monitor.on_idle();
    QCOMPARE(monitor.state(30.0).level, AlarmLevel::Ok);
  }

  void drops_are_judged_over_the_interval_and_hits_against_the_band() {
    AlarmMonitor monitor;
    AlarmSettings s;
    s.drop_ceiling_pct = 5;
    s.hit_rate_min_pct = 5;
    s.hit_rate_max_pct = 20;
    s.red_after_s = 0;  // red at once
    monitor.set_settings(s);
    // 1000 in, 20 dropped (2 %): fine; then 1000 more, 80 more dropped (8 % of the interval,
    // though only 5 % of the run).
    monitor.on_stats(stats(1000, 1000, 20, 0.10), 0.0);
    QCOMPARE(monitor.state(0.0).level, AlarmLevel::Ok);
    monitor.on_stats(stats(1000, 2000, 100, 0.10), 1.0);
    AlarmState state = monitor.state(1.0);
    QCOMPARE(state.level, AlarmLevel::Red);
    QCOMPARE(state.reasons.at(0),
             std::string("80 of 1000 events dropped (8.0 %, ceiling 5.0 %) for 0 s"));
    monitor.on_stats(stats(1000, 3000, 100, 0.32), 2.0);
    state = monitor.state(2.0);
    QCOMPARE(state.reasons.size(), std::size_t(1));
    QCOMPARE(state.reasons.at(0), std::string("hit rate 32.0 % above 20.0 % for 0 s"));
    monitor.on_stats(stats(1000, 4000, 100, 0.02), 3.0);
    // Still outside the band (now below it): one breach since 2.0.
    QCOMPARE(monitor.state(3.0).reasons.at(0), std::string("hit rate 2.0 % below 5.0 % for 1 s"));
    monitor.on_stats(stats(1000, 5000, 100, 0.12), 4.0);
    QCOMPARE(monitor.state(4.0).level, AlarmLevel::Ok);
  }

  void engine_errors_are_red_until_acknowledged() {
    AlarmMonitor monitor;
    monitor.set_settings(AlarmSettings{});
    monitor.on_log(entry(LogLevel::Warning, "a warning is no alarm", 1, 0));
    QCOMPARE(monitor.state(0).level, AlarmLevel::Ok);
    // Two held back before this error count as errors too (the log cannot say what they were).
    monitor.on_log(entry(LogLevel::Error, "backend fault", 4, 2));
    const AlarmState state = monitor.state(0);
    QCOMPARE(state.level, AlarmLevel::Red);
    QCOMPARE(state.reasons.at(0), std::string("3 engine errors, last: backend fault"));
    monitor.acknowledge();
    QCOMPARE(monitor.state(0).level, AlarmLevel::Ok);
  }

  void the_indicator_is_painted_with_the_state() {
    AlarmPanel panel;
    QLabel* indicator = panel.indicator();
    AlarmSettings s;
    s.rate_floor_hz = 1000;
    s.red_after_s = 3600;
    panel.setAlarmSettings(s);
    QCOMPARE(indicator->text(), QStringLiteral("Alarms: OK"));
    const QColor ok = background(indicator);
    QVERIFY(!near(ok, kAmber) && !near(ok, kRed));

    panel.apply(batch_of(protocol::make_stats_message(stats(400, 100, 0))));
    QCOMPARE(indicator->text(),
             QStringLiteral("Alarm: event rate 400.0 /s below the floor of 1000.0 /s"));
    QVERIFY2(near(background(indicator), kAmber), qPrintable(background(indicator).name()));

    s.red_after_s = 0;
    panel.setAlarmSettings(s);
    QVERIFY(indicator->text().startsWith(
        QStringLiteral("Alarm: event rate 400.0 /s below the floor of 1000.0 /s for ")));
    QVERIFY2(near(background(indicator), kRed), qPrintable(background(indicator).name()));

    // An engine error adds to it, first, and the Log dock gets its line.
    QSignalSpy lines(&panel, &AlarmPanel::engineLog);
    panel.apply(
        batch_of(protocol::make_log_message(entry(LogLevel::Error, "lane 2: kernel fault", 7, 1))));
    QCOMPARE(lines.count(), 1);
    QCOMPARE(lines.at(0).at(0).toString(),
             QStringLiteral(
                 "engine error: lane 2: kernel fault (1 earlier held back by the rate limit)"));
    QCOMPARE(indicator->text(),
             QStringLiteral("Alarm: 2 engine errors, last: lane 2: kernel fault (+1)"));

    // The rate recovers; acknowledging the errors brings the indicator back to OK.
    panel.apply(batch_of(protocol::make_stats_message(stats(2000, 200, 0))));
    QVERIFY(near(background(indicator), kRed));
    auto* acknowledge = panel.findChild<QPushButton*>(QStringLiteral("alarmAcknowledge"));
    QVERIFY(acknowledge && acknowledge->isEnabled());
    QTest::mouseClick(acknowledge, Qt::LeftButton);
    QCOMPARE(indicator->text(), QStringLiteral("Alarms: OK"));
    QVERIFY(!acknowledge->isEnabled());
  }

  // The gain-mode alarm judges the worst segment's share of the chosen mode in each image.
  void gain_mode_occupancy_above_its_ceiling_is_an_alarm() {
    AlarmMonitor monitor;
    AlarmSettings s;
    s.gain_ceiling_pct = 5;
    s.gain_mode = "AHL-L";
    s.red_after_s = 10;
    monitor.set_settings(s);
    monitor.on_image(occupancy_image(0.03f), 0.0);  // worst segment 3 %
    QCOMPARE(monitor.state(0.0).level, AlarmLevel::Ok);
    monitor.on_image(occupancy_image(0.093f), 1.0);
    AlarmState state = monitor.state(1.0);
    QCOMPARE(state.level, AlarmLevel::Amber);
    QCOMPARE(state.reasons.at(0),
             std::string("gain mode AHL-L on 9.3 % of segment 1's pixels (ceiling 5.0 %)"));
    // An image without occupancy (a detector without gain modes) changes nothing.
    protocol::ImageFrame plain = occupancy_image(0.0f);
    plain.gain_modes.clear();
    plain.gain_occupancy.clear();
    monitor.on_image(plain, 5.0);
    state = monitor.state(11.0);
    QCOMPARE(state.level, AlarmLevel::Red);
    QCOMPARE(
        state.reasons.at(0),
        std::string("gain mode AHL-L on 9.3 % of segment 1's pixels (ceiling 5.0 %) for 10 s"));
    monitor.on_image(occupancy_image(0.01f), 12.0);
    QCOMPARE(monitor.state(12.0).level, AlarmLevel::Ok);
    // "bad" is a mode like the others; a mode the detector does not have is said so.
    s.gain_mode = "bad";
    s.gain_ceiling_pct = 0.5;
    monitor.set_settings(s);
    monitor.on_image(occupancy_image(0.01f), 13.0);
    QCOMPARE(monitor.state(13.0).reasons.at(0),
             std::string("gain mode bad on 0.7 % of segment 1's pixels (ceiling 0.5 %)"));
    s.gain_mode = "FL";
    monitor.set_settings(s);
    monitor.on_image(occupancy_image(0.01f), 14.0);
    QCOMPARE(monitor.state(14.0).reasons.at(0),
             std::string("gain mode 'FL' is not one of this detector's (AHL-H, AHL-L, bad)"));
    // Switched off, the breach ends; a stopped run ends it too.
    s.gain_ceiling_pct.reset();
    monitor.set_settings(s);
    QCOMPARE(monitor.state(15.0).level, AlarmLevel::Ok);
    s.gain_ceiling_pct = 1;
    s.gain_mode = "AHL-L";
    monitor.set_settings(s);
    monitor.on_image(occupancy_image(0.2f), 16.0);
    QCOMPARE(monitor.state(16.0).level, AlarmLevel::Amber);
    monitor.on_idle();
    QCOMPARE(monitor.state(16.0).level, AlarmLevel::Ok);

    const auto refusal = [&](const AlarmSettings& s) { return refusal_of(monitor, s); };
    AlarmSettings bad;
    bad.gain_ceiling_pct = 150;
    QVERIFY(refusal(bad).find("gain-mode ceiling 150.0 % is above 100 %") != std::string::npos);
    bad.gain_ceiling_pct = 5;
    bad.gain_mode.clear();
    QVERIFY(refusal(bad).find("needs a gain mode") != std::string::npos);
  }

  // The dock's fields set the gain alarm, and an image turns the indicator amber.
  void the_gain_fields_reach_the_monitor_and_the_indicator() {
    AlarmPanel panel;
    auto* on = panel.findChild<QCheckBox*>(QStringLiteral("alarmGainOn"));
    auto* ceiling = panel.findChild<QDoubleSpinBox*>(QStringLiteral("alarmGainCeiling"));
    auto* mode = panel.findChild<QLineEdit*>(QStringLiteral("alarmGainMode"));
    QVERIFY(on && ceiling && mode);
    QVERIFY(!panel.alarmSettings().gain_ceiling_pct);
    ceiling->setValue(4);
    mode->setText(QStringLiteral("AHL-L"));
    on->setChecked(true);
    QCOMPARE(panel.alarmSettings().gain_ceiling_pct.value_or(-1), 4.0);
    QCOMPARE(panel.alarmSettings().gain_mode, std::string("AHL-L"));
    panel.applyImage(occupancy_image(0.25f));
    QCOMPARE(
        panel.indicator()->text(),
        QStringLiteral("Alarm: gain mode AHL-L on 25.0 % of segment 1's pixels (ceiling 4.0 %)"));
    QVERIFY2(near(background(panel.indicator()), kAmber),
             qPrintable(background(panel.indicator()).name()));
    mode->clear();  // no mode: refused, the alarm in force kept
    QVERIFY2(panel.fieldProblem().contains(QStringLiteral("needs a gain mode")),
             qPrintable(panel.fieldProblem()));
    QCOMPARE(panel.alarmSettings().gain_mode, std::string("AHL-L"));
    // Kept between sessions.
    QTemporaryDir dir;
    QSettings stored(dir.filePath(QStringLiteral("alarms.ini")), QSettings::IniFormat);
    mode->setText(QStringLiteral("bad"));
    panel.useSettings(&stored);
    AlarmPanel again;
    again.useSettings(&stored);
    QCOMPARE(again.alarmSettings().gain_ceiling_pct.value_or(-1), 4.0);
    QCOMPARE(again.alarmSettings().gain_mode, std::string("bad"));
  }

  void invalid_fields_are_shown_and_the_alarms_in_force_kept() {
    AlarmPanel panel;
    AlarmSettings s;
    s.hit_rate_min_pct = 5;
    s.hit_rate_max_pct = 20;
    panel.setAlarmSettings(s);
    auto* minimum = panel.findChild<QDoubleSpinBox*>(QStringLiteral("alarmHitMin"));
    QVERIFY(minimum);
    minimum->setValue(50);  // above the maximum of 20
    QVERIFY2(panel.fieldProblem().contains(QStringLiteral("minimum above its maximum")),
             qPrintable(panel.fieldProblem()));
    QCOMPARE(*panel.alarmSettings().hit_rate_min_pct, 5.0);
    minimum->setValue(10);
    QVERIFY(panel.fieldProblem().isEmpty());
    QCOMPARE(*panel.alarmSettings().hit_rate_min_pct, 10.0);
  }

  void an_attached_window_shows_the_engines_errors() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    Publisher publisher("tcp://127.0.0.1:*");
    AppOptions options;
    options.connect = publisher.endpoint();
    options.settings_file = dir.filePath(QStringLiteral("alarms.ini"));
    MainWindow window(options);
    auto* indicator = window.findChild<QLabel*>(QStringLiteral("alarmIndicator"));
    QVERIFY(indicator);
    // ZeroMQ connects in the background: publish stats until the window has them.
    for (int i = 0; i < 200 && !window.logText().contains(QStringLiteral("engine warning")); ++i) {
      if (i == 0) publisher.forward_log();
      spdlog::warn("attached window check {}", i);
      QTest::qWait(25);
    }
    QVERIFY2(window.logText().contains(QStringLiteral("engine warning: attached window check")),
             qPrintable(window.logText()));
    QCOMPARE(indicator->text(), QStringLiteral("Alarms: OK"));  // warnings are no alarm
    spdlog::error("the detector stopped sending");
    QTRY_VERIFY_WITH_TIMEOUT(
        window.logText().contains(QStringLiteral("engine error: the detector stopped sending")),
        10000);
    QTRY_VERIFY_WITH_TIMEOUT(indicator->text().contains(QStringLiteral("engine error")), 10000);
    QVERIFY(indicator->text().endsWith(QStringLiteral("last: the detector stopped sending")));
    QVERIFY2(near(background(indicator), kRed), qPrintable(background(indicator).name()));
  }
};

QTEST_MAIN(TestGuiAlarms)
#include "test_gui_alarms.moc"
