#include "bench_common.hpp"

#include <algorithm>
#include <cstring>
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/thread_pool.hpp"
#include "exec/backend.hpp"
#include "sim/simulator.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/device.hpp"
#endif

namespace livedrp::bench {

void add_common_options(CLI::App& command, std::uint64_t& seed, std::string& json_path,
                        std::string& markdown_path) {
  command.add_option("--seed", seed, "simulator seed")->capture_default_str();
  command.add_option("--json", json_path, "write the results as JSON here");
  command.add_option("--markdown", markdown_path, "write the markdown table here");
}

bool cuda_ready(const char* command) {
  if (const auto reason = cuda_unavailable_reason()) {
    std::cerr << "livedrp-bench " << command << ": no usable CUDA device: " << *reason << "\n";
    return false;
  }
  return true;
}

std::vector<std::vector<std::uint8_t>> simulated_events(const DetectorSimulator& simulator,
                                                        int count, ThreadPool& pool) {
  std::vector<std::vector<std::uint8_t>> events(std::size_t(count > 0 ? count : 0));
  for (std::size_t i = 0; i < events.size(); ++i) {
    events[i].resize(simulator.detector().raw_event_bytes());
    simulator.generate(i, events[i].data(), nullptr, &pool);
  }
  return events;
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return -1;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, std::size_t(q * double(values.size() - 1) + 0.5))];
}

DetectorDescription runtime_detector(const std::string& name) {
  if (name != "epix10ka_segment") return find_detector(name);
  DetectorDescription d = find_detector("epix10ka2m");
  d.name = "epix10ka_segment";
  d.description = "one 352x384 segment of the ePix10ka2M";
  d.segments = 1;
  d.placement.resize(1);
  return d;
}

#ifdef LIVEDRP_HAVE_CUDA

double device_copy_gbps(std::size_t bytes, int repeats) {
  gpu::DeviceBuffer a(bytes), b(bytes);
  gpu::Stream stream;
  gpu::fill_async(a.get(), 0x5A, bytes, stream);
  gpu::Event start, stop;
  std::vector<double> gbps;
  for (int r = 0; r < repeats + 2; ++r) {
    start.record(stream);
    gpu::copy_async(b.get(), a.get(), bytes, stream, "device-to-device bandwidth test");
    stop.record(stream);
    stop.synchronize();
    if (r >= 2) gbps.push_back(2.0 * double(bytes) / (stop.elapsed_ms_since(start) * 1e-3) * 1e-9);
  }
  return percentile(gbps, 0.5);
}

double pinned_h2d_gbps(std::size_t bytes, int repeats) {
  gpu::PinnedBuffer host(bytes);
  std::memset(host.get(), 0x5A, bytes);
  gpu::DeviceBuffer device(bytes);
  gpu::Stream stream;
  gpu::Event start, stop;
  std::vector<double> gbps;
  for (int r = 0; r < repeats + 1; ++r) {
    start.record(stream);
    gpu::copy_async(device.get(), host.get(), bytes, stream, "host-to-device bandwidth test");
    stop.record(stream);
    stop.synchronize();
    if (r >= 1) gbps.push_back(double(bytes) / (stop.elapsed_ms_since(start) * 1e-3) * 1e-9);
  }
  return percentile(gbps, 0.5);
}

#endif

}  // namespace livedrp::bench
