// The engine end to end on the CPU backend: every event that enters is processed or counted as
// dropped, results leave in order, `stats` and `status` are published, and bad configurations are
// refused with the field named.
#include <QtTest>

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "exec/backend.hpp"
#include "exec/engine.hpp"
#include "protocol/subscriber.hpp"
#include "protocol/topics.hpp"
#include "test_time_scale.hpp"

using namespace livedrp;

namespace {

EngineConfig small_cpu_config(const std::string& source = "sim:jungfrau4m") {
  EngineConfig c;
  c.source = source;
  c.backend = "cpu";
  c.publish = "tcp://127.0.0.1:*";
  c.simulator_pool = 2;  // generating events is slow on a 2-core machine; two are enough here
  c.stats_interval_s = 0.05;
  c.cpu_threads = 2;
  return c;
}

QString error_of(const nlohmann::json& json) {
  try {
    EngineConfig::from_json(json, "test.json");
  } catch (const InputError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestEngine : public QObject {
  Q_OBJECT
 private slots:
  void every_event_is_processed_when_the_source_waits() {
    EngineConfig c = small_cpu_config();
    c.events = 25;
    c.full_ring = "wait";
    Engine engine(c);
    engine.start();
    engine.wait();
    const RunSummary s = engine.summary();
    QVERIFY2(s.error.empty(), s.error.c_str());
    QCOMPARE(s.stats.events_in, std::uint64_t(25));
    QCOMPARE(s.stats.events_processed, std::uint64_t(25));
    QCOMPARE(s.stats.events_dropped, std::uint64_t(0));
    QCOMPARE(s.stats.events_in_flight, std::uint64_t(0));
    QCOMPARE(s.stats.order_errors, std::uint64_t(0));
    QCOMPARE(s.stats.backend, std::string("cpu"));
    QVERIFY(s.stats.event_rate_hz > 0);
    QVERIFY(s.stats.stages.at(0).mean_us > 0);
  }

  // A ring of one slot fed flat out with drops allowed: the books must still balance exactly.
  void drops_are_counted_with_their_reason_and_balance_the_books() {
    EngineConfig c = small_cpu_config("sim:epix10ka2m");
    c.events = 300;
    c.ring_slots = 1;
    c.full_ring = "drop";
    Engine engine(c);
    engine.start();
    engine.wait();
    const auto s = engine.summary().stats;
    QCOMPARE(s.events_in, std::uint64_t(300));
    QCOMPARE(s.events_processed + s.events_dropped, std::uint64_t(300));
    QVERIFY(s.events_dropped > 0);  // memcpy outpaces CPU calibration
    QCOMPARE(s.drops_by_reason.at("ring_full"), s.events_dropped);
    QCOMPARE(s.order_errors, std::uint64_t(0));
  }

  void stop_drains_events_in_flight() {
    EngineConfig c = small_cpu_config();
    c.rate_hz = 200;
    Engine engine(c);
    engine.start();
    // Until events flow (the simulator builds its constants first, slowly on a loaded machine),
    // then a little longer so that some are in flight when the stop comes.
    QTRY_VERIFY_WITH_TIMEOUT(engine.summary().stats.events_processed > 0, 30000);
    QTest::qWait(100);
    engine.request_stop();
    engine.wait();
    const auto s = engine.summary().stats;
    QVERIFY(engine.finished());
    QVERIFY(s.events_processed > 0);
    QCOMPARE(s.events_in_flight, std::uint64_t(0));
    QCOMPARE(s.events_processed + s.events_dropped, s.events_in);
  }

  void stats_and_status_are_published() {
    EngineConfig c = small_cpu_config();
    c.events = 20;
    c.rate_hz = 100;
    Engine engine(c);
    protocol::Subscriber subscriber(engine.publish_endpoint());
    QTest::qWait(100);  // let the subscription reach the publisher
    engine.start();
    std::uint64_t last_processed = 0;
    bool saw_running = false, saw_finished = false, saw_rate = false;
    QElapsedTimer timer;
    timer.start();
    while (!saw_finished && timer.elapsed() < 20000) {
      auto message = subscriber.receive(std::chrono::milliseconds(200));
      if (!message) continue;
      if (message->topic == "stats") {
        const auto stats = protocol::stats_from_json(message->payload);
        QVERIFY(stats.events_processed >= last_processed);
        last_processed = stats.events_processed;
        if (stats.event_rate_hz > 0) saw_rate = true;
        QCOMPARE(stats.backend, std::string("cpu"));
        QCOMPARE(message->run, std::int64_t(1));
      } else if (message->topic == "status") {
        const auto status = protocol::status_from_json(message->payload);
        QCOMPARE(status.detector, std::string("jungfrau4m"));
        QCOMPARE(status.config.at("source").get<std::string>(), std::string("sim:jungfrau4m"));
        if (status.state == "running") saw_running = true;
        if (status.state == "finished") saw_finished = true;
      }
    }
    engine.wait();
    QVERIFY(saw_running);
    QVERIFY(saw_finished);
    QVERIFY(saw_rate);
    QCOMPARE(last_processed, std::uint64_t(20));
  }

  // Latency is measured from the doorbell to the release of each result: it is positive and
  // bounded by the run time, p50 <= p99 <= max, and the one CPU lane reports its occupancy.
  void stats_carry_latency_and_lane_occupancy() {
    EngineConfig c = small_cpu_config("sim:generic_f32");
    c.events = 40;
    c.rate_hz = 100;
    Engine engine(c);
    protocol::Subscriber subscriber(engine.publish_endpoint(), {"stats"});
    QTest::qWait(100);
    QElapsedTimer timer;
    timer.start();
    engine.start();
    bool saw_latency = false;
    std::uint64_t lane_completed = 0;
    // Until the run's final stats (published once the engine thread is done, so possibly after
    // finished() turns true) counts every event; the bound only keeps a lost message from hanging.
    while (lane_completed < 40 || !engine.finished()) {
      auto message = subscriber.receive(std::chrono::milliseconds(100));
      if (timer.elapsed() > 120000 * testing::time_scale()) break;
      if (!message) continue;
      const auto stats = protocol::stats_from_json(message->payload);
      QCOMPARE(stats.streams.size(), std::size_t(1));
      QCOMPARE(stats.streams[0].capacity, std::uint64_t(1));
      lane_completed = std::max(lane_completed, stats.streams[0].completed);
      if (std::isfinite(stats.latency_p50_us)) {
        saw_latency = true;
        QVERIFY(stats.latency_p50_us > 0);
        QVERIFY(stats.latency_p50_us <= stats.latency_p99_us);
        QVERIFY(stats.latency_p99_us <= stats.latency_max_us);
        QVERIFY(stats.latency_max_us < 1e6 * timer.elapsed() / 1000.0 + 1e6);
      }
      QCOMPARE(stats.reorder_depth, std::uint64_t(0));  // one lane completes in order
    }
    engine.wait();
    QVERIFY(saw_latency);
    QCOMPARE(lane_completed, std::uint64_t(40));
  }

  // A photon-counting detector end to end: simulated Eiger2 X 4M frames (uint32 counts, module
  // gaps all ones) calibrated, compressed (their float32 image: the codec has no 32-bit integer
  // type) and searched for peaks, every event processed in order.
  void counting_detector_runs_end_to_end() {
    EngineConfig c = small_cpu_config("sim:eiger2x4m");
    c.events = 8;
    c.full_ring = "wait";
    c.hit_fraction = 1.0;
    c.compression.codec = "lossless";
    c.peak_finding.enabled = true;
    Engine engine(c);
    engine.start();
    engine.wait();
    const RunSummary s = engine.summary();
    QVERIFY2(s.error.empty(), s.error.c_str());
    QCOMPARE(s.stats.events_in, std::uint64_t(8));
    QCOMPARE(s.stats.events_processed, std::uint64_t(8));
    QCOMPARE(s.stats.events_dropped, std::uint64_t(0));
    QCOMPARE(s.stats.order_errors, std::uint64_t(0));
    const std::uint64_t pixels = std::uint64_t(2162) * 2068;
    QVERIFY(s.stats.compression.has_value());
    QCOMPARE(s.stats.compression->total_bytes_in, 8 * pixels * 4);
    QVERIFY(s.stats.compression->total_bytes_out < s.stats.compression->total_bytes_in);
    QVERIFY(s.stats.peak_finding.has_value());
    QCOMPARE(s.stats.peak_finding->total_events, std::uint64_t(8));
  }

  void configuration_round_trips_through_json() {
    EngineConfig c;
    c.source = "sim:epix10ka2m";
    c.events = 123;
    c.rate_hz = 45.5;
    c.backend = "cpu";
    c.ring_slots = 7;
    c.calibration.common_mode = false;
    c.calibration.common_mode_threshold_adu = 12.5f;
    c.seed = 99;
    const EngineConfig again = EngineConfig::from_json(c.to_json(), "round trip");
    QCOMPARE(again.to_json(), c.to_json());
    QCOMPARE(again.events, std::uint64_t(123));
    QCOMPARE(again.calibration.common_mode_threshold_adu, 12.5f);
  }

  void bad_configuration_names_the_field() {
    using nlohmann::json;
    QVERIFY(error_of({{"sorce", "sim:epix10ka2m"}}).contains("unknown field 'sorce'"));
    QVERIFY(error_of({{"rate_hz", -5}}).contains("rate_hz"));
    QVERIFY(error_of({{"backend", "opencl"}}).contains("backend"));
    QVERIFY(error_of({{"source", "file:x.h5"}}).contains("source"));
    QVERIFY(error_of({{"ring_slots", 0}}).contains("ring_slots"));
    QVERIFY(error_of({{"events", "many"}}).contains("events"));
    QVERIFY(
        error_of({{"calibration", {{"common_mode", "yes"}}}}).contains("calibration.common_mode"));
    QVERIFY(error_of({{"simulator", {{"hit_fraction", 2}}}}).contains("simulator.hit_fraction"));
    QVERIFY(error_of({{"schema_version", 2}}).contains("schema_version"));
    QVERIFY(error_of(json::array()).contains("JSON object"));
  }

  void unknown_detector_and_bad_endpoint_are_refused_at_construction() {
    EngineConfig c = small_cpu_config("sim:nosuchdetector");
    QVERIFY_THROWS_EXCEPTION(InputError, Engine{c});
    c = small_cpu_config();
    c.publish = "tcp://not a host:99999";
    QVERIFY_THROWS_EXCEPTION(InputError, Engine{c});
  }

  // The device-resident source runs only on a CUDA device, whole events, without CPU fallback;
  // each impossible combination is refused with the field named.
  void device_resident_source_is_refused_where_it_cannot_run() {
    auto error_for = [](EngineConfig c) -> QString {
      try {
        Engine engine(c);
      } catch (const InputError& e) {
        return QString::fromStdString(e.what());
      }
      return {};
    };
    EngineConfig c = small_cpu_config();
    c.publish = "";
    c.runtime.source = SourcePlacement::Device;
    QVERIFY(error_for(c).contains("needs the CUDA backend"));
    c.backend = "auto";
    if (const auto reason = cuda_unavailable_reason()) {
      QVERIFY(error_for(c).contains("needs a usable CUDA device"));
    } else {
      c.runtime.on_fault = FaultPolicy::FallbackCpu;
      QVERIFY(error_for(c).contains("fallback_cpu"));
      c.runtime.on_fault = FaultPolicy::Stop;
      c.runtime.batch = 4;
      QVERIFY(error_for(c).contains("batch must be 1"));
    }
  }
};

QTEST_GUILESS_MAIN(TestEngine)
#include "test_engine.moc"
