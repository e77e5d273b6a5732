// livedrp-bench resident: the device-resident source (doorbell ring in GPU memory, producer kernel)
// with each consumer, over the same events.
//
//   livedrp-bench resident [--detector epix10ka2m|epix10ka_segment] [--events N]
//                          [--launch plain,graph,device_graph,persistent] [--lanes 1,4]
//                          [--producer in_place,copy] [--common-mode off,on] [--ring 32]
//                          [--rate HZ] [--checksum] [--json FILE] [--markdown FILE]
//
// Rows: every (common mode, producer) pair with every consumer (launch x lanes; persistent has
// one kernel, so no lanes). Per row the pipeline runs warm-up + N events flat out (or at --rate);
// events/s from the device clock (first to last timed completion); latency from the producer's
// doorbell to the result (device: the consumer's completion time; host: when the host thread read
// the record, through the clock offset measured at start), p50 and p99.
//
// Floor: the bytes each event must move through HBM over the device-to-device copy bandwidth
// measured in the same run. Calibration: pixels * (raw + 8 + 1 + 4) bytes; the copy producer adds
// the raw event read from the pool and written into the slot (2 * raw). The in_place producer
// writes only the header and doorbell: it models a DMA engine (an FPGA) whose writes arrive over
// the bus, not a kernel's. The baseline of each (common mode, producer) pair is plain launches on
// one lane, measured in the same run, so each row is also a ratio.
#include "bench_resident.hpp"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "exec/backend.hpp"
#include "exec/stream_config.hpp"
#include "sim/simulator.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/cuda_calibrator.hpp"
#include "cuda/device.hpp"
#include "cuda/resident/resident_pipeline.hpp"
#endif

namespace livedrp::bench {
namespace {

constexpr int kDistinct = 8;            // pool events (in_place: the ring is a multiple of this)
constexpr std::uint64_t kWarmup = 256;  // untimed events per row
constexpr std::size_t kCopyProbeBytes = std::size_t(1) << 30;

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

LaunchMode parse_launch(const std::string& s) {
  if (s == "plain") return LaunchMode::Plain;
  if (s == "graph") return LaunchMode::Graph;
  if (s == "device_graph") return LaunchMode::DeviceGraph;
  return LaunchMode::Persistent;
}

#ifdef LIVEDRP_HAVE_CUDA

struct Row {
  gpu::ResidentConfig config;
  std::string label;
  std::uint64_t events = 0;
  double seconds = 0;
  double device_p50_us = 0, device_p99_us = 0, host_p50_us = 0, host_p99_us = 0;
  std::size_t bytes_per_event = 0;  // the floor's bytes
  std::size_t raw_bytes = 0;
  std::size_t gpu_bytes = 0;
  double events_per_s() const { return double(events) / seconds; }
};

Row run_row(const DetectorDescription& d, const CalibrationConstants& c,
            const std::vector<std::vector<std::uint8_t>>& pool, const gpu::ResidentConfig& config,
            std::uint64_t timed) {
  gpu::ResidentConfig run = config;
  run.events = kWarmup + timed;
  gpu::ResidentPipeline pipeline(d, c, pool, run);
  Row row;
  row.config = config;
  row.label = pipeline.describe();
  row.raw_bytes = d.raw_event_bytes();
  row.gpu_bytes = pipeline.device_bytes();
  row.bytes_per_event = gpu::calibration_bytes_per_event(d) +
                        (config.producer == gpu::ProducerMode::Copy ? 2 * d.raw_event_bytes() : 0);
  std::vector<double> device_us, host_us;
  device_us.reserve(timed);
  host_us.reserve(timed);
  std::uint64_t first_done = 0, last_done = 0, n = 0;
  pipeline.start();
  while (auto r = pipeline.next_result(true, 30.0)) {
    if (r->sequence >= kWarmup) {
      if (r->sequence == kWarmup) first_done = r->done_ns;
      last_done = r->done_ns;
      device_us.push_back(double(r->done_ns - r->doorbell_ns) * 1e-3);
      host_us.push_back(double(r->seen_host_ns - pipeline.to_host_ns(r->doorbell_ns)) * 1e-3);
    }
    ++n;
  }
  pipeline.stop();
  if (n != run.events)
    throw RuntimeFault("resident benchmark: " + std::to_string(n) + " results for " +
                       std::to_string(run.events) + " events");
  row.events = timed - 1;  // intervals between the first and the last timed completion
  row.seconds = double(last_done - first_done) * 1e-9;
  row.device_p50_us = percentile(device_us, 0.5);
  row.device_p99_us = percentile(device_us, 0.99);
  row.host_p50_us = percentile(host_us, 0.5);
  row.host_p99_us = percentile(host_us, 0.99);
  return row;
}

#endif

}  // namespace

void add_resident_options(CLI::App& command, ResidentOptions& o) {
  command.add_option("--detector", o.detector, "epix10ka2m, epix10ka_segment, or any detector")
      ->capture_default_str();
  command.add_option("--events", o.events, "timed events per row")
      ->check(CLI::Range(1000, 100000000))
      ->capture_default_str();
  command.add_option("--launch", o.launch, "plain,graph,device_graph,persistent")
      ->delimiter(',')
      ->check(CLI::IsMember({"plain", "graph", "device_graph", "persistent"}))
      ->capture_default_str();
  command.add_option("--lanes", o.lanes, "consumer lanes (streams) of the launched modes")
      ->delimiter(',')
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  command.add_option("--producer", o.producer, "in_place,copy")
      ->delimiter(',')
      ->check(CLI::IsMember({"in_place", "copy"}))
      ->capture_default_str();
  command.add_option("--common-mode", o.common_mode, "off,on")
      ->delimiter(',')
      ->check(CLI::IsMember({"off", "on"}))
      ->capture_default_str();
  command.add_option("--ring", o.ring_slots, "device ring slots (a multiple of 8)")
      ->check(CLI::Range(8, 1024))
      ->capture_default_str();
  command.add_option("--rate", o.rate_hz, "producer rate in Hz; 0 = flat out")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command.add_flag("--checksum", o.checksum,
                   "compute each event's image checksum (as the tests do)");
  add_common_options(command, o.seed, o.json_path, o.markdown_path);
}

int run_resident(const ResidentOptions& o) {
#ifndef LIVEDRP_HAVE_CUDA
  (void)o;
  std::cerr << "livedrp-bench resident: built without CUDA\n";
  return 1;
#else
  if (!cuda_ready("resident")) return 1;
  if (o.ring_slots % kDistinct != 0)
    throw InputError("--ring " + std::to_string(o.ring_slots) + ": must be a multiple of " +
                     std::to_string(kDistinct) + " (the event pool)");
  const DetectorDescription d = runtime_detector(o.detector);
  ThreadPool threads;
  SimulatorConfig sim;
  sim.seed = o.seed;
  DetectorSimulator simulator(d, sim, &threads);
  const std::vector<std::vector<std::uint8_t>> pool =
      simulated_events(simulator, kDistinct, threads);
  const auto properties = gpu::device_properties();
  const double copy_gbps = device_copy_gbps(kCopyProbeBytes, 10);
  std::cerr << "device " << properties.name << ", device-to-device copy " << fixed(copy_gbps, 0)
            << " GB/s\n";

  std::vector<Row> rows;
  std::vector<std::size_t> baseline_of;  // index of each row's baseline
  for (const std::string& cm : o.common_mode)
    for (const std::string& producer : o.producer) {
      gpu::ResidentConfig base;
      base.launch = LaunchMode::Plain;
      base.lanes = 1;
      base.ring_slots = o.ring_slots;
      base.producer = producer == "copy" ? gpu::ProducerMode::Copy : gpu::ProducerMode::InPlace;
      base.rate_hz = o.rate_hz;
      base.checksum = o.checksum;
      base.params.common_mode = cm == "on";
      std::vector<gpu::ResidentConfig> configs = {base};
      for (const std::string& launch : o.launch)
        for (const int lanes : o.lanes) {
          gpu::ResidentConfig c = base;
          c.launch = parse_launch(launch);
          c.lanes = lanes;
          if (c.launch == LaunchMode::Persistent && lanes != o.lanes.front()) continue;
          if (c.launch == LaunchMode::Persistent) c.lanes = 1;
          if (c.launch == base.launch && c.lanes == base.lanes) continue;
          configs.push_back(c);
        }
      const std::size_t base_index = rows.size();
      for (const gpu::ResidentConfig& c : configs) {
        Row row = run_row(d, simulator.constants(), pool, c, o.events);
        std::cerr << "cm " << cm << " | " << row.label << " | " << fixed(row.events_per_s(), 0)
                  << " ev/s | host p99 " << fixed(row.host_p99_us, 1) << " us\n";
        rows.push_back(row);
        baseline_of.push_back(base_index);
      }
    }

  nlohmann::json j;
  j["benchmark"] = "livedrp-bench resident";
  j["detector"] = to_json(d);
  j["device"] = {{"name", properties.name},
                 {"multiprocessors", properties.multiprocessors},
                 {"runtime_version", properties.runtime_version},
                 {"driver_version", properties.driver_version}};
  j["device_copy_gbps"] = copy_gbps;
  j["events_per_row"] = o.events;
  j["warmup_events"] = kWarmup;
  j["ring_slots"] = o.ring_slots;
  j["rate_hz"] = o.rate_hz;
  j["rows"] = nlohmann::json::array();
  std::ostringstream m;
  m << "## livedrp-bench resident: " << d.name << "\n\n";
  m << "- device: " << properties.name << "; raw event " << d.raw_event_bytes() << " bytes; "
    << o.events << " timed events per row after " << kWarmup << " warm-up; ring " << o.ring_slots
    << " slots; " << (o.rate_hz > 0 ? fixed(o.rate_hz, 0) + " Hz" : std::string("flat out"))
    << (o.checksum ? "; image checksums on" : "") << "\n";
  m << "- device-to-device copy measured in this run: " << fixed(copy_gbps, 0)
    << " GB/s; floor = copy bandwidth / bytes per event (calibration "
    << gpu::calibration_bytes_per_event(d) << " B; the copy producer adds "
    << 2 * d.raw_event_bytes() << " B)\n";
  m << "- latency from the producer's doorbell: device = to the consumer's completion (device "
       "clock); host = to the host thread reading the result\n\n";
  m << "| common mode | producer | consumer | events/s | of floor | device p50 us | p99 us | "
       "host p50 us | p99 us | GPU MiB | x baseline |\n";
  m << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const Row& b = rows[baseline_of[i]];
    const double floor_events = copy_gbps * 1e9 / double(r.bytes_per_event);
    const double ratio = r.events_per_s() / b.events_per_s();
    std::string consumer(to_string(r.config.launch));
    if (r.config.launch != LaunchMode::Persistent)
      consumer += " x" + std::to_string(r.config.lanes);
    j["rows"].push_back({{"common_mode", r.config.params.common_mode},
                         {"producer", std::string(gpu::to_string(r.config.producer))},
                         {"launch", std::string(to_string(r.config.launch))},
                         {"lanes", r.config.lanes},
                         {"label", r.label},
                         {"events_per_s", r.events_per_s()},
                         {"raw_gbps", r.events_per_s() * double(r.raw_bytes) * 1e-9},
                         {"bytes_per_event", r.bytes_per_event},
                         {"floor_events_per_s", floor_events},
                         {"fraction_of_floor", r.events_per_s() / floor_events},
                         {"device_latency_p50_us", r.device_p50_us},
                         {"device_latency_p99_us", r.device_p99_us},
                         {"host_latency_p50_us", r.host_p50_us},
                         {"host_latency_p99_us", r.host_p99_us},
                         {"gpu_memory_bytes", r.gpu_bytes},
                         {"ratio_to_baseline", ratio}});
    m << "| " << (r.config.params.common_mode ? "on" : "off") << " | "
      << gpu::to_string(r.config.producer) << " | " << consumer << " | "
      << fixed(r.events_per_s(), 0) << " | " << fixed(r.events_per_s() / floor_events, 2) << " | "
      << fixed(r.device_p50_us, 1) << " | " << fixed(r.device_p99_us, 1) << " | "
      << fixed(r.host_p50_us, 1) << " | " << fixed(r.host_p99_us, 1) << " | "
      << fixed(double(r.gpu_bytes) / (1 << 20), 0) << " | " << fixed(ratio, 2) << " |\n";
  }
  std::cout << m.str();
  if (!o.json_path.empty()) std::ofstream(o.json_path) << j.dump(2) << "\n";
  if (!o.markdown_path.empty()) std::ofstream(o.markdown_path) << m.str();
  return 0;
#endif
}

}  // namespace livedrp::bench
