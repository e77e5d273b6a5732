// livedrp-bench: throughput of the engine's stages against the bandwidth the machine measures in
// the same run.
//
//   livedrp-bench runtime ...   the CUDA runtime's configuration matrix (bench_runtime.cpp)
//   livedrp-bench resident ...  the device-resident doorbell ring and its consumers
//                               (bench_resident.cpp)
//   livedrp-bench codec ...     GPU codecs against a device copy, zstd and lz4 (bench_codec.cpp)
//   livedrp-bench peaks ...     peakfinder8 on the GPU against the CPU (bench_peaks.cpp)
//   livedrp-bench integrate ... azimuthal integration on the GPU (bench_integrate.cpp)
//   livedrp-bench replay ...    flat-out HDF5 replay (bench_replay.cpp)
//   livedrp-bench pipeline ...  the engine's whole stage list over a configuration matrix, both
//                               feeding paths (bench_pipeline.cpp)
//   livedrp-bench calibrate [--detector epix10ka2m|jungfrau4m|generic_f32]
//                           [--backend cpu|cuda|both]
//                           [--events N] [--streams 1,2,4,8] [--common-mode on|off|both]
//                           [--json FILE] [--markdown FILE]
//
// Calibration must move, per event, the raw words, the PedestalGain of the mode each pixel selects
// (8 bytes), the status byte, and the float32 output:
//   bytes/event = pixels * (raw bytes per pixel + 8 + 1 + 4)      (ePix10ka2M: 2162688 * 15)
// The floor is that over the copy bandwidth measured here (a large device-to-device copy on the
// GPU, counting bytes read plus bytes written; a parallel memcpy on the CPU), and the figure of
// merit is the fraction of that floor a path reaches.
//
// GPU paths:
//   device-resident  M distinct simulated events uploaded once; one event per launch, launches
//                    spread round-robin over S streams (several events in flight), rotating
//                    through the M inputs and M outputs so the L2 cache holds no event; timed with
//                    CUDA events after a warm-up, median of the repeats. Both kernel variants: the
//                    vectorised one and the plain one-pixel-per-thread baseline.
//   end-to-end       the CUDA backend as the engine drives it: pinned ring slot -> H2D copy ->
//                    kernel -> completion, up to its depth in flight; floor = raw bytes over the
//                    pinned host-to-device bandwidth measured here.
// CPU: calibrate_event_cpu on the thread pool, events/s.
// Exit status: 0 done, 1 a device or run failure, 2 bad input.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_codec.hpp"
#include "bench_common.hpp"
#include "bench_integrate.hpp"
#include "bench_peaks.hpp"
#include "bench_pipeline.hpp"
#include "bench_replay.hpp"
#include "bench_resident.hpp"
#include "bench_runtime.hpp"
#include "calib/calibrate_cpu.hpp"
#include "calib/calibration_math.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "exec/backend.hpp"
#include "sim/simulator.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/cuda_calibrator.hpp"
#include "cuda/device.hpp"
#endif

namespace {

using namespace livedrp;
using Clock = std::chrono::steady_clock;

constexpr int kExitRunFailed = 1;
constexpr int kExitBadInput = 2;
// What the calibration kernel should reach, as a fraction of the measured copy bandwidth for the
// bytes it must move (ePix10ka2M, common mode off, one event per launch, several in flight).
constexpr double kTargetFractionOfCopy = 0.85;
// Distinct events resident on the GPU: 8 * 32 MB moved per ePix10ka2M event is over four times
// the H200's 60 MB L2, so no event is still cached when its turn comes again.
constexpr int kMinPoolEvents = 8;

struct Options {
  std::string detector = "epix10ka2m";
  std::string backend = "both";
  int events = 2000;  // per timed repeat, GPU paths
  int cpu_events = 40;
  std::vector<int> streams = {1, 2, 4, 8};
  std::string common_mode = "both";
  int pool = 16;
  int repeats = 7;
  // Copies of the constants the cold-cache rows rotate over: 8 x 19.5 MB of ePix10ka2M constants
  // read per event is well over the 60 MB L2.
  int constant_copies = 8;
  unsigned cpu_threads = 0;
  std::size_t copy_mib = 1024;
  std::uint64_t seed = 20260101;
  std::string json_path, markdown_path;
};

struct Row {
  std::string backend, path, kernel, device;
  bool common_mode = false;
  int streams = 0;                             // events in flight (GPU), threads (CPU)
  int events = 0;                              // per repeat
  std::vector<double> seconds;                 // one per repeat
  std::size_t raw_bytes = 0, moved_bytes = 0;  // per event
  double floor_bandwidth = 0;                  // bytes/s the floor divides by
  std::string floor_basis;                     // which measured bandwidth
  std::optional<bool> matches_cpu;
  double median_calibrate_us = 0;  // end-to-end: the backend's per-event kernel time

  double median_s() const {
    std::vector<double> s = seconds;
    std::sort(s.begin(), s.end());
    return s.empty()      ? 0
           : s.size() % 2 ? s[s.size() / 2]
                          : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
  }
  double events_per_s() const { return events / median_s(); }
  double raw_gbps() const { return events_per_s() * double(raw_bytes) * 1e-9; }
  double moved_gbps() const { return events_per_s() * double(moved_bytes) * 1e-9; }
  double floor_events_per_s() const { return floor_bandwidth / double(moved_bytes); }
  double fraction_of_floor() const { return events_per_s() / floor_events_per_s(); }
  double spread() const {  // (max - min) / median of the rates, over the repeats
    if (seconds.size() < 2) return 0;
    const auto [lo, hi] = std::minmax_element(seconds.begin(), seconds.end());
    return (*hi - *lo) / median_s();
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Bytes calibration must move per event: raw + PedestalGain of the selected mode + status + output.
std::size_t calibration_bytes_per_event(const DetectorDescription& d) {
  return d.pixels() * (d.raw_bytes_per_pixel() + sizeof(calib::PedestalGain) + 1 + sizeof(float));
}

bool bits_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Baselines {
  double host_copy_gbps = 0;    // parallel memcpy, read + write bytes
  double device_copy_gbps = 0;  // D2D cudaMemcpyAsync, read + write bytes
  double h2d_pinned_gbps = 0;
  std::size_t device_copy_bytes = 0, h2d_bytes = 0, host_copy_bytes = 0;
};

// ------------------------------------------------------------------------------------------------
// CPU

double measure_host_copy(ThreadPool& pool, std::size_t bytes, int repeats) {
  std::vector<std::uint8_t> src(bytes), dst(bytes);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = std::uint8_t(i * 131u);
  std::vector<double> gbps;
  for (int r = 0; r < repeats + 1; ++r) {
    const auto t0 = Clock::now();
    pool.parallel_for(pool.size() * 4, [&](std::size_t begin, std::size_t end) {
      const std::size_t chunk = bytes / (pool.size() * 4);
      const std::size_t first = begin * chunk, last = end == pool.size() * 4 ? bytes : end * chunk;
      std::memcpy(dst.data() + first, src.data() + first, last - first);
    });
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r > 0) gbps.push_back(2.0 * double(bytes) / s * 1e-9);  // first pass faults the pages in
  }
  return median(gbps);
}

void bench_cpu(const Options& o, const DetectorDescription& d, const CalibrationConstants& c,
               const std::vector<std::vector<std::uint8_t>>& events, const std::vector<bool>& modes,
               ThreadPool& pool, const Baselines& base, std::vector<Row>& rows) {
  std::vector<float> out(d.pixels());
  for (const bool cm : modes) {
    calib::CalibrationParams params;
    params.common_mode = cm;
    Row row;
    row.backend = "cpu";
    row.path = "thread pool, calibrate_event_cpu";
    row.kernel = "-";
    row.device = "CPU (" + std::to_string(pool.size()) + " threads)";
    row.common_mode = cm;
    row.streams = int(pool.size());
    row.events = o.cpu_events;
    row.raw_bytes = d.raw_event_bytes();
    row.moved_bytes = calibration_bytes_per_event(d);
    row.floor_bandwidth = base.host_copy_gbps * 1e9;
    row.floor_basis = "host parallel memcpy";
    for (int i = 0; i < 2; ++i)  // warm-up
      calibrate_event_cpu(d, c, params, events[std::size_t(i) % events.size()].data(), out.data(),
                          &pool);
    for (int r = 0; r < std::max(3, o.repeats / 2); ++r) {
      const auto t0 = Clock::now();
      for (int i = 0; i < o.cpu_events; ++i)
        calibrate_event_cpu(d, c, params, events[std::size_t(i) % events.size()].data(), out.data(),
                            &pool);
      row.seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    rows.push_back(row);
    std::cerr << "cpu, common mode " << (cm ? "on" : "off") << ": " << row.events_per_s()
              << " events/s\n";
  }
}

// ------------------------------------------------------------------------------------------------
// GPU

#ifdef LIVEDRP_HAVE_CUDA

// Device-resident events, one launch each, round-robin over `streams` streams.
void bench_device_resident(const Options& o, const DetectorDescription& d,
                           const CalibrationConstants& c,
                           const std::vector<std::vector<std::uint8_t>>& events,
                           const std::vector<bool>& modes, const Baselines& base,
                           const std::string& device_name, std::vector<Row>& rows) {
  // Copy 0 serves the "shared constants" rows: the constants every event reads stay in L2, as in a
  // run. The "constants rotated" rows cycle event i over o.constant_copies copies, so that the
  // constants too come from device memory and the kernel is held to the floor it is measured by.
  std::vector<std::unique_ptr<gpu::DeviceCalibrator>> calibrators;
  for (int k = 0; k < std::max(1, o.constant_copies); ++k)
    calibrators.push_back(std::make_unique<gpu::DeviceCalibrator>(d, c));
  const gpu::DeviceCalibrator& calibrator = *calibrators[0];
  const int m = int(events.size());
  const int max_streams = *std::max_element(o.streams.begin(), o.streams.end());
  std::vector<gpu::DeviceBuffer> raw, out;
  std::vector<std::unique_ptr<gpu::Stream>> streams;
  std::vector<std::unique_ptr<gpu::Event>> joins;
  for (int s = 0; s < max_streams; ++s) {
    streams.push_back(std::make_unique<gpu::Stream>());
    joins.push_back(std::make_unique<gpu::Event>(false));
  }
  for (int i = 0; i < m; ++i) {
    raw.emplace_back(d.raw_event_bytes());
    out.emplace_back(d.pixels() * sizeof(float));
    gpu::copy_async(raw.back().get(), events[std::size_t(i)].data(), d.raw_event_bytes(),
                    *streams[0], "benchmark event upload");
  }
  streams[0]->synchronize();
  gpu::Event start, stop;

  auto run = [&](int n, int s_count, int copies, const calib::CalibrationParams& params,
                 gpu::KernelVariant variant) {
    start.record(*streams[0]);
    for (int s = 1; s < s_count; ++s) streams[std::size_t(s)]->wait(start.get());
    for (int i = 0; i < n; ++i)
      calibrators[std::size_t(i % copies)]->launch(raw[std::size_t(i % m)].get(),
                                                   out[std::size_t(i % m)].as<float>(), params,
                                                   *streams[std::size_t(i % s_count)], variant);
    for (int s = 1; s < s_count; ++s) {
      joins[std::size_t(s)]->record(*streams[std::size_t(s)]);
      streams[0]->wait(joins[std::size_t(s)]->get());
    }
    stop.record(*streams[0]);
    stop.synchronize();
    return double(stop.elapsed_ms_since(start)) * 1e-3;
  };

  std::vector<float> got(d.pixels()), want(d.pixels());
  for (const auto variant : {gpu::KernelVariant::Vectorized, gpu::KernelVariant::Scalar}) {
    for (const bool cm : modes) {
      calib::CalibrationParams params;
      params.common_mode = cm;
      // The kernel timed must be right: event 0 against the CPU reference, bit for bit.
      gpu::fill_async(out[0].get(), 0xFF, out[0].bytes(), *streams[0]);
      calibrator.launch(raw[0].get(), out[0].as<float>(), params, *streams[0], variant);
      gpu::copy_async(got.data(), out[0].get(), out[0].bytes(), *streams[0], "benchmark check");
      streams[0]->synchronize();
      calibrate_event_cpu(d, c, params, events[0].data(), want.data(), nullptr);
      const bool exact = bits_equal(got, want);
      std::vector<int> copy_counts = {1};
      if (o.constant_copies > 1) copy_counts.push_back(o.constant_copies);
      for (const int copies : copy_counts) {
        for (const int s_count : o.streams) {
          Row row;
          row.backend = "cuda";
          row.path = copies == 1 ? "device-resident, constants shared (L2-warm)"
                                 : "device-resident, constants rotated over " +
                                       std::to_string(copies) + " copies (L2-cold)";
          row.kernel = std::string(gpu::to_string(variant));
          row.device = device_name;
          row.common_mode = cm;
          row.streams = s_count;
          row.events = o.events;
          row.raw_bytes = d.raw_event_bytes();
          row.moved_bytes = gpu::calibration_bytes_per_event(d);
          if (row.moved_bytes != calibration_bytes_per_event(d))
            throw RuntimeFault("bytes per event: the kernel's count differs from the benchmark's");
          row.floor_bandwidth = base.device_copy_gbps * 1e9;
          row.floor_basis = "device-to-device copy";
          row.matches_cpu = exact;
          run(std::min(o.events, 4 * m), s_count, copies, params, variant);  // warm-up
          for (int r = 0; r < o.repeats; ++r)
            row.seconds.push_back(run(o.events, s_count, copies, params, variant));
          std::cerr << "cuda " << row.kernel << ", common mode " << (cm ? "on" : "off") << ", "
                    << s_count << " streams, " << copies
                    << " constant copies: " << row.events_per_s() << " events/s, "
                    << row.fraction_of_floor() << " of the copy floor\n";
          rows.push_back(row);
        }
      }
    }
  }
}

// The CUDA backend as the engine uses it: pinned ring slots, H2D + kernel per event.
void bench_end_to_end(const Options& o, const DetectorDescription& d, const CalibrationConstants& c,
                      const std::vector<std::vector<std::uint8_t>>& events,
                      const std::vector<bool>& modes, const Baselines& base,
                      std::vector<Row>& rows) {
  for (const bool cm : modes) {
    calib::CalibrationParams params;
    params.common_mode = cm;
    auto backend = make_cuda_backend(d, c, params);
    std::vector<void*> ring;
    for (const auto& e : events) {
      ring.push_back(backend->allocate_host(d.raw_event_bytes()));
      std::memcpy(ring.back(), e.data(), d.raw_event_bytes());
    }
    Row row;
    row.backend = "cuda";
    row.path = "end-to-end backend (pinned H2D + kernel)";
    row.kernel = "vectorized";
    row.device = backend->device_name();
    row.common_mode = cm;
    row.events = o.events;
    row.raw_bytes = d.raw_event_bytes();
    row.moved_bytes = d.raw_event_bytes();  // what the floor is about here: the H2D copy
    row.floor_bandwidth = base.h2d_pinned_gbps * 1e9;
    row.floor_basis = "pinned host-to-device copy (raw bytes only)";
    std::vector<double> calibrate_us;
    std::size_t depth = 0;
    auto run = [&](int n, bool record) {
      const auto t0 = Clock::now();
      int submitted = 0, completed = 0;
      while (completed < n) {
        while (submitted < n && backend->can_submit()) {
          BackendEvent event;
          event.header.sequence = std::uint64_t(submitted);
          event.ring_slot = submitted % int(ring.size());
          event.raw = ring[std::size_t(event.ring_slot)];
          backend->submit(event);
          ++submitted;
        }
        depth = std::max(depth, backend->in_flight());
        const auto done = backend->next_completed(true);
        if (!done) throw RuntimeFault("cuda backend: no event completed with events in flight");
        if (record) calibrate_us.push_back(done->calibrate_us);
        ++completed;
      }
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    run(int(ring.size()) * 2, false);
    for (int r = 0; r < std::max(3, o.repeats / 2); ++r) row.seconds.push_back(run(o.events, true));
    row.streams = int(depth);  // events in flight (the backend's depth)
    row.median_calibrate_us = median(calibrate_us);
    for (void* slot : ring) backend->free_host(slot);
    std::cerr << "cuda end-to-end, common mode " << (cm ? "on" : "off") << ": "
              << row.events_per_s() << " events/s\n";
    rows.push_back(row);
  }
}

#endif  // LIVEDRP_HAVE_CUDA

// ------------------------------------------------------------------------------------------------
// Output

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

nlohmann::json row_json(const Row& r) {
  nlohmann::json j = {{"backend", r.backend},
                      {"path", r.path},
                      {"kernel", r.kernel},
                      {"device", r.device},
                      {"common_mode", r.common_mode},
                      {r.backend == "cpu" ? "threads" : "streams_or_depth", r.streams},
                      {"events_per_repeat", r.events},
                      {"repeats", r.seconds.size()},
                      {"seconds", r.seconds},
                      {"median_seconds", r.median_s()},
                      {"events_per_s", r.events_per_s()},
                      {"raw_bytes_per_event", r.raw_bytes},
                      {"raw_gb_per_s", r.raw_gbps()},
                      {"floor_bytes_per_event", r.moved_bytes},
                      {"floor_gb_per_s_moved", r.moved_gbps()},
                      {"floor_basis", r.floor_basis},
                      {"floor_bandwidth_gb_per_s", r.floor_bandwidth * 1e-9},
                      {"floor_events_per_s", r.floor_events_per_s()},
                      {"fraction_of_floor", r.fraction_of_floor()},
                      {"repeat_spread", r.spread()}};
  if (r.matches_cpu) j["matches_cpu_bit_for_bit"] = *r.matches_cpu;
  if (r.median_calibrate_us > 0) j["median_calibrate_us"] = r.median_calibrate_us;
  return j;
}

std::string markdown(const Options& o, const DetectorDescription& d, const nlohmann::json& device,
                     const Baselines& base, const std::vector<Row>& rows) {
  std::ostringstream m;
  m << "## livedrp-bench calibrate: " << d.name << "\n\n";
  m << "- detector: " << d.name << ", " << d.pixels() << " pixels, raw " << d.raw_event_bytes()
    << " bytes/event (" << to_string(d.encoding) << "), bank rows of " << d.bank_columns << "\n";
  m << "- bytes calibration must move per event = pixels x (raw " << d.raw_bytes_per_pixel()
    << " + PedestalGain 8 + status 1 + float out 4) = " << d.pixels() << " x "
    << (d.raw_bytes_per_pixel() + 13) << " = " << d.pixels() * (d.raw_bytes_per_pixel() + 13)
    << " bytes\n";
  if (!device.is_null()) m << "- GPU: " << device.dump() << "\n";
  m << "- CPU threads: " << (o.cpu_threads ? o.cpu_threads : std::thread::hardware_concurrency())
    << " (hardware_concurrency " << std::thread::hardware_concurrency() << ")\n";
  m << "- measured in this run: ";
  if (base.device_copy_gbps > 0)
    m << "device-to-device copy " << fixed(base.device_copy_gbps, 1) << " GB/s (read + write, "
      << base.device_copy_bytes / (1 << 20) << " MiB copy, median), pinned host-to-device "
      << fixed(base.h2d_pinned_gbps, 1) << " GB/s; ";
  if (base.host_copy_gbps > 0)
    m << "host parallel memcpy " << fixed(base.host_copy_gbps, 1) << " GB/s (read + write)";
  m << "\n- GPU: " << o.events << " events per repeat, " << o.repeats << " repeats (median), "
    << o.pool << " distinct events rotated; CPU: " << o.cpu_events << " events per repeat\n";
  m << "- target: device-resident, common mode off, >= " << kTargetFractionOfCopy
    << " of the copy floor\n\n";
  m << "| backend | path | kernel | common mode | streams/threads | events/s | raw GB/s | moved "
       "GB/s "
       "| floor events/s | of floor | spread | = CPU |\n";
  m << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows)
    m << "| " << r.backend << " | " << r.path << " | " << r.kernel << " | "
      << (r.common_mode ? "on" : "off") << " | " << r.streams << " | " << fixed(r.events_per_s(), 0)
      << " | " << fixed(r.raw_gbps(), 2) << " | " << fixed(r.moved_gbps(), 2) << " | "
      << fixed(r.floor_events_per_s(), 0) << " | " << fixed(r.fraction_of_floor(), 3) << " | "
      << fixed(100 * r.spread(), 1) << "% | "
      << (r.matches_cpu ? (*r.matches_cpu ? "yes" : "NO") : "-") << " |\n";
  m << "\nmoved GB/s: bytes calibration must move per event x events/s (end-to-end rows: raw bytes "
       "only, against the pinned H2D bandwidth). of floor = events/s / floor events/s. spread = "
       "(slowest - fastest) / median repeat.\n";
  return m.str();
}

int run_calibrate(const Options& o) {
  const DetectorDescription d = find_detector(o.detector);
  if (o.pool < kMinPoolEvents)
    throw InputError("--pool " + std::to_string(o.pool) + ": at least " +
                     std::to_string(kMinPoolEvents) +
                     " distinct events (so no event stays cached)");
  for (const int s : o.streams)
    if (s < 1 || s > o.pool)
      throw InputError("--streams " + std::to_string(s) + ": between 1 and --pool (" +
                       std::to_string(o.pool) + ")");
  std::vector<bool> modes;
  if (o.common_mode == "on" || o.common_mode == "both") modes.push_back(true);
  if (o.common_mode == "off" || o.common_mode == "both") modes.push_back(false);
  const bool want_cpu = o.backend == "cpu" || o.backend == "both";
  const bool want_cuda = o.backend == "cuda" || o.backend == "both";

  ThreadPool pool(o.cpu_threads ? o.cpu_threads
                                : std::max(1u, std::thread::hardware_concurrency()));
  SimulatorConfig sim_config;
  sim_config.seed = o.seed;
  std::cerr << "simulating " << o.pool << " events of " << d.name << "...\n";
  DetectorSimulator simulator(d, sim_config, &pool);
  std::vector<std::vector<std::uint8_t>> events(std::size_t(o.pool),
                                                std::vector<std::uint8_t>(d.raw_event_bytes()));
  for (int i = 0; i < o.pool; ++i)
    simulator.generate(std::uint64_t(i), events[std::size_t(i)].data(), nullptr, &pool);
  const CalibrationConstants& constants = simulator.constants();

  Baselines base;
  std::vector<Row> rows;
  nlohmann::json device;
  if (want_cuda) {
#ifdef LIVEDRP_HAVE_CUDA
    if (const auto reason = cuda_unavailable_reason())
      throw RuntimeFault("--backend " + o.backend + ": CUDA is not usable: " + *reason);
    const gpu::DeviceProperties p = gpu::device_properties();
    device = {{"name", p.name},
              {"compute_capability",
               std::to_string(p.compute_major) + "." + std::to_string(p.compute_minor)},
              {"multiprocessors", p.multiprocessors},
              {"memory_gib", double(p.global_memory_bytes) / double(1ull << 30)},
              {"l2_mib", double(p.l2_bytes) / double(1 << 20)},
              {"runtime_version", p.runtime_version},
              {"driver_version", p.driver_version}};
    base.device_copy_bytes = o.copy_mib << 20;
    base.device_copy_gbps = bench::device_copy_gbps(base.device_copy_bytes, 10);
    base.h2d_bytes = std::size_t(256) << 20;
    base.h2d_pinned_gbps = bench::pinned_h2d_gbps(base.h2d_bytes, 5);
    std::cerr << "device-to-device copy " << base.device_copy_gbps << " GB/s, pinned H2D "
              << base.h2d_pinned_gbps << " GB/s\n";
    bench_device_resident(o, d, constants, events, modes, base, p.name, rows);
    bench_end_to_end(o, d, constants, events, modes, base, rows);
#else
    throw RuntimeFault("--backend " + o.backend + ": built without CUDA support");
#endif
  }
  if (want_cpu) {
    base.host_copy_bytes = std::size_t(256) << 20;
    base.host_copy_gbps = measure_host_copy(pool, base.host_copy_bytes, 5);
    std::cerr << "host parallel memcpy " << base.host_copy_gbps << " GB/s\n";
    bench_cpu(o, d, constants, events, modes, pool, base, rows);
  }

  const std::string table = markdown(o, d, device, base, rows);
  std::cout << table;
  nlohmann::json results = nlohmann::json::array();
  for (const Row& r : rows) results.push_back(row_json(r));
  const nlohmann::json report = {
      {"schema_version", 1},
      {"tool", "livedrp-bench calibrate"},
      {"config",
       {{"detector", o.detector},
        {"backend", o.backend},
        {"events", o.events},
        {"cpu_events", o.cpu_events},
        {"streams", o.streams},
        {"common_mode", o.common_mode},
        {"pool", o.pool},
        {"repeats", o.repeats},
        {"constant_copies", o.constant_copies},
        {"cpu_threads", pool.size()},
        {"copy_mib", o.copy_mib},
        {"seed", o.seed}}},
      {"detector", to_json(d)},
      {"bytes_per_event_formula",
       "pixels * (raw_bytes_per_pixel + 8 PedestalGain + 1 status + 4 float out)"},
      {"device", device},
      {"baselines",
       {{"device_to_device_copy_gb_per_s", base.device_copy_gbps},
        {"device_copy_bytes", base.device_copy_bytes},
        {"pinned_h2d_gb_per_s", base.h2d_pinned_gbps},
        {"h2d_bytes", base.h2d_bytes},
        {"host_memcpy_gb_per_s", base.host_copy_gbps},
        {"host_copy_bytes", base.host_copy_bytes}}},
      {"target_fraction_of_copy_floor", kTargetFractionOfCopy},
      {"results", results}};
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    if (!(out << report.dump(2) << "\n")) throw InputError("cannot write --json " + o.json_path);
  }
  if (!o.markdown_path.empty()) {
    std::ofstream out(o.markdown_path);
    if (!(out << table)) throw InputError("cannot write --markdown " + o.markdown_path);
  }
  for (const Row& r : rows)
    if (r.matches_cpu && !*r.matches_cpu) {
      std::cerr << "livedrp-bench: error: the " << r.kernel << " kernel (common mode "
                << (r.common_mode ? "on" : "off") << ") differs from the CPU reference\n";
      return kExitRunFailed;
    }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"livedrp-bench: stage throughput against the bandwidth measured in the same run"};
  app.set_version_flag("--version", std::string("livedrp-bench ") + LIVEDRP_VERSION);
  app.require_subcommand(1);
  Options o;
  CLI::App* calibrate = app.add_subcommand("calibrate", "calibration throughput, CPU and CUDA");
  calibrate->add_option("--detector", o.detector, "built-in detector name or a .json description")
      ->capture_default_str();
  calibrate->add_option("--backend", o.backend, "cpu, cuda or both")
      ->check(CLI::IsMember({"cpu", "cuda", "both"}))
      ->capture_default_str();
  calibrate->add_option("--events", o.events, "events per timed repeat on the GPU")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  calibrate->add_option("--cpu-events", o.cpu_events, "events per timed repeat on the CPU")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  calibrate->add_option("--streams", o.streams, "stream counts to time (comma-separated)")
      ->delimiter(',')
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  calibrate->add_option("--common-mode", o.common_mode, "on, off or both")
      ->check(CLI::IsMember({"on", "off", "both"}))
      ->capture_default_str();
  calibrate->add_option("--pool", o.pool, "distinct simulated events, rotated (>= 8)")
      ->check(CLI::Range(kMinPoolEvents, 256))
      ->capture_default_str();
  calibrate->add_option("--repeats", o.repeats, "timed repeats (the median is reported)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  calibrate
      ->add_option("--constant-copies", o.constant_copies,
                   "copies of the constants the L2-cold rows rotate over (1: none)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  calibrate->add_option("--cpu-threads", o.cpu_threads, "CPU threads; 0 = all cores")
      ->capture_default_str();
  calibrate->add_option("--copy-mib", o.copy_mib, "size of the device-to-device copy baseline")
      ->check(CLI::Range(16, 16384))
      ->capture_default_str();
  calibrate->add_option("--seed", o.seed, "simulator seed")->capture_default_str();
  calibrate->add_option("--json", o.json_path, "write the results as JSON here");
  livedrp::bench::RuntimeOptions runtime_options;
  CLI::App* runtime = app.add_subcommand(
      "runtime", "CUDA runtime stream-configuration matrix (streams, graphs, K, segments, source)");
  livedrp::bench::add_runtime_options(*runtime, runtime_options);
  livedrp::bench::ResidentOptions resident_options;
  CLI::App* resident = app.add_subcommand(
      "resident",
      "device-resident source: doorbell ring in GPU memory, persistent kernel, device graphs");
  livedrp::bench::add_resident_options(*resident, resident_options);
  livedrp::bench::CodecBenchOptions codec_options;
  CLI::App* codec = app.add_subcommand(
      "codec",
      "GPU codecs against a device copy, and zstd, lz4 and bitshuffle-LZ4 on the CPU (--cpu-only)");
  livedrp::bench::add_codec_options(*codec, codec_options);
  livedrp::bench::PeaksBenchOptions peaks_options;
  CLI::App* peaks = app.add_subcommand(
      "peaks", "peakfinder8 on the GPU against the CPU and the memory floor (epix10ka2m hits)");
  livedrp::bench::add_peaks_options(*peaks, peaks_options);
  livedrp::bench::IntegrateBenchOptions integrate_options;
  CLI::App* integrate = app.add_subcommand(
      "integrate",
      "azimuthal integration on the GPU against an atomic histogram, the memory floor and the CPU "
      "(epix10ka2m, 1000 bins)");
  livedrp::bench::add_integrate_options(*integrate, integrate_options);
  livedrp::bench::ReplayBenchOptions replay_options;
  CLI::App* replay = app.add_subcommand(
      "replay", "flat-out HDF5 replay from the page cache: reader, CPU engine, CUDA host-fed");
  livedrp::bench::add_replay_options(*replay, replay_options);
  livedrp::bench::PipelineBenchOptions pipeline_options;
  CLI::App* pipeline = app.add_subcommand(
      "pipeline",
      "the engine's stage list on both feeding paths over a matrix (stages, codec, streams, "
      "launch): events/s, per-stage time, the bounding stage, fraction of the memory floor");
  livedrp::bench::add_pipeline_options(*pipeline, pipeline_options);
  calibrate->add_option("--markdown", o.markdown_path, "write the markdown table here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitBadInput;
  }
  try {
    if (runtime->parsed()) return livedrp::bench::run_runtime(runtime_options);
    if (resident->parsed()) return livedrp::bench::run_resident(resident_options);
    if (codec->parsed()) return livedrp::bench::run_codec(codec_options);
    if (peaks->parsed()) return livedrp::bench::run_peaks(peaks_options);
    if (integrate->parsed()) return livedrp::bench::run_integrate(integrate_options);
    if (replay->parsed()) return livedrp::bench::run_replay(replay_options);
    if (pipeline->parsed()) return livedrp::bench::run_pipeline(pipeline_options);
    return run_calibrate(o);
  } catch (const InputError& e) {
    std::cerr << "livedrp-bench: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const RuntimeFault& e) {
    std::cerr << "livedrp-bench: run failed: " << e.what() << "\n";
    return kExitRunFailed;
  }
}
