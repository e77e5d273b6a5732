// Live compression on the CUDA backend against the CPU backend, through the engine's library API.
//
// The GPU codec writes the very bytes the CPU codec writes, so over the same simulated events the
// CUDA backend's stream sizes must equal the CPU backend's: for lossless (the raw uint16 event)
// and lossy (the calibrated float32 image at an error bound), over a matrix of runtime settings
// (streams, plain and graph launches, batch K > 1 with a partly filled last batch, one segment
// per launch, both host thread models), the run's total bytes in and out must be equal, every
// event processed, none dropped, and every event counted once in the ratio histogram. A codec
// changed through the engine controller (what the control socket and the GUI call) takes effect
// on the next run; a bad bound is refused with a clear error, never a crash.
//
// Without a usable CUDA device the suite skips, unless LIVEDRP_REQUIRE_GPU=1, where it fails.
#include <QtTest>

#include "engine_error_text.hpp"
#include "gpu_test_support.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/detector.hpp"
#include "core/error.hpp"
#include "exec/backend.hpp"
#include "exec/engine.hpp"
#include "exec/engine_controller.hpp"
#include "exec/stream_config.hpp"
#include "protocol/topics.hpp"

using namespace livedrp;

namespace {

// Not a multiple of any batch below: the last batch of every run is launched partly filled.
constexpr std::uint64_t kEvents = 23;
// Distinct simulated events the source cycles through.
constexpr int kPoolEvents = 3;
constexpr double kLossyBound = 0.5;
// Longest a run of kEvents may take on the GPU machine before the test calls it stuck.
constexpr auto kRunDeadline = std::chrono::seconds(120);

EngineConfig base_config(const std::string& backend, const std::string& codec) {
  EngineConfig c;
  c.source = "sim:epix10ka2m";
  c.backend = backend;
  c.publish = "";
  c.simulator_pool = kPoolEvents;
  c.stats_interval_s = 0.05;
  c.events = kEvents;
  c.full_ring = "wait";
  c.compression.codec = codec;
  c.compression.error_bound = kLossyBound;
  return c;
}

StreamConfig runtime_of(int streams, LaunchMode launch, int batch, SegmentsPerLaunch segments,
                        HostThreadModel threads) {
  StreamConfig r;
  r.streams = streams;
  r.launch = launch;
  r.batch = batch;
  r.segments = segments;
  r.host_threads = threads;
  return r;
}

// The runtime settings the CUDA backend is run with; each must give the CPU backend's sizes.
std::vector<StreamConfig> runtime_matrix() {
  using L = LaunchMode;
  using S = SegmentsPerLaunch;
  using H = HostThreadModel;
  return {
      runtime_of(1, L::Plain, 1, S::All, H::OneForAll),
      runtime_of(3, L::Graph, 4, S::All, H::PerStream),
      runtime_of(2, L::Plain, 3, S::One, H::OneForAll),
      runtime_of(4, L::Graph, 1, S::One, H::PerStream),
  };
}

struct Run {
  RunSummary summary;
  std::vector<protocol::StatsPayload> intervals;
};

Run run_engine(const EngineConfig& config) {
  Run run;
  std::mutex mutex;
  Engine engine(config);
  engine.set_progress_callback([&](const protocol::StatsPayload& stats) {
    std::lock_guard lock(mutex);
    run.intervals.push_back(stats);
  });
  engine.start();
  engine.wait();
  run.summary = engine.summary();
  std::lock_guard lock(mutex);
  return run;
}

// Waits for the controller's current run to end (a finite event count), without stopping it.
bool wait_for_run(const EngineController& controller) {
  const auto deadline = std::chrono::steady_clock::now() + kRunDeadline;
  while (controller.state() == "running") {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace

class TestGpuLiveCompression : public QObject {
  Q_OBJECT

  // The CPU backend's run over the same events, per codec: the reference.
  std::map<std::string, protocol::CompressionStats> cpu_totals_;

  // Null when the CPU run failed (then `failure` says why).
  const protocol::CompressionStats* cpu_reference(const std::string& codec, QByteArray& failure) {
    auto found = cpu_totals_.find(codec);
    if (found != cpu_totals_.end()) return &found->second;
    const Run run = run_engine(base_config("cpu", codec));
    if (!run.summary.error.empty() || !run.summary.stats.compression ||
        run.summary.stats.events_processed != kEvents) {
      failure = QByteArray::fromStdString("CPU reference run (" + codec +
                                          ") failed: " + run.summary.error);
      return nullptr;
    }
    return &cpu_totals_.emplace(codec, *run.summary.stats.compression).first->second;
  }

  // Runs the CUDA backend with `codec` over the whole runtime matrix, each against the CPU run.
  void check_matrix_against_cpu(const std::string& codec) {
    QByteArray failure;
    const protocol::CompressionStats* reference = cpu_reference(codec, failure);
    QVERIFY2(reference, failure.constData());
    const protocol::CompressionStats& cpu = *reference;
    const DetectorDescription detector = find_detector("epix10ka2m");
    const std::uint64_t element_bytes = codec == "lossy" ? 4 : detector.raw_bytes_per_pixel();
    QCOMPARE(cpu.total_bytes_in, kEvents * detector.pixels() * element_bytes);
    for (const StreamConfig& runtime : runtime_matrix()) {
      EngineConfig config = base_config("cuda", codec);
      config.runtime = runtime;
      const QByteArray label = QByteArray::fromStdString(
          codec + ", " + describe(runtime) + ", " + std::string(to_string(runtime.host_threads)));
      const Run run = run_engine(config);
      QVERIFY2(run.summary.error.empty(), (label + ": " + run.summary.error.c_str()).constData());
      QVERIFY2(run.summary.stats.events_processed == kEvents, label.constData());
      QVERIFY2(run.summary.stats.events_dropped == 0, label.constData());
      QVERIFY2(run.summary.stats.compression.has_value(), label.constData());
      const protocol::CompressionStats& gpu = *run.summary.stats.compression;
      QCOMPARE(gpu.codec, codec);
      QCOMPARE(gpu.error_bound, codec == "lossy" ? kLossyBound : 0.0);
      QVERIFY2(gpu.total_bytes_in == cpu.total_bytes_in,
               (label + ": bytes in " + QByteArray::number(qulonglong(gpu.total_bytes_in)) +
                " vs CPU " + QByteArray::number(qulonglong(cpu.total_bytes_in)))
                   .constData());
      QVERIFY2(gpu.total_bytes_out == cpu.total_bytes_out,
               (label + ": bytes out " + QByteArray::number(qulonglong(gpu.total_bytes_out)) +
                " vs CPU " + QByteArray::number(qulonglong(cpu.total_bytes_out)))
                   .constData());
      QVERIFY2(std::isfinite(gpu.gbps) && gpu.gbps > 0, label.constData());

      // Every event's stream reached the stats: the intervals add up to the run, and each
      // event's ratio is counted once in the histogram.
      std::uint64_t interval_in = 0, interval_out = 0, histogram_events = 0;
      for (const auto& stats : run.intervals) {
        if (!stats.compression) continue;
        interval_in += stats.compression->interval_bytes_in;
        interval_out += stats.compression->interval_bytes_out;
        for (std::uint64_t bin : stats.compression->ratio_histogram) histogram_events += bin;
      }
      QVERIFY2(interval_in == gpu.total_bytes_in, label.constData());
      QVERIFY2(interval_out == gpu.total_bytes_out, label.constData());
      QVERIFY2(histogram_events == kEvents, label.constData());
      qInfo("%s: ratio %.3f, %.2f GB/s (CPU %.2f GB/s)", label.constData(), gpu.interval_ratio,
            gpu.gbps, cpu.gbps);
    }
  }

 private slots:
  void initTestCase() { LIVEDRP_SKIP_WITHOUT_GPU(); }

  void lossless_sizes_equal_the_cpu_backend() { check_matrix_against_cpu("lossless"); }

  void lossy_sizes_equal_the_cpu_backend_and_reduce_the_image() {
    check_matrix_against_cpu("lossy");
    // Calibrated float32 at a bound of half a unit: well above 1, and below what a stream of
    // headers alone would give.
    QByteArray failure;
    const protocol::CompressionStats* cpu = cpu_reference("lossy", failure);
    QVERIFY2(cpu, failure.constData());
    const double ratio = double(cpu->total_bytes_in) / double(cpu->total_bytes_out);
    QVERIFY2(ratio > 1.5 && ratio < 1000, QByteArray::number(ratio).constData());
  }

  void codec_changed_through_the_controller_applies_to_the_next_run() {
    EngineController controller(base_config("cuda", "off"));
    QVERIFY(controller.start());
    QVERIFY(wait_for_run(controller));
    QVERIFY2(controller.summary().error.empty(), controller.summary().error.c_str());
    QVERIFY(!controller.summary().stats.compression.has_value());

    for (const std::string codec : {"lossless", "lossy", "off"}) {
      controller.apply_json({{"compression", {{"codec", codec}, {"error_bound", kLossyBound}}}});
      QCOMPARE(controller.config().compression.codec, codec);
      QVERIFY(controller.start());
      QVERIFY(wait_for_run(controller));
      const RunSummary summary = controller.summary();
      QVERIFY2(summary.error.empty(), summary.error.c_str());
      QCOMPARE(summary.stats.events_processed, kEvents);
      if (codec == "off") {
        QVERIFY(!summary.stats.compression.has_value());
        continue;
      }
      QVERIFY(summary.stats.compression.has_value());
      QCOMPARE(summary.stats.compression->codec, codec);
      QByteArray failure;
      const protocol::CompressionStats* cpu = cpu_reference(codec, failure);
      QVERIFY2(cpu, failure.constData());
      QCOMPARE(summary.stats.compression->total_bytes_in, cpu->total_bytes_in);
      QCOMPARE(summary.stats.compression->total_bytes_out, cpu->total_bytes_out);
    }
  }

  void bad_bound_is_refused_with_a_clear_error() {
    // Past the JSON validation (a caller of the library API): the backend checks the bound.
    for (const double bound : {std::numeric_limits<double>::infinity(), -1.0, 0.0,
                               std::numeric_limits<double>::quiet_NaN()}) {
      EngineConfig config = base_config("cuda", "lossy");
      config.compression.error_bound = bound;
      const QString error = construction_error(config);
      QVERIFY2(error.contains("compression") && error.contains("error bound"),
               qPrintable(error));
    }
    EngineConfig config = base_config("cuda", "lossless");
    config.compression.chunk_bytes = 1000;  // not a multiple of 128
    const QString error = construction_error(config);
    QVERIFY2(error.contains("compression") && error.contains("chunk size"),
             qPrintable(error));

    // Through the controller: the change is refused and the configuration in force is kept.
    EngineController controller(base_config("cuda", "lossless"));
    QString refusal;
    try {
      controller.apply_json({{"compression", {{"codec", "lossy"}, {"error_bound", 0}}}});
    } catch (const InputError& e) {
      refusal = QString::fromStdString(e.what());
    }
    QVERIFY2(refusal.contains("compression.error_bound"), qPrintable(refusal));
    QCOMPARE(controller.config().compression.codec, std::string("lossless"));
  }

  void device_resident_source_compresses_with_launched_consumers_only() {
    EngineConfig config = base_config("cuda", "lossless");
    config.runtime.source = SourcePlacement::Device;
    config.runtime.launch = LaunchMode::Graph;
    QString error = construction_error(config);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    config.runtime.launch = LaunchMode::Persistent;
    error = construction_error(config);
    QVERIFY2(error.contains("calibrates only"), qPrintable(error));
  }
};

QTEST_GUILESS_MAIN(TestGpuLiveCompression)
#include "test_gpu_live_compression.moc"
