#pragma once
// What the live peak-finding suites share (test_engine_peaks on the CPU backend,
// test_control_peaks over the control socket, test_gpu_engine_peaks on CUDA): the engine
// configuration, a peakfinder8 built here from the detector (not through the engine's code), every
// simulated event calibrated and searched offline, and a run that collects every `peaks`,
// `image` and `stats` message.
#include <QtTest>

#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "calib/calibrate_cpu.hpp"
#include "calib/gain_occupancy.hpp"
#include "core/detector.hpp"
#include "core/image_assembly.hpp"
#include "core/thread_pool.hpp"
#include "exec/engine.hpp"
#include "peaks/peakfinder8.hpp"
#include "protocol/peaks_topic.hpp"
#include "protocol/subscriber.hpp"
#include "protocol/topics.hpp"
#include "sim/simulator.hpp"

namespace livedrp::live_peaks_test {

using namespace std::chrono_literals;

// Every simulated event a hit with a handful of peaks; a low hit threshold so that most events
// are hits and their lists are published.
inline EngineConfig live_config() {
  EngineConfig c;
  c.source = "sim:epix10ka2m";
  c.backend = "cpu";
  c.publish = "tcp://127.0.0.1:*";
  c.simulator_pool = 3;  // generating events is slow on a 2-core machine
  c.hit_fraction = 1.0;
  c.stats_interval_s = 0.05;
  c.cpu_threads = 2;
  c.events = 6;
  c.full_ring = "wait";
  c.peak_finding.enabled = true;
  c.peak_finding.params.min_peaks_for_hit = 2;
  c.peak_finding.peaks_hz = 100;
  c.peak_finding.recent_frames = 4;
  c.image.publish_hz = 30;
  return c;
}

// The simulator the engine runs, built here with the configuration's seed, hit fraction and
// ePix10ka gain configurations.
inline DetectorSimulator engine_simulator(const EngineConfig& c, ThreadPool& pool) {
  SimulatorConfig simulator_config;
  simulator_config.seed = c.seed;
  simulator_config.hit_fraction = c.hit_fraction;
  simulator_config.epix10ka_asic_configs.clear();
  for (const std::string& name : c.simulator_gain_configs)
    simulator_config.epix10ka_asic_configs.push_back(epix10ka_config_value(name).value());
  return DetectorSimulator(find_detector(c.source.substr(4)), simulator_config, &pool);
}

// peakfinder8 as the offline command builds it: the slab, the beam at the centre of the
// assembled bounds (where the simulator puts it), the constants' bad pixels masked.
inline peaks::PeakFinder8 independent_finder(const DetectorDescription& detector,
                                             const CalibrationConstants& constants,
                                             const peaks::PeakFinderParams& params) {
  const AssembledPoint beam = assembled_bounds(detector).centre();
  std::vector<std::uint8_t> bad(detector.pixels());
  for (std::size_t p = 0; p < bad.size(); ++p) bad[p] = constants.masked(p) ? 1 : 0;
  return peaks::PeakFinder8(peaks::slab_layout(detector),
                            peaks::radius_map(detector, beam.x, beam.y), bad, params);
}

// Every event of the run calibrated on the CPU here (event i is simulator event i % pool).
struct OfflineEvents {
  std::vector<std::vector<std::uint8_t>> raw;
  std::vector<std::vector<float>> calibrated;
  std::vector<std::uint64_t> sequences, pulse_ids;
  std::size_t index_of(std::uint64_t sequence) const {
    for (std::size_t i = 0; i < sequences.size(); ++i)
      if (sequences[i] == sequence) return i;
    return sequences.size();
  }
};

inline OfflineEvents offline_events(const EngineConfig& c, const DetectorSimulator& simulator,
                                    ThreadPool& pool) {
  const DetectorDescription& detector = simulator.detector();
  OfflineEvents offline;
  for (std::uint64_t i = 0; i < c.events; ++i) {
    std::vector<std::uint8_t> raw(detector.raw_event_bytes());
    simulator.generate(i % std::uint64_t(c.simulator_pool), raw.data(), nullptr, &pool);
    std::vector<float> calibrated(detector.pixels());
    calibrate_event_cpu(detector, simulator.constants(), c.calibration, raw.data(),
                        calibrated.data(), &pool);
    offline.raw.push_back(std::move(raw));
    offline.calibrated.push_back(std::move(calibrated));
    const EventHeader header = simulator.header_for(i);
    offline.sequences.push_back(header.sequence);
    offline.pulse_ids.push_back(header.pulse_id);
  }
  return offline;
}

// Empty when the message's list is `expected` value for value (x/y through `assembly`), else
// what differs.
inline QString compare_list(const protocol::EventPeaks& got, const peaks::PeakList& expected,
                            const ImageAssembly& assembly) {
  if (got.found != std::uint64_t(expected.found))
    return QString("found %1, expected %2").arg(got.found).arg(expected.found);
  if (got.hit != expected.hit) return QString("hit %1, expected %2").arg(got.hit).arg(expected.hit);
  if (got.peaks.size() != expected.peaks.size())
    return QString("%1 peaks listed, expected %2").arg(got.peaks.size()).arg(expected.peaks.size());
  for (std::size_t k = 0; k < got.peaks.size(); ++k) {
    const protocol::PeakRow& g = got.peaks[k];
    const peaks::Peak& e = expected.peaks[k];
    double x = 0, y = 0;
    assembly.slab_to_image(e.fs, e.ss, x, y);
    const bool same = g.fs == e.fs && g.ss == e.ss && g.intensity == e.intensity &&
                      g.max_value == e.max_value && g.sigma == e.local_sigma && g.snr == e.snr &&
                      g.segment == e.segment && g.num_pixels == e.num_pixels && g.x == float(x) &&
                      g.y == float(y);
    if (!same)
      return QString(
                 "peak %1: got fs %2 ss %3 I %4 snr %5 x %6, expected fs %7 ss %8 I %9 snr %10 "
                 "x %11")
          .arg(k)
          .arg(g.fs)
          .arg(g.ss)
          .arg(g.intensity)
          .arg(g.snr)
          .arg(g.x)
          .arg(e.fs)
          .arg(e.ss)
          .arg(e.intensity)
          .arg(e.snr)
          .arg(x);
  }
  return {};
}

// What a subscriber saw of a run.
struct PeakMessages {
  std::vector<protocol::EventPeaks> peaks;
  std::vector<protocol::ImageFrame> images;
  std::vector<protocol::StatsPayload> stats;
  std::vector<std::int64_t> runs;  // of every peaks message
};

inline void take_messages(protocol::Subscriber& subscriber, PeakMessages& into,
                          std::chrono::milliseconds timeout) {
  while (auto message = subscriber.receive(timeout)) {
    if (message->topic == protocol::kTopicPeaks) {
      into.peaks.push_back(protocol::peaks_from_message(*message));
      into.runs.push_back(message->run);
    } else if (message->topic == protocol::kTopicImage) {
      into.images.push_back(protocol::image_from_message(*message));
    } else if (message->topic == "stats") {
      into.stats.push_back(protocol::stats_from_json(message->payload));
    }
  }
}

inline std::vector<std::string> peak_topics() {
  return {std::string(protocol::kTopicPeaks), std::string(protocol::kTopicImage), "stats"};
}

}  // namespace livedrp::live_peaks_test
