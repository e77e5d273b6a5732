#pragma once
// One engine's share of the events when many engines run one run (engine/mpi, docs/mpi.md,
// "Sharing"). A common source (the simulator, a replay of one file set) is read by every engine,
// and each hands on only its share of it: by the event's index over the run, or by its pulse id,
// modulo the number of shares. An engine with an input of its own (mpi.inputs: its own file set
// or detector stream) takes every event of it.
//
// Sequences stay unique over the engines, so that the collector's merged messages name each event
// once: under a common source the sequence is the event's index over the run (the identity one
// engine would give it); on an own input it is the engine's own index interleaved with the other
// shares', local * count + index (rank order of the shares; it rises on every engine, and
// sequence % count says whose event it is).
#include <cstdint>

namespace livedrp {

struct EventShare {
  enum class By {
    EventIndex,  // a common source: index over the run modulo count
    PulseId,     // a common source: pulse id modulo count
    OwnInput,    // the engine's own input: every event; sequences interleaved
  };
  std::uint64_t index = 0;  // which share, 0 .. count - 1
  std::uint64_t count = 1;  // how many shares the run has
  By by = By::EventIndex;

  // Whether the share is a part of a common source that the other engines read as well (a live
  // stream or the device-resident source cannot be one: each event reaches one reader only).
  bool splits_a_common_source() const { return count > 1 && by != By::OwnInput; }

  // Whether the event at `run_index` (0-based, over the whole common source) with `pulse_id` is
  // this share's. Every event of an own input is.
  bool takes(std::uint64_t run_index, std::uint64_t pulse_id) const {
    switch (by) {
      case By::EventIndex:
        return run_index % count == index;
      case By::PulseId:
        return pulse_id % count == index;
      case By::OwnInput:
        return true;
    }
    return true;
  }

  // The sequence an event of this share carries: `run_index` for a common source, the own
  // input's `local_index` interleaved for an own input ({0, 1}: the same either way).
  std::uint64_t sequence(std::uint64_t run_index, std::uint64_t local_index) const {
    return by == By::OwnInput ? local_index * count + index : run_index;
  }
};

}  // namespace livedrp
