// Live compression on the CPU backend: the engine's byte counts must match compressing the same
// simulated events independently, lossy must reduce the calibrated image, off must publish no
// block, and the device-resident source (no codec stage yet) must be refused; the CUDA backend
// against the CPU backend is test_gpu_live_compression. Also the configuration's "compression"
// section: validation messages and the JSON round trip.
#include <QtTest>

#include <cmath>
#include <mutex>
#include <numeric>

#include <nlohmann/json.hpp>

#include "codec/codec.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "engine_error_text.hpp"
#include "exec/backend.hpp"
#include "exec/engine.hpp"
#include "protocol/topics.hpp"
#include "sim/simulator.hpp"

using namespace livedrp;

namespace {

EngineConfig small_config(const std::string& codec) {
  EngineConfig c;
  c.source = "sim:epix10ka2m";
  c.backend = "cpu";
  c.publish = "";
  c.simulator_pool = 2;  // generating events is slow on a 2-core machine
  c.stats_interval_s = 0.05;
  c.cpu_threads = 2;
  c.events = 6;
  c.full_ring = "wait";
  c.compression.codec = codec;
  return c;
}

// Runs the engine to the end and keeps every interval's compression block.
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
  return run;
}

std::vector<std::uint64_t> detector_shape(const DetectorDescription& detector) {
  return {std::uint64_t(detector.segments), std::uint64_t(detector.rows),
          std::uint64_t(detector.cols)};
}

}  // namespace

class TestEngineCompression : public QObject {
  Q_OBJECT
 private slots:
  // The engine cycles its pool: event i carries the raw bytes of simulator event i % pool. The
  // expected stream sizes come from the simulator and the codec directly, not from the engine.
  void lossless_bytes_match_compressing_the_raw_events_here() {
    const EngineConfig config = small_config("lossless");
    const DetectorDescription detector = find_detector("epix10ka2m");
    SimulatorConfig simulator_config;
    simulator_config.seed = config.seed;
    simulator_config.hit_fraction = config.hit_fraction;
    ThreadPool pool(2);
    const DetectorSimulator simulator(detector, simulator_config, &pool);
    codec::CodecParams params;
    params.codec = codec::Codec::Lossless;
    params.chunk_bytes = config.compression.chunk_bytes;
    std::vector<std::uint64_t> stream_sizes;
    for (int i = 0; i < config.simulator_pool; ++i) {
      std::vector<std::uint8_t> raw(detector.raw_event_bytes());
      simulator.generate(std::uint64_t(i), raw.data(), nullptr, &pool);
      stream_sizes.push_back(codec::compress_cpu(raw.data(), codec::DType::UInt16,
                                                 detector_shape(detector), params, &pool)
                                 .size());
    }
    std::uint64_t expected_out = 0;
    for (std::uint64_t i = 0; i < config.events; ++i) expected_out += stream_sizes[i % 2];

    const Run run = run_engine(config);
    QVERIFY2(run.summary.error.empty(), run.summary.error.c_str());
    QCOMPARE(run.summary.stats.events_processed, config.events);
    QVERIFY(run.summary.stats.compression.has_value());
    const protocol::CompressionStats& total = *run.summary.stats.compression;
    QCOMPARE(total.codec, std::string("lossless"));
    QCOMPARE(total.error_bound, 0.0);
    QCOMPARE(total.total_bytes_in, config.events * detector.raw_event_bytes());
    QCOMPARE(total.total_bytes_out, expected_out);
    QCOMPARE(total.interval_ratio,
             double(config.events * detector.raw_event_bytes()) / double(expected_out));
    qInfo("lossless on raw uint16: ratio %.3f", total.interval_ratio);

    // The intervals add up to the run, and each event's ratio is counted in its log2 bin.
    std::uint64_t interval_out = 0, histogram_events = 0;
    std::array<std::uint64_t, protocol::kRatioHistogramBins> histogram{};
    for (const auto& stats : run.intervals) {
      QVERIFY(stats.compression.has_value());
      interval_out += stats.compression->interval_bytes_out;
      for (std::size_t bin = 0; bin < histogram.size(); ++bin) {
        histogram[bin] += stats.compression->ratio_histogram[bin];
        histogram_events += stats.compression->ratio_histogram[bin];
      }
    }
    QCOMPARE(interval_out, expected_out);
    QCOMPARE(histogram_events, config.events);
    std::array<std::uint64_t, protocol::kRatioHistogramBins> expected_histogram{};
    for (std::uint64_t i = 0; i < config.events; ++i) {
      const double ratio = double(detector.raw_event_bytes()) / double(stream_sizes[i % 2]);
      const auto bin = std::size_t(std::clamp(std::floor(std::log2(ratio)) + 1, 0.0, 10.0));
      ++expected_histogram[bin];
    }
    QCOMPARE(histogram, expected_histogram);
    QCOMPARE(run.intervals.back().compression->total_bytes_out, expected_out);
  }

  // uint32 counts (Eiger2 X 4M) are compressed as their calibrated float32 image, the codec
  // having no 32-bit integer type: each stream is the one of the image built here from the raw
  // words (the count, 0 where all ones or masked), not from the engine's calibration.
  void lossless_uint32_counts_compress_their_float_image() {
    EngineConfig config = small_config("lossless");
    config.source = "sim:eiger2x4m";
    config.events = 4;
    const DetectorDescription detector = find_detector("eiger2x4m");
    SimulatorConfig simulator_config;
    simulator_config.seed = config.seed;
    simulator_config.hit_fraction = config.hit_fraction;
    ThreadPool pool(2);
    const DetectorSimulator simulator(detector, simulator_config, &pool);
    codec::CodecParams params;
    params.chunk_bytes = config.compression.chunk_bytes;
    std::vector<std::uint64_t> stream_sizes;
    for (int i = 0; i < config.simulator_pool; ++i) {
      std::vector<std::uint32_t> words(detector.pixels());
      simulator.generate(std::uint64_t(i), words.data(), nullptr, &pool);
      std::vector<float> image(detector.pixels());
      for (std::size_t p = 0; p < image.size(); ++p)
        image[p] =
            words[p] == 0xFFFFFFFFu || simulator.constants().masked(p) ? 0.0f : float(words[p]);
      stream_sizes.push_back(codec::compress_cpu(image.data(), codec::DType::Float32,
                                                 detector_shape(detector), params, &pool)
                                 .size());
    }
    std::uint64_t expected_out = 0;
    for (std::uint64_t i = 0; i < config.events; ++i) expected_out += stream_sizes[i % 2];

    const Run run = run_engine(config);
    QVERIFY2(run.summary.error.empty(), run.summary.error.c_str());
    QCOMPARE(run.summary.stats.events_processed, config.events);
    QVERIFY(run.summary.stats.compression.has_value());
    const protocol::CompressionStats& total = *run.summary.stats.compression;
    QCOMPARE(total.total_bytes_in, config.events * detector.pixels() * sizeof(float));
    QCOMPARE(total.total_bytes_out, expected_out);
    qInfo("lossless on uint32 counts (float32 image): ratio %.3f", total.interval_ratio);
  }

  void lossy_reduces_the_calibrated_float_image() {
    EngineConfig config = small_config("lossy");
    config.compression.error_bound = 0.5;
    const Run run = run_engine(config);
    QVERIFY2(run.summary.error.empty(), run.summary.error.c_str());
    const DetectorDescription detector = find_detector("epix10ka2m");
    QVERIFY(run.summary.stats.compression.has_value());
    const protocol::CompressionStats& total = *run.summary.stats.compression;
    QCOMPARE(total.codec, std::string("lossy"));
    QCOMPARE(total.error_bound, 0.5);
    QCOMPARE(total.total_bytes_in, config.events * detector.pixels() * 4);
    QVERIFY(total.total_bytes_out > 0);
    QVERIFY2(total.interval_ratio > 1.0, QByteArray::number(total.interval_ratio).constData());
    QVERIFY(total.gbps > 0);
    qInfo("lossy at 0.5 on calibrated float32: ratio %.3f, %.3f GB/s", total.interval_ratio,
          total.gbps);
    bool saw_throughput = false;
    for (const auto& stats : run.intervals)
      if (stats.compression && stats.compression->gbps > 0) saw_throughput = true;
    QVERIFY(saw_throughput);
  }

  void off_publishes_no_compression_block() {
    EngineConfig config = small_config("off");
    config.events = 2;
    const Run run = run_engine(config);
    QVERIFY(!run.summary.stats.compression.has_value());
    QVERIFY(!run.intervals.empty());
    for (const auto& stats : run.intervals) QVERIFY(!stats.compression.has_value());
    QVERIFY(!protocol::to_json(run.intervals.back()).contains("compression"));
  }

  void persistent_device_resident_consumer_with_compression_is_refused_at_construction() {
    // The persistent consumer calibrates only; the launched ones compress (test_gpu_resident_stages).
    EngineConfig config = small_config("lossless");
    config.runtime.source = SourcePlacement::Device;
    config.runtime.launch = LaunchMode::Persistent;
    for (const std::string backend : {"cpu", "cuda", "auto"}) {
      config.backend = backend;
      const QString error = construction_error(config);
      QVERIFY2(error.contains("runtime.launch 'persistent' with runtime.source 'device' "
                              "calibrates only"),
               qPrintable(error));
    }
    // The host-fed source compresses on whichever backend auto picks (CPU without a device).
    config.runtime.source = SourcePlacement::Host;
    config.backend = "auto";
    const QString error = construction_error(config);
    QVERIFY2(error.isEmpty(), qPrintable(error));
  }

  void compression_section_round_trips_and_is_echoed() {
    EngineConfig config;
    config.compression.codec = "lossy";
    config.compression.error_bound = 0.25;
    config.compression.chunk_bytes = 4096;
    const nlohmann::json json = config.to_json();
    QCOMPARE(json.at("compression").at("codec").get<std::string>(), std::string("lossy"));
    QCOMPARE(json.at("compression").at("error_bound").get<double>(), 0.25);
    QCOMPARE(json.at("compression").at("chunk_bytes").get<int>(), 4096);
    const EngineConfig again = EngineConfig::from_json(json, "round trip");
    QCOMPARE(again.compression.codec, std::string("lossy"));
    QCOMPARE(again.compression.error_bound, 0.25);
    QCOMPARE(again.compression.chunk_bytes, std::uint32_t(4096));
    QCOMPARE(EngineConfig::from_json(nlohmann::json::object(), "empty").compression.codec,
             std::string("off"));
  }

  void bad_compression_section_names_the_field() {
    using nlohmann::json;
    QVERIFY(config_error({{"compression", {{"codec", "zstd"}}}}).contains("compression.codec"));
    QVERIFY(config_error({{"compression", {{"codec", 1}}}}).contains("compression.codec"));
    QVERIFY(config_error({{"compression", {{"codek", "lossless"}}}})
                .contains("unknown field 'compression.codek'"));
    QVERIFY(config_error({{"compression", {{"codec", "lossy"}, {"error_bound", 0}}}})
                .contains("compression.error_bound"));
    QVERIFY(config_error({{"compression", {{"codec", "lossy"}, {"error_bound", -1}}}})
                .contains("compression.error_bound"));
    QVERIFY(config_error({{"compression", {{"error_bound", "small"}}}})
                .contains("compression.error_bound"));
    QVERIFY(config_error({{"compression", {{"chunk_bytes", 512}}}})
                .contains("compression.chunk_bytes"));
    QVERIFY(config_error({{"compression", {{"chunk_bytes", 2000}}}})
                .contains("compression.chunk_bytes"));
    QVERIFY(config_error({{"compression", "lossless"}}).contains("JSON object"));
    QVERIFY(config_error({{"compression", {{"codec", "lossless"}, {"error_bound", 0}}}}).isEmpty());
  }
};

QTEST_GUILESS_MAIN(TestEngineCompression)
#include "test_engine_compression.moc"
