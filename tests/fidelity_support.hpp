#pragma once
// What the fidelity suites share (test_engine_fidelity, test_gui_fidelity): a run that samples
// every event of the simulated ePix10ka2M with integration and peak finding on, and one event's
// sample computed offline with the library's functions called directly: the codec's
// compress_cpu and decompress_cpu, an integrator and a peakfinder8 built here (not through the
// engine's stages).
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "codec/codec.hpp"
#include "live_integration_support.hpp"
#include "live_peaks_support.hpp"
#include "protocol/fidelity_topic.hpp"
#include "stages/fidelity/fidelity_config.hpp"
#include "stages/fidelity/fidelity_measures.hpp"

namespace livedrp::fidelity_test {

// Integration and peak finding on the simulated ePix10ka2M, every event a hit, lossy at
// `bound`, every event due for a sample (the sampler skips those that come while it is busy).
inline EngineConfig fidelity_config(const QTemporaryDir& dir, const std::string& codec,
                                    double bound) {
  const DetectorDescription detector = find_detector("epix10ka2m");
  // The beam where the simulator puts it (the assembled image's centre); the rings need not
  // match for a comparison of two images through the same geometry.
  const AssembledPoint beam = assembled_bounds(detector).centre();
  const PowderGeometry powder{beam.x, beam.y, {}};
  EngineConfig c =
      live_integration_test::live_config(live_integration_test::write_poni(dir, detector, powder),
                                         live_integration_test::write_mask(dir, detector));
  c.events = 4;
  c.hit_fraction = 1.0;
  c.peak_finding.enabled = true;
  c.peak_finding.params.min_peaks_for_hit = 2;
  c.compression.codec = codec;
  c.compression.error_bound = bound;
  c.fidelity.enabled = true;
  c.fidelity.samples_hz = kMaxFidelitySamplesHz;
  return c;
}

// What the test computes for one event, from its calibrated image.
struct Offline {
  std::vector<std::uint8_t> stream;
  std::vector<float> decoded;
  std::vector<double> original_profile, decompressed_profile;
  peaks::PeakList original_peaks, decompressed_peaks;
};

inline Offline offline_sample(const EngineConfig& config, const DetectorDescription& detector,
                              const CalibrationConstants& constants,
                              const std::vector<std::uint8_t>& raw,
                              const std::vector<float>& calibrated) {
  Offline out;
  codec::CodecParams params;
  params.codec = config.compression.codec == "lossy" ? codec::Codec::Lossy : codec::Codec::Lossless;
  params.error_bound = params.codec == codec::Codec::Lossy ? config.compression.error_bound : 0;
  params.chunk_bytes = config.compression.chunk_bytes;
  const std::vector<std::uint64_t> shape{
      std::uint64_t(detector.segments), std::uint64_t(detector.rows), std::uint64_t(detector.cols)};
  out.decoded.resize(detector.pixels());
  if (params.codec == codec::Codec::Lossy) {
    out.stream = codec::compress_cpu(calibrated.data(), codec::DType::Float32, shape, params);
    const codec::DecodedArray decoded = codec::decompress_cpu(out.stream.data(), out.stream.size());
    std::memcpy(out.decoded.data(), decoded.bytes.data(), decoded.bytes.size());
  } else {
    // Lossless keeps the raw words; decoded, they are calibrated as the engine calibrates.
    out.stream = codec::compress_cpu(raw.data(), codec::DType::UInt16, shape, params);
    const codec::DecodedArray decoded = codec::decompress_cpu(out.stream.data(), out.stream.size());
    calibrate_event_cpu(detector, constants, config.calibration, decoded.bytes.data(),
                        out.decoded.data());
  }
  integrate::Integrator integrator =
      live_integration_test::independent_integrator(config, detector, constants);
  out.original_profile = profile_intensities(integrator.integrate(calibrated));
  out.decompressed_profile = profile_intensities(integrator.integrate(out.decoded));
  peaks::PeakFinder8 finder =
      live_peaks_test::independent_finder(detector, constants, config.peak_finding.params);
  out.original_peaks = finder.find(calibrated.data());
  out.decompressed_peaks = finder.find(out.decoded.data());
  return out;
}

// The `fidelity` messages a run published, with the run number of each.
struct Sampled {
  std::vector<protocol::FidelityReport> reports;
  std::vector<std::int64_t> runs;
};

inline void take(protocol::Subscriber& subscriber, Sampled& into,
                 std::chrono::milliseconds timeout) {
  while (auto message = subscriber.receive(timeout)) {
    into.reports.push_back(protocol::fidelity_from_message(*message));
    into.runs.push_back(message->run);
  }
}

// A run to its end; the subscriber joins before the start, and the publisher's copy of the
// topic's last message brings the run's last sample to it whatever it missed. `backend`: the
// backend the engine ran on.
inline Sampled run_to_the_end(const EngineConfig& config, RunSummary& summary,
                              std::string* backend = nullptr) {
  using namespace std::chrono_literals;
  Sampled sampled;
  Engine engine(config);
  if (backend) *backend = engine.backend_name();
  protocol::Subscriber subscriber(engine.publish_endpoint(),
                                  {std::string(protocol::kTopicFidelity)});
  engine.start();
  while (!engine.finished()) take(subscriber, sampled, 20ms);
  engine.wait();
  while (sampled.reports.empty()) take(subscriber, sampled, 500ms);
  take(subscriber, sampled, 300ms);
  summary = engine.summary();
  return sampled;
}

// A whole run's counts: no error, every event processed, samples published; the first event is
// always taken and every later one came due (50 Hz) and was taken or skipped while the sampler
// was busy, and no stream failed to decode.
inline void check_run_counts(const RunSummary& summary, const EngineConfig& config,
                             const Sampled& sampled) {
  QVERIFY2(summary.error.empty(), summary.error.c_str());
  QCOMPARE(summary.stats.events_processed, config.events);
  QVERIFY(!sampled.reports.empty());
  const nlohmann::json& counts = summary.stats.stage_stats.at("fidelity");
  QVERIFY(counts.at("samples").get<std::uint64_t>() >= 1);
  QCOMPARE(counts.at("failed").get<std::uint64_t>(), std::uint64_t(0));
}

inline bool same_or_both_nan(double a, double b) {
  return std::isnan(a) ? std::isnan(b) : a == b;
}

// One published sample against what the test computes offline for its event (`events`: the
// run's events calibrated here): the codec, the sizes, the pixel error, both profiles and their
// difference, both peak searches and their matching. A QtTest check: a failure is recorded and
// returns from here (the caller asks QTest::currentTestFailed()).
inline void check_against_offline(const protocol::FidelityReport& r, const EngineConfig& config,
                                  const DetectorDescription& detector,
                                  const CalibrationConstants& constants,
                                  const live_peaks_test::OfflineEvents& events) {
  const std::size_t index = events.index_of(r.sequence);
  QVERIFY(index < events.sequences.size());
  QCOMPARE(r.pulse_id, events.pulse_ids[index]);
  const Offline offline =
      offline_sample(config, detector, constants, events.raw[index], events.calibrated[index]);
  qInfo(
      "event %llu: ratio %.2f, pixel error %.4f, profile max %.3g rms %.3g over %llu bins, "
      "peaks %llu kept %llu lost %llu added (recall %.3f, precision %.3f, shift max %.2f px),"
      " evaluated in %.0f ms",
      (unsigned long long)r.sequence, double(r.uncompressed_bytes) / double(r.stream_bytes),
      r.max_pixel_error, r.max_abs_relative, r.rms_relative, (unsigned long long)r.compared_bins,
      (unsigned long long)r.kept, (unsigned long long)r.lost, (unsigned long long)r.added, r.recall,
      r.precision, r.max_shift_px, r.evaluation_ms);
  const bool lossy = config.compression.codec == "lossy";
  QCOMPARE(r.codec, config.compression.codec);
  QCOMPARE(r.error_bound, lossy ? config.compression.error_bound : 0.0);
  QCOMPARE(r.stream_bytes, std::uint64_t(offline.stream.size()));
  QCOMPARE(r.uncompressed_bytes, lossy ? std::uint64_t(detector.pixels() * sizeof(float))
                                       : std::uint64_t(detector.raw_event_bytes()));
  QCOMPARE(r.max_pixel_error, stages::max_pixel_error(events.calibrated[index], offline.decoded));
  if (lossy) {
    QVERIFY(r.max_pixel_error <= config.compression.error_bound);  // the codec keeps its bound
    QVERIFY(r.max_pixel_error > 0);                                // and the bound is used
  }

  // The profiles, and the difference as the test computes it from them.
  QVERIFY(r.has_profile);
  QCOMPARE(r.centres.size(), std::size_t(config.integration.npt));
  QCOMPARE(live_integration_test::first_difference(r.original, offline.original_profile, 1e-12),
           -1L);
  QCOMPARE(
      live_integration_test::first_difference(r.decompressed, offline.decompressed_profile, 1e-12),
      -1L);
  std::uint64_t compared = 0;
  double largest = 0;
  for (std::size_t b = 0; b < r.relative.size(); ++b) {
    const double o = offline.original_profile[b], d = offline.decompressed_profile[b];
    if (!std::isfinite(o) || !std::isfinite(d) || o == 0) {
      QVERIFY(std::isnan(r.relative[b]));
      continue;
    }
    ++compared;
    const double relative = (d - o) / std::abs(o);
    QVERIFY2(std::abs(r.relative[b] - relative) <= 1e-9,
             qPrintable(
                 QStringLiteral("bin %1: %2 against %3").arg(b).arg(r.relative[b]).arg(relative)));
    largest = std::max(largest, std::abs(relative));
  }
  QCOMPARE(r.compared_bins, compared);
  QVERIFY(std::abs(r.max_abs_relative - largest) <= 1e-9);

  // The peaks: both searches as here, then matched by the documented rule.
  QVERIFY(r.has_peaks);
  QCOMPARE(r.params_version, std::uint64_t(1));
  QCOMPARE(r.found_original, std::uint64_t(offline.original_peaks.found));
  QCOMPARE(r.found_decompressed, std::uint64_t(offline.decompressed_peaks.found));
  QVERIFY(r.found_original > 0);
  const stages::PeakMatch match =
      stages::match_peaks(offline.original_peaks.peaks, offline.decompressed_peaks.peaks,
                          config.fidelity.match_radius_px);
  QCOMPARE(r.peaks_original, match.original);
  QCOMPARE(r.peaks_decompressed, match.decompressed);
  QCOMPARE(r.kept, match.kept);
  QCOMPARE(r.lost, match.lost);
  QCOMPARE(r.added, match.added);
  QVERIFY(same_or_both_nan(r.recall, match.recall));
  QVERIFY(same_or_both_nan(r.precision, match.precision));
  QVERIFY(same_or_both_nan(r.mean_shift_px, match.mean_shift_px));
  QVERIFY(same_or_both_nan(r.max_shift_px, match.max_shift_px));
}

// A lossless sample: nothing differs, every peak kept.
inline void check_lossless(const protocol::FidelityReport& r) {
  QCOMPARE(r.codec, std::string("lossless"));
  QCOMPARE(r.error_bound, 0.0);
  QCOMPARE(r.max_pixel_error, 0.0);
  QVERIFY(r.compared_bins > 0);
  QCOMPARE(r.max_abs_relative, 0.0);
  QCOMPARE(r.rms_relative, 0.0);
  for (double relative : r.relative) QVERIFY(std::isnan(relative) || relative == 0.0);
  QVERIFY(r.peaks_original > 0);
  QCOMPARE(r.peaks_decompressed, r.peaks_original);
  QCOMPARE(r.kept, r.peaks_original);
  QCOMPARE(r.lost + r.added, std::uint64_t(0));
  QCOMPARE(r.recall, 1.0);
  QCOMPARE(r.precision, 1.0);
  QCOMPARE(r.max_shift_px, 0.0);
}

}  // namespace livedrp::fidelity_test
