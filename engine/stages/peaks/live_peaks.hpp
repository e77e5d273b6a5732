#pragma once
// Live peak finding's engine-side pieces (JSON "peak_finding"), kept out of engine.cpp:
//   LivePeakGeometry  what every PeakFinder8 of a run shares (slab, radius, mask), read once, so
//                     a parameter change only rebuilds the finder's per-parameter tables
//   LivePeakBook      the per-interval and per-run counts of the stats block, and the `peaks`
//                     topic's rate limit: the newest hit waits for its turn, an older one waiting
//                     is replaced and counted in hits_not_sent
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "core/event.hpp"
#include "core/image_assembly.hpp"
#include "exec/engine.hpp"
#include "peaks/peakfinder8.hpp"
#include "protocol/peaks_topic.hpp"

namespace livedrp {

class LivePeakGeometry {
 public:
  // The slab of the detector, the radius from config.beam (default: the centre of
  // assembled_bounds, where the simulator puts the beam) or config.radius_map, and the mask:
  // config.mask (non-zero = bad), the constants' bad pixels, and, when
  // config.search_gain_configs lists some, the pixels whose gain configuration it does not list.
  // Throws InputError naming the field ("peak_finding.radius_map", ...; search_gain_configs on a
  // detector without a per-pixel gain configuration, or matching no pixel).
  LivePeakGeometry(const LivePeakFindingConfig& config, const DetectorDescription& detector,
                   const CalibrationConstants& constants);
  // A finder with `params`; throws InputError naming the parameter when they are unusable.
  peaks::PeakFinder8 finder(const peaks::PeakFinderParams& params) const;

 private:
  peaks::SlabLayout layout_;
  std::vector<float> radius_;
  std::vector<std::uint8_t> bad_;
};

// One event's list as the `peaks` topic carries it; x/y through `assembly` (slab_to_image), or
// the slab's fs/ss when there is no assembly (a detector without placement).
protocol::EventPeaks event_peaks(const EventHeader& header, const peaks::PeakList& list,
                                 const peaks::PeakFinderParams& params, std::uint64_t version,
                                 bool rerun, const ImageAssembly* assembly);

// Thread-safe: the engine thread adds events, the reporter thread takes the interval's block and
// the message that is due.
class LivePeakBook {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LivePeakBook(double peaks_hz);

  // A searched event (engine thread): counted.
  void add(std::uint64_t found, bool hit, double search_us);
  // A hit event's message becomes the pending one (replacing, and counting as not sent, an
  // older one still pending).
  void offer_hit(protocol::EventPeaks peaks);
  // The pending hit, when one is pending and its turn has come (or `flush`); counted as sent.
  std::optional<protocol::EventPeaks> take_due(Clock::time_point now, bool flush);
  void count_sent_rerun();  // a re-run's message went out
  void set_params_version(std::uint64_t version);
  // The interval's block (events, hits and peaks since the last call) and the run's totals;
  // the interval's search times (mean, max; 0 when none) for the `peak` stage.
  protocol::PeakFindingStats take_interval(double& mean_us, double& max_us);
  // The whole run as one interval (the run summary).
  protocol::PeakFindingStats totals(double& mean_us) const;

 private:
  mutable std::mutex mutex_;
  Clock::duration period_;
  Clock::time_point next_send_{};
  std::optional<protocol::EventPeaks> pending_;
  protocol::PeakFindingStats stats_;
  double interval_us_sum_ = 0, interval_us_max_ = 0, total_us_sum_ = 0;
};

}  // namespace livedrp
