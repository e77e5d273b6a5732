// Compression fidelity, live, on the CUDA backend (host-fed; stages/fidelity's CUDA part): every
// sample the engine publishes equals what this test computes for the same event offline on the
// CPU, with the library's functions called directly (the event calibrated here, compressed with
// codec::compress_cpu, decoded with codec::decompress_cpu, integrated with an integrator built
// here, searched with a peakfinder8 built here). That holds because the device calibration is
// the CPU's bit for bit (test_gpu_calibration) and the GPU codec writes the CPU codec's bytes
// (test_gpu_codec), so the stream and image the CUDA part copies back are the CPU's. Checked over
// one lane with plain launches and over several lanes with batches (a launch samples its last
// event), graph launches and per-stream host threads; a lossless stream costs exactly nothing.
#include <QtTest>

#include "fidelity_support.hpp"
#include "gpu_test_support.hpp"

using namespace livedrp;
using fidelity_test::check_against_offline;
using fidelity_test::check_lossless;
using fidelity_test::fidelity_config;
using fidelity_test::run_to_the_end;
using fidelity_test::Sampled;

namespace {

void add_lane_rows() {
  add_lane_columns();
  QTest::newRow("1 stream") << 1 << 4 << 1 << false << false;
  QTest::newRow("3 streams, batch 2, graph") << 3 << 2 << 2 << true << false;
  QTest::newRow("2 streams, per-stream threads, graph") << 2 << 3 << 1 << true << true;
}

EngineConfig gpu_config(const QTemporaryDir& dir, const std::string& codec, double bound) {
  EngineConfig config = fidelity_config(dir, codec, bound);
  config.backend = "cuda";
  config.events = 8;
  config.rate_hz = 8;  // most events come after the last sample's evaluation: many are sampled
  apply_lane_row(config.runtime);
  return config;
}

// Runs `config` on the CUDA backend and checks every published sample against the offline
// computation of its event.
Sampled run_and_check(const EngineConfig& config) {
  RunSummary summary;
  std::string backend;
  const Sampled sampled = run_to_the_end(config, summary, &backend);
  [&] {
    QCOMPARE(backend, std::string("cuda"));
    fidelity_test::check_run_counts(summary, config, sampled);
    if (QTest::currentTestFailed()) return;
    const nlohmann::json& counts = summary.stats.stage_stats.at("fidelity");
    qInfo("%zu fidelity messages, %llu samples, %llu skipped", sampled.reports.size(),
          (unsigned long long)counts.at("samples").get<std::uint64_t>(),
          (unsigned long long)counts.at("skipped").get<std::uint64_t>());

    ThreadPool pool(2);
    const DetectorSimulator simulator = live_peaks_test::engine_simulator(config, pool);
    const live_peaks_test::OfflineEvents events =
        live_peaks_test::offline_events(config, simulator, pool);
    for (const protocol::FidelityReport& r : sampled.reports) {
      check_against_offline(r, config, simulator.detector(), simulator.constants(), events);
      if (QTest::currentTestFailed()) return;
    }
  }();
  return sampled;
}

}  // namespace

class TestGpuEngineFidelity : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { LIVEDRP_SKIP_WITHOUT_GPU(); }

  void lossy_samples_equal_an_offline_decompress_integrate_and_search_data() { add_lane_rows(); }
  void lossy_samples_equal_an_offline_decompress_integrate_and_search() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    EngineConfig config = gpu_config(dir, "lossy", 1.0);
    // Every gain configuration (as test_engine_fidelity): peaks lost and added, not only kept.
    config.simulator_gain_configs = {"FH", "FM", "FL", "AHL", "AML"};
    run_and_check(config);
  }

  void a_lossless_stream_costs_exactly_nothing_data() { add_lane_rows(); }
  void a_lossless_stream_costs_exactly_nothing() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const EngineConfig config = gpu_config(dir, "lossless", 0.5);
    const Sampled sampled = run_and_check(config);
    if (QTest::currentTestFailed()) return;
    for (const protocol::FidelityReport& r : sampled.reports) {
      check_lossless(r);
      if (QTest::currentTestFailed()) return;
    }
  }
};

QTEST_GUILESS_MAIN(TestGpuEngineFidelity)
#include "test_gpu_engine_fidelity.moc"
