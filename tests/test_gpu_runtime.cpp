// The multi-stream CUDA runtime (StreamConfig: streams, plain or graph launches, batch K, segments
// per launch, host thread model) against the CPU backend.
//
// Every configuration of a small matrix runs >= 10,000 events through the backend directly, from a
// pool of a few distinct simulated ePix10ka2M events in pinned memory, with admission numbers:
// nothing may be lost, every admission must come back exactly once (in any order across lanes, in
// order within a lane), on the lane round-robin assignment says, and the calibrated images of a
// sample (every 97th admission and the last ones) must equal the CPU backend's bit for bit.
// Faults: a rejected launch and a kernel that traps must both surface as RuntimeFault, never hang.
//
// Without a usable CUDA device the suite skips, unless LIVEDRP_REQUIRE_GPU=1, where it fails.
#include <QtTest>

#include "gpu_test_support.hpp"

#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "calib/calibrate_cpu.hpp"
#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "exec/backend.hpp"
#include "exec/stream_config.hpp"
#include "sim/simulator.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/cuda_calibrator.hpp"
#include "cuda/device.hpp"
#endif

using namespace livedrp;

namespace {

// The issue asks for at least 10,000 events per configuration; an odd count leaves a partial
// batch for flush() whenever K > 1.
constexpr int kMatrixEvents = 10'007;
// Distinct simulated events cycled through (pinned "ring slots").
constexpr int kPoolEvents = 4;
// Sampled outputs: every kSampleEvery-th admission and the last kSampleTail.
constexpr int kSampleEvery = 97;
constexpr int kSampleTail = 8;
// How long a fault may take to surface before the test calls it a hang.
constexpr auto kFaultDeadline = std::chrono::seconds(30);
const char* const kTrapChildVariable = "LIVEDRP_GPU_TRAP_CHILD";

const float kNaN = std::numeric_limits<float>::quiet_NaN();

std::size_t differing_bits(const std::vector<float>& got, const std::vector<float>& want) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    n += std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(want[i]) ? 1 : 0;
  return n;
}

StreamConfig config_of(int streams, LaunchMode launch, int batch, SegmentsPerLaunch segments,
                       HostThreadModel threads) {
  StreamConfig c;
  c.streams = streams;
  c.launch = launch;
  c.batch = batch;
  c.segments = segments;
  c.host_threads = threads;
  return c;
}

}  // namespace

class TestGpuRuntime : public QObject {
  Q_OBJECT

  // Shared by the matrix rows: simulator, pool and the CPU reference of each pool event.
  std::unique_ptr<DetectorSimulator> simulator_;
  DetectorDescription detector_;
  calib::CalibrationParams params_;
  std::vector<std::vector<std::uint8_t>> raw_;
  std::vector<std::vector<float>> want_;

 private slots:
  void initTestCase() {
    LIVEDRP_SKIP_WITHOUT_GPU();
    if (qEnvironmentVariable(kTrapChildVariable) == "1") return;  // the child needs no pool
    detector_ = find_detector("epix10ka2m");
    ThreadPool pool;
    SimulatorConfig config;
    config.seed = 4242;
    config.hit_fraction = 0.5;  // peaks and gain switching in some events
    config.epix10ka_asic_configs = every_epix10ka_config();  // all seven ePix10ka gain modes
    simulator_ = std::make_unique<DetectorSimulator>(detector_, config, &pool);
    params_ = calib::CalibrationParams{};  // common mode on: the harder kernel
    for (int i = 0; i < kPoolEvents; ++i) {
      raw_.emplace_back(detector_.raw_event_bytes());
      simulator_->generate(std::uint64_t(i), raw_.back().data(), nullptr, &pool);
      want_.emplace_back(detector_.pixels());
      calibrate_event_cpu(detector_, simulator_->constants(), params_, raw_.back().data(),
                          want_.back().data(), &pool);
    }
  }

  void every_configuration_returns_each_event_once_equal_to_cpu_data() {
    QTest::addColumn<int>("streams");
    QTest::addColumn<int>("launch");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("segments");
    QTest::addColumn<int>("threads");
    struct Row {
      int streams;
      LaunchMode launch;
      int batch;
      SegmentsPerLaunch segments;
      HostThreadModel threads;
    };
    using L = LaunchMode;
    using S = SegmentsPerLaunch;
    using H = HostThreadModel;
    const Row rows[] = {
        {1, L::Plain, 1, S::All, H::OneForAll}, {4, L::Plain, 1, S::All, H::PerStream},
        {4, L::Graph, 1, S::All, H::OneForAll}, {4, L::Graph, 4, S::All, H::PerStream},
        {1, L::Plain, 4, S::One, H::OneForAll}, {4, L::Plain, 4, S::One, H::PerStream},
        {1, L::Graph, 1, S::One, H::PerStream}, {4, L::Graph, 4, S::One, H::OneForAll},
        {4, L::Plain, 4, S::All, H::OneForAll}, {1, L::Graph, 4, S::All, H::PerStream},
    };
    for (const Row& r : rows) {
      const StreamConfig c = config_of(r.streams, r.launch, r.batch, r.segments, r.threads);
      QTest::addRow("%s", describe(c).c_str())
          << r.streams << int(r.launch) << r.batch << int(r.segments) << int(r.threads);
    }
  }

  void every_configuration_returns_each_event_once_equal_to_cpu() {
    QFETCH(int, streams);
    QFETCH(int, launch);
    QFETCH(int, batch);
    QFETCH(int, segments);
    QFETCH(int, threads);
    const StreamConfig config = config_of(streams, LaunchMode(launch), batch,
                                          SegmentsPerLaunch(segments), HostThreadModel(threads));
    auto backend = make_cuda_backend(detector_, simulator_->constants(), params_, config);
    QVERIFY(backend->stream_config() == config);
    QCOMPARE(int(backend->lane_occupancy().size()), streams);

    std::vector<void*> ring;
    for (int i = 0; i < kPoolEvents; ++i) {
      ring.push_back(backend->allocate_host(detector_.raw_event_bytes()));
      std::memcpy(ring.back(), raw_[std::size_t(i)].data(), detector_.raw_event_bytes());
    }
    std::vector<int> seen(kMatrixEvents, 0);
    std::vector<float> got(detector_.pixels());
    int submitted = 0, completed = 0, sampled = 0, out_of_order = 0;
    std::vector<std::int64_t> last_on_lane(std::size_t(streams), -1);
    const auto start = std::chrono::steady_clock::now();

    auto retire = [&](const CompletedEvent& done) {
      QVERIFY(done.admission < std::uint64_t(kMatrixEvents));
      QCOMPARE(seen[done.admission], 0);
      seen[done.admission] = 1;
      QCOMPARE(done.header.sequence, done.admission);
      QCOMPARE(done.ring_slot, int(done.admission % kPoolEvents));
      // Round-robin: batch b = admission / K runs on lane b mod streams.
      QCOMPARE(done.stream, int((done.admission / std::uint64_t(batch)) % std::uint64_t(streams)));
      QVERIFY(done.calibrate_us > 0);
      auto& last = last_on_lane[std::size_t(done.stream)];
      if (std::int64_t(done.admission) < last) ++out_of_order;  // a lane completes in order
      last = std::int64_t(done.admission);
      const bool sample = done.admission % kSampleEvery == 0 ||
                          done.admission >= std::uint64_t(kMatrixEvents - kSampleTail);
      if (sample) {
        std::fill(got.begin(), got.end(), kNaN);
        backend->read_output(done, got.data());
        const std::size_t bad = differing_bits(got, want_[std::size_t(done.ring_slot)]);
        QVERIFY2(bad == 0, qPrintable(QString("admission %1: %2 pixels differ from the CPU backend")
                                          .arg(done.admission)
                                          .arg(bad)));
        ++sampled;
      }
      ++completed;
    };

    while (completed < kMatrixEvents) {
      while (submitted < kMatrixEvents && backend->can_submit()) {
        BackendEvent event;
        event.header = simulator_->header_for(std::uint64_t(submitted));
        event.ring_slot = submitted % kPoolEvents;
        event.raw = ring[std::size_t(event.ring_slot)];
        event.admission = std::uint64_t(submitted);
        backend->submit(event);
        ++submitted;
      }
      if (submitted == kMatrixEvents) backend->flush();
      while (auto done = backend->next_completed(false)) {
        retire(*done);
        if (QTest::currentTestFailed()) return;
      }
      if (completed < kMatrixEvents && !backend->can_submit()) {
        const auto done = backend->next_completed(true);
        QVERIFY(done.has_value());
        retire(*done);
        if (QTest::currentTestFailed()) return;
      }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    QCOMPARE(backend->in_flight(), std::size_t(0));
    QVERIFY(!backend->next_completed(false).has_value());
    QCOMPARE(out_of_order, 0);
    for (int a = 0; a < kMatrixEvents; ++a)
      QVERIFY2(seen[std::size_t(a)] == 1, qPrintable(QString::number(a)));
    std::uint64_t lane_total = 0;
    for (const LaneOccupancy& lane : backend->lane_occupancy()) {
      QCOMPARE(lane.in_flight, std::uint64_t(0));
      QCOMPARE(lane.capacity, std::uint64_t(config.slots_per_stream));
      lane_total += lane.completed;
    }
    QCOMPARE(lane_total, std::uint64_t(kMatrixEvents));
    for (void* slot : ring) backend->free_host(slot);
    qInfo("%s: %d events, each once, %d sampled images identical to the CPU, %.0f events/s",
          describe(config).c_str(), completed, sampled, completed / seconds);
  }

  // Parameters changed between submissions reach graph launches too (graphs are captured again).
  // Hopper's launch features (programmatic dependent launch, bulk copies) are used on sm_90 and
  // newer only, and never under LIVEDRP_CUDA_PORTABLE=1, which the *_portable suites set so that
  // the paths of sm_80-sm_89 GPUs run on Hopper too (issue 35).
  void hopper_features_follow_the_device_and_the_portable_variable() {
#ifdef LIVEDRP_HAVE_CUDA
    const gpu::DeviceProperties device = gpu::device_properties();
    const QByteArray before = qgetenv("LIVEDRP_CUDA_PORTABLE");
    const bool was_set = qEnvironmentVariableIsSet("LIVEDRP_CUDA_PORTABLE");
    qunsetenv("LIVEDRP_CUDA_PORTABLE");
    QCOMPARE(gpu::hopper_features(), device.compute_major >= 9);
    qputenv("LIVEDRP_CUDA_PORTABLE", "1");
    QCOMPARE(gpu::hopper_features(), false);
    qputenv("LIVEDRP_CUDA_PORTABLE", "0");
    QCOMPARE(gpu::hopper_features(), device.compute_major >= 9);
    if (was_set)
      qputenv("LIVEDRP_CUDA_PORTABLE", before);
    else
      qunsetenv("LIVEDRP_CUDA_PORTABLE");
#else
    QSKIP("built without CUDA");
#endif
  }

  void graph_launches_follow_parameter_changes() {
    const StreamConfig config =
        config_of(2, LaunchMode::Graph, 1, SegmentsPerLaunch::All, HostThreadModel::OneForAll);
    calib::CalibrationParams off = params_;
    off.common_mode = false;
    std::vector<float> want_off(detector_.pixels());
    calibrate_event_cpu(detector_, simulator_->constants(), off, raw_[0].data(), want_off.data(),
                        nullptr);
    auto backend = make_cuda_backend(detector_, simulator_->constants(), params_, config);
    void* slot = backend->allocate_host(detector_.raw_event_bytes());
    std::memcpy(slot, raw_[0].data(), detector_.raw_event_bytes());
    std::vector<float> got(detector_.pixels());
    for (int i = 0; i < 6; ++i) {
      const bool common_mode = i % 2 == 0;
      backend->set_params(common_mode ? params_ : off);
      BackendEvent event;
      event.raw = slot;
      event.ring_slot = 0;
      event.admission = std::uint64_t(i);
      backend->submit(event);
      const auto done = backend->next_completed(true);
      QVERIFY(done.has_value());
      std::fill(got.begin(), got.end(), kNaN);
      backend->read_output(*done, got.data());
      QCOMPARE(differing_bits(got, common_mode ? want_[0] : want_off), std::size_t(0));
    }
    backend->free_host(slot);
  }

  void unsupported_configurations_are_refused_with_a_reason() {
    for (const LaunchMode mode : {LaunchMode::DeviceGraph, LaunchMode::Persistent}) {
      StreamConfig c;
      c.launch = mode;
      try {
        make_cuda_backend(detector_, simulator_->constants(), params_, c);
        QFAIL("launch mode accepted");
      } catch (const InputError& e) {
        QVERIFY2(std::string(e.what()).find(std::string(to_string(mode))) != std::string::npos,
                 e.what());
      }
    }
    StreamConfig device_source;
    device_source.source = SourcePlacement::Device;
    QVERIFY_THROWS_EXCEPTION(
        InputError, make_cuda_backend(detector_, simulator_->constants(), params_, device_source));
    StreamConfig too_many;
    too_many.streams = 17;
    QVERIFY_THROWS_EXCEPTION(
        InputError, make_cuda_backend(detector_, simulator_->constants(), params_, too_many));
  }

  // A launch the device rejects (cudaErrorInvalidConfiguration) is a RuntimeFault naming the
  // kernel and CUDA's text; the backend can still be destroyed cleanly.
  void rejected_launch_is_a_runtime_fault() {
#ifdef LIVEDRP_HAVE_CUDA
    const StreamConfig config =
        config_of(2, LaunchMode::Plain, 1, SegmentsPerLaunch::All, HostThreadModel::PerStream);
    auto backend = make_cuda_backend(detector_, simulator_->constants(), params_, config);
    void* slot = backend->allocate_host(detector_.raw_event_bytes());
    std::memcpy(slot, raw_[0].data(), detector_.raw_event_bytes());
    gpu::testing::inject_fault(gpu::testing::Fault::InvalidLaunch, 5);
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + kFaultDeadline;
    try {
      for (std::uint64_t a = 0; std::chrono::steady_clock::now() < deadline; ++a) {
        if (backend->can_submit()) {
          BackendEvent event;
          event.raw = slot;
          event.admission = a;
          backend->submit(event);
        } else {
          backend->next_completed(true);
        }
      }
    } catch (const RuntimeFault& e) {
      text = e.what();
    }
    gpu::testing::inject_fault(gpu::testing::Fault::None);
    QVERIFY2(text.find("calibrate_bank_rows_kernel") != std::string::npos, text.c_str());
    // The runtime names a 4096-thread block cudaErrorInvalidValue (13.0) or
    // cudaErrorInvalidConfiguration (older); either way CUDA's own error name is in the text.
    QVERIFY2(text.find("(cudaErrorInvalid") != std::string::npos, text.c_str());
    backend.reset();
    qInfo("reported: %s", text.c_str());
#endif
  }

  // A kernel that traps (an asynchronous device error, which ends the process's CUDA context) is
  // reported by next_completed as a RuntimeFault within the deadline, in both thread models. Runs
  // in a child process (this binary, one test function) so the lost context spares the others.
  void device_error_is_a_runtime_fault_and_does_not_hang() {
    for (const char* model : {"one_for_all", "per_stream"}) {
      QProcess child;
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert(kTrapChildVariable, "1");
      env.insert("LIVEDRP_GPU_TRAP_MODEL", model);
      child.setProcessEnvironment(env);
      child.setProcessChannelMode(QProcess::MergedChannels);
      child.start(QCoreApplication::applicationFilePath(), {"trap_child"});
      QVERIFY(child.waitForStarted());
      const bool finished = child.waitForFinished(
          int(std::chrono::duration_cast<std::chrono::milliseconds>(kFaultDeadline * 2).count()));
      const QString output = QString::fromUtf8(child.readAll());
      if (!finished) child.kill();
      QVERIFY2(finished, qPrintable(QString("%1: the child hung:\n%2").arg(model, output)));
      QVERIFY2(child.exitStatus() == QProcess::NormalExit && child.exitCode() == 0,
               qPrintable(QString("%1: child failed:\n%2").arg(model, output)));
      QVERIFY2(output.contains("RuntimeFault:"), qPrintable(output));
      qInfo("%s: %s", model, qPrintable(output.section("RuntimeFault:", 1).section('\n', 0, 0)));
    }
  }

  // The child half of the test above; skipped unless run as that child.
  void trap_child() {
#ifdef LIVEDRP_HAVE_CUDA
    if (qEnvironmentVariable(kTrapChildVariable) != "1") QSKIP("runs only as a child process");
    const DetectorDescription d = find_detector("generic_f32");
    const CalibrationConstants c = identity_constants(d);
    StreamConfig config = config_of(2, LaunchMode::Plain, 1, SegmentsPerLaunch::All,
                                    qEnvironmentVariable("LIVEDRP_GPU_TRAP_MODEL") == "per_stream"
                                        ? HostThreadModel::PerStream
                                        : HostThreadModel::OneForAll);
    auto backend = make_cuda_backend(d, c, calib::CalibrationParams{}, config);
    void* slot = backend->allocate_host(d.raw_event_bytes());
    std::memset(slot, 0, d.raw_event_bytes());
    gpu::testing::inject_fault(gpu::testing::Fault::DeviceTrap, 3);
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + kFaultDeadline;
    try {
      for (std::uint64_t a = 0; std::chrono::steady_clock::now() < deadline; ++a) {
        if (backend->can_submit()) {
          BackendEvent event;
          event.raw = slot;
          event.admission = a;
          backend->submit(event);
        } else {
          backend->next_completed(true);
        }
      }
    } catch (const RuntimeFault& e) {
      text = e.what();
    }
    QVERIFY2(!text.empty(), "no RuntimeFault before the deadline");
    std::printf("RuntimeFault: %s\n", text.c_str());
    std::fflush(stdout);
#endif
  }
};

QTEST_GUILESS_MAIN(TestGpuRuntime)
#include "test_gpu_runtime.moc"
