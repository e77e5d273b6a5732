#pragma once
// livedrp-bench integrate: azimuthal integration on the GPU against an atomic-add histogram
// kernel, the memory floor and the CPU integrator (see bench_integrate.cpp).
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace livedrp::bench {

struct IntegrateBenchOptions {
  int events = 4000;                  // timed frames per GPU row
  int distinct = 8;                   // distinct simulated frames, rotated
  int cpu_events = 8;                 // frames of the CPU row
  std::vector<int> streams = {1, 4};  // GPU rows
  int batch = 8;                      // frames per launch of the batched rows (<= distinct)
  int bins = 1000;
  std::string only;  // only the GPU rows whose path contains this (all when empty)
  std::uint64_t seed = 20260101;
  std::string json_path, markdown_path;
};

void add_integrate_options(CLI::App& command, IntegrateBenchOptions& options);
// 0 done, 1 run failure; throws InputError on bad input, RuntimeFault when the GPU's profile of
// a frame differs from the CPU's by more than 1e-5 relative.
int run_integrate(const IntegrateBenchOptions& options);

}  // namespace livedrp::bench
