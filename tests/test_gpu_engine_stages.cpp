// The stage contract on the CUDA backend: the test-only stage (test_stages/event_sum_stage.hpp,
// its CUDA part in test_stages/event_sum_stage_cuda.cu) runs through Engine on the simulated
// detector with plain launches and with graph launches (its recording captured per slot, stage
// and batch fill), batches of 1 and 3 events over 2 streams, and both host thread models: every
// event's sum equals the CPU backend's run of the same events within twice a float64 sum's
// rounding bound, in admission order, nothing lost. Skips without a device (fails under
// LIVEDRP_REQUIRE_GPU=1).
#include <QtTest>

#include "gpu_test_support.hpp"
#include "test_stages/event_sum_run.hpp"

using namespace livedrp;
using namespace livedrp::test_stages;

namespace {

struct Mode {
  const char* label;
  LaunchMode launch;
  int batch;
  HostThreadModel threads;
};

}  // namespace

class TestGpuEngineStages : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { register_event_sum_stage(); }

  void sums_on_the_cuda_backend_equal_the_cpu_backend_in_every_launch_mode() {
    LIVEDRP_SKIP_WITHOUT_GPU();
    const EngineConfig cpu_config = event_sum_config("cpu");
    const SumRun cpu = run_event_sum(cpu_config);
    QVERIFY2(cpu.summary.error.empty(), cpu.summary.error.c_str());
    QVERIFY(cpu.last.has_value());
    QCOMPARE(cpu.last->sums.size(), std::size_t(cpu_config.events));
    const std::vector<ReferenceSum> reference = reference_sums(cpu_config);
    const std::size_t pixels = find_detector("epix10ka2m").pixels();

    const std::vector<Mode> modes = {
        {"plain, K=1", LaunchMode::Plain, 1, HostThreadModel::OneForAll},
        {"graph, K=1", LaunchMode::Graph, 1, HostThreadModel::OneForAll},
        {"plain, K=3, per-stream pollers", LaunchMode::Plain, 3, HostThreadModel::PerStream},
        {"graph, K=3, per-stream pollers", LaunchMode::Graph, 3, HostThreadModel::PerStream},
    };
    for (const Mode& mode : modes) {
      EngineConfig config = event_sum_config("cuda");
      config.runtime.streams = 2;
      config.runtime.launch = mode.launch;
      config.runtime.batch = mode.batch;
      config.runtime.host_threads = mode.threads;
      const SumRun gpu = run_event_sum(config);
      QVERIFY2(gpu.summary.error.empty(),
               (std::string(mode.label) + ": " + gpu.summary.error).c_str());
      QCOMPARE(gpu.summary.stats.backend, std::string("cuda"));
      QCOMPARE(gpu.summary.stats.events_processed, config.events);
      QCOMPARE(gpu.summary.stats.events_dropped, std::uint64_t(0));
      QVERIFY(gpu.last.has_value());
      QCOMPARE(gpu.last->sequences, cpu.last->sequences);  // in order, nothing lost
      double worst = 0;
      for (std::size_t i = 0; i < gpu.last->sums.size(); ++i) {
        const double bound = 2 * float64_sum_bound(pixels, reference[i % reference.size()].sum_abs);
        QVERIFY2(std::fabs(gpu.last->sums[i] - cpu.last->sums[i]) <= bound,
                 qPrintable(QString("%1, event %2: cuda %3, cpu %4, bound %5")
                                .arg(mode.label)
                                .arg(i)
                                .arg(gpu.last->sums[i], 0, 'g', 17)
                                .arg(cpu.last->sums[i], 0, 'g', 17)
                                .arg(bound)));
      }
      for (std::size_t i = 0; i < gpu.last->sums.size(); ++i)
        worst =
            std::max(worst, std::fabs(gpu.last->sums[i] - cpu.last->sums[i]) /
                                float64_sum_bound(pixels, reference[i % reference.size()].sum_abs));
      bool timed = false;
      for (const auto& stage : gpu.summary.stats.stages)
        if (stage.name == kEventSumStage) timed = stage.mean_us > 0;
      QVERIFY2(timed, mode.label);
      qInfo("%s: %zu messages; largest difference from the CPU's sum %.3g of one float64 bound",
            mode.label, gpu.messages, worst);
    }
  }
};

QTEST_GUILESS_MAIN(TestGpuEngineStages)
#include "test_gpu_engine_stages.moc"
