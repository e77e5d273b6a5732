#pragma once
#include <cstdint>

namespace livedrp {

// What identifies one detector readout. The raw segments travel beside it (in a ring slot).
struct EventHeader {
  std::uint64_t sequence = 0;     // 0, 1, 2, ... in the order the source produced events
  std::uint64_t pulse_id = 0;     // accelerator pulse id; rises with sequence
  std::int64_t timestamp_ns = 0;  // source time, nanoseconds since the Unix epoch
};

}  // namespace livedrp
