// The stage contract on the CPU backend (engine/stages/stage.hpp; issue 32, item 1): a stage
// defined only in the tests (test_stages/event_sum_stage.hpp, every event's float64 sum of its
// calibrated image), registered with one call in initTestCase and named nowhere in engine/, runs
// through Engine on the simulated detector: every event's sum equals an independent reference,
// its book publishes them on its own topic, its timing and block reach the stats, and its
// configuration section reads and fails like the engine's own. The CUDA backend against this one
// is test_gpu_engine_stages.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "engine_error_text.hpp"
#include "test_stages/event_sum_run.hpp"

using namespace livedrp;
using namespace livedrp::test_stages;

class TestEngineStages : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { register_event_sum_stage(); }

  void a_registered_stage_runs_every_event_and_its_book_publishes_every_sum() {
    const EngineConfig config = event_sum_config("cpu");
    const SumRun run = run_event_sum(config);
    QVERIFY2(run.summary.error.empty(), run.summary.error.c_str());
    QCOMPARE(run.summary.stats.events_processed, config.events);
    QCOMPARE(run.summary.stats.events_dropped, std::uint64_t(0));
    QVERIFY(run.last.has_value());
    qInfo("%zu messages on topic %s", run.messages, kSumTopic);

    // The last message holds every event, in admission order, each sum its reference's.
    const std::vector<ReferenceSum> reference = reference_sums(config);
    const std::size_t pixels = find_detector("epix10ka2m").pixels();
    QCOMPARE(run.last->sequences.size(), std::size_t(config.events));
    double total = 0, total_bound = 0, sums_abs = 0, worst = 0;
    for (std::size_t i = 0; i < run.last->sums.size(); ++i) {
      QCOMPARE(run.last->sequences[i], std::uint64_t(i));
      const ReferenceSum& r = reference[i % reference.size()];
      const double bound = float64_sum_bound(pixels, r.sum_abs);
      QVERIFY2(std::fabs(run.last->sums[i] - r.sum) <= bound,
               qPrintable(QString("event %1: sum %2, reference %3, bound %4")
                              .arg(i)
                              .arg(run.last->sums[i], 0, 'g', 17)
                              .arg(r.sum, 0, 'g', 17)
                              .arg(bound)));
      total += r.sum;
      total_bound += bound;
      sums_abs += std::fabs(r.sum);
      worst = std::max(worst, std::fabs(run.last->sums[i] - r.sum) / bound);
    }
    // Distinct events give distinct sums: the stage reads each event's own image.
    for (std::size_t a = 0; a < reference.size(); ++a)
      for (std::size_t b = a + 1; b < reference.size(); ++b)
        QVERIFY(std::fabs(reference[a].sum - reference[b].sum) >
                float64_sum_bound(pixels, reference[a].sum_abs) * 4);

    // Its time per event is a stage of the stats, its book's block is in the summary.
    bool timed = false;
    for (const auto& stage : run.summary.stats.stages)
      if (stage.name == kEventSumStage) {
        timed = true;
        QVERIFY(stage.mean_us > 0);
        QVERIFY(stage.gbps > 0);
      }
    QVERIFY(timed);
    QVERIFY(run.summary.stats.stage_stats.count(kEventSumStage) == 1);
    const nlohmann::json& block = run.summary.stats.stage_stats.at(kEventSumStage);
    QCOMPARE(block.at("events").get<std::uint64_t>(), config.events);
    // The book's total: each sum's own error, plus the float64 sum of 200 sums (the same bound
    // over the sums), plus the rounding of `total` here (the same again).
    QVERIFY(std::fabs(block.at("total").get<double>() - total) <=
            total_bound + 2 * float64_sum_bound(std::size_t(config.events), sums_abs));
    qInfo("largest difference from the exact sum: %.3g of the float64 bound", worst);
  }

  void a_disabled_stage_does_not_run() {
    EngineConfig c = event_sum_config("cpu");
    c.stages[kEventSumStage]["enabled"] = false;
    c.publish = "";
    c.events = 3;
    c.simulator_pool = 1;
    Engine engine(c);
    engine.start();
    engine.wait();
    const RunSummary summary = engine.summary();
    QVERIFY2(summary.error.empty(), summary.error.c_str());
    QCOMPARE(summary.stats.events_processed, std::uint64_t(3));
    for (const auto& stage : summary.stats.stages) QVERIFY(stage.name != kEventSumStage);
    QVERIFY(summary.stats.stage_stats.empty());
  }

  void the_stage_section_round_trips_with_its_defaults() {
    const EngineConfig c =
        EngineConfig::from_json({{kEventSumStage, {{"enabled", true}}}}, "test.json");
    QCOMPARE(c.stages.at(kEventSumStage),
             nlohmann::json({{"enabled", true}, {"topic", kEventSumStage}}));
    const EngineConfig again = EngineConfig::from_json(c.to_json(), "round trip");
    QCOMPARE(again.to_json(), c.to_json());
    // Absent: not configured at all.
    QVERIFY(EngineConfig::from_json(nlohmann::json::object(), "test.json").stages.empty());
  }

  void a_bad_stage_section_names_the_field() {
    struct Case {
      nlohmann::json section;
      const char* field;
    };
    const std::vector<Case> cases = {
        {{{"topic", "Sums!"}}, "event_sum.topic"}, {{{"topic", 7}}, "event_sum.topic"},
        {{{"topic", ""}}, "event_sum.topic"},      {{{"enabled", 1}}, "event_sum.enabled"},
        {{{"colour", "red"}}, "event_sum.colour"},  // unknown field
        {nlohmann::json::array(), "event_sum"},
    };
    for (const Case& c : cases) {
      const QString error = config_error({{kEventSumStage, c.section}});
      QVERIFY2(error.contains(c.field),
               qPrintable(QString::fromStdString(c.section.dump()) + " -> '" + error + "'"));
    }
    QVERIFY(config_error({{kEventSumStage, {{"enabled", false}}}}).isEmpty());
    // A section no stage is registered under stays an unknown field.
    QVERIFY(config_error({{"event_mean", {{"enabled", true}}}}).contains("event_mean"));
  }

  void registering_a_taken_or_bad_name_is_refused() {
    QVERIFY_THROWS_EXCEPTION(InputError, register_event_sum_stage());
    const auto parse = [](FieldReader&) { return nlohmann::json::object(); };
    const auto build = [](const nlohmann::json&, const stages::StageContext&) {
      return std::unique_ptr<stages::Stage>();
    };
    for (const char* name : {"integration", "peak_finding", "stats", "calibrate", "Event Sum", ""})
      QVERIFY_THROWS_EXCEPTION(InputError, stages::register_stage({name, parse, build}));
    QCOMPARE(stages::registered_stage_names(), std::vector<std::string>{kEventSumStage});
  }

  void the_device_resident_source_refuses_the_stage_with_the_reason() {
    EngineConfig c = event_sum_config("cuda");
    c.runtime.source = SourcePlacement::Device;
    c.publish = "";
    c.simulator_pool = 1;
    const QString error = construction_error(c);
    QVERIFY2(error.contains(kEventSumStage) && error.contains("runtime.source"), qPrintable(error));
  }
};

QTEST_GUILESS_MAIN(TestEngineStages)
#include "test_engine_stages.moc"
