#pragma once
// What the live-integration suites share (test_engine_integration on the CPU backend,
// test_gpu_engine_integration on CUDA): a PONI and a mask file for the simulated epix10ka2m, the
// engine configuration, an integrator built independently of the engine, every event's profile
// computed offline (calibrate_event_cpu + Integrator), and a run that collects every `profile`
// message.
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "calib/calibrate_cpu.hpp"
#include "core/detector.hpp"
#include "core/thread_pool.hpp"
#include "exec/backend.hpp"
#include "exec/engine.hpp"
#include "integrate/integrator.hpp"
#include "integrate/layout.hpp"
#include "integrate/poni.hpp"
#include "io/npy.hpp"
#include "protocol/profile_topic.hpp"
#include "protocol/subscriber.hpp"
#include "sim/simulator.hpp"

namespace livedrp::live_integration_test {

using namespace std::chrono_literals;

// A PONI for the built-in epix10ka2m with the beam where the simulator puts its powder rings, at
// 9.5 keV (the simulator's energy), tilted a little so the geometry is not trivially symmetric.
inline std::string write_poni(const QTemporaryDir& dir, const DetectorDescription& detector,
                              const PowderGeometry& powder) {
  const double pixel = detector.pixel_size_um * 1e-6;
  const integrate::FrameExtent extent =
      integrate::assembled_extent(integrate::layout_from_detector(detector));
  const std::string path = dir.filePath("live.poni").toStdString();
  std::ofstream out(path);
  out << "poni_version: 2\n"
      << "Detector: Detector\n"
      << "Detector_config: {\"pixel1\": " << pixel << ", \"pixel2\": " << pixel
      << ", \"max_shape\": [" << extent.rows << ", " << extent.cols << "]}\n"
      << "Distance: 0.12\n"
      << "Poni1: " << powder.beam_y_px * pixel << "\n"
      << "Poni2: " << powder.beam_x_px * pixel << "\n"
      << "Rot1: 0.01\nRot2: -0.02\nRot3: 0\n"
      << "Wavelength: " << 12.398419843320026e-10 / 9.5 << "\n";
  return path;
}

// A block of segment 0 masked: the configured mask file, on top of the simulator's bad pixels.
inline std::string write_mask(const QTemporaryDir& dir, const DetectorDescription& detector) {
  io::Array mask;
  mask.type = io::ElementType::UInt8;
  mask.shape = {std::uint64_t(detector.segments), std::uint64_t(detector.rows),
                std::uint64_t(detector.cols)};
  mask.bytes.assign(detector.pixels(), 0);
  for (int row = 0; row < 40; ++row)
    for (int col = 0; col < 100; ++col) mask.bytes[std::size_t(row) * detector.cols + col] = 1;
  const std::string path = dir.filePath("mask.npy").toStdString();
  io::write_npy(path, mask);
  return path;
}

inline EngineConfig live_config(const std::string& poni, const std::string& mask) {
  EngineConfig c;
  c.source = "sim:epix10ka2m";
  c.backend = "cpu";
  c.publish = "tcp://127.0.0.1:*";
  c.simulator_pool = 3;  // generating events is slow on a 2-core machine
  c.stats_interval_s = 0.05;
  c.cpu_threads = 2;
  c.events = 7;
  c.full_ring = "wait";
  c.integration.enabled = true;
  c.integration.poni = poni;
  c.integration.mask = mask;
  c.integration.npt = 300;
  c.integration.unit = "q_nm^-1";
  c.integration.polarization = 0.95;
  c.integration.average_events = 4;
  c.integration.publish_hz = 50;
  return c;
}

// An integrator built here from the same settings, not through the engine's code.
inline integrate::Integrator independent_integrator(const EngineConfig& c,
                                                    const DetectorDescription& detector,
                                                    const CalibrationConstants& constants) {
  integrate::IntegrationConfig ic;
  ic.unit = integrate::RadialUnit::QNm;
  ic.bins = c.integration.npt;
  ic.polarization = c.integration.polarization;
  integrate::Integrator integrator(integrate::read_poni(c.integration.poni),
                                   integrate::layout_from_detector(detector), ic);
  const io::Array file_mask = io::read_npy(c.integration.mask);
  std::vector<std::uint8_t> mask(detector.pixels());
  for (std::size_t k = 0; k < mask.size(); ++k)
    mask[k] = (file_mask.as<std::uint8_t>()[k] != 0 || constants.masked(k)) ? 1 : 0;
  integrator.set_mask(mask);
  return integrator;
}

inline bool same(double a, double b, double relative) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::fabs(a - b) <= relative * std::max({std::fabs(a), std::fabs(b), 1e-30});
}

// First bin where the two differ, or -1.
inline long first_difference(const std::vector<double>& a, const std::vector<double>& b,
                             double relative) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i], relative)) return long(i);
  return -1;
}

// Every `profile` message the run publishes, decoded, and the summary. The subscriber joins
// before the start; whatever it misses at the start, the publisher's late-joiner copy of the
// topic's last message still brings the run's final profile.
struct LiveRun {
  std::vector<protocol::RadialProfile> profiles;
  std::vector<std::int64_t> runs;
  RunSummary summary;
};

inline LiveRun run_live(const EngineConfig& config) {
  LiveRun run;
  Engine engine(config);
  protocol::Subscriber subscriber(engine.publish_endpoint(),
                                  {std::string(protocol::kTopicProfile)});
  std::this_thread::sleep_for(200ms);  // let the subscription reach the publisher
  engine.start();
  const auto take = [&](std::chrono::milliseconds timeout) {
    while (auto message = subscriber.receive(timeout)) {
      run.profiles.push_back(protocol::profile_from_message(*message));
      run.runs.push_back(message->run);
    }
  };
  while (!engine.finished()) take(20ms);
  engine.wait();
  take(500ms);
  run.summary = engine.summary();
  return run;
}

// The simulator the engine runs, built here with the engine's default seed and hit fraction.
inline DetectorSimulator engine_simulator(const DetectorDescription& detector, ThreadPool& pool) {
  const EngineConfig defaults;
  SimulatorConfig simulator_config;
  simulator_config.seed = defaults.seed;
  simulator_config.hit_fraction = defaults.hit_fraction;
  return DetectorSimulator(detector, simulator_config, &pool);
}

// Every event's profile as the CPU computes it offline, with its sequence: event i carries the
// raw bytes of simulator event i % pool.
struct OfflineProfiles {
  std::vector<std::vector<double>> profiles;
  std::vector<std::uint64_t> sequences;
  std::vector<double> centres;
  std::size_t index_of(std::uint64_t sequence) const {
    return std::size_t(std::find(sequences.begin(), sequences.end(), sequence) - sequences.begin());
  }
};

inline OfflineProfiles offline_profiles(const EngineConfig& config,
                                        const DetectorSimulator& simulator, ThreadPool& pool) {
  const DetectorDescription& detector = simulator.detector();
  integrate::Integrator reference = independent_integrator(config, detector, simulator.constants());
  reference.set_thread_pool(&pool);
  OfflineProfiles offline;
  offline.centres = reference.integrate(std::vector<float>(detector.pixels(), 0.0f)).radial;
  std::vector<std::uint8_t> raw(detector.raw_event_bytes());
  std::vector<float> calibrated(detector.pixels());
  for (std::uint64_t i = 0; i < config.events; ++i) {
    simulator.generate(i % std::uint64_t(config.simulator_pool), raw.data(), nullptr, &pool);
    calibrate_event_cpu(detector, simulator.constants(), config.calibration, raw.data(),
                        calibrated.data(), &pool);
    offline.profiles.push_back(profile_intensities(reference.integrate(calibrated)));
    offline.sequences.push_back(simulator.header_for(i).sequence);
  }
  return offline;
}

// Per bin, the mean of the finite values of events [last + 1 - window, last] (the engine's rule:
// a NaN bin had no pixels in that event).
inline std::vector<double> window_mean(const OfflineProfiles& offline, std::size_t last,
                                       std::size_t window) {
  std::vector<double> mean(offline.centres.size());
  for (std::size_t b = 0; b < mean.size(); ++b) {
    double sum = 0;
    std::size_t count = 0;
    for (std::size_t e = last + 1 - window; e <= last; ++e)
      if (std::isfinite(offline.profiles[e][b])) {
        sum += offline.profiles[e][b];
        ++count;
      }
    mean[b] = count > 0 ? sum / double(count) : std::numeric_limits<double>::quiet_NaN();
  }
  return mean;
}

}  // namespace livedrp::live_integration_test
