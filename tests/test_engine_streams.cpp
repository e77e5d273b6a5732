// The engine fed by live detector streams (sources "dectris:" and "sls:"): the repository's
// publishers stand in for the detectors; the events the engine records are the events sent, bit
// for bit, every one is processed, and the bad messages among them are counted by reason in the
// run's stats while the run goes on; a Jungfrau's gain bits that came over the sls stream are
// decoded by the calibration.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <optional>
#include <span>
#include <thread>

#include "calib/constants.hpp"
#include "codec/codec.hpp"
#include "core/error.hpp"
#include "core/image_assembly.hpp"
#include "core/thread_pool.hpp"
#include "dectris_publisher.hpp"
#include "exec/engine.hpp"
#include "protocol/peaks_topic.hpp"
#include "protocol/subscriber.hpp"
#include "replay/replay_source.hpp"
#include "sim/simulator.hpp"
#include "simulated_events.hpp"
#include "sls_publisher.hpp"

using namespace livedrp;

namespace {

// The events of a recording, in order, as raw bytes.
std::vector<std::vector<std::byte>> recorded_events(const std::string& directory) {
  const auto spec = replay::parse_replay_source("replay:" + directory);
  replay::ReplayOptions options;
  options.files = spec.files;
  replay::ReplaySource source(options);
  std::vector<std::vector<std::byte>> events;
  const std::size_t bytes = source.detector().raw_event_bytes();
  replay::ReplayEvent event;
  while (source.acquire(event)) {
    if (!event.data) throw std::runtime_error(event.error);
    events.emplace_back(event.data, event.data + bytes);
    source.release();
  }
  return events;
}

EngineConfig stream_config(const std::string& source, const std::string& record_directory,
                           std::uint64_t events) {
  EngineConfig c;
  c.source = source;
  c.stream.detector = "epix10ka2m";
  c.backend = "cpu";
  c.cpu_threads = 2;
  c.publish = "";
  // A slow CPU backend must not lose the few events of a test; a live detector would drop.
  c.full_ring = "wait";
  c.events = events;
  c.record.directory = record_directory;
  c.record.when_full = "wait";
  // What the pipeline itself was given is checked through the lossless codec's output sizes.
  c.compression.codec = "lossless";
  return c;
}

// Bytes the lossless codec makes of these raw events, computed here without the engine.
std::uint64_t lossless_bytes(const DetectorDescription& detector,
                             const std::vector<std::vector<std::byte>>& events, int chunk_bytes) {
  ThreadPool pool(2);
  codec::CodecParams params;
  params.codec = codec::Codec::Lossless;
  params.chunk_bytes = chunk_bytes;
  std::uint64_t total = 0;
  for (const auto& raw : events)
    total += codec::compress_cpu(raw.data(), codec::DType::UInt16,
                                 {std::uint64_t(detector.segments), std::uint64_t(detector.rows),
                                  std::uint64_t(detector.cols)},
                                 params, &pool)
                 .size();
  return total;
}

}  // namespace

class TestEngineStreams : public QObject {
  Q_OBJECT

 private slots:
  void dectris_stream_events_enter_bit_identical_and_bad_messages_are_counted() {
    const test::SimulatedEvents simulated(3);
    const DetectorDescription& detector = simulated.detector;
    testing::DectrisPublisher publisher;
    QTemporaryDir directory;
    Engine engine(stream_config("dectris:" + publisher.endpoint(),
                                directory.filePath("run").toStdString(), 3));
    QCOMPARE(engine.config().source, "dectris:" + publisher.endpoint());
    engine.start();

    // The ePix10ka2M's 16 segments stacked: (16 x 352) x 384 uint16, compressed as an Eiger does.
    testing::SeriesSettings series{.width = std::uint32_t(detector.cols),
                                   .height = std::uint32_t(detector.segments * detector.rows),
                                   .type = testing::PixelType::Uint16,
                                   .compression = testing::Compression::Bslz4,
                                   .number_of_images = 3};
    const auto pixels = [&](std::size_t i) { return std::span(simulated.raw[i]); };
    publisher.send_start(series);
    publisher.send_image(series, 0, pixels(0));
    publisher.send_garbage();
    const auto& first = simulated.raw[1];
    publisher.send_image(series, 1, std::span(first).first(first.size() / 2),
                         {.height = series.height / 2});
    publisher.send_image(series, 1, pixels(1), {.cut_data_bytes = 64});
    publisher.send_image(series, 1, pixels(1));
    publisher.send_image(series, 2, pixels(2));
    publisher.send_end(series);
    engine.wait();

    const RunSummary summary = engine.summary();
    QVERIFY2(summary.error.empty(), summary.error.c_str());
    const protocol::StatsPayload& stats = summary.stats;
    QCOMPARE(stats.events_processed, std::uint64_t(3));
    QCOMPARE(stats.events_dropped, std::uint64_t(0));
    QCOMPARE(stats.events_in, std::uint64_t(3));
    QVERIFY(stats.source_stream.has_value());
    const protocol::SourceStreamStats& source = *stats.source_stream;
    QCOMPARE(source.kind, std::string("dectris"));
    QCOMPARE(source.events, std::uint64_t(3));
    QCOMPARE(source.acquisitions, std::uint64_t(1));
    QCOMPARE(source.rejected.at("foreign"), std::uint64_t(1));
    QCOMPARE(source.rejected.at("wrong_detector"), std::uint64_t(1));
    QCOMPARE(source.rejected.at("truncated"), std::uint64_t(1));
    QVERIFY2(source.last_problem.find(publisher.endpoint()) != std::string::npos,
             source.last_problem.c_str());
    // The start, a garbage message and five images (three good) came up to the third good one.
    QVERIFY2(source.messages >= 7, qPrintable(QString::number(source.messages)));

    // The pipeline compressed exactly these events (the ring held the stream's bytes).
    QVERIFY(stats.compression.has_value());
    QCOMPARE(stats.compression->total_bytes_out,
             lossless_bytes(detector, simulated.raw, engine.config().compression.chunk_bytes));

    const auto recorded = recorded_events(directory.filePath("run").toStdString());
    QCOMPARE(recorded.size(), std::size_t(3));
    for (std::size_t i = 0; i < recorded.size(); ++i)
      QVERIFY2(recorded[i] == simulated.raw[i], qPrintable(QString("event %1 differs").arg(i)));
  }

  // A live stream never waits for the engine (README, "full_ring auto"): a detector sending
  // faster than a one-slot ring on the CPU backend can take gets its excess dropped and counted
  // by reason, every image that arrived is processed or dropped, and the publisher is never held
  // up (all of its images are accounted for).
  void a_stream_faster_than_the_engine_is_dropped_and_counted_not_waited_for() {
    const test::SimulatedEvents simulated(1);
    const DetectorDescription& detector = simulated.detector;
    testing::DectrisPublisher publisher;
    EngineConfig c = stream_config("dectris:" + publisher.endpoint(), "", 0);
    c.full_ring = "auto";
    c.ring_slots = 1;
    c.stream.queue_events = 1;
    c.record.directory.clear();
    Engine engine(c);
    engine.start();
    constexpr std::uint32_t kImages = 60;
    testing::SeriesSettings series{.width = std::uint32_t(detector.cols),
                                   .height = std::uint32_t(detector.segments * detector.rows),
                                   .type = testing::PixelType::Uint16,
                                   .compression = testing::Compression::None,
                                   .number_of_images = kImages};
    publisher.send_start(series);
    for (std::uint32_t i = 0; i < kImages; ++i)
      publisher.send_image(series, i, std::span(simulated.raw[0]));
    publisher.send_end(series);
    // Every image is accounted for (processed, dropped, or still in the pipeline), then the run
    // is stopped: a stream has no end of its own.
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
          const protocol::StatsPayload s = engine.summary().stats;
          return s.events_in == kImages && s.events_in_flight == 0;
        }(),
        120000);
    engine.request_stop();
    engine.wait();
    const protocol::StatsPayload stats = engine.summary().stats;
    QCOMPARE(stats.events_in, std::uint64_t(kImages));
    QCOMPARE(stats.events_processed + stats.events_dropped, std::uint64_t(kImages));
    QVERIFY2(stats.events_dropped > 0, qPrintable(QString("processed %1 of %2: nothing dropped")
                                                      .arg(stats.events_processed)
                                                      .arg(kImages)));
    std::uint64_t by_reason = 0;
    for (const auto& [reason, count] : stats.drops_by_reason) by_reason += count;
    QCOMPARE(by_reason, stats.events_dropped);
  }

  // No detector named: the engine takes the geometry from the start message, and the start
  // message's pixel mask makes those pixels bad, as the detector's own marker values do.
  void dectris_geometry_and_pixel_mask_come_from_the_start_message() {
    constexpr std::uint32_t width = 64, height = 48;
    constexpr std::size_t pixels = std::size_t(width) * height;
    std::vector<std::uint32_t> mask(pixels, 0);
    for (const std::size_t p : {std::size_t(5), std::size_t(700), std::size_t(3000)}) mask[p] = 1;
    mask[1234] = 16;  // any nonzero Dectris bit
    std::vector<std::vector<std::byte>> images;
    std::vector<std::vector<float>> expected_images;
    for (std::uint32_t i = 0; i < 2; ++i) {
      std::vector<std::uint32_t> counts(pixels);
      for (std::size_t p = 0; p < pixels; ++p) counts[p] = std::uint32_t((p * 7 + i * 13) % 50);
      counts[42 + i] = 0xFFFFFFFFu;  // a defective pixel as the detector marks it
      std::vector<float> expected(pixels);
      for (std::size_t p = 0; p < pixels; ++p)
        expected[p] = mask[p] != 0 || counts[p] == 0xFFFFFFFFu ? 0.0f : float(counts[p]);
      images.emplace_back(pixels * 4);
      std::memcpy(images.back().data(), counts.data(), pixels * 4);
      expected_images.push_back(std::move(expected));
    }
    testing::DectrisPublisher publisher;
    const testing::SeriesSettings series{.width = width,
                                         .height = height,
                                         .type = testing::PixelType::Uint32,
                                         .compression = testing::Compression::Lz4,
                                         .number_of_images = 2,
                                         .announce_dtype = true,
                                         .pixel_mask = mask};
    // The engine's constructor waits for the start message; the publisher's sends wait for it.
    std::thread detector([&] {
      publisher.send_start(series);
      for (std::uint64_t i = 0; i < images.size(); ++i) publisher.send_image(series, i, images[i]);
      publisher.send_end(series);
    });
    EngineConfig c = stream_config("dectris:" + publisher.endpoint(), "", 2);
    c.stream.detector.clear();
    std::optional<Engine> engine;
    try {
      engine.emplace(c);
    } catch (...) {
      detector.join();
      throw;
    }
    engine->start();
    engine->wait();
    detector.join();
    const RunSummary summary = engine->summary();
    QVERIFY2(summary.error.empty(), summary.error.c_str());
    QCOMPARE(summary.stats.events_processed, std::uint64_t(2));

    ThreadPool pool(2);
    codec::CodecParams params;
    params.codec = codec::Codec::Lossless;
    params.chunk_bytes = c.compression.chunk_bytes;
    std::uint64_t expected_bytes = 0;
    for (const auto& image : expected_images)
      expected_bytes += codec::compress_cpu(image.data(), codec::DType::Float32, {1, height, width},
                                            params, &pool)
                            .size();
    QVERIFY(summary.stats.compression.has_value());
    QCOMPARE(summary.stats.compression->total_bytes_out, expected_bytes);
    // Without the mask the same images compress to other sizes: the check sees the mask.
    std::uint64_t unmasked_bytes = 0;
    for (std::size_t i = 0; i < images.size(); ++i) {
      std::vector<float> image(pixels);
      const auto* counts = reinterpret_cast<const std::uint32_t*>(images[i].data());
      for (std::size_t p = 0; p < pixels; ++p)
        image[p] = counts[p] == 0xFFFFFFFFu ? 0.0f : float(counts[p]);
      unmasked_bytes += codec::compress_cpu(image.data(), codec::DType::Float32, {1, height, width},
                                            params, &pool)
                            .size();
    }
    QVERIFY(unmasked_bytes != expected_bytes);
  }

  // A Jungfrau 4M over 16 receiver ports (two per module): the engine processes the assembled
  // events, which are the simulator's, and counts the event that lost a part and the garbage.
  void sls_stream_events_enter_bit_identical_and_lost_parts_are_counted() {
    const DetectorDescription detector = find_detector("jungfrau4m");
    std::vector<std::vector<std::byte>> raw;
    {
      ThreadPool pool(2);
      DetectorSimulator simulator(detector, SimulatorConfig{}, &pool);
      for (std::uint64_t i = 0; i < 3; ++i) {
        raw.emplace_back(detector.raw_event_bytes());
        simulator.generate(i, raw.back().data(), nullptr, &pool);
      }
    }
    tools::SlsPublisherOptions options;
    options.ports_per_module = 2;
    tools::SlsPublisher publisher(detector, options);
    QTemporaryDir directory;
    EngineConfig c =
        stream_config(publisher.source_string(), directory.filePath("run").toStdString(), 3);
    c.stream.detector = "jungfrau4m";
    c.stream.module_timeout_s = 0.2;
    Engine engine(c);
    engine.start();
    QVERIFY(publisher.wait_for_subscribers(std::chrono::seconds(60)));

    publisher.send_event(1, raw[0].data(), 0, {.fault = tools::PartFault::Drop, .port = 3});
    publisher.send_garbage(0, "not a header");
    // No end of acquisition: frame 1 waits for its lost part until the module timeout (an end
    // would cut it first), and the complete frames behind it wait for that.
    for (std::uint64_t i = 0; i < raw.size(); ++i) publisher.send_event(2 + i, raw[i].data(), 0);
    engine.wait();

    const RunSummary summary = engine.summary();
    QVERIFY2(summary.error.empty(), summary.error.c_str());
    const protocol::StatsPayload& stats = summary.stats;
    QCOMPARE(stats.events_processed, std::uint64_t(3));
    QCOMPARE(stats.drops_by_reason.at("missing_module"), std::uint64_t(1));
    QCOMPARE(stats.events_in, std::uint64_t(4));  // the event that lost a part entered too
    // Rates are over the time since the first event came.
    QVERIFY(stats.elapsed_s > 0);
    QVERIFY(std::abs(stats.event_rate_hz * stats.elapsed_s - 3.0) < 1e-6);
    QVERIFY(stats.source_stream.has_value());
    QCOMPARE(stats.source_stream->kind, std::string("sls"));
    QCOMPARE(stats.source_stream->rejected.at("foreign"), std::uint64_t(1));
    QVERIFY(stats.compression.has_value());
    QCOMPARE(stats.compression->total_bytes_out,
             lossless_bytes(detector, raw, c.compression.chunk_bytes));
    const auto recorded = recorded_events(directory.filePath("run").toStdString());
    QCOMPARE(recorded.size(), raw.size());
    for (std::size_t i = 0; i < recorded.size(); ++i)
      QVERIFY2(recorded[i] == raw[i], qPrintable(QString("event %1 differs").arg(i)));
  }

  // A Jungfrau's gain stage travels in bits 15:14 of its raw words (00 G0, 01 G1, 11 G2, 10 no
  // stage); the sls stream hands the words on untouched and the engine's calibration decodes
  // them. Every pixel of an event that came over the stream is (adc - pedestal) x gain of its
  // stage in the constants file given, computed here from that rule, 0 where the bits say no
  // stage or the constants mask the pixel; the image's gain-mode occupancy counts each module's
  // pixels per stage.
  void sls_jungfrau_gain_bits_are_decoded_by_the_calibration() {
    const DetectorDescription detector = find_detector("jungfrau4m");
    const std::size_t pixels = detector.pixels();
    const std::size_t per_module = detector.pixels_per_segment();
    // Constants of their own in every stage and pixel; every 101st pixel masked.
    CalibrationConstants constants;
    constants.modes = 3;
    constants.pixels = pixels;
    constants.pedestal_gain.resize(3 * pixels);
    constants.pixel_status.assign(pixels, 0);
    for (std::size_t m = 0; m < 3; ++m)
      for (std::size_t p = 0; p < pixels; ++p)
        constants.pedestal_gain[m * pixels + p] = {float(1000 * (m + 1) + p % 97),
                                                   0.01f * float(m + 1) + 0.001f * float(p % 5)};
    for (std::size_t p = 0; p < pixels; p += 101) constants.pixel_status[p] = calib::kStatusMasked;
    QTemporaryDir directory;
    const std::string constants_file = directory.filePath("constants.h5").toStdString();
    save_constants_hdf5(constants_file, detector, constants);

    // Two events whose pixels cycle through the four stage codes, in a pattern that differs from
    // row to row and event to event, with ADC values over the whole 14 bits.
    constexpr std::uint16_t kStageBits[4] = {0x0000, 0x4000, 0xC000, 0x8000};
    constexpr int kStageMode[4] = {0, 1, 2, -1};  // -1: no stage (bad)
    std::vector<std::vector<std::byte>> raw(2, std::vector<std::byte>(detector.raw_event_bytes()));
    std::vector<std::vector<float>> calibrated(2, std::vector<float>(pixels));
    std::vector<std::vector<float>> occupancy(2, std::vector<float>(detector.segments * 4));
    for (std::size_t e = 0; e < 2; ++e) {
      auto* words = reinterpret_cast<std::uint16_t*>(raw[e].data());
      std::vector<std::size_t> counts(detector.segments * 4, 0);
      for (std::size_t p = 0; p < pixels; ++p) {
        const std::size_t code = (p + p / std::size_t(detector.cols) + 3 * e) % 4;
        const std::uint16_t adc = std::uint16_t((p * 37 + e * 101) % 16384);
        words[p] = std::uint16_t(kStageBits[code] | adc);
        const int mode = kStageMode[code];
        const bool bad = mode < 0 || constants.masked(p);
        const calib::PedestalGain c = bad ? calib::PedestalGain{} : constants.at(mode, p);
        calibrated[e][p] = bad ? 0.0f : (float(adc) - c.pedestal) * c.gain;
        ++counts[(p / per_module) * 4 + (bad ? 3 : std::size_t(mode))];
      }
      for (std::size_t i = 0; i < counts.size(); ++i)
        occupancy[e][i] = float(double(counts[i]) / double(per_module));
    }

    tools::SlsPublisher publisher(detector);
    EngineConfig c = stream_config(publisher.source_string(), "", 2);
    c.stream.detector = "jungfrau4m";
    c.constants_file = constants_file;
    c.calibration.common_mode = false;  // the rule above, without the per-event baseline
    c.compression.codec = "off";
    c.image.publish_hz = 30;
    c.publish = "tcp://127.0.0.1:*";
    Engine engine(c);
    engine.start();
    QVERIFY(publisher.wait_for_subscribers(std::chrono::seconds(60)));
    for (std::uint64_t i = 0; i < raw.size(); ++i) publisher.send_event(1 + i, raw[i].data(), 0);
    publisher.send_end_of_acquisition();
    engine.wait();
    const RunSummary summary = engine.summary();
    QVERIFY2(summary.error.empty(), summary.error.c_str());
    QCOMPARE(summary.stats.events_processed, std::uint64_t(2));
    QCOMPARE(summary.stats.events_dropped, std::uint64_t(0));

    // The run's last image (a subscriber that joins late is sent the last message of each
    // topic): one of the two events, named by its frame number.
    protocol::Subscriber subscriber(engine.publish_endpoint(),
                                    {std::string(protocol::kTopicImage)});
    const std::optional<protocol::Message> message = subscriber.receive(std::chrono::seconds(60));
    QVERIFY(message.has_value());
    const std::optional<protocol::ImageFrame> image = protocol::image_from_message(*message);
    QVERIFY(image.has_value());
    QVERIFY2(image->pulse_id == 1 || image->pulse_id == 2,
             qPrintable(QString::number(image->pulse_id)));
    const std::size_t e = std::size_t(image->pulse_id - 1);
    const ImageAssembly assembly(detector);
    std::vector<float> expected(assembly.height() * assembly.width());
    assembly.assemble(calibrated[e].data(), expected.data());
    QCOMPARE(image->height, std::uint64_t(assembly.height()));
    QCOMPARE(image->width, std::uint64_t(assembly.width()));
    QCOMPARE(image->pixels.size(), expected.size());
    for (std::size_t k = 0; k < expected.size(); ++k) {
      const bool same =
          std::isnan(expected[k]) ? std::isnan(image->pixels[k]) : image->pixels[k] == expected[k];
      if (!same)
        QFAIL(qPrintable(QString("event %1, image pixel %2: %3, expected %4")
                             .arg(e)
                             .arg(k)
                             .arg(image->pixels[k])
                             .arg(expected[k])));
    }
    QCOMPARE(image->gain_modes, (std::vector<std::string>{"G0", "G1", "G2", "bad"}));
    QCOMPARE(image->segments, std::uint64_t(detector.segments));
    QCOMPARE(image->gain_occupancy, occupancy[e]);
  }

  void stream_sources_refuse_what_they_cannot_feed() {
    EngineConfig c = stream_config("dectris:tcp://127.0.0.1", "", 1);
    try {
      Engine engine(c);
      QFAIL("accepted an endpoint without a port");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("tcp://127.0.0.1"), e.what());
    }
    c = stream_config("dectris:tcp://127.0.0.1:5", "", 1);
    c.runtime.source = SourcePlacement::Device;
    try {
      Engine engine(c);
      QFAIL("accepted a stream on the device-resident source");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("host-fed"), e.what());
    }
    nlohmann::json json = {{"schema_version", 1},
                           {"source", "dectris:tcp://127.0.0.1:5"},
                           {"stream", {{"queue_events", 0}}}};
    try {
      EngineConfig::from_json(json, "test.json");
      QFAIL("accepted stream.queue_events 0");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("stream.queue_events"), e.what());
    }
    json = {{"schema_version", 1}, {"source", "sls:tcp://h:1"}, {"stream", {{"colour", 1}}}};
    QVERIFY_THROWS_EXCEPTION(InputError, EngineConfig::from_json(json, "test.json"));
    json = {{"schema_version", 1},
            {"source", "sls:tcp://h:1"},
            {"stream",
             {{"detector", "jungfrau4m"},
              {"module_timeout_s", 0.25},
              {"queue_events", 16},
              {"pending_events", 48},
              {"max_message_mb", 64},
              {"wait_for_start_s", 3}}}};
    const EngineConfig parsed = EngineConfig::from_json(json, "test.json");
    QCOMPARE(parsed.stream.detector, std::string("jungfrau4m"));
    QCOMPARE(parsed.stream.module_timeout_s, 0.25);
    QCOMPARE(parsed.stream.queue_events, 16);
    QCOMPARE(parsed.stream.pending_events, 48);
    QCOMPARE(parsed.stream.max_message_mb, 64.0);
    QCOMPARE(parsed.stream.wait_for_start_s, 3.0);
    QCOMPARE(EngineConfig::from_json(parsed.to_json(), "echo").stream.queue_events, 16);
  }
};

QTEST_GUILESS_MAIN(TestEngineStreams)
#include "test_engine_streams.moc"
