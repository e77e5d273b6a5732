// livedrp-bench pipeline on the CPU backend: the matrix runs the engine's stage list through its
// public API, and its JSON accounts for every event of every cell, gives each configured stage a
// time per event, names one of them as the bound, places the rate within the memory floor, and
// echoes each cell's engine configuration; combinations the engine refuses are rows, not
// failures; bad options are refused with exit status 2. No wall-clock limits: the run is as slow
// as the machine.
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"
#include "exec/engine.hpp"

using namespace livedrp;

namespace {

constexpr int kEvents = 20;
constexpr int kNoTimeLimit = -1;  // QProcess::waitForFinished: wait as long as it takes

}  // namespace

class TestBenchPipeline : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;
  CliResult run_;
  nlohmann::json report_;

  std::vector<nlohmann::json> cells_with(const std::string& status) const {
    std::vector<nlohmann::json> found;
    for (const auto& cell : report_.at("cells"))
      if (cell.at("status") == status) found.push_back(cell);
    return found;
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const QString json = dir_.filePath("pipeline.json");
    run_ = run_cli(
        "LIVEDRP_BENCH_EXE",
        {"pipeline", "--backends", "cpu", "--sources", "host,device", "--events",
         QString::number(kEvents), "--cpu-events", QString::number(kEvents), "--stages",
         "calibrate,all", "--compression", "lossy", "--simulator-pool", "3", "--json", json},
        kNoTimeLimit);
    QVERIFY2(run_.exit_code == 0,
             qPrintable(QString("exit %1, stderr: %2").arg(run_.exit_code).arg(run_.err)));
    std::ifstream in(json.toStdString());
    QVERIFY2(in.good(), "no --json file written");
    report_ = nlohmann::json::parse(in);
    QCOMPARE(report_.at("tool").get<std::string>(), std::string("livedrp-bench pipeline"));
  }

  void every_cell_processes_exactly_its_events_and_drops_none() {
    const auto ok = cells_with("ok");
    QCOMPARE(ok.size(), std::size_t(2));  // host-fed: calibrate, all
    for (const auto& cell : ok) {
      QCOMPARE(cell.at("events").get<int>(), kEvents);
      QCOMPARE(cell.at("events_processed").get<int>(), kEvents);
      QCOMPARE(cell.at("events_dropped").get<int>(), 0);
      QCOMPARE(cell.at("order_errors").get<int>(), 0);
      QVERIFY(cell.at("events_per_s").get<double>() > 0);
      QVERIFY(cell.at("raw_gb_per_s").get<double>() > 0);
    }
  }

  void every_configured_stage_has_a_time_per_event() {
    for (const auto& cell : cells_with("ok")) {
      const auto stages = cell.at("stages").get<std::vector<std::string>>();
      QVERIFY(!stages.empty());
      QCOMPARE(stages.front(), std::string("calibrate"));
      QCOMPARE(cell.at("stage_us").size(), stages.size());
      for (const std::string& stage : stages) {
        const auto& us = cell.at("stage_us").at(stage);
        QVERIFY2(us.is_number() && us.get<double>() > 0, stage.c_str());
      }
    }
  }

  void the_all_set_runs_codec_integration_and_peak_finding() {
    for (const auto& cell : cells_with("ok")) {
      if (cell.at("stage_set") != "all") continue;
      QCOMPARE(cell.at("stages").get<std::vector<std::string>>(),
               (std::vector<std::string>{"calibrate", "compress", "integrate", "peak"}));
      QCOMPARE(cell.at("codec").get<std::string>(), std::string("lossy"));
      QVERIFY(cell.at("compression").at("ratio").get<double>() > 1);
      return;
    }
    QFAIL("no 'all' cell ran");
  }

  void the_bound_is_one_of_the_configured_stages() {
    for (const auto& cell : cells_with("ok")) {
      const auto stages = cell.at("stages").get<std::vector<std::string>>();
      const std::string bound = cell.at("bound").get<std::string>();
      QVERIFY2(std::find(stages.begin(), stages.end(), bound) != stages.end(), bound.c_str());
      const double busiest = cell.at("stage_busy").at(bound).get<double>();
      for (const std::string& stage : stages)
        QVERIFY(cell.at("stage_busy").at(stage).get<double>() <= busiest);
    }
  }

  void the_rate_is_a_fraction_of_the_memory_floor() {
    QVERIFY(report_.at("baselines").at("host_memcpy_gb_per_s").get<double>() > 0);
    for (const auto& cell : cells_with("ok")) {
      const double fraction = cell.at("floor_fraction").get<double>();
      QVERIFY2(fraction > 0 && fraction <= 1, qPrintable(QString::number(fraction)));
      const auto& bytes = cell.at("bytes_per_event");
      QVERIFY(bytes.at("memory_total").get<double>() > 0);
      QCOMPARE(bytes.at("host_to_device").get<int>(), 0);  // the CPU backend copies nothing
    }
  }

  void each_cell_echoes_its_engine_configuration() {
    for (const auto& cell : report_.at("cells")) {
      const EngineConfig config = EngineConfig::from_json(cell.at("config"), "bench cell");
      QCOMPARE(config.backend, std::string("cpu"));
      QCOMPARE(config.events, std::uint64_t(kEvents));
      QCOMPARE(config.full_ring, std::string("wait"));
      QCOMPARE(config.rate_hz, 0.0);
      QVERIFY(config.publish.empty());
      const bool all = cell.at("stage_set") == "all";
      QCOMPARE(config.compression.enabled(), all);
      QCOMPARE(config.integration.enabled, all);
      QCOMPARE(config.peak_finding.enabled, all);
    }
  }

  void refused_combinations_are_rows_with_the_engines_reason() {
    const auto refused = cells_with("refused");
    QCOMPARE(refused.size(), std::size_t(2));  // the CPU backend on runtime.source device
    for (const auto& cell : refused) {
      QCOMPARE(cell.at("source").get<std::string>(), std::string("device"));
      QVERIFY(cell.at("reason").get<std::string>().find("runtime.source 'device'") !=
              std::string::npos);
    }
    QVERIFY2(run_.out.contains("refused: runtime.source 'device'"), qPrintable(run_.out));
  }

  void bad_options_are_refused_with_exit_status_2() {
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_BENCH_EXE", {"pipeline", "--stages", "calibrate+bogus"}, kNoTimeLimit),
        "bogus");
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_BENCH_EXE", {"pipeline", "--launch", "sometimes"}, kNoTimeLimit),
        "sometimes");
  }
};

QTEST_GUILESS_MAIN(TestBenchPipeline)
#include "test_bench_pipeline.moc"
