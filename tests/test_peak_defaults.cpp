// Issue 34, "out of the box": peakfinder8 with PeakFinderParams{} (and the engine's default
// peak_finding section: every gain configuration searched, the beam at the assembled centre) on
// the simulator's default events (SimulatorConfig{}: on the ePix10ka2M every ASIC in AHL) finds
// the simulator's Bragg peaks and little else.
//
// Matching, from the simulator's truth alone: a found peak matches a true Bragg peak when both
// lie on the same segment and the found centroid is within kMatchRadiusPx of the true centre
// (segment row, column). Recall = true Bragg peaks of hit events with a found peak matching
// them / true Bragg peaks of hit events. A false peak is a found peak that matches no true Bragg
// peak of its event (on a non-hit event every found peak is false). The simulator's bright spots
// (single pixels of hundreds to thousands of photons, every event) are not Bragg peaks: a Bragg
// reflection spreads over several pixels (sigma 0.6-1.5 px here), and a one-pixel zinger is what
// min_pixel_count exists to reject, so a bright spot that is found counts as a false peak. The
// hit rate found (events with >= min_peaks_for_hit peaks) is compared with the simulator's
// hit flags, event by event.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "calib/calibrate_cpu.hpp"
#include "core/thread_pool.hpp"
#include "exec/engine.hpp"
#include "stages/peaks/live_peaks.hpp"
#include "peaks/peakfinder8.hpp"
#include "sim/simulator.hpp"

using namespace livedrp;
using namespace livedrp::peaks;

namespace {

constexpr double kMatchRadiusPx = 2.0;

struct Outcome {
  int events = 0, true_hits = 0, found_hits = 0, agreeing = 0;
  int false_by_config[8] = {}, missed_by_config[8] = {};
  int true_peaks = 0, recalled = 0, found_peaks = 0, false_peaks = 0, bright_spots_found = 0;
  double recall() const { return true_peaks ? double(recalled) / true_peaks : 0; }
  double false_per_event() const { return events ? double(false_peaks) / events : 0; }
};

double distance(const TruePeak& t, const Peak& p) {
  if (t.segment != p.segment) return 1e9;
  return std::hypot(t.row - double(p.ss_in_segment), t.col - double(p.fs));
}

Outcome measure(const std::string& detector_name, const PeakFinderParams& params, int events,
                ThreadPool& pool) {
  const DetectorDescription detector = find_detector(detector_name);
  const SimulatorConfig sim_config;  // the simulator's defaults
  const DetectorSimulator simulator(detector, sim_config, &pool);
  // The engine's geometry for its default peak_finding section (beam at the assembled centre,
  // the constants' bad pixels masked, search_gain_configs [] = every configuration searched).
  const LivePeakFindingConfig engine_defaults;
  const LivePeakGeometry geometry(engine_defaults, detector, simulator.constants());
  PeakFinder8 finder = geometry.finder(params);

  std::vector<std::uint8_t> raw(detector.raw_event_bytes());
  std::vector<float> image(detector.pixels());
  Outcome out;
  auto config_at = [&](int segment, double row, double col) {
    const std::size_t pixel = std::size_t(segment) * detector.pixels_per_segment() +
                              std::size_t(std::lround(row)) * std::size_t(detector.cols) +
                              std::size_t(std::lround(col));
    return simulator.constants().pixel_status[pixel] & calib::kStatusConfigBits;
  };
  for (std::uint64_t index = 0; index < std::uint64_t(events); ++index) {
    EventTruth truth;
    simulator.generate(index, raw.data(), &truth, &pool);
    // The engine's calibration defaults (common mode on), with the simulator's true constants.
    calibrate_event_cpu(detector, simulator.constants(), calib::CalibrationParams{}, raw.data(),
                        image.data(), &pool);
    const PeakList list = finder.find(image.data(), &pool);
    ++out.events;
    out.true_hits += truth.hit ? 1 : 0;
    out.found_hits += list.hit ? 1 : 0;
    out.agreeing += list.hit == truth.hit ? 1 : 0;
    out.found_peaks += list.found;
    out.false_peaks += list.found - int(list.peaks.size());  // unlisted peaks cannot be matched
    for (const TruePeak& t : truth.peaks) {
      ++out.true_peaks;
      bool got = false;
      for (const Peak& p : list.peaks) got = got || distance(t, p) <= kMatchRadiusPx;
      if (!got) ++out.missed_by_config[config_at(t.segment, t.row, t.col)];
      for (const Peak& p : list.peaks)
        if (distance(t, p) <= kMatchRadiusPx) {
          ++out.recalled;
          break;
        }
    }
    for (const Peak& p : list.peaks) {
      bool bragg = false;
      for (const TruePeak& t : truth.peaks) bragg = bragg || distance(t, p) <= kMatchRadiusPx;
      if (!bragg) {
        ++out.false_peaks;
        ++out.false_by_config[config_at(p.segment, p.ss_in_segment, p.fs)];
      }
      for (const TruePeak& s : truth.bright_spots)
        out.bright_spots_found += distance(s, p) <= kMatchRadiusPx ? 1 : 0;
    }
  }
  return out;
}

void report(const char* what, const Outcome& o) {
  qInfo(
      "%s: %d events, %d true hits, %d found hits (%d events agree); %d true Bragg peaks on hits, "
      "%d recalled (%.4f); %d peaks found, %d false (%.3f per event), %d of them bright spots",
      what, o.events, o.true_hits, o.found_hits, o.agreeing, o.true_peaks, o.recalled, o.recall(),
      o.found_peaks, o.false_peaks, o.false_per_event(), o.bright_spots_found);
  qInfo("false by config %d %d %d %d %d; missed by config %d %d %d %d %d", o.false_by_config[0],
        o.false_by_config[1], o.false_by_config[2], o.false_by_config[3], o.false_by_config[4],
        o.missed_by_config[0], o.missed_by_config[1], o.missed_by_config[2], o.missed_by_config[3],
        o.missed_by_config[4]);
}

}  // namespace

class TestPeakDefaults : public QObject {
  Q_OBJECT

 private slots:
  void jungfrau4m_defaults_find_the_bragg_peaks() {
    ThreadPool pool(2);
    const Outcome o = measure("jungfrau4m", PeakFinderParams{}, kEvents, pool);
    report("jungfrau4m", o);
    check_against_truth(o);
  }

  // The simulator configures every ePix10ka ASIC auto high-to-low (AHL), as a facility runs an
  // SFX experiment (SimulatorConfig::epix10ka_asic_configs): photons clear the noise in high gain
  // and the brightest Bragg pixels switch to low gain. The defaults must be as clean as on the
  // Jungfrau. (A layout mixing in fixed low gain, where a 9.5 keV photon is under the noise,
  // needs peak_finding.search_gain_configs: test_engine_peak_gain_mask.)
  void epix10ka2m_defaults_find_the_bragg_peaks() {
    ThreadPool pool(2);
    const Outcome o = measure("epix10ka2m", PeakFinderParams{}, kEvents, pool);
    report("epix10ka2m", o);
    check_against_truth(o);
  }

 private:
  // 300 events of the default seed hold 24 hits (hit_fraction 0.1 decided per event index).
  static constexpr int kEvents = 300;

  // "Within a few percent" of the true hit count: a hit is at least min_peaks_for_hit (10) true
  // peaks, so a 10-peak hit with one peak missed is lost; allow 5% of the true hits, at least 1.
  static int hit_tolerance(const Outcome& o) { return std::max(1, int(0.05 * o.true_hits)); }

  static void check_against_truth(const Outcome& o) {
    QVERIFY(o.true_hits >= 15);  // enough hits and peaks for the fractions to mean something
    QVERIFY(o.true_peaks >= 200);
    QVERIFY2(o.recall() >= 0.95, "recall below 0.95");
    QVERIFY2(o.false_per_event() < 1.0, "a false peak an event or more");
    QVERIFY2(std::abs(o.found_hits - o.true_hits) <= hit_tolerance(o),
             "hit count not within 5% of the simulator's");
    QVERIFY2(o.agreeing >= o.events - hit_tolerance(o), "hit flags disagree with the truth");
  }
};

QTEST_APPLESS_MAIN(TestPeakDefaults)
#include "test_peak_defaults.moc"
