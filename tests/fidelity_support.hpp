#pragma once
// What the fidelity suites share (test_engine_fidelity, test_gui_fidelity): a run that samples
// every event of the simulated ePix10ka2M with integration and peak finding on, and one event's
// sample computed offline with the library's functions called directly: the codec's
// compress_cpu and decompress_cpu, an integrator and a peakfinder8 built here (not through the
// engine's stages).
#include <QTemporaryDir>

#include <cstring>
#include <string>
#include <vector>

#include "codec/codec.hpp"
#include "live_integration_support.hpp"
#include "live_peaks_support.hpp"
#include "stages/fidelity/fidelity_config.hpp"

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

}  // namespace livedrp::fidelity_test
