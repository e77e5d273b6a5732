#pragma once
// What one rank keeps of its processed events for the collector (docs/mpi.md): the sums of its
// radial profiles over its averaging window and its newest hit. Fed on the engine thread by the
// engine's event observer; read by the rank's MPI thread for each report. Counts, drops and
// compression totals are not kept here: the engine's summary has them.
//
// The sums are what makes the merge exact: a profile average is sum / count per bin, so the
// collector adds the ranks' sums and counts and divides once, and the merged average is the
// average one engine would have of the same events (as long as every rank's window holds all of
// its events: integration.average_events >= the events of a rank).
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "exec/engine.hpp"
#include "peaks/peakfinder8.hpp"
#include "protocol/peaks_topic.hpp"
#include "protocol/profile_topic.hpp"

namespace livedrp::stages {
class PeakStage;
}

namespace livedrp::mpi {

struct ProfileSums {
  protocol::RadialUnit unit = protocol::RadialUnit::QInverseNm;
  std::vector<double> centres;
  std::uint64_t window = 1;           // integration.average_events of the rank
  std::uint64_t events = 0;           // events in the window now, 1 .. window
  std::vector<double> sum;            // per bin: the sum of the window's finite intensities
  std::vector<std::uint64_t> finite;  // per bin: how many of them were finite
  std::vector<double> latest;         // the newest event's profile (NaN: no pixel in the bin)
  std::uint64_t latest_sequence = 0, latest_pulse_id = 0;
};

class RankSums {
 public:
  // For Engine::set_event_observer; `this` must outlive the engine's run.
  EventObserver observer();
  // The window's sums; none before the first event with a profile.
  std::optional<ProfileSums> profile() const;
  // The newest hit's `peaks` message contents; none before the first hit.
  std::optional<protocol::EventPeaks> newest_hit() const;

 private:
  void add(const EventHeader& header, const std::vector<std::shared_ptr<stages::Stage>>& stages,
           const std::vector<stages::StageOutput>& outputs);
  void add_profile(const std::vector<double>& profile, double sign, std::int64_t step);

  mutable std::mutex mutex_;
  std::optional<ProfileSums> profile_;
  std::deque<std::vector<double>> window_;
  std::uint64_t added_since_resum_ = 0;
  struct Hit {
    EventHeader header;
    peaks::PeakList list;
    std::uint64_t version = 0;
    std::shared_ptr<const stages::PeakStage> stage;  // makes the message (x/y placement)
  };
  std::optional<Hit> hit_;
};

}  // namespace livedrp::mpi
