// Live peak finding on the CUDA backend: the peak lists it publishes must equal the CPU's for
// the same events, value for value (the device calibration is bit-identical to the CPU's and the
// device peakfinder8 is the CPU's per-seed code, test_gpu_peakfinder8), over one lane and over
// several lanes with batches, graph launches and per-stream host threads; the run's counts are
// the offline sums; a parameter change mid-run applies to the events after it (each message says
// which version found it); and a re-run searches the frames kept on the GPU with the parameters
// in force, equal to the CPU's offline search of the same frames.
#include <QtTest>

#include "gpu_test_support.hpp"
#include "live_peaks_support.hpp"

using namespace livedrp;
using namespace livedrp::live_peaks_test;

namespace {

struct Offline {
  OfflineEvents events;
  std::vector<peaks::PeakList> loose, strict;  // per event: the configuration's, minimum_snr 9
  peaks::PeakFinderParams strict_params;
};

Offline offline_for(const EngineConfig& config) {
  ThreadPool pool(2);
  const DetectorSimulator simulator = engine_simulator(config, pool);
  Offline o;
  o.events = offline_events(config, simulator, pool);
  o.strict_params = config.peak_finding.params;
  o.strict_params.minimum_snr = 9.0f;
  peaks::PeakFinder8 loose =
      independent_finder(simulator.detector(), simulator.constants(), config.peak_finding.params);
  peaks::PeakFinder8 strict =
      independent_finder(simulator.detector(), simulator.constants(), o.strict_params);
  for (const auto& frame : o.events.calibrated) {
    o.loose.push_back(loose.find(frame.data()));
    o.strict.push_back(strict.find(frame.data()));
  }
  return o;
}

EngineConfig gpu_config() {
  EngineConfig c = live_config();
  c.backend = "cuda";
  c.events = 12;
  c.rate_hz = 40;  // messages are rate-limited to 100 Hz: most events get theirs
  c.full_ring = "wait";
  return c;
}

// Runs `config`; `during` is called once the first `peaks` message came (for a mid-run change).
PeakMessages run(Engine& engine, const std::function<void(Engine&)>& during = {}) {
  PeakMessages seen;
  protocol::Subscriber subscriber(engine.publish_endpoint(), peak_topics());
  std::this_thread::sleep_for(200ms);
  engine.start();
  bool called = false;
  while (!engine.finished()) {
    take_messages(subscriber, seen, 5ms);
    if (during && !called && !seen.peaks.empty()) {
      during(engine);
      called = true;
    }
  }
  engine.wait();
  take_messages(subscriber, seen, 500ms);
  return seen;
}

// Every message's list against the offline list of its event and version; the run's totals
// against the offline sums of the version each event was searched with (all `loose` unless a
// change came).
void check(const PeakMessages& seen, const RunSummary& summary, const Offline& offline,
           const ImageAssembly& assembly, bool all_loose) {
  QVERIFY2(summary.error.empty(), summary.error.c_str());
  QVERIFY(!seen.peaks.empty());
  for (const protocol::EventPeaks& p : seen.peaks) {
    const std::size_t index = offline.events.index_of(p.sequence);
    QVERIFY(index < offline.events.sequences.size());
    const peaks::PeakList& expected =
        p.params_version == 1 ? offline.loose[index] : offline.strict[index];
    const QString difference = compare_list(p, expected, assembly);
    QVERIFY2(difference.isEmpty(),
             qPrintable(QString("event %1 v%2: ").arg(index).arg(p.params_version) + difference));
  }
  for (const protocol::ImageFrame& image : seen.images) {
    const std::size_t index = offline.events.index_of(image.sequence);
    QVERIFY(index < offline.events.sequences.size());
    std::vector<float> expected(assembly.height() * assembly.width());
    assembly.assemble(offline.events.calibrated[index].data(), expected.data());
    for (std::size_t k = 0; k < expected.size(); ++k)
      if (!(std::isnan(expected[k]) ? std::isnan(image.pixels[k]) : image.pixels[k] == expected[k]))
        QFAIL(qPrintable(QString("image of event %1, pixel %2").arg(index).arg(k)));
  }
  if (all_loose) {
    std::uint64_t hits = 0, found = 0;
    for (const auto& list : offline.loose)
      hits += list.hit ? 1 : 0, found += std::uint64_t(list.found);
    QCOMPARE(summary.stats.peak_finding->total_hits, hits);
    QCOMPARE(summary.stats.peak_finding->total_peaks, found);
  }
  QCOMPARE(summary.stats.peak_finding->total_events, summary.stats.events_processed);
}

}  // namespace

class TestGpuEnginePeaks : public QObject {
  Q_OBJECT
 private slots:
  void lists_equal_the_cpu_over_lane_configurations_data() {
    add_lane_columns();
    QTest::newRow("1 stream") << 1 << 4 << 1 << false << false;
    QTest::newRow("3 streams, batch 2, graph") << 3 << 2 << 2 << true << false;
    QTest::newRow("2 streams, per-stream threads") << 2 << 3 << 1 << false << true;
  }
  void lists_equal_the_cpu_over_lane_configurations() {
    LIVEDRP_SKIP_WITHOUT_GPU();
    EngineConfig config = gpu_config();
    apply_lane_row(config.runtime);
    const Offline offline = offline_for(config);
    const ImageAssembly assembly(find_detector("epix10ka2m"));
    Engine engine(config);
    QCOMPARE(engine.backend_name(), std::string("cuda"));
    const PeakMessages seen = run(engine);
    const RunSummary summary = engine.summary();
    qInfo("%zu peaks messages, %zu images", seen.peaks.size(), seen.images.size());
    check(seen, summary, offline, assembly, true);

    // A re-run on the GPU's kept frames equals the CPU's offline search of the same frames.
    const PeakRerun rerun = engine.rerun_peaks(4);
    QCOMPARE(rerun.sequences.size(), std::size_t(4));
    for (std::size_t k = 0; k < 4; ++k) {
      const std::size_t index = offline.events.index_of(rerun.sequences[k]);
      QCOMPARE(index, offline.events.sequences.size() - 4 + k);
      QCOMPARE(rerun.peaks_found[k], std::uint64_t(offline.loose[index].found));
    }
  }

  void a_change_mid_run_applies_to_later_events_and_reruns_on_the_gpu() {
    LIVEDRP_SKIP_WITHOUT_GPU();
    EngineConfig config = gpu_config();
    config.runtime.streams = 2;
    config.runtime.slots_per_stream = 2;
    config.events = 16;
    config.rate_hz = 20;
    const Offline offline = offline_for(config);
    const ImageAssembly assembly(find_detector("epix10ka2m"));
    Engine engine(config);
    PeakMessages seen = run(engine, [&](Engine& e) {
      QCOMPARE(e.set_peak_params(offline.strict_params), std::uint64_t(2));
    });
    const RunSummary summary = engine.summary();
    check(seen, summary, offline, assembly, false);
    bool saw_version_2 = false;
    for (const auto& p : seen.peaks) saw_version_2 = saw_version_2 || p.params_version == 2;
    QVERIFY(saw_version_2);
    // Versions only go up along the run.
    for (std::size_t m = 1; m < seen.peaks.size(); ++m)
      QVERIFY(seen.peaks[m].params_version >= seen.peaks[m - 1].params_version);

    // Re-run with the parameters in force (version 2): the published lists equal the CPU's.
    protocol::Subscriber subscriber(engine.publish_endpoint(), peak_topics());
    std::this_thread::sleep_for(200ms);
    const PeakRerun rerun = engine.rerun_peaks(std::nullopt);
    QCOMPARE(rerun.params_version, std::uint64_t(2));
    QCOMPARE(rerun.sequences.size(), std::size_t(config.peak_finding.recent_frames));
    PeakMessages seen_after;
    take_messages(subscriber, seen_after, 500ms);
    std::vector<protocol::EventPeaks> reruns;  // a late joiner also gets the run's last message
    for (const auto& p : seen_after.peaks)
      if (p.rerun) reruns.push_back(p);
    QCOMPARE(reruns.size(), rerun.sequences.size());
    for (const protocol::EventPeaks& p : reruns) {
      const std::size_t index = offline.events.index_of(p.sequence);
      QVERIFY(index < offline.events.sequences.size());
      const QString difference = compare_list(p, offline.strict[index], assembly);
      QVERIFY2(difference.isEmpty(), qPrintable(difference));
    }
  }
};

QTEST_GUILESS_MAIN(TestGpuEnginePeaks)
#include "test_gpu_engine_peaks.moc"
