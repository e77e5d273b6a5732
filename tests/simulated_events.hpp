#pragma once
// A few simulated ePix10ka2M events (raw bytes and headers) that replay tests write to files and
// expect back bit for bit.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/detector.hpp"
#include "core/event.hpp"
#include "core/thread_pool.hpp"
#include "sim/simulator.hpp"

namespace livedrp::test {

struct SimulatedEvents {
  DetectorDescription detector = find_detector("epix10ka2m");
  std::vector<std::vector<std::byte>> raw;
  std::vector<EventHeader> headers;
  explicit SimulatedEvents(std::uint64_t count) {
    ThreadPool pool(2);
    DetectorSimulator simulator(detector, SimulatorConfig{}, &pool);
    for (std::uint64_t i = 0; i < count; ++i) {
      raw.emplace_back(detector.raw_event_bytes());
      simulator.generate(i, raw.back().data(), nullptr, &pool);
      headers.push_back(simulator.header_for(i));
    }
  }
};

}  // namespace livedrp::test
