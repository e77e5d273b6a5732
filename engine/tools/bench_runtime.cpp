// livedrp-bench runtime: the CUDA runtime's stream configurations over the same events.
//
//   livedrp-bench runtime [--detector epix10ka2m|epix10ka_segment] [--events N]
//                         [--streams 1,2,4,8] [--launch plain,graph] [--batch 1,4]
//                         [--segments all,one] [--threads one_for_all,per_stream]
//                         [--source host,device] [--json FILE] [--markdown FILE]
//
// Rows (every combination of the lists, per source):
//   source host    the CUDA backend exactly as the engine drives it (make_cuda_backend with the
//                  row's StreamConfig): events in a pinned host ring, admission numbers, submit
//                  while can_submit, completions from next_completed; latency = host time from
//                  submit to the completion being returned (p50, p99). GB/s = raw bytes copied to
//                  the device; compared with the pinned host-to-device bandwidth measured in the
//                  same run.
//   source device  a pool of simulated events already in device memory (8 distinct events per
//                  lane, rotated) launched through the same DeviceCalibrator::launch_batch, plain
//                  or as one CUDA graph per (lane, batch position) replayed; the host enqueues
//                  every launch ahead and waits once at the end. This is the launch and kernel
//                  ceiling of a device-resident source; it is NOT the doorbell ring of issue 3
//                  (no doorbell words, no device-side waiting, no per-event device timestamps),
//                  so it has no latency column.
// Each row is also a ratio to the baseline of its source (1 stream, plain, K = 1, all segments),
// measured in the same run. GPU memory = device memory in use while the row's buffers exist,
// minus what was in use before.
#include "bench_runtime.hpp"
#include "bench_common.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "exec/backend.hpp"
#include "exec/stream_config.hpp"
#include "sim/simulator.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/cuda_calibrator.hpp"
#include "cuda/device.hpp"
#include "cuda/launch_graph.hpp"
#endif

namespace livedrp::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Distinct simulated events (the host ring cycles over copies of them; the device pool holds
// this many per lane): 8 x 4 MB raw + 8 x 8.6 MB out per lane is over the 60 MB L2 at >= 1 lane.
constexpr int kDistinct = 8;
// Untimed events before each row, so graph capture and first-touch costs stay out.
constexpr int kWarmup = 64;
constexpr std::size_t kH2dProbeBytes = std::size_t(256) << 20;

struct Row {
  StreamConfig config;
  int events = 0;
  double seconds = 0;
  std::size_t raw_bytes = 0;
  std::size_t gpu_memory_bytes = 0;
  double latency_p50_us = -1, latency_p99_us = -1;
  double events_per_s() const { return events / seconds; }
  double gbps() const { return events_per_s() * double(raw_bytes) * 1e-9; }
};

#ifdef LIVEDRP_HAVE_CUDA

Row run_host_row(const DetectorDescription& d, const CalibrationConstants& c,
                 const std::vector<std::vector<std::uint8_t>>& events, const StreamConfig& config,
                 int timed_events) {
  const std::size_t base_memory = gpu::device_memory_used();
  auto backend = make_cuda_backend(d, c, calib::CalibrationParams{}, config);
  Row row;
  row.config = config;
  row.raw_bytes = d.raw_event_bytes();
  row.gpu_memory_bytes = gpu::device_memory_used() - base_memory;
  // Ring slots: enough that a slot is never rewritten while its event is in flight.
  const int ring_slots = std::max(
      2 * kDistinct, config.streams * config.slots_per_stream * config.batch + config.batch);
  std::vector<void*> ring;
  for (int i = 0; i < ring_slots; ++i) {
    ring.push_back(backend->allocate_host(d.raw_event_bytes()));
    std::memcpy(ring.back(), events[std::size_t(i % kDistinct)].data(), d.raw_event_bytes());
  }
  const int total = kWarmup + timed_events;
  std::vector<Clock::time_point> submitted_at(static_cast<std::size_t>(total));
  std::vector<double> latency_us;
  latency_us.reserve(std::size_t(timed_events));
  int submitted = 0, completed = 0;
  Clock::time_point start;
  auto retire = [&](const CompletedEvent& done) {
    if (done.admission >= std::uint64_t(kWarmup))
      latency_us.push_back(
          std::chrono::duration<double, std::micro>(Clock::now() - submitted_at[done.admission])
              .count());
    ++completed;
    if (completed == kWarmup) start = Clock::now();
  };
  while (completed < total) {
    // Submit only up to the warm-up until it is retired, so timing starts on an idle pipeline.
    const int limit = completed < kWarmup ? kWarmup : total;
    while (submitted < limit && backend->can_submit()) {
      BackendEvent event;
      event.header.sequence = std::uint64_t(submitted);
      event.ring_slot = submitted % ring_slots;
      event.raw = ring[std::size_t(event.ring_slot)];
      event.admission = std::uint64_t(submitted);
      submitted_at[std::size_t(submitted)] = Clock::now();
      backend->submit(event);
      ++submitted;
    }
    if (submitted == limit) backend->flush();
    bool any = false;
    while (auto done = backend->next_completed(false)) {
      retire(*done);
      any = true;
    }
    if (!any && completed < total && (submitted == limit || !backend->can_submit()))
      if (auto done = backend->next_completed(true)) retire(*done);
  }
  row.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  row.events = timed_events;
  row.latency_p50_us = percentile(latency_us, 0.5);
  row.latency_p99_us = percentile(latency_us, 0.99);
  for (void* p : ring) backend->free_host(p);
  return row;
}

Row run_device_row(const DetectorDescription& d, const CalibrationConstants& c,
                   const std::vector<std::vector<std::uint8_t>>& events, const StreamConfig& config,
                   int timed_events) {
  const std::size_t base_memory = gpu::device_memory_used();
  gpu::DeviceCalibrator calibrator(d, c);
  const calib::CalibrationParams params{};
  const std::size_t raw_stride = (d.raw_event_bytes() + 255) / 256 * 256;
  const std::size_t out_stride = (d.pixels() * sizeof(float) + 255) / 256 * 256 / sizeof(float);
  const int K = config.batch;
  const int per_lane = kDistinct / K * K;  // whole batches
  struct Lane {
    gpu::Stream stream;
    gpu::DeviceBuffer raw, out;
    std::vector<std::unique_ptr<gpu::LaunchGraph>> graphs;  // one per batch position
  };
  std::vector<std::unique_ptr<Lane>> lanes;
  for (int l = 0; l < config.streams; ++l) {
    auto lane = std::make_unique<Lane>();
    lane->raw = gpu::DeviceBuffer(std::size_t(per_lane) * raw_stride);
    lane->out = gpu::DeviceBuffer(std::size_t(per_lane) * out_stride * sizeof(float));
    for (int i = 0; i < per_lane; ++i)
      gpu::copy_async(lane->raw.as<char>() + std::size_t(i) * raw_stride,
                      events[std::size_t(i % kDistinct)].data(), d.raw_event_bytes(), lane->stream,
                      "device pool upload (set-up)");
    lane->stream.synchronize();
    lanes.push_back(std::move(lane));
  }
  auto enqueue = [&](Lane& lane, int position, const gpu::Stream& s) {
    const void* raw = lane.raw.as<char>() + std::size_t(position) * raw_stride;
    float* out = lane.out.as<float>() + std::size_t(position) * out_stride;
    if (config.segments == SegmentsPerLaunch::All)
      calibrator.launch_batch(raw, out, params, s, K, raw_stride, out_stride, -1);
    else
      for (int seg = 0; seg < d.segments; ++seg)
        calibrator.launch_batch(raw, out, params, s, K, raw_stride, out_stride, seg);
  };
  if (config.launch == LaunchMode::Graph)
    for (auto& lane : lanes)
      for (int p = 0; p < per_lane; p += K)
        lane->graphs.push_back(std::make_unique<gpu::LaunchGraph>(
            lane->stream, std::vector<gpu::GraphCopy>{},
            [&, l = lane.get(), p](const gpu::Stream& s) { enqueue(*l, p, s); }));
  Row row;
  row.config = config;
  row.raw_bytes = d.raw_event_bytes();
  row.gpu_memory_bytes = gpu::device_memory_used() - base_memory;
  auto run = [&](int launches) {
    for (int b = 0; b < launches; ++b) {
      Lane& lane = *lanes[std::size_t(b % config.streams)];
      const int p = (b / config.streams * K) % per_lane;
      if (config.launch == LaunchMode::Graph)
        lane.graphs[std::size_t(p / K)]->launch(lane.stream);
      else
        enqueue(lane, p, lane.stream);
    }
    for (auto& lane : lanes) lane->stream.synchronize();
  };
  run(std::max(1, kWarmup / K));
  const int launches = (timed_events + K - 1) / K;
  const auto start = Clock::now();
  run(launches);
  row.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  row.events = launches * K;
  return row;
}

#endif

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

bool is_baseline(const StreamConfig& c) {
  return c.streams == 1 && c.launch == LaunchMode::Plain && c.batch == 1 &&
         c.segments == SegmentsPerLaunch::All;
}

}  // namespace

void add_runtime_options(CLI::App& command, RuntimeOptions& o) {
  command.add_option("--detector", o.detector, "epix10ka2m, epix10ka_segment, or any detector")
      ->capture_default_str();
  command.add_option("--events", o.events, "timed events per row")
      ->check(CLI::Range(100, 10000000))
      ->capture_default_str();
  command.add_option("--streams", o.streams, "stream counts")
      ->delimiter(',')
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  command.add_option("--launch", o.launch, "plain,graph")
      ->delimiter(',')
      ->check(CLI::IsMember({"plain", "graph"}))
      ->capture_default_str();
  command.add_option("--batch", o.batch, "events per launch")
      ->delimiter(',')
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command.add_option("--segments", o.segments, "all,one")
      ->delimiter(',')
      ->check(CLI::IsMember({"all", "one"}))
      ->capture_default_str();
  command.add_option("--threads", o.threads, "one_for_all,per_stream (host-fed rows)")
      ->delimiter(',')
      ->check(CLI::IsMember({"one_for_all", "per_stream"}))
      ->capture_default_str();
  command.add_option("--source", o.source, "host,device")
      ->delimiter(',')
      ->check(CLI::IsMember({"host", "device"}))
      ->capture_default_str();
  add_common_options(command, o.seed, o.json_path, o.markdown_path);
}

int run_runtime(const RuntimeOptions& o) {
#ifndef LIVEDRP_HAVE_CUDA
  (void)o;
  std::cerr << "livedrp-bench runtime: built without CUDA\n";
  return 1;
#else
  if (!cuda_ready("runtime")) return 1;
  const DetectorDescription d = runtime_detector(o.detector);
  ThreadPool pool;
  SimulatorConfig sim;
  sim.seed = o.seed;
  DetectorSimulator simulator(d, sim, &pool);
  const std::vector<std::vector<std::uint8_t>> events =
      simulated_events(simulator, kDistinct, pool);
  const auto properties = gpu::device_properties();
  const double h2d = pinned_h2d_gbps(kH2dProbeBytes, 5);
  std::cerr << "device " << properties.name << ", pinned H2D " << fixed(h2d, 1) << " GB/s\n";

  std::vector<Row> rows;
  auto parse_launch = [](const std::string& s) {
    return s == "graph" ? LaunchMode::Graph : LaunchMode::Plain;
  };
  for (const std::string& source : o.source) {
    std::vector<StreamConfig> configs;
    // The baseline first, always measured.
    StreamConfig base;
    base.source = source == "device" ? SourcePlacement::Device : SourcePlacement::Host;
    configs.push_back(base);
    for (const std::string& threads :
         source == "host" ? o.threads : std::vector<std::string>{"one_for_all"})
      for (const int s : o.streams)
        for (const std::string& launch : o.launch)
          for (const int k : o.batch)
            for (const std::string& seg : o.segments) {
              StreamConfig c = base;
              c.streams = s;
              c.launch = parse_launch(launch);
              c.batch = k;
              c.segments = seg == "one" ? SegmentsPerLaunch::One : SegmentsPerLaunch::All;
              c.host_threads =
                  threads == "per_stream" ? HostThreadModel::PerStream : HostThreadModel::OneForAll;
              if (!(c == base)) configs.push_back(c);
            }
    for (const StreamConfig& c : configs) {
      StreamConfig backend_config = c;
      backend_config.source = SourcePlacement::Host;  // the backend itself is host-fed
      Row row = source == "host"
                    ? run_host_row(d, simulator.constants(), events, backend_config, o.events)
                    : run_device_row(d, simulator.constants(), events, c, o.events);
      row.config = c;
      std::cerr << source << " | " << describe(c) << " | " << fixed(row.events_per_s(), 0)
                << " ev/s\n";
      rows.push_back(row);
    }
  }

  auto baseline_of = [&](const Row& r) -> const Row* {
    for (const Row& b : rows)
      if (b.config.source == r.config.source && is_baseline(b.config) &&
          b.config.host_threads == HostThreadModel::OneForAll)
        return &b;
    return nullptr;
  };
  nlohmann::json j;
  j["benchmark"] = "livedrp-bench runtime";
  j["detector"] = to_json(d);
  j["device"] = {{"name", properties.name},
                 {"multiprocessors", properties.multiprocessors},
                 {"runtime_version", properties.runtime_version},
                 {"driver_version", properties.driver_version}};
  j["pinned_h2d_gbps"] = h2d;
  j["events_per_row"] = o.events;
  j["rows"] = nlohmann::json::array();
  std::ostringstream m;
  m << "## livedrp-bench runtime: " << d.name << "\n\n";
  m << "- device: " << properties.name << "; raw event " << d.raw_event_bytes() << " bytes; "
    << o.events << " timed events per row after " << kWarmup << " warm-up\n";
  m << "- pinned host-to-device bandwidth measured in this run: " << fixed(h2d, 1) << " GB/s\n";
  m << "- host: the CUDA backend as the engine drives it (pinned ring, submit/next_completed); "
       "latency = submit -> completion returned, host clock\n";
  m << "- device: events already in device memory, launches enqueued ahead (no doorbell ring, "
       "no latency measured)\n\n";
  m << "| source | configuration | events/s | raw GB/s | of H2D | latency p50 us | p99 us | GPU "
       "MiB | x baseline |\n";
  m << "|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    const Row* b = baseline_of(r);
    const double ratio = b ? r.events_per_s() / b->events_per_s() : 0;
    const std::string source(to_string(r.config.source));
    nlohmann::json jr = {{"source", source},
                         {"configuration", to_json(r.config)},
                         {"label", describe(r.config)},
                         {"events", r.events},
                         {"seconds", r.seconds},
                         {"events_per_s", r.events_per_s()},
                         {"raw_gbps", r.gbps()},
                         {"gpu_memory_bytes", r.gpu_memory_bytes},
                         {"ratio_to_baseline", ratio}};
    if (r.latency_p50_us >= 0) {
      jr["latency_p50_us"] = r.latency_p50_us;
      jr["latency_p99_us"] = r.latency_p99_us;
      jr["fraction_of_pinned_h2d"] = r.gbps() / h2d;
    }
    j["rows"].push_back(jr);
    m << "| " << source << " | " << describe(r.config)
      << (r.config.source == SourcePlacement::Host
              ? ", " + std::string(to_string(r.config.host_threads))
              : "")
      << " | " << fixed(r.events_per_s(), 0) << " | " << fixed(r.gbps(), 2) << " | "
      << (r.latency_p50_us >= 0 ? fixed(r.gbps() / h2d, 3) : "-") << " | "
      << (r.latency_p50_us >= 0 ? fixed(r.latency_p50_us, 1) : "-") << " | "
      << (r.latency_p99_us >= 0 ? fixed(r.latency_p99_us, 1) : "-") << " | "
      << fixed(double(r.gpu_memory_bytes) / (1 << 20), 0) << " | " << fixed(ratio, 2) << " |\n";
  }
  std::cout << m.str();
  if (!o.json_path.empty()) std::ofstream(o.json_path) << j.dump(2) << "\n";
  if (!o.markdown_path.empty()) std::ofstream(o.markdown_path) << m.str();
  return 0;
#endif
}

}  // namespace livedrp::bench
