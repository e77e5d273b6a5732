// Live azimuthal integration on the CUDA backend: the profiles it publishes must equal the CPU
// backend's within 1e-5 relative per bin (the bound test_gpu_integrate holds the device
// integrator to): the run's final message against the CPU backend's final message on the same
// configuration, and every message's latest and running average against the CPU's offline
// profiles of the same events. Over several lanes, batches and graph launches, with live
// compression running beside it.
#include <QtTest>

#include "gpu_test_support.hpp"
#include "live_integration_support.hpp"

using namespace livedrp;
using namespace livedrp::live_integration_test;

namespace {

constexpr double kGpuTolerance = 1e-5;

struct Setup {
  QTemporaryDir dir;
  DetectorDescription detector = find_detector("epix10ka2m");
  ThreadPool pool{2};
  DetectorSimulator simulator = engine_simulator(detector, pool);
  EngineConfig config;
  Setup() {
    config = live_config(write_poni(dir, detector, simulator.powder_geometry()),
                         write_mask(dir, detector));
    config.events = 12;
  }
};

// Every message's latest and average against the CPU's offline profiles of the same events.
void check_against_offline(const LiveRun& run, const EngineConfig& config,
                           const OfflineProfiles& offline) {
  QVERIFY2(run.summary.error.empty(), run.summary.error.c_str());
  QCOMPARE(run.summary.stats.events_processed, config.events);
  QVERIFY(!run.profiles.empty());
  QCOMPARE(run.profiles.back().sequence, offline.sequences.back());
  for (const protocol::RadialProfile& p : run.profiles) {
    QCOMPARE(p.centres, offline.centres);
    const std::size_t index = offline.index_of(p.sequence);
    QVERIFY(index < offline.sequences.size());
    const long latest_diff = first_difference(p.latest, offline.profiles[index], kGpuTolerance);
    QVERIFY2(
        latest_diff < 0,
        qPrintable(QString("latest differs at bin %1 (event %2)").arg(latest_diff).arg(index)));
    const std::size_t window =
        std::min<std::size_t>(index + 1, std::size_t(config.integration.average_events));
    QCOMPARE(p.average_events, std::uint64_t(window));
    const long average_diff =
        first_difference(p.average, window_mean(offline, index, window), kGpuTolerance);
    QVERIFY2(
        average_diff < 0,
        qPrintable(QString("average differs at bin %1 (event %2)").arg(average_diff).arg(index)));
  }
  bool has_stage = false;
  for (const auto& stage : run.summary.stats.stages)
    if (stage.name == "integrate") has_stage = stage.mean_us > 0;
  QVERIFY(has_stage);
}

}  // namespace

class TestGpuEngineIntegration : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { LIVEDRP_SKIP_WITHOUT_GPU(); }

  void cuda_profiles_equal_the_cpu_backends() {
    Setup s;
    QVERIFY(s.dir.isValid());
    EngineConfig cpu = s.config;
    cpu.backend = "cpu";
    const LiveRun cpu_run = run_live(cpu);
    QVERIFY2(cpu_run.summary.error.empty(), cpu_run.summary.error.c_str());
    QVERIFY(!cpu_run.profiles.empty());

    EngineConfig cuda = s.config;
    cuda.backend = "cuda";
    cuda.runtime.streams = 2;
    cuda.runtime.slots_per_stream = 2;
    const LiveRun cuda_run = run_live(cuda);
    QVERIFY2(cuda_run.summary.error.empty(), cuda_run.summary.error.c_str());
    QVERIFY(!cuda_run.profiles.empty());

    const protocol::RadialProfile& a = cpu_run.profiles.back();
    const protocol::RadialProfile& b = cuda_run.profiles.back();
    QCOMPARE(b.sequence, a.sequence);
    QCOMPARE(b.unit, a.unit);
    QCOMPARE(b.centres, a.centres);
    QCOMPARE(b.average_events, a.average_events);
    const long latest_diff = first_difference(b.latest, a.latest, kGpuTolerance);
    QVERIFY2(latest_diff < 0, qPrintable(QString("latest differs at bin %1").arg(latest_diff)));
    const long average_diff = first_difference(b.average, a.average, kGpuTolerance);
    QVERIFY2(average_diff < 0, qPrintable(QString("average differs at bin %1").arg(average_diff)));

    check_against_offline(cuda_run, cuda, offline_profiles(cuda, s.simulator, s.pool));
  }

  // Batches of events per launch, captured graphs, more lanes, and the codec after the
  // integration on the same stream: each event's bins still come back to its own event.
  void every_runtime_shape_integrates_each_event() {
    Setup s;
    QVERIFY(s.dir.isValid());
    const OfflineProfiles offline = offline_profiles(s.config, s.simulator, s.pool);
    struct Shape {
      int streams, slots_per_stream, batch;
      LaunchMode launch;
      const char* codec;
    };
    for (const Shape& shape :
         {Shape{1, 4, 1, LaunchMode::Plain, "off"}, Shape{2, 2, 3, LaunchMode::Plain, "lossy"},
          Shape{4, 2, 2, LaunchMode::Graph, "lossless"}}) {
      EngineConfig cuda = s.config;
      cuda.backend = "cuda";
      cuda.runtime.streams = shape.streams;
      cuda.runtime.slots_per_stream = shape.slots_per_stream;
      cuda.runtime.batch = shape.batch;
      cuda.runtime.launch = shape.launch;
      cuda.compression.codec = shape.codec;
      qInfo("streams %d, slots %d, batch %d, %s, codec %s", shape.streams, shape.slots_per_stream,
            shape.batch, std::string(to_string(shape.launch)).c_str(), shape.codec);
      check_against_offline(run_live(cuda), cuda, offline);
      if (QTest::currentTestFailed()) return;
    }
  }
};

QTEST_GUILESS_MAIN(TestGpuEngineIntegration)
#include "test_gpu_engine_integration.moc"
