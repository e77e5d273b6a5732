#pragma once
// What bounds the processed event rate now: the `rate_bound` verdict of a `stats` message
// (docs/protocol.md), computed from the interval's own figures plus a few facts of the run that
// the payload does not carry. Pure and Qt-free: the engine's stats reporter calls it once per
// interval, and a headless client gets the same verdict the GUI shows.
//
// The rule, in this order (the first that applies decides):
//  1. "idle": no event was processed in the rate window (event_rate_hz is 0 or not a number).
//     busy_fraction 0.
//  2. "pacing": the source is paced (rate_hz > 0), the processed rate keeps up with the pace
//     (within kPacingKeptFraction, or kPacingSlackHz at low rates) and the ring is not near
//     full. The pipeline could go faster; busy_fraction is its busy fraction (below), the
//     headroom left.
//  3. "source": the ring is mostly empty (occupancy <= kRingEmptyFraction of its slots). An
//     unpaced source that waits for free slots fills the ring whenever the pipeline is slower
//     than it, and a paced one that cannot keep up leaves its ring full too; a mostly empty
//     ring means the pipeline waits for events: the producer (simulator, replay reader,
//     detector stream), or its pace when the rate falls short of it, is what bounds.
//     busy_fraction is the pipeline's (headroom).
//  4. The pipeline bounds when the ring is near full (>= kRingFullFraction: events wait for
//     it), or, with the ring in between (a snapshot, noisy) or of unknown size, when the
//     pipeline is at least kSaturatedBusyFraction busy. Within the pipeline:
//       - "copy" when the copy's busy fraction, event_rate x event_bytes / measured host-to-
//         device bandwidth, is at least kCopyBoundFraction (host-fed sources only, and only
//         when both numbers are known);
//       - else the stage with the largest busy fraction, event_rate x mean_us x 1e-6 / lanes
//         (its share of the lanes' time; the first in pipeline order on a tie), when the
//         stages together keep the lanes at least kStagesAccountFraction busy;
//       - else "pipeline": the lanes are the bound but the time goes outside the timed stages
//         (launch gaps, host submission and retirement, a ring too shallow for the latency);
//         busy_fraction is the lanes' (the sum over stages), NaN without any stage time.
//  5. Otherwise "source": the ring is not near full and nothing in the pipeline is saturated;
//     "unknown" (busy_fraction NaN) when the interval has no figure to judge the pipeline by
//     (no stage time, no copy figures) and the ring is neither near full nor mostly empty.
//
// The pipeline's busy fraction (rules 2 and 3) is the larger of the lanes' (the sum of the
// stages' busy fractions) and the copy's, when known; NaN without any of them.
// Stage times that are missing, negative or not a number count as no time.
#include <cstdint>

#include "protocol/topics.hpp"

namespace livedrp {

// The run's facts that the stats payload does not carry.
struct RateBoundFacts {
  double paced_rate_hz = 0;  // the source's pace (EngineConfig::rate_hz); 0 = as fast as possible
  // Events the stages work on at once: CUDA streams; 1 for the CPU backend (one event at a
  // time, spread over its threads). 0 = one per entry of the interval's `streams` (at least 1).
  std::uint64_t lanes = 0;
  bool device_resident = false;   // events land in GPU memory (runtime.source device): no copy
  double copy_gbps = 0;           // measured host-to-device bandwidth, 1e9 B/s; 0 = unknown
  std::uint64_t event_bytes = 0;  // raw bytes copied per event; 0 = unknown
};

// A paced source keeps up when it processes at least this share of its pace: the rate is
// counted over a window of about one second, and a pace the pipeline truly cannot follow falls
// further behind than 5 % (the ring fills and the drop policy takes the rest).
inline constexpr double kPacingKeptFraction = 0.95;
// ... or when it falls short by at most this: one event more or fewer in the engine's rate
// window (at least one second) moves event_rate_hz by up to 1 Hz, 10 % at a 10 Hz pace.
inline constexpr double kPacingSlackHz = 1.0;
// At or above this share of its slots the ring is "near full": the producer claims a slot as
// soon as one frees, so a ring that the pipeline cannot drain stays within a few completions of
// full at any snapshot; a quarter free is more than the completions between two claims.
inline constexpr double kRingFullFraction = 0.75;
// At or below this share the ring is "mostly empty". With the pipeline keeping up, the ring
// holds only the events in service: rate x their time in the lanes, about lanes x the lanes'
// busy fraction (Little's law), so at most 8 of the default 32 slots for up to 8 lanes.
inline constexpr double kRingEmptyFraction = 0.25;
// With the ring in between, the pipeline bounds when it is at least this busy: beyond it, rate
// fluctuations queue events, which is what a full ring would show at the next snapshot.
inline constexpr double kSaturatedBusyFraction = 0.9;
// The copy bounds at this share of the measured bandwidth: the measurement is a best case (large
// transfers on an idle bus); within 10 % of it the copy has no headroom the engine could use.
inline constexpr double kCopyBoundFraction = 0.9;
// A stage is named as the bound only when the timed stages keep the lanes at least this busy:
// then speeding up the largest stage is what raises the rate. Below it, more than half of the
// lanes' time goes between stages, and no single stage is the answer ("pipeline").
inline constexpr double kStagesAccountFraction = 0.5;

protocol::RateBound rate_bound(const protocol::StatsPayload& interval, const RateBoundFacts& facts);

}  // namespace livedrp
