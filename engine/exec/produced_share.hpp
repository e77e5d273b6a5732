#pragma once
// A share of the events (exec/event_share.hpp) for a source that makes its events itself rather
// than reading them: the device-resident source's simulated DMA producer, which writes event
// after event into GPU memory with pulse ids first_pulse_id + pulses_per_event * n and the data
// of its pool's event n % pool. Such a producer cannot skip the other shares' events as a host
// source does (it never hands them to the host), so an engine of many makes only its own: the
// run's events i = offset + stride * j (j = 0, 1, ...), which for a share of the common
// simulated source are exactly the events EventShare::takes() picks, with the run's pulse ids,
// data and sequences; for an own input every event of its own simulator, with interleaved
// sequences. Host code only: the producer is configured with what this returns.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "exec/event_share.hpp"

namespace livedrp {

struct ProducedShare {
  bool none = false;                   // the share holds no event of the run (nothing to make)
  std::uint64_t events = 0;            // to make; 0 (and not none): without end, as the run
  std::uint64_t offset = 0;            // the run's event index of the share's first event
  std::uint64_t stride = 1;            // between the share's events, in run events
  std::uint64_t first_pulse_id = 0;    // of the share's first event
  std::uint64_t pulses_per_event = 0;  // between the share's events
  double rate_hz = 0;                  // the producer's rate (0: as fast as it can)
  // The producer's pool event m is the run's pool event pool_order[m] (so that its event j
  // holds the data the run's event offset + stride * j holds).
  std::vector<std::size_t> pool_order;
  bool own_input = false;
  std::uint64_t index = 0, count = 1;  // the share's (for an own input's sequences)

  // The sequence of the producer's j-th event: the run's index offset + stride * j for a common
  // source, the interleaved j * count + index for an own input (as EventShare::sequence).
  std::uint64_t sequence(std::uint64_t j) const {
    return own_input ? j * count + index : offset + stride * j;
  }
};

// The producer's part for `share` of a simulated run of `events` events (0: without end) at
// `rate_hz` (0: flat out) whose event i has pulse id first_pulse_id + pulses_per_event * i and
// the data of pool event i % pool_size.
ProducedShare produced_share(const EventShare& share, std::uint64_t events, double rate_hz,
                             std::uint64_t first_pulse_id, std::uint64_t pulses_per_event,
                             std::size_t pool_size);

}  // namespace livedrp
