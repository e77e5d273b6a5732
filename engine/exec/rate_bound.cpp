#include "exec/rate_bound.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace livedrp {

namespace {

constexpr double kMicrosecondsPerSecond = 1e6;
constexpr double kBytesPerGigabyte = 1e9;

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string percent(double fraction) {
  return fixed(std::round(fraction * 100.0), 0) + "%";
}

std::string hertz(double rate_hz) {
  if (rate_hz >= 1000.0) return fixed(rate_hz / 1000.0, 1) + " kHz";
  return fixed(rate_hz, 1) + " Hz";
}

std::string microseconds(double us) {
  return fixed(us, 1) + " µs";
}

std::string lanes_text(std::uint64_t lanes) {
  return std::to_string(lanes) + (lanes == 1 ? " lane" : " lanes");
}

// A stage time usable in a sum: missing, negative or non-finite times count as none.
double usable_us(double mean_us) {
  return std::isfinite(mean_us) && mean_us > 0 ? mean_us : 0.0;
}

}  // namespace

protocol::RateBound rate_bound(const protocol::StatsPayload& interval,
                               const RateBoundFacts& facts) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double rate = interval.event_rate_hz;
  protocol::RateBound bound;

  // 1. Nothing processed: nothing to bound.
  if (!(std::isfinite(rate) && rate > 0)) {
    bound.by = protocol::kRateBoundIdle;
    bound.busy_fraction = 0;
    bound.why = "no event processed in the last second";
    if (interval.ring_occupancy > 0)
      bound.why += " while " + std::to_string(interval.ring_occupancy) +
                   (interval.ring_occupancy == 1 ? " event waits" : " events wait") +
                   " in the ring";
    return bound;
  }

  const std::uint64_t lanes =
      facts.lanes > 0 ? facts.lanes : std::max<std::uint64_t>(1, interval.streams.size());

  // Each stage's share of the lanes' time, their sum, and the largest (first on a tie).
  double stage_us_sum = 0;
  bool stages_timed = false;
  const protocol::StageTiming* largest = nullptr;
  std::string largest_name;
  double largest_busy = 0;
  for (std::size_t index = 0; index < interval.stages.size(); ++index) {
    const protocol::StageTiming& stage = interval.stages[index];
    const double us = usable_us(stage.mean_us);
    if (us == 0) continue;
    stages_timed = true;
    const double busy = rate * us / (kMicrosecondsPerSecond * double(lanes));
    stage_us_sum += us;
    if (!largest || busy > largest_busy) {
      largest = &stage;
      // `by` must not be empty (decoders refuse it): an unnamed stage is named by its place.
      largest_name = stage.name.empty() ? "stages[" + std::to_string(index) + "]" : stage.name;
      largest_busy = busy;
    }
  }

  // Summed in µs first: the lanes' busy fraction is then exact where the times are.
  const double lanes_busy = rate * stage_us_sum / (kMicrosecondsPerSecond * double(lanes));

  // The host-to-device copy: one link for every lane, host-fed sources only.
  const bool copy_known = !facts.device_resident && std::isfinite(facts.copy_gbps) &&
                          facts.copy_gbps > 0 && facts.event_bytes > 0;
  const double copy_gbps_now = rate * double(facts.event_bytes) / kBytesPerGigabyte;
  const double copy_busy = copy_known ? copy_gbps_now / facts.copy_gbps : nan;

  double pipeline_busy = stages_timed ? lanes_busy : nan;
  if (copy_known) pipeline_busy = stages_timed ? std::max(lanes_busy, copy_busy) : copy_busy;
  const std::string pipeline_text = std::isnan(pipeline_busy)
                                        ? std::string("no stage times in this interval")
                                        : "the pipeline is " + percent(pipeline_busy) + " busy";

  const bool ring_known = interval.ring_slots > 0;
  const double ring_fill = ring_known
                               ? double(std::min(interval.ring_occupancy, interval.ring_slots)) /
                                     double(interval.ring_slots)
                               : nan;
  const bool ring_full = ring_known && ring_fill >= kRingFullFraction;
  const bool ring_empty = ring_known && ring_fill <= kRingEmptyFraction;
  const std::string ring_text =
      ring_known ? "ring " + percent(ring_fill) + " full" : std::string("ring size unknown");

  const double paced = facts.paced_rate_hz;
  const bool is_paced = std::isfinite(paced) && paced > 0;

  // 2. A paced source that the pipeline keeps up with.
  if (is_paced && !ring_full &&
      rate >= std::min(paced * kPacingKeptFraction, paced - kPacingSlackHz)) {
    bound.by = protocol::kRateBoundPacing;
    bound.busy_fraction = pipeline_busy;
    bound.why =
        "paced at " + hertz(paced) + " and keeping up (" + hertz(rate) + "); " + pipeline_text;
    return bound;
  }

  // 3. A mostly empty ring: the pipeline waits for events.
  if (ring_empty) {
    bound.by = protocol::kRateBoundSource;
    bound.busy_fraction = pipeline_busy;
    if (is_paced)
      bound.why = "paced at " + hertz(paced) + " but only " + hertz(rate) +
                  " are processed and the " + ring_text + ": the source cannot keep its pace; " +
                  pipeline_text;
    else
      bound.why = ring_text + " while the source runs unpaced: the stages wait for events; " +
                  pipeline_text;
    return bound;
  }

  // 4. The pipeline: a near-full ring, or a saturated pipeline with the ring in between.
  if (ring_full || pipeline_busy >= kSaturatedBusyFraction) {
    if (copy_known && copy_busy >= kCopyBoundFraction) {
      bound.by = protocol::kRateBoundCopy;
      bound.busy_fraction = copy_busy;
      bound.why = ring_text + ": " + fixed(copy_gbps_now, 1) + " GB/s of host-to-device copies, " +
                  percent(copy_busy) + " of the " + fixed(facts.copy_gbps, 1) + " GB/s measured";
      return bound;
    }
    if (stages_timed && lanes_busy >= kStagesAccountFraction) {
      bound.by = largest_name;
      bound.busy_fraction = largest_busy;
      bound.why = ring_text + ": the stages keep " + lanes_text(lanes) + " " + percent(lanes_busy) +
                  " busy at " + hertz(rate) + "; " + largest_name + " takes " +
                  microseconds(usable_us(largest->mean_us)) + " of their " +
                  microseconds(stage_us_sum) + " per event";
      return bound;
    }
    bound.by = protocol::kRateBoundPipeline;
    bound.busy_fraction = stages_timed ? lanes_busy : nan;
    bound.why = stages_timed ? ring_text + " but the stages keep " + lanes_text(lanes) + " only " +
                                   percent(lanes_busy) +
                                   " busy: the time goes between them (launches, host "
                                   "submission and retirement, a ring too shallow for the "
                                   "latency)"
                             : ring_text + " and no stage times in this interval";
    return bound;
  }

  // 5. Nothing in the pipeline is saturated and the ring is not near full; without figures for
  // either, nothing can be told.
  if (std::isnan(pipeline_busy)) {
    bound.by = protocol::kRateBoundUnknown;
    bound.busy_fraction = nan;
    bound.why = ring_text + " and no stage times in this interval";
    return bound;
  }
  bound.by = protocol::kRateBoundSource;
  bound.busy_fraction = pipeline_busy;
  bound.why =
      ring_text + " and " + pipeline_text + ", below saturation: the stages wait for events";
  return bound;
}

}  // namespace livedrp
