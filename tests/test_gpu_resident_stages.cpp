// Every stage on the device-resident source: the launched consumers (host-launched graph,
// self-relaunching device graph, plain launches) calibrate, compress, integrate and search every
// event on the GPU, following the doorbells, and return the results through the pinned payload
// ring and the device arena.
//
// Each row runs >= 10,000 events cycled from a pool of distinct simulated ePix10ka2M events, and
// every result must equal what the CPU computes here for its pool event, independently of the
// engine: the compressed stream byte for byte (codec::compress_cpu of the raw words or of the CPU
// calibrated image), the profile within 1e-5 relative per bin (integrate::Integrator), the peak
// list identical (peaks::PeakFinder8), in sequence order, none missing. The engine with
// runtime.source device and every stage on accounts every event and sums exactly the CPU's
// compressed bytes and peaks. The persistent consumer refuses the stages with the reason, and a
// fault in a stage's kernel is reported with CUDA's text instead of hanging (last: it ends the
// process's CUDA context).
//
// Without a usable CUDA device the suite skips, unless LIVEDRP_REQUIRE_GPU=1, where it fails.
#include <QTemporaryDir>
#include <QtTest>

#include "gpu_test_support.hpp"
#include "live_integration_support.hpp"
#include "live_peaks_support.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "calib/calibrate_cpu.hpp"
#include "codec/codec.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "exec/engine.hpp"
#include "integrate/integrator.hpp"
#include "peaks/peakfinder8.hpp"
#include "sim/simulator.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/resident/resident_pipeline.hpp"
#endif

using namespace livedrp;

namespace {

constexpr std::uint64_t kRowEvents = 10'007;
constexpr int kPoolEvents = 4;
constexpr double kProfileTolerance = 1e-5;

// What the CPU computes for one pool event.
struct Reference {
  std::vector<float> image;  // calibrated
  std::vector<std::uint8_t> lossless, lossy;
  integrate::Profile profile;
  peaks::PeakList peaks;
};

bool same_peaks(const peaks::PeakList& a, const peaks::PeakList& b) {
  return a.found == b.found && a.hit == b.hit && a.peaks.size() == b.peaks.size() &&
         (a.peaks.empty() ||
          std::memcmp(a.peaks.data(), b.peaks.data(), a.peaks.size() * sizeof(peaks::Peak)) == 0);
}

}  // namespace

class TestGpuResidentStages : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  DetectorDescription detector_;
  std::unique_ptr<DetectorSimulator> simulator_;
  std::vector<std::vector<std::uint8_t>> pool_;
  std::optional<integrate::Integrator> integrator_;
  std::optional<peaks::PeakFinder8> finder_;
  std::vector<Reference> want_;
  EngineConfig engine_config_;  // the integration settings the integrator above was built from
  calib::CalibrationParams params_;

  // The engine on the device-resident source with every stage, the simulator of the pool above
  // (graph x4, lossy at 0.5 photon, peak finding on the defaults), publishing nothing.
  EngineConfig device_engine_config() const {
    EngineConfig c = engine_config_;
    c.backend = "cuda";
    c.publish = "";
    c.seed = 777;
    c.hit_fraction = 0.5;
    c.simulator_pool = kPoolEvents;
    c.ring_slots = 16;
    c.cpu_threads = 0;
    c.runtime.source = SourcePlacement::Device;
    c.runtime.launch = LaunchMode::Graph;
    c.runtime.streams = 4;
    c.compression.codec = "lossy";
    c.compression.error_bound = 0.5;
    c.peak_finding.enabled = true;
    return c;
  }

 private slots:
  void initTestCase() {
    LIVEDRP_SKIP_WITHOUT_GPU();
#ifdef LIVEDRP_HAVE_CUDA
    QVERIFY(dir_.isValid());
    detector_ = find_detector("epix10ka2m");
    ThreadPool pool;
    SimulatorConfig config;
    config.seed = 777;
    config.hit_fraction = 0.5;  // Bragg peaks in some events
    simulator_ = std::make_unique<DetectorSimulator>(detector_, config, &pool);
    engine_config_ = live_integration_test::live_config(
        live_integration_test::write_poni(dir_, detector_, simulator_->powder_geometry()),
        live_integration_test::write_mask(dir_, detector_));
    engine_config_.integration.npt = 1000;
    integrator_.emplace(live_integration_test::independent_integrator(engine_config_, detector_,
                                                                      simulator_->constants()));
    finder_.emplace(live_peaks_test::independent_finder(detector_, simulator_->constants(),
                                                        peaks::PeakFinderParams{}));
    params_.common_mode = true;
    const std::vector<std::uint64_t> shape{std::uint64_t(detector_.segments),
                                           std::uint64_t(detector_.rows),
                                           std::uint64_t(detector_.cols)};
    codec::CodecParams lossless, lossy;
    lossless.codec = codec::Codec::Lossless;
    lossy.codec = codec::Codec::Lossy;
    lossy.error_bound = 0.5;
    std::vector<float> image(detector_.pixels());
    std::uint64_t found = 0;
    for (int i = 0; i < kPoolEvents; ++i) {
      pool_.emplace_back(detector_.raw_event_bytes());
      simulator_->generate(std::uint64_t(i), pool_.back().data(), nullptr, &pool);
      calibrate_event_cpu(detector_, simulator_->constants(), params_, pool_.back().data(),
                          image.data(), &pool);
      Reference r;
      r.image = image;
      r.lossless = codec::compress_cpu(pool_.back().data(), codec::DType::UInt16, shape, lossless);
      r.lossy = codec::compress_cpu(image.data(), codec::DType::Float32, shape, lossy);
      r.profile = integrator_->integrate(image);
      r.peaks = finder_->find(image.data());
      found += std::uint64_t(r.peaks.found);
      want_.push_back(std::move(r));
    }
    // Distinct events, some with peaks: a slot or lane mix-up cannot go unseen.
    QVERIFY(want_[0].lossy != want_[1].lossy);
    QVERIFY(found > 0);
#endif
  }

#ifdef LIVEDRP_HAVE_CUDA
  void every_stage_equals_the_cpu_in_order_nothing_lost_data() {
    QTest::addColumn<int>("launch");
    QTest::addColumn<int>("lanes");
    QTest::addColumn<QString>("codec");
    QTest::addColumn<bool>("integrate");
    QTest::addColumn<bool>("search");
    QTest::newRow("graph x4, lossy, integrate, peaks")
        << int(LaunchMode::Graph) << 4 << "lossy" << true << true;
    QTest::newRow("device_graph x4, lossless, integrate, peaks")
        << int(LaunchMode::DeviceGraph) << 4 << "lossless" << true << true;
    QTest::newRow("plain x2, lossy, peaks")
        << int(LaunchMode::Plain) << 2 << "lossy" << false << true;
    QTest::newRow("device_graph x3, integrate only")
        << int(LaunchMode::DeviceGraph) << 3 << "off" << true << false;
  }

  void every_stage_equals_the_cpu_in_order_nothing_lost() {
    QFETCH(int, launch);
    QFETCH(int, lanes);
    QFETCH(QString, codec);
    QFETCH(bool, integrate);
    QFETCH(bool, search);
    gpu::ResidentConfig config;
    config.launch = LaunchMode(launch);
    config.lanes = lanes;
    config.ring_slots = 16;
    config.events = kRowEvents;
    config.params = params_;
    if (codec != "off") {
      codec::CodecParams p;
      p.codec = codec == "lossy" ? codec::Codec::Lossy : codec::Codec::Lossless;
      p.error_bound = codec == "lossy" ? 0.5 : 0.0;
      config.stages.compression = p;
    }
    if (integrate) config.stages.integrator = integrator_;
    if (search) config.stages.peak_finder = finder_;
    gpu::ResidentPipeline pipeline(detector_, simulator_->constants(), pool_, config);
    pipeline.start();
    std::uint64_t expected = 0, wrong_bytes = 0, wrong_profiles = 0, wrong_peaks = 0, hits = 0;
    long first_bad_bin = -1;
    while (auto result = pipeline.next_result(true, 30.0)) {
      QCOMPARE(result->sequence, expected);
      QCOMPARE(result->lane, int(expected % std::uint64_t(lanes)));
      const Reference& want = want_[expected % kPoolEvents];
      QVERIFY(result->stamps[gpu::kStampCalibrated] >= result->stamps[gpu::kStampStart]);
      QVERIFY(result->stamps[gpu::kStampStart] > 0);
      if (config.stages.compression) {
        const auto& bytes = codec == "lossy" ? want.lossy : want.lossless;
        QVERIFY(result->stamps[gpu::kStampCompressed] >= result->stamps[gpu::kStampCalibrated]);
        if (result->compressed_bytes != bytes.size() || pipeline.compressed(*result) != bytes)
          ++wrong_bytes;
      } else {
        QCOMPARE(result->compressed_bytes, std::uint64_t(0));
        QCOMPARE(result->stamps[gpu::kStampCompressed], std::uint64_t(0));
      }
      if (integrate) {
        const integrate::Profile got = pipeline.profile(*result);
        const long bad = live_integration_test::first_difference(
            got.intensity, want.profile.intensity, kProfileTolerance);
        if (bad >= 0 || got.count != want.profile.count) {
          ++wrong_profiles;
          if (first_bad_bin < 0) first_bad_bin = bad;
        }
      }
      if (search) {
        const peaks::PeakList got = pipeline.peaks(*result);
        if (!same_peaks(got, want.peaks)) ++wrong_peaks;
        hits += got.hit ? 1 : 0;
      }
      ++expected;
    }
    QCOMPARE(expected, kRowEvents);
    QCOMPARE(pipeline.final_count().value_or(0), kRowEvents);
    QCOMPARE(wrong_bytes, std::uint64_t(0));
    QVERIFY2(
        wrong_profiles == 0,
        qPrintable(
            QString("%1 profiles differ (first bin %2)").arg(wrong_profiles).arg(first_bad_bin)));
    QCOMPARE(wrong_peaks, std::uint64_t(0));
    pipeline.stop();
    qInfo("%s: %llu events equal to the CPU (%llu hits); device memory %.1f MB",
          pipeline.describe().c_str(), static_cast<unsigned long long>(expected),
          static_cast<unsigned long long>(hits), double(pipeline.device_bytes()) / 1e6);
  }

  // The engine, device-resident source, every stage on: every event accounted, and the run's
  // compressed bytes, peaks and hits are exactly the sums of the CPU's per pool event.
  void engine_runs_every_stage_on_the_device_resident_source() {
    EngineConfig c = device_engine_config();
    c.events = 5003;
    Engine engine(c);
    engine.start();
    engine.wait();
    const RunSummary s = engine.summary();
    QVERIFY2(s.error.empty(), s.error.c_str());
    QCOMPARE(s.stats.events_in, c.events);
    QCOMPARE(s.stats.events_processed, c.events);
    QCOMPARE(s.stats.events_dropped, std::uint64_t(0));
    QCOMPARE(s.stats.order_errors, std::uint64_t(0));
    std::uint64_t bytes = 0, found = 0, hits = 0;
    for (std::uint64_t e = 0; e < c.events; ++e) {
      const Reference& want = want_[e % kPoolEvents];
      bytes += want.lossy.size();
      found += std::uint64_t(want.peaks.found);
      hits += want.peaks.hit ? 1 : 0;
    }
    QVERIFY(s.stats.compression.has_value());
    QCOMPARE(s.stats.compression->total_bytes_out, bytes);
    QVERIFY(s.stats.peak_finding.has_value());
    QCOMPARE(s.stats.peak_finding->total_events, c.events);
    QCOMPARE(s.stats.peak_finding->total_peaks, found);
    QCOMPARE(s.stats.peak_finding->total_hits, hits);
    for (const auto& stage : s.stats.stages) QVERIFY2(stage.mean_us > 0, stage.name.c_str());
    qInfo("engine, device source, every stage: %llu events at %.0f ev/s",
          static_cast<unsigned long long>(s.stats.events_processed), s.stats.event_rate_hz);
  }

  // A snapshot (the `image` topic's sample) is the event's own raw words and calibrated image,
  // on graph and plain lanes, whichever lane and slot the event had; the modes whose events the
  // host never enqueues say they cannot.
  void snapshots_are_their_events_raw_words_and_calibrated_image_data() {
    QTest::addColumn<int>("launch");
    QTest::newRow("graph x3") << int(LaunchMode::Graph);
    QTest::newRow("plain x3") << int(LaunchMode::Plain);
  }
  void snapshots_are_their_events_raw_words_and_calibrated_image() {
    QFETCH(int, launch);
    gpu::ResidentConfig config;
    config.launch = LaunchMode(launch);
    config.lanes = 3;
    config.ring_slots = 16;
    config.events = 2003;
    config.params = params_;
    config.stages.integrator = integrator_;
    config.stages.peak_finder = finder_;
    gpu::ResidentPipeline pipeline(detector_, simulator_->constants(), pool_, config);
    pipeline.start();
    std::uint64_t returned = 0, snapshots = 0;
    std::vector<std::uint64_t> lanes_seen(3, 0);
    QVERIFY(pipeline.request_snapshot());
    while (auto result = pipeline.next_result(true, 30.0)) {
      QCOMPARE(result->sequence, returned++);
      if (!result->snapshot_image) continue;
      QVERIFY(result->snapshot_raw != nullptr);
      const Reference& want = want_[result->sequence % kPoolEvents];
      const auto& raw = pool_[result->sequence % kPoolEvents];
      QVERIFY2(std::memcmp(result->snapshot_raw, raw.data(), raw.size()) == 0,
               qPrintable(QString("raw words of event %1").arg(result->sequence)));
      for (std::size_t k = 0; k < want.image.size(); ++k) {
        const float got = result->snapshot_image[k];
        if (!(std::isnan(want.image[k]) ? std::isnan(got) : got == want.image[k]))
          QFAIL(qPrintable(QString("image of event %1, pixel %2: %3 != %4")
                               .arg(result->sequence)
                               .arg(k)
                               .arg(double(got))
                               .arg(double(want.image[k]))));
      }
      ++snapshots;
      ++lanes_seen[std::size_t(result->lane)];
      // The next one a few events on, so that every lane and several slots are sampled.
      if (returned < config.events - 40) QVERIFY(pipeline.request_snapshot());
    }
    QCOMPARE(returned, config.events);
    QVERIFY2(snapshots >= 20, qPrintable(QString("%1 snapshots").arg(snapshots)));
    for (std::uint64_t count : lanes_seen) QVERIFY(count > 0);
    qInfo("%llu snapshots over %llu events", static_cast<unsigned long long>(snapshots),
          static_cast<unsigned long long>(returned));

    config.launch = LaunchMode::DeviceGraph;
    config.events = 10;
    gpu::ResidentPipeline device_launched(detector_, simulator_->constants(), pool_, config);
    QVERIFY(!device_launched.request_snapshot());
  }

  // The engine on the device-resident source publishes `image`: each one the assembled CPU
  // calibration of its event, with the event's peaks and the gain occupancy of its raw words.
  void engine_publishes_images_from_the_device_resident_source() {
    EngineConfig c = device_engine_config();
    c.publish = "tcp://127.0.0.1:*";
    c.events = 3001;
    c.rate_hz = 1500;  // two seconds: the image topic's 30 Hz gives dozens
    c.image.publish_hz = 30;
    Engine engine(c);
    live_peaks_test::PeakMessages seen;
    protocol::Subscriber subscriber(engine.publish_endpoint(), live_peaks_test::peak_topics());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the subscription's set-up
    engine.start();
    while (!engine.finished())
      live_peaks_test::take_messages(subscriber, seen, std::chrono::milliseconds(5));
    engine.wait();
    live_peaks_test::take_messages(subscriber, seen, std::chrono::milliseconds(500));
    const RunSummary s = engine.summary();
    QVERIFY2(s.error.empty(), s.error.c_str());
    QCOMPARE(s.stats.events_processed, c.events);
    QVERIFY2(seen.images.size() >= 10, qPrintable(QString("%1 images").arg(seen.images.size())));
    const ImageAssembly assembly(detector_);
    std::vector<float> expected(assembly.height() * assembly.width());
    for (const protocol::ImageFrame& image : seen.images) {
      const std::size_t pool_index = std::size_t(image.sequence % kPoolEvents);
      assembly.assemble(want_[pool_index].image.data(), expected.data());
      QCOMPARE(image.pixels.size(), expected.size());
      for (std::size_t k = 0; k < expected.size(); ++k)
        if (!(std::isnan(expected[k]) ? std::isnan(image.pixels[k])
                                      : image.pixels[k] == expected[k]))
          QFAIL(qPrintable(QString("image of event %1, pixel %2").arg(image.sequence).arg(k)));
      QVERIFY(image.has_peaks);
      const QString difference =
          live_peaks_test::compare_list(image.peaks, want_[pool_index].peaks, assembly);
      QVERIFY2(difference.isEmpty(), qPrintable(difference));
      const calib::GainOccupancy occupancy =
          calib::gain_occupancy(detector_, simulator_->constants(), pool_[pool_index].data());
      QVERIFY(image.gain_occupancy == occupancy.fraction);
    }
    qInfo("%zu images checked", seen.images.size());
  }

  void persistent_consumer_refuses_the_stages_with_the_reason() {
    gpu::ResidentConfig config;
    config.launch = LaunchMode::Persistent;
    config.stages.peak_finder = finder_;
    try {
      gpu::ResidentPipeline pipeline(detector_, simulator_->constants(), pool_, config);
      QFAIL("the persistent consumer accepted a peak-finding stage");
    } catch (const InputError& e) {
      QVERIFY2(std::string(e.what()).find("calibrates only") != std::string::npos, e.what());
    }
  }

  // Last: a trap ends the process's CUDA context.
  void a_fault_in_a_stage_kernel_is_reported_and_never_hangs() {
    constexpr std::uint64_t kTrapAt = 777;
    gpu::ResidentConfig config;
    config.launch = LaunchMode::Graph;
    config.lanes = 2;
    config.ring_slots = 8;
    config.events = 5000;
    config.params = params_;
    config.stages.integrator = integrator_;
    config.trap_at_event = kTrapAt;
    gpu::ResidentPipeline pipeline(detector_, simulator_->constants(), pool_, config);
    pipeline.start();
    std::uint64_t returned = 0;
    QString error;
    try {
      while (auto result = pipeline.next_result(true, 30.0)) {
        QCOMPARE(result->sequence, returned);
        ++returned;
      }
    } catch (const RuntimeFault& e) {
      error = QString::fromUtf8(e.what());
    }
    QVERIFY2(!error.isEmpty(), "the trap went unreported");
    QVERIFY2(returned <= kTrapAt, qPrintable(QString("%1 results returned").arg(returned)));
    QVERIFY2(error.contains("resident"), qPrintable(error));
    qInfo("reported after %llu results: %s", static_cast<unsigned long long>(returned),
          qPrintable(error));
  }
#endif
};

QTEST_GUILESS_MAIN(TestGpuResidentStages)
#include "test_gpu_resident_stages.moc"
