#pragma once
// What the livedrp-bench subcommands share: the bandwidths every figure is compared with
// (measured in the same run), percentiles, and the detectors the runtime benchmarks accept.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/detector.hpp"

namespace CLI {
class App;
}
namespace livedrp {
class DetectorSimulator;
class ThreadPool;
}  // namespace livedrp

namespace livedrp::bench {

// --seed, --json FILE and --markdown FILE, as every subcommand has them.
void add_common_options(CLI::App& command, std::uint64_t& seed, std::string& json_path,
                        std::string& markdown_path);

// True when a CUDA device can run `command`; otherwise says why on stderr and returns false.
bool cuda_ready(const char* command);

// Raw events 0 .. count-1 of `simulator` (the distinct events a benchmark cycles through).
std::vector<std::vector<std::uint8_t>> simulated_events(const DetectorSimulator& simulator,
                                                        int count, ThreadPool& pool);

// Element at rank q * (n - 1) (rounded) of the sorted values; -1 for none.
double percentile(std::vector<double> values, double q);

// A built-in detector, or "epix10ka_segment": one 352x384 segment of the ePix10ka2M.
DetectorDescription runtime_detector(const std::string& name);

#ifdef LIVEDRP_HAVE_CUDA
// Device-to-device cudaMemcpyAsync of `bytes`, read + write bytes per second / 1e9, median of
// `repeats` after two warm-up copies.
double device_copy_gbps(std::size_t bytes, int repeats);
// Pinned host-to-device copy of `bytes`, GB/s, median of `repeats` after one warm-up copy.
double pinned_h2d_gbps(std::size_t bytes, int repeats);
#endif

}  // namespace livedrp::bench
