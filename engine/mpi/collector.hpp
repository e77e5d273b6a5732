#pragma once
// The collector's merge (docs/mpi.md; no MPI here, so the arithmetic stands on its own): the
// newest report of every processing rank, merged into the usual topics. Counts, drops by reason,
// compression bytes and peak-finding counts are sums over the ranks; profiles merge as sums of
// their per-bin sums and counts (exactly the average one engine would have of the same events);
// the newest hit is the one with the highest pulse id. Rates are the sum of each rank's rate
// between its last two reports. Latencies merge as the ranks' histograms added bin by bin: the
// run's percentiles are what one engine's histogram of all events would give; a `stats`
// message's are those of the latencies added since the previous one.
#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exec/engine.hpp"
#include "mpi/rank_report.hpp"
#include "protocol/ranks_block.hpp"
#include "protocol/topics.hpp"

namespace livedrp::mpi {

class Collector {
 public:
  using Clock = std::chrono::steady_clock;
  // `processing`: the ranks that take a share (their reports are awaited), in rank order.
  Collector(int size, int collector_rank, bool collector_processes, std::vector<int> processing,
            Clock::time_point start);

  // A rank's report as it arrives. Throws RuntimeFault for a rank that does not process, or a
  // report after its final one.
  void take(RankReport report, Clock::time_point now);
  // Ranks not heard from for `limit` (since their last report, or since the start) are lost:
  // their process or node is gone. Their last counts stay in the merge; the run goes on without
  // them. Returns the ranks lost by this call. A report from a lost rank takes it back.
  std::vector<int> mark_silent(Clock::time_point now, Clock::duration limit);
  bool lost(int rank) const;
  // Every processing rank has sent its final report or is lost.
  bool all_final() const;
  bool any_report() const;

  // The `stats` payload now: the ranks' sums, the rates of their last reports, interval blocks
  // (compression, peak finding) since the previous call, and the `ranks` block.
  protocol::StatsPayload take_stats(Clock::time_point now);
  // The merged profile when a rank's profile changed since the previous call; none otherwise.
  std::optional<protocol::RadialProfile> take_profile();
  // The newest hit over the ranks, when it is newer than the one the previous call returned.
  std::optional<protocol::EventPeaks> take_newest_hit();
  // The newest `image` event over the ranks (by pulse id), when it is newer than the one the
  // previous call returned.
  std::optional<protocol::ImageFrame> take_newest_image();
  // The ranks' forwarded stage messages (fidelity, stages registered outside the engine) that
  // came with reports since the previous call, in arrival order: published as they are.
  std::vector<protocol::Message> take_forwarded();
  void count_peaks_message() { ++peaks_messages_; }
  // The run's summary: whole-run counts and rates (elapsed: the longest rank's).
  RunSummary summary(Clock::time_point now) const;
  protocol::RanksBlock ranks_block(Clock::time_point now) const;
  // Processing ranks whose run stopped on a fault or that were lost, each "rank N: <why>";
  // empty when none.
  std::string failures() const;

 private:
  struct Rank {
    int rank = 0;
    std::optional<RankReport> report;
    Clock::time_point heard{};
    double rate_hz = std::numeric_limits<double>::quiet_NaN();  // between its last two reports
    bool lost = false;
    std::string lost_reason;
    std::uint64_t profile_sequence = 0;  // of the profile merged last
    bool profile_seen = false;
    // Its newest image: a report carries one only when the rank kept a new one, so it stays
    // here across reports without.
    std::optional<protocol::ImageFrame> image;
  };
  protocol::StatsPayload sums() const;  // counts, totals, stages, backend names
  LatencyHistogram latencies() const;   // the ranks' histograms added

  int size_, collector_rank_;
  bool collector_processes_;
  Clock::time_point start_;
  std::map<int, Rank> ranks_;
  // The totals at the previous take_stats, for the interval blocks.
  std::uint64_t last_bytes_in_ = 0, last_bytes_out_ = 0;
  std::uint64_t last_peak_events_ = 0, last_peak_hits_ = 0, last_peaks_ = 0;
  std::array<std::uint64_t, LatencyHistogram::kBins> last_latency_bins_{};
  std::uint64_t newest_hit_pulse_ = 0;
  bool newest_hit_taken_ = false;
  std::uint64_t newest_image_pulse_ = 0;
  bool newest_image_taken_ = false;
  std::vector<protocol::Message> forwarded_;
  std::uint64_t peaks_messages_ = 0;
};

}  // namespace livedrp::mpi
