// The comparison view: the figures and the CSV/JSON export of the table from recorded runs, and a
// real comparison of small CPU configurations on the embedded engine (same events, one after
// another) that draws one labelled curve per configuration and exports its table.
#include <cmath>

#include <QDir>
#include <QPen>
#include <QFile>
#include <QListWidget>
#include <QSpinBox>
#include <QDoubleSpinBox>
#include <QComboBox>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include <qwt_plot_curve.h>
#include <qwt_text.h>

#include "app/comparison_panel.hpp"
#include "app/comparison_runner.hpp"
#include "app/saved_configurations.hpp"
#include "exec/engine.hpp"
#include "widgets/comparison_model.hpp"
#include "widgets/comparison_view.hpp"
#include "widgets/refresh_coalescer.hpp"

using livedrp::EngineConfig;
using livedrp::app::ComparisonPanel;
using livedrp::app::SavedConfigurations;
using livedrp::protocol::StatsPayload;
using livedrp::widgets::ComparisonModel;
using livedrp::widgets::ComparisonView;
using Plot = livedrp::widgets::ComparisonView::Plot;

namespace {
// A comparison of two 30-event runs on the CPU takes a few seconds; this is the loaded-CI bound.
constexpr int kComparisonTimeoutMs = 45'000;

StatsPayload interval(double t, double rate, double p50, double p99) {
  StatsPayload s;
  s.elapsed_s = t;
  s.event_rate_hz = rate;
  s.input_gbps = rate * 1e-3;
  s.latency_p50_us = p50;
  s.latency_p99_us = p99;
  return s;
}

StatsPayload summary(std::uint64_t processed, std::uint64_t dropped, double rate) {
  StatsPayload s;
  s.events_in = processed + dropped;
  s.events_processed = processed;
  s.events_dropped = dropped;
  s.event_rate_hz = rate;
  s.input_gbps = rate * 1e-3;
  return s;
}

// A small CPU configuration: one calibration thread, two simulated events cycled, the source
// waiting for a free slot so every event is processed.
EngineConfig small(int ring_slots) {
  EngineConfig config;
  config.backend = "cpu";
  config.cpu_threads = 1;
  config.simulator_pool = 2;
  config.full_ring = "wait";
  config.ring_slots = ring_slots;
  return config;
}

QString curveTitle(const QwtPlotCurve* curve) { return curve->title().text(); }
}  // namespace

class ComparisonTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void theTableShowsEachRunsFiguresAndExports() {
    ComparisonModel model;
    ComparisonView view(&model);
    const int a = model.addRun("baseline", "1 stream, plain, K=1, all segments", {});
    const int b = model.addRun("four", "4 streams, graph, K=1, all segments", {});
    const int c = model.addRun("broken", "", {});
    model.setRunning(a);
    model.addStats(a, interval(0.25, 100, 50, 90));
    model.addStats(a, interval(0.50, 120, 70, 150));
    model.addStats(a, interval(0.50, 999, 1, 1));  // a repeat of the last interval: ignored
    model.addStats(a, interval(0.75, 110, 60, 120));
    model.finish(a, summary(300, 0, 110), "");
    model.addStats(b, interval(0.25, 230, 30, std::nan("")));
    model.finish(b, summary(300, 2, 220), "");
    model.fail(c, "file: field 'runtime.streams' must be an integer in 1..16, got 99");
    QTRY_VERIFY(!view.coalescer()->pending());

    QCOMPARE(model.run(a).samples.size(), std::size_t(3));
    const auto fa = model.figures(a);
    QCOMPARE(fa.latency_p50_us, 60.0);   // median of the intervals' p50
    QCOMPARE(fa.latency_p99_us, 150.0);  // the worst interval's p99
    QCOMPARE(fa.ratio_to_first, 1.0);
    QCOMPARE(model.figures(b).ratio_to_first, 2.0);

    QTableWidget* table = view.table();
    QCOMPARE(table->rowCount(), 3);
    QCOMPARE(table->columnCount(), ComparisonModel::columns().size());
    QCOMPARE(table->item(0, 0)->text(), QStringLiteral("baseline (1 stream, plain, K=1, all segments)"));
    QCOMPARE(table->item(0, 1)->text(), QStringLiteral("finished"));
    QCOMPARE(table->item(0, 2)->text(), QStringLiteral("300"));
    QCOMPARE(table->item(0, 4)->text(), QStringLiteral("110.0"));
    QCOMPARE(table->item(0, 6)->text(), QStringLiteral("60.0"));
    QCOMPARE(table->item(0, 7)->text(), QStringLiteral("150.0"));
    QCOMPARE(table->item(1, 3)->text(), QStringLiteral("2"));
    QCOMPARE(table->item(1, 7)->text(), QString());  // no p99 at all: empty, not "nan"
    QCOMPARE(table->item(1, 8)->text(), QStringLiteral("2.00"));
    QCOMPARE(table->item(2, 0)->text(), QStringLiteral("broken"));
    QVERIFY(table->item(2, 1)->text().startsWith(QStringLiteral("failed: file: field 'runtime.streams'")));
    QCOMPARE(table->item(2, 2)->text(), QString());

    // Curves: one per run on the rate plot, labelled; two per run on the latency plot.
    const auto rate = view.curves(Plot::Rate);
    QCOMPARE(rate.size(), std::size_t(3));
    QCOMPARE(curveTitle(rate[0]), QStringLiteral("baseline (1 stream, plain, K=1, all segments)"));
    QCOMPARE(rate[0]->dataSize(), size_t(3));
    QCOMPARE(rate[0]->sample(1), QPointF(0.5, 120));
    QCOMPARE(rate[0]->pen().color(), ComparisonView::runColor(0));
    QCOMPARE(rate[1]->pen().color(), ComparisonView::runColor(1));
    QCOMPARE(view.curves(Plot::Latency).size(), std::size_t(6));
    QCOMPARE(view.curves(Plot::Latency)[3]->dataSize(), size_t(0));  // run b's p99: none finite
    QVERIFY(!view.latencyInMilliseconds());
    QCOMPARE(view.curves(Plot::Latency)[1]->sample(1), QPointF(0.5, 150));

    const QStringList lines = model.toCsv().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 4);
    QCOMPARE(lines[0], QStringLiteral("configuration,status,events processed,events dropped,"
                                      "mean rate (Hz),mean input (GB/s),latency p50 (us),"
                                      "latency p99 (us),rate ratio to first"));
    QCOMPARE(lines[1], QStringLiteral("\"baseline (1 stream, plain, K=1, all segments)\",finished,"
                                      "300,0,110.0,0.110,60.0,150.0,1.00"));
    const nlohmann::json json = model.toJson();
    QCOMPARE(json["runs"].size(), std::size_t(3));
    QVERIFY2((json["runs"][1]["events_dropped"]) == (2), (json["runs"][1]["events_dropped"]).dump().c_str());
    QVERIFY(json["runs"][1]["latency_p99_us"].is_null());
    QVERIFY2((json["runs"][2]["status"]) == ("failed"), (json["runs"][2]["status"]).dump().c_str());
  }

  void twoConfigurationsRunOverTheSameEventsAndAreOverlaid() {
    const QString directory = dir_.filePath("compare");
    const SavedConfigurations saved(directory);
    saved.save(QStringLiteral("a ring 4"), small(4));
    saved.save(QStringLiteral("b ring 16"), small(16));

    ComparisonPanel panel;
    panel.setDirectory(directory);
    panel.resize(1000, 600);
    panel.show();
    QCOMPARE(panel.configurationList()->count(), 2);
    panel.setChecked({QStringLiteral("a ring 4"), QStringLiteral("b ring 16")});
    panel.detectorCombo()->setCurrentText(QStringLiteral("sim:epix10ka2m"));
    panel.eventsSpin()->setValue(30);
    panel.rateSpin()->setValue(40);  // a few stats intervals per run

    QSignalSpy finished(&panel, &ComparisonPanel::finished);
    QElapsedTimer call;
    call.start();
    QVERIFY(panel.run());
    QVERIFY2(call.elapsed() < 200, "run() waited for the engine");
    QVERIFY(panel.isRunning());
    QVERIFY(!panel.run());  // one comparison at a time
    QVERIFY(finished.wait(kComparisonTimeoutMs) || finished.count() == 1);
    QTRY_VERIFY(!panel.view()->coalescer()->pending());

    ComparisonModel* model = panel.model();
    QCOMPARE(model->runCount(), 2);
    for (int i = 0; i < 2; ++i) {
      const auto& run = model->run(i);
      QVERIFY2(run.error.isEmpty(), qPrintable(run.error));
      QCOMPARE(run.summary.events_processed, std::uint64_t(30));
      QCOMPARE(run.summary.events_dropped, std::uint64_t(0));
      QVERIFY2(!run.samples.empty(), "no stats interval recorded");
      QVERIFY2((run.config["events"]) == (30), (run.config["events"]).dump().c_str());
      QVERIFY(run.config.at("simulator").at("seed") == model->run(0).config.at("simulator").at("seed"));  // the same events
      QVERIFY2((run.config["source"]) == ("sim:epix10ka2m"), (run.config["source"]).dump().c_str());
    }
    QVERIFY2((model->run(0).config["ring_slots"]) == (4), (model->run(0).config["ring_slots"]).dump().c_str());
    QVERIFY2((model->run(1).config["ring_slots"]) == (16), (model->run(1).config["ring_slots"]).dump().c_str());

    QTableWidget* table = panel.view()->table();
    QCOMPARE(table->rowCount(), 2);
    QCOMPARE(table->item(0, 0)->text(), QStringLiteral("a ring 4 (1 stream, plain, K=1, all segments)"));
    QCOMPARE(table->item(1, 0)->text(), QStringLiteral("b ring 16 (1 stream, plain, K=1, all segments)"));
    QCOMPARE(table->item(0, 1)->text(), QStringLiteral("finished"));
    QCOMPARE(table->item(0, 2)->text(), QStringLiteral("30"));
    QCOMPARE(table->item(1, 2)->text(), QStringLiteral("30"));
    QVERIFY(!table->item(1, 8)->text().isEmpty());

    const auto curves = panel.view()->curves(Plot::Rate);
    QCOMPARE(curves.size(), std::size_t(2));
    QCOMPARE(curveTitle(curves[0]), table->item(0, 0)->text());
    QCOMPARE(curveTitle(curves[1]), table->item(1, 0)->text());
    QCOMPARE(curves[0]->dataSize(), model->run(0).samples.size());
    QCOMPARE(curves[1]->dataSize(), model->run(1).samples.size());
    QCOMPARE(panel.view()->curves(Plot::Throughput).size(), std::size_t(2));
    const auto latency = panel.view()->curves(Plot::Latency);
    QCOMPARE(latency.size(), std::size_t(4));
    QCOMPARE(curveTitle(latency[1]), table->item(0, 0)->text() + QStringLiteral(" p99"));
    QCOMPARE(latency[1]->pen().style(), Qt::DashLine);

    const QString csv = dir_.filePath("comparison.csv");
    QVERIFY(panel.exportCsv(csv));
    QFile file(csv);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(file.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);
    QCOMPARE(lines[0], ComparisonModel::columns().join(QLatin1Char(',')));
    QVERIFY(lines[1].startsWith(QStringLiteral("\"a ring 4 (1 stream, plain, K=1, all segments)\",finished,30,0,")));
    QVERIFY(lines[2].startsWith(QStringLiteral("\"b ring 16 (1 stream, plain, K=1, all segments)\",finished,30,0,")));

    const QString json_path = dir_.filePath("comparison.json");
    QVERIFY(panel.exportJson(json_path));
    QFile json_file(json_path);
    QVERIFY(json_file.open(QIODevice::ReadOnly));
    const auto json = nlohmann::json::parse(json_file.readAll().toStdString());
    QCOMPARE(json["runs"].size(), std::size_t(2));
    QVERIFY2((json["runs"][1]["events_processed"]) == (30), (json["runs"][1]["events_processed"]).dump().c_str());
  }

  void aFailingConfigurationShowsItsErrorAndTheComparisonGoesOn() {
    const QString directory = dir_.filePath("failing");
    QVERIFY(QDir().mkpath(directory));
    nlohmann::json bad = small(4).to_json();
    bad["runtime"]["streams"] = 99;
    {
      QFile file(directory + "/a broken.json");
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write(QByteArray::fromStdString(bad.dump()));
    }
    SavedConfigurations(directory).save(QStringLiteral("b good"), small(8));

    ComparisonPanel panel;
    panel.setDirectory(directory);
    panel.setChecked({QStringLiteral("a broken"), QStringLiteral("b good")});
    panel.eventsSpin()->setValue(10);
    panel.rateSpin()->setValue(0);
    QSignalSpy finished(&panel, &ComparisonPanel::finished);
    QVERIFY(panel.run());
    QVERIFY(finished.wait(kComparisonTimeoutMs) || finished.count() == 1);
    QTRY_VERIFY(!panel.view()->coalescer()->pending());
    QCOMPARE(panel.model()->runCount(), 2);
    QVERIFY(panel.view()->table()->item(0, 1)->text().contains(QStringLiteral("runtime.streams")));
    QCOMPARE(panel.view()->table()->item(1, 1)->text(), QStringLiteral("finished"));
    QCOMPARE(panel.view()->table()->item(1, 2)->text(), QStringLiteral("10"));
    QVERIFY(panel.model()->figures(1).ratio_to_first != panel.model()->figures(1).ratio_to_first);  // NaN
  }

  void stopEndsTheCurrentRunAndCancelsTheRest() {
    const QString directory = dir_.filePath("cancel");
    const SavedConfigurations saved(directory);
    saved.save(QStringLiteral("first"), small(4));
    saved.save(QStringLiteral("second"), small(8));
    ComparisonPanel panel;
    panel.setDirectory(directory);
    panel.setChecked({QStringLiteral("first"), QStringLiteral("second")});
    panel.eventsSpin()->setValue(100'000);  // far more than the test waits for
    panel.rateSpin()->setValue(20);
    QSignalSpy finished(&panel, &ComparisonPanel::finished);
    QVERIFY(panel.run());
    // Stats come from the start, also while the source still generates its pool: cancel once
    // the first configuration has processed events (a sample with a rate), not at its first
    // sample, which may come before any event.
    const auto processing = [&panel] {
      for (const auto& sample : panel.model()->run(0).samples)
        if (sample.event_rate_hz > 0) return true;
      return false;
    };
    QTRY_VERIFY_WITH_TIMEOUT(processing(), kComparisonTimeoutMs);
    panel.cancel();
    QVERIFY(finished.wait(kComparisonTimeoutMs) || finished.count() == 1);
    QVERIFY(!panel.isRunning());
    const auto& first = panel.model()->run(0);
    QCOMPARE(first.error, QStringLiteral("cancelled"));
    QVERIFY(first.has_summary);
    QVERIFY(first.summary.events_processed > 0);
    QVERIFY(first.summary.events_processed < 100'000);
    QCOMPARE(panel.model()->run(1).error, QStringLiteral("cancelled"));
    QVERIFY(!panel.model()->run(1).has_summary);
  }
};

QTEST_MAIN(ComparisonTest)
#include "test_gui_comparison.moc"
