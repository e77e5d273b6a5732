// The engine on the CUDA backend when the device fails mid-run (a launch rejected through the
// CUDA test hook): with runtime.on_fault = fallback_cpu every event is still processed, in order,
// on the CPU backend, and the engine says why; with on_fault = stop the run ends with the CUDA
// error text and the events that did not make it are counted as dropped with a reason.
//
// Without a usable CUDA device the suite skips, unless LIVEDRP_REQUIRE_GPU=1, where it fails.
#include <QtTest>

#include "gpu_test_support.hpp"

#include "core/error.hpp"
#include "exec/backend.hpp"
#include "exec/engine.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/cuda_calibrator.hpp"
#endif

using namespace livedrp;

namespace {
constexpr std::uint64_t kEvents = 300;
constexpr long long kLaunchesBeforeFault = 40;

EngineConfig faulting_config(FaultPolicy policy) {
  EngineConfig c;
  c.source = "sim:generic_f32";
  c.backend = "cuda";
  c.events = kEvents;
  c.full_ring = "wait";
  c.publish = "";
  c.simulator_pool = 2;
  c.runtime.streams = 2;
  c.runtime.on_fault = policy;
  return c;
}
}  // namespace

class TestGpuEngineFault : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { LIVEDRP_SKIP_WITHOUT_GPU(); }

#ifdef LIVEDRP_HAVE_CUDA
  void fallback_to_cpu_processes_every_event_in_order() {
    Engine engine(faulting_config(FaultPolicy::FallbackCpu));
    gpu::testing::inject_fault(gpu::testing::Fault::InvalidLaunch, kLaunchesBeforeFault);
    engine.start();
    engine.wait();
    gpu::testing::inject_fault(gpu::testing::Fault::None);
    const RunSummary s = engine.summary();
    QVERIFY2(s.error.empty(), s.error.c_str());
    QCOMPARE(s.stats.events_in, kEvents);
    QCOMPARE(s.stats.events_processed, kEvents);
    QCOMPARE(s.stats.events_dropped, std::uint64_t(0));
    QCOMPARE(s.stats.order_errors, std::uint64_t(0));
    QCOMPARE(QString::fromStdString(engine.backend_name()), QString("cpu"));
    QVERIFY2(QString::fromStdString(engine.backend_note()).contains("falling back to the CPU"),
             engine.backend_note().c_str());
  }

  void stop_policy_reports_the_cuda_error_and_counts_the_lost_events() {
    Engine engine(faulting_config(FaultPolicy::Stop));
    gpu::testing::inject_fault(gpu::testing::Fault::InvalidLaunch, kLaunchesBeforeFault);
    engine.start();
    engine.wait();
    gpu::testing::inject_fault(gpu::testing::Fault::None);
    const RunSummary s = engine.summary();
    QVERIFY(!s.error.empty());
    QVERIFY2(QString::fromStdString(s.error).contains("invalid argument"), s.error.c_str());
    QVERIFY(s.stats.events_processed < kEvents);
    QCOMPARE(s.stats.events_processed + s.stats.events_dropped, s.stats.events_in);
    QVERIFY(s.stats.drops_by_reason.at("backend_fault") > 0);
  }
#endif
};

QTEST_GUILESS_MAIN(TestGpuEngineFault)
#include "test_gpu_engine_fault.moc"
