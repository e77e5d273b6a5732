#pragma once
// livedrp-bench peaks: peakfinder8 on the GPU against the CPU reference and the memory floor
// (see bench_peaks.cpp).
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace livedrp::bench {

struct PeaksBenchOptions {
  int events = 2000;                  // timed events per GPU row
  int distinct = 8;                   // distinct simulated hit frames, rotated
  int cpu_events = 4;                 // events of the CPU baseline row
  std::vector<int> streams = {1, 4};  // GPU rows
  int peaks_per_hit = 120;            // simulated Bragg peaks per frame (about 40% land on the
                                      // high-gain ASICs the finder looks at)
  std::uint64_t seed = 20260101;
  std::string json_path, markdown_path;
};

void add_peaks_options(CLI::App& command, PeaksBenchOptions& options);
// 0 done, 1 run failure; throws InputError on bad input.
int run_peaks(const PeaksBenchOptions& options);

}  // namespace livedrp::bench
