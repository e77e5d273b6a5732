// The device-resident source as one engine of many (an MPI run's rank, issue 37): its simulated
// DMA producer makes only the engine's share of the run (exec/produced_share.hpp). For each kind
// of share, the engine on runtime.source device processes exactly the events the host source's
// engine processes under the same share: the same sequences and pulse ids, in order, and the same
// peak list for each (so each event's data is the run's event's: the pool is reordered for the
// share). Without a usable CUDA device the suite skips, unless LIVEDRP_REQUIRE_GPU=1.
#include <QtTest>

#include <any>
#include <cstdint>
#include <mutex>
#include <vector>

#include "exec/engine.hpp"
#include "gpu_test_support.hpp"
#include "stages/peaks/peak_stage.hpp"

using namespace livedrp;

namespace {

// One processed event as the observer saw it: its identity and its peak list's size.
struct Seen {
  std::uint64_t sequence = 0, pulse_id = 0;
  int found = -1;
  bool operator==(const Seen&) const = default;
};

// A run of 11 events from a pool of 4 simulated ePix10ka2M events (every one a hit candidate),
// peak finding on, nothing published, nothing dropped.
EngineConfig share_run(bool device) {
  EngineConfig c;
  c.source = "sim:epix10ka2m";
  c.backend = device ? "cuda" : "cpu";
  c.publish = "";
  c.events = 11;
  c.hit_fraction = 1.0;
  c.simulator_pool = 4;
  c.full_ring = "wait";
  c.ring_slots = 8;
  c.peak_finding.enabled = true;
  if (device) {
    c.runtime.source = SourcePlacement::Device;
    c.runtime.launch = LaunchMode::Graph;
    c.runtime.streams = 2;
  }
  return c;
}

std::vector<Seen> run_share(const EngineConfig& config, EventShare share) {
  Engine engine(config);
  engine.set_event_share(share);
  std::mutex mutex;
  std::vector<Seen> seen;
  engine.set_event_observer([&](const EventHeader& header, const auto&, const auto& outputs) {
    Seen s{header.sequence, header.pulse_id, -1};
    for (const stages::StageOutput& output : outputs)
      if (const auto* peaks = std::any_cast<stages::PeakResult>(&output.result))
        s.found = peaks->peaks.found;
    std::lock_guard lock(mutex);
    seen.push_back(s);
  });
  engine.start();
  engine.wait();
  const RunSummary summary = engine.summary();
  if (!summary.error.empty())
    qWarning("%s run failed: %s", config.backend.c_str(), summary.error.c_str());
  return seen;
}

}  // namespace

Q_DECLARE_METATYPE(EventShare::By)

class TestGpuResidentShare : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { LIVEDRP_SKIP_WITHOUT_GPU(); }

  void the_device_source_makes_the_events_of_its_share_data() {
    QTest::addColumn<EventShare::By>("by");
    QTest::addColumn<int>("index");
    QTest::addColumn<int>("count");
    QTest::addColumn<int>("expected_events");
    QTest::newRow("event index 0 of 2") << EventShare::By::EventIndex << 0 << 2 << 6;
    QTest::newRow("event index 2 of 3") << EventShare::By::EventIndex << 2 << 3 << 3;
    // Pulse ids 1000000 + 3 i: modulo 2 the parity of i, share 1 takes the odd events.
    QTest::newRow("pulse id 1 of 2") << EventShare::By::PulseId << 1 << 2 << 5;
    // Modulo 4: 0, 3, 2, 1, 0, ... (share 3 takes events 1, 5, 9).
    QTest::newRow("pulse id 3 of 4") << EventShare::By::PulseId << 3 << 4 << 3;
    // Modulo 3 every pulse id is 1: share 1 takes all, share 0 none.
    QTest::newRow("pulse id 1 of 3") << EventShare::By::PulseId << 1 << 3 << 11;
    QTest::newRow("pulse id 0 of 3") << EventShare::By::PulseId << 0 << 3 << 0;
    QTest::newRow("own input 1 of 3") << EventShare::By::OwnInput << 1 << 3 << 11;
  }

  void the_device_source_makes_the_events_of_its_share() {
    QFETCH(EventShare::By, by);
    QFETCH(int, index);
    QFETCH(int, count);
    QFETCH(int, expected_events);
    const EventShare share{std::uint64_t(index), std::uint64_t(count), by};
    const std::vector<Seen> host = run_share(share_run(false), share);
    const std::vector<Seen> device = run_share(share_run(true), share);
    QCOMPARE(host.size(), std::size_t(expected_events));
    QCOMPARE(device.size(), host.size());
    for (std::size_t k = 0; k < host.size(); ++k) {
      QCOMPARE(device[k].sequence, host[k].sequence);
      QCOMPARE(device[k].pulse_id, host[k].pulse_id);
      QCOMPARE(device[k].found, host[k].found);
    }
  }
};

QTEST_GUILESS_MAIN(TestGpuResidentShare)
#include "test_gpu_resident_share.moc"
