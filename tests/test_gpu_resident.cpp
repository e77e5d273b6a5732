// The device-resident source (doorbell ring in GPU memory, producer kernel) and its consumers
// (persistent kernel, self-relaunching device graph, host-launched graph, plain launches) against
// the CPU backend.
//
// Every row of a small matrix runs >= 10,000 events of the ePix10ka2M from a pool of distinct
// simulated events: the results must come back in sequence order, none missing, pulse ids rising
// by the configured step, doorbell before completion on the device clock, and each event's
// checksum of the calibrated image (calib/output_checksum.hpp, computed by the device over every
// pixel) equal to the checksum of the CPU backend's image of the same pool event. A stopped
// open-ended run delivers exactly the events the producer announced. Bad configurations are
// rejected with a message.
//
// Without a usable CUDA device the suite skips, unless LIVEDRP_REQUIRE_GPU=1, where it fails.
#include <QtTest>

#include "gpu_test_support.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calib/calibrate_cpu.hpp"
#include "calib/constants.hpp"
#include "calib/output_checksum.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "exec/backend.hpp"
#include "exec/engine.hpp"
#include "sim/simulator.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/resident/resident_pipeline.hpp"
#endif

using namespace livedrp;

namespace {

constexpr std::uint64_t kMatrixEvents = 10'007;
constexpr int kPoolEvents = 4;

}  // namespace

class TestGpuResident : public QObject {
  Q_OBJECT

  DetectorDescription detector_;
  std::unique_ptr<DetectorSimulator> simulator_;
  std::vector<std::vector<std::uint8_t>> pool_;
  std::vector<std::uint64_t> want_common_mode_, want_plain_;  // CPU checksums per pool event

 private slots:
  void initTestCase() {
    LIVEDRP_SKIP_WITHOUT_GPU();
#ifdef LIVEDRP_HAVE_CUDA
    detector_ = find_detector("epix10ka2m");
    ThreadPool pool;
    SimulatorConfig config;
    config.seed = 777;
    config.hit_fraction = 0.5;  // peaks and gain switching in some events
    config.epix10ka_asic_configs = every_epix10ka_config();  // all seven ePix10ka gain modes
    simulator_ = std::make_unique<DetectorSimulator>(detector_, config, &pool);
    std::vector<float> image(detector_.pixels());
    for (int i = 0; i < kPoolEvents; ++i) {
      pool_.emplace_back(detector_.raw_event_bytes());
      simulator_->generate(std::uint64_t(i), pool_.back().data(), nullptr, &pool);
      calib::CalibrationParams params;
      params.common_mode = true;
      calibrate_event_cpu(detector_, simulator_->constants(), params, pool_.back().data(),
                          image.data(), &pool);
      want_common_mode_.push_back(calib::image_checksum(image.data(), image.size()));
      params.common_mode = false;
      calibrate_event_cpu(detector_, simulator_->constants(), params, pool_.back().data(),
                          image.data(), &pool);
      want_plain_.push_back(calib::image_checksum(image.data(), image.size()));
    }
    // Distinct events give distinct checksums, so a slot mix-up cannot go unseen.
    QVERIFY(want_plain_[0] != want_plain_[1] && want_common_mode_[0] != want_plain_[0]);
#endif
  }

#ifdef LIVEDRP_HAVE_CUDA
  void matrix_in_order_nothing_lost_equal_to_cpu_data() {
    QTest::addColumn<int>("launch");
    QTest::addColumn<int>("lanes");
    QTest::addColumn<int>("producer");
    QTest::addColumn<bool>("common_mode");
    QTest::addColumn<double>("rate");
    using L = LaunchMode;
    using P = gpu::ProducerMode;
    struct Row {
      L launch;
      int lanes;
      P producer;
      bool common_mode;
      double rate;
    };
    const Row rows[] = {
        {L::Persistent, 1, P::Copy, true, 0},
        {L::Persistent, 1, P::InPlace, false, 0},
        {L::DeviceGraph, 1, P::Copy, false, 0},
        {L::DeviceGraph, 4, P::InPlace, true, 0},
        {L::Graph, 4, P::Copy, true, 0},
        {L::Plain, 2, P::InPlace, false, 0},
        {L::Persistent, 1, P::Copy, false, 50'000},  // paced: the producer waits for its times
    };
    for (const Row& r : rows)
      QTest::addRow("%s x%d, %s, cm %d, %.0f Hz", std::string(to_string(r.launch)).c_str(), r.lanes,
                    std::string(gpu::to_string(r.producer)).c_str(), r.common_mode, r.rate)
          << int(r.launch) << r.lanes << int(r.producer) << r.common_mode << r.rate;
  }

  void matrix_in_order_nothing_lost_equal_to_cpu() {
    QFETCH(int, launch);
    QFETCH(int, lanes);
    QFETCH(int, producer);
    QFETCH(bool, common_mode);
    QFETCH(double, rate);
    gpu::ResidentConfig config;
    config.launch = LaunchMode(launch);
    config.lanes = lanes;
    config.producer = gpu::ProducerMode(producer);
    config.ring_slots = 16;  // a multiple of the pool (in_place)
    config.events = kMatrixEvents;
    config.checksum = true;
    config.rate_hz = rate;
    config.params.common_mode = common_mode;
    gpu::ResidentPipeline pipeline(detector_, simulator_->constants(), pool_, config);
    pipeline.start();
    const auto& want = common_mode ? want_common_mode_ : want_plain_;
    std::uint64_t expected = 0, wrong_checksum = 0;
    std::uint64_t first_done = 0, last_done = 0;
    while (auto result = pipeline.next_result(true, 30.0)) {
      QCOMPARE(result->sequence, expected);
      QCOMPARE(result->pulse_id, config.first_pulse_id + expected * config.pulses_per_event);
      QCOMPARE(result->slot, int(expected % std::uint64_t(config.ring_slots)));
      QVERIFY(result->done_ns >= result->doorbell_ns);
      if (config.launch != LaunchMode::Persistent)
        QCOMPARE(result->lane, int(expected % std::uint64_t(lanes)));
      if (result->checksum != want[expected % kPoolEvents]) ++wrong_checksum;
      if (expected == 0) first_done = result->done_ns;
      last_done = result->done_ns;
      ++expected;
    }
    QCOMPARE(expected, kMatrixEvents);
    QCOMPARE(wrong_checksum, std::uint64_t(0));
    QCOMPARE(pipeline.final_count().value_or(0), kMatrixEvents);
    QCOMPARE(pipeline.results_returned(), kMatrixEvents);
    if (rate > 0) {
      // Paced: 10,007 events at 50 kHz take at least (N - 1) / rate on the device clock.
      const double seconds = double(last_done - first_done) * 1e-9;
      QVERIFY2(seconds >= double(kMatrixEvents - 1) / rate * 0.99,
               qPrintable(QString("paced run took %1 s").arg(seconds)));
    }
    pipeline.stop();
    qInfo("%s: %llu events, checksums equal to the CPU backend", pipeline.describe().c_str(),
          static_cast<unsigned long long>(expected));
  }

  void open_ended_run_stops_with_every_announced_event() {
    for (const LaunchMode launch :
         {LaunchMode::Persistent, LaunchMode::DeviceGraph, LaunchMode::Plain}) {
      gpu::ResidentConfig config;
      config.launch = launch;
      config.lanes = 3;
      config.ring_slots = 8;
      config.checksum = true;
      config.params.common_mode = false;
      config.rate_hz = 20'000;  // so that the stop lands mid-run
      gpu::ResidentPipeline pipeline(detector_, simulator_->constants(), pool_, config);
      pipeline.start();
      std::uint64_t expected = 0;
      while (expected < 500) {
        auto result = pipeline.next_result(true, 30.0);
        QVERIFY(result.has_value());
        QCOMPARE(result->sequence, expected);
        QCOMPARE(result->checksum, want_plain_[expected % kPoolEvents]);
        ++expected;
      }
      QVERIFY(!pipeline.final_count().has_value());  // still running
      pipeline.request_stop();
      while (auto result = pipeline.next_result(true, 30.0)) {
        QCOMPARE(result->sequence, expected);
        QCOMPARE(result->checksum, want_plain_[expected % kPoolEvents]);
        ++expected;
      }
      QVERIFY(pipeline.final_count().has_value());
      QCOMPARE(*pipeline.final_count(), expected);
      pipeline.stop();
      qInfo("%s: stopped after %llu events, none lost", pipeline.describe().c_str(),
            static_cast<unsigned long long>(expected));
    }
  }

  // The engine with runtime.source = device: every event processed, in order, none dropped, for a
  // fixed count and for a run stopped while it goes; stats say which consumer ran.
  void engine_runs_the_device_resident_source() {
    for (const LaunchMode launch :
         {LaunchMode::Persistent, LaunchMode::DeviceGraph, LaunchMode::Graph}) {
      EngineConfig c;
      c.source = "sim:epix10ka2m";
      c.backend = "cuda";
      c.events = 5000;
      c.publish = "";
      c.simulator_pool = 4;
      c.ring_slots = 16;
      c.runtime.source = SourcePlacement::Device;
      c.runtime.launch = launch;
      c.runtime.streams = 2;
      Engine engine(c);
      engine.start();
      engine.wait();
      const RunSummary s = engine.summary();
      QVERIFY2(s.error.empty(), s.error.c_str());
      QCOMPARE(s.stats.events_in, c.events);
      QCOMPARE(s.stats.events_processed, c.events);
      QCOMPARE(s.stats.events_dropped, std::uint64_t(0));
      QCOMPARE(s.stats.order_errors, std::uint64_t(0));
      QVERIFY(engine.backend_note().find(std::string(to_string(launch))) != std::string::npos);
      qInfo("engine, device source, %s: %llu events at %.0f ev/s",
            std::string(to_string(launch)).c_str(),
            static_cast<unsigned long long>(s.stats.events_processed), s.stats.event_rate_hz);
    }
    EngineConfig c;
    c.source = "sim:epix10ka2m";
    c.backend = "cuda";
    c.events = 0;  // until stopped
    c.rate_hz = 5000;
    c.publish = "";
    c.simulator_pool = 4;
    c.ring_slots = 16;
    c.runtime.source = SourcePlacement::Device;
    c.runtime.launch = LaunchMode::Persistent;
    Engine engine(c);
    engine.start();
    QTest::qWait(400);
    engine.request_stop();
    engine.wait();
    const RunSummary s = engine.summary();
    QVERIFY2(s.error.empty(), s.error.c_str());
    QVERIFY(s.stats.events_processed > 100);
    QCOMPARE(s.stats.events_in, s.stats.events_processed);
    QCOMPARE(s.stats.events_dropped, std::uint64_t(0));
    QCOMPARE(s.stats.order_errors, std::uint64_t(0));
  }

  // Integer images through the resident kernels' 16- and 32-bit loads: simulated Eiger2 X 4M
  // uint32 counts (module gaps all ones) and hand-made uint16 and int32 words with every marker
  // and negative values, each event's checksum equal to the CPU backend's image of it, for the
  // persistent consumer and launched lanes.
  void integer_images_equal_cpu() {
    struct Case {
      DetectorDescription detector;
      CalibrationConstants constants;
      std::vector<std::vector<std::uint8_t>> pool;
    };
    std::vector<Case> cases;
    ThreadPool threads;
    {
      Case eiger{find_detector("eiger2x4m"), {}, {}};
      SimulatorConfig config;
      config.hit_fraction = 1.0;
      DetectorSimulator simulator(eiger.detector, config, &threads);
      eiger.constants = simulator.constants();
      for (int i = 0; i < 2; ++i) {
        eiger.pool.emplace_back(eiger.detector.raw_event_bytes());
        simulator.generate(std::uint64_t(i), eiger.pool.back().data(), nullptr, &threads);
      }
      cases.push_back(std::move(eiger));
    }
    std::mt19937 random(5);
    for (const char* encoding : {"uint16", "int32"}) {
      const nlohmann::json description = {
          {"schema_version", 1},
          {"name", std::string("small_") + encoding},
          {"raw_encoding", encoding},
          {"segments", 2},
          {"segment_shape", {64, 96}},
          {"pixel_size_um", 75.0},
          {"asic_shape", {64, 96}},
          {"bank_columns", 0},
          {"gain_modes", {{{"name", "counting"}, {"nominal_adu_per_kev", 1.0}}}},
          {"placement",
           {{{"x_px", 0}, {"y_px", 0}, {"rotation_deg", 0}},
            {{"x_px", 0}, {"y_px", 70}, {"rotation_deg", 0}}}}};
      Case c{parse_detector_description(description, "test"), {}, {}};
      c.constants = identity_constants(c.detector);
      c.constants.pixel_status[10] = calib::kStatusMasked;
      c.constants.pedestal_gain[11] = {0.5f, 2.0f};
      const bool is_int32 = c.detector.encoding == RawEncoding::Int32;
      for (int e = 0; e < 2; ++e) {
        c.pool.emplace_back(c.detector.raw_event_bytes());
        for (std::size_t p = 0; p < c.detector.pixels(); ++p) {
          const std::uint32_t draw = std::uint32_t(random());
          if (is_int32) {
            // Mostly small values of either sign; now and then a marker or a large value.
            const std::int32_t w = draw % 97 == 0   ? std::numeric_limits<std::int32_t>::min()
                                   : draw % 89 == 0 ? std::numeric_limits<std::int32_t>::max()
                                   : draw % 83 == 0 ? std::int32_t(draw)
                                                    : std::int32_t(draw % 2001) - 1000;
            std::memcpy(c.pool.back().data() + 4 * p, &w, 4);
          } else {
            const std::uint16_t w = draw % 97 == 0 ? 0xFFFF : std::uint16_t(draw % 3000);
            std::memcpy(c.pool.back().data() + 2 * p, &w, 2);
          }
        }
      }
      cases.push_back(std::move(c));
    }
    for (const Case& c : cases) {
      std::vector<std::uint64_t> want;
      std::vector<float> image(c.detector.pixels());
      calib::CalibrationParams params;
      for (const auto& event : c.pool) {
        calibrate_event_cpu(c.detector, c.constants, params, event.data(), image.data(), &threads);
        want.push_back(calib::image_checksum(image.data(), image.size()));
      }
      QVERIFY(want[0] != want[1]);
      for (const LaunchMode launch : {LaunchMode::Persistent, LaunchMode::Plain}) {
        gpu::ResidentConfig config;
        config.launch = launch;
        config.lanes = launch == LaunchMode::Plain ? 2 : 1;
        config.ring_slots = 8;
        config.events = 64;
        config.checksum = true;
        config.params = params;
        gpu::ResidentPipeline pipeline(c.detector, c.constants, c.pool, config);
        pipeline.start();
        std::uint64_t expected = 0;
        while (auto result = pipeline.next_result(true, 30.0)) {
          QCOMPARE(result->sequence, expected);
          QVERIFY2(result->checksum == want[expected % c.pool.size()],
                   qPrintable(QString("%1, %2: event %3 differs from the CPU")
                                  .arg(QString::fromStdString(c.detector.name))
                                  .arg(QString::fromStdString(std::string(to_string(launch))))
                                  .arg(expected)));
          ++expected;
        }
        QCOMPARE(expected, config.events);
        pipeline.stop();
      }
    }
  }

  void bad_configurations_are_rejected() {
    auto expect_error = [&](gpu::ResidentConfig config, const char* fragment) {
      try {
        gpu::ResidentPipeline pipeline(detector_, simulator_->constants(), pool_, config);
        QFAIL(qPrintable(QString("accepted a configuration with %1").arg(fragment)));
      } catch (const InputError& e) {
        QVERIFY2(std::string(e.what()).find(fragment) != std::string::npos, e.what());
      }
    };
    gpu::ResidentConfig c;
    c.ring_slots = 1;
    expect_error(c, "ring_slots");
    c = {};
    c.lanes = 17;
    expect_error(c, "lanes");
    c = {};
    c.producer = gpu::ProducerMode::InPlace;
    c.ring_slots = 6;  // not a multiple of 4 pool events
    expect_error(c, "multiple of the pool size");
  }
#endif
};

QTEST_GUILESS_MAIN(TestGpuResident)
#include "test_gpu_resident.moc"
