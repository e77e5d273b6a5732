// livedrp-bench replay: how fast a recorded run replays flat out.
//
// The file: --events events of --detector, cycling --distinct simulated events, written chunked
// (one event per chunk, --deflate level) to --dir, then read once so it sits in the page cache (or
// --file, an existing file, read once likewise). Rows, each over every event of the file:
//   read       the replay source's prefetch thread alone (acquire/release, no pipeline): the
//              ceiling the file and HDF5 put on replay;
//   engine cpu the engine, replay flat out into the CPU backend (calibration), full_ring wait;
//   engine cuda the same into the CUDA backend (host-fed: pinned ring slot -> H2D -> kernels),
//              only when a CUDA device is usable; its floor is the pinned host-to-device copy
//              bandwidth measured in this run.
// Each engine row says what limited it (the producer's time waiting on the prefetch thread, disk,
// against waiting on a ring slot, pipeline).
#include "bench_replay.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "exec/engine.hpp"
#include "replay/hdf5_event_file.hpp"
#include "replay/replay_source.hpp"
#include "sim/simulator.hpp"

namespace livedrp::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Row {
  std::string path;
  std::uint64_t events = 0;
  double seconds = 0;
  double events_per_s = 0, gbps = 0;
  std::string limited_by;
  double disk_wait_s = 0, pipeline_wait_s = 0;
  double floor_gbps = 0;  // 0: none
  std::string error;
};

Row read_row(const replay::ReplayOptions& options, std::size_t event_bytes) {
  Row row;
  row.path = "read (prefetch thread only)";
  replay::ReplaySource source(options);
  const auto start = Clock::now();
  replay::ReplayEvent event;
  while (source.acquire(event)) {
    if (!event.error.empty()) row.error = event.error;
    source.release();
    ++row.events;
  }
  row.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  row.events_per_s = double(row.events) / row.seconds;
  row.gbps = row.events_per_s * double(event_bytes) / 1e9;
  row.disk_wait_s = source.disk_wait_s();
  row.limited_by = "disk";
  return row;
}

Row engine_row(const std::string& backend, const std::string& source, const std::string& dataset,
               unsigned cpu_threads) {
  EngineConfig c;
  c.source = source;
  c.replay.dataset = dataset;
  c.replay.pace = "flat_out";
  c.full_ring = "wait";
  c.backend = backend;
  c.publish = "";
  c.cpu_threads = cpu_threads;
  Engine engine(c);
  engine.start();
  engine.wait();
  const RunSummary summary = engine.summary();
  const ReplayStatus status = engine.replay_status();
  Row row;
  row.path = "engine " + backend + " (" + summary.stats.device + ")";
  row.events = summary.stats.events_processed;
  row.seconds = summary.stats.elapsed_s;
  row.events_per_s = summary.stats.event_rate_hz;
  row.gbps = summary.stats.input_gbps;
  row.limited_by = status.limited_by;
  row.disk_wait_s = status.disk_wait_s;
  row.pipeline_wait_s = status.pipeline_wait_s;
  row.error = summary.error;
  return row;
}

}  // namespace

void add_replay_options(CLI::App& command, ReplayBenchOptions& o) {
  command.add_option("--detector", o.detector, "detector of the written file")
      ->capture_default_str();
  command.add_option("--events", o.events, "events in the written file")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  command.add_option("--distinct", o.distinct, "distinct simulated events, cycled")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command.add_option("--deflate", o.deflate, "gzip level of the written file (0: none)")
      ->check(CLI::Range(0, 9))
      ->capture_default_str();
  command.add_option("--file", o.file, "replay this HDF5 file instead of writing one");
  command.add_option("--dataset", o.dataset, "dataset of the events")->capture_default_str();
  command.add_option("--dir", o.directory, "where to write the file (default: temporary dir)");
  command.add_option("--cpu-threads", o.cpu_threads, "CPU backend threads (0: all cores)");
  add_common_options(command, o.seed, o.json_path, o.markdown_path);
}

int run_replay(const ReplayBenchOptions& o) {
  std::filesystem::path file = o.file;
  bool written = false;
  if (file.empty()) {
    const DetectorDescription detector = find_detector(o.detector);
    const std::filesystem::path dir = o.directory.empty() ? std::filesystem::temp_directory_path()
                                                          : std::filesystem::path(o.directory);
    file = dir / ("livedrp-bench-replay-" + detector.name + ".h5");
    ThreadPool pool(o.cpu_threads == 0 ? std::thread::hardware_concurrency() : o.cpu_threads);
    SimulatorConfig sim;
    sim.seed = o.seed;
    DetectorSimulator simulator(detector, sim, &pool);
    const auto events = simulated_events(simulator, o.distinct, pool);
    replay::WriteLayout layout;
    layout.dataset = o.dataset;
    layout.deflate = o.deflate;
    std::cerr << "writing " << o.events << " events of " << detector.name << " to " << file << "\n";
    replay::Hdf5EventWriter writer(file, detector, layout, "{}");
    for (int i = 0; i < o.events; ++i)
      writer.append(simulator.header_for(std::uint64_t(i)),
                    events[std::size_t(i) % events.size()].data());
    writer.close();
    written = true;
  }
  replay::ReplayOptions options;
  options.files = {file};
  options.dataset = o.dataset;
  std::size_t event_bytes;
  std::uint64_t file_events;
  {
    replay::ReplaySource probe(options);
    event_bytes = probe.detector().raw_event_bytes();
    file_events = probe.total_events();
  }
  read_row(options, event_bytes);  // warm-up: the file into the page cache
  std::vector<Row> rows;
  rows.push_back(read_row(options, event_bytes));
  const std::string source = "replay:" + file.string();
  rows.push_back(engine_row("cpu", source, o.dataset, o.cpu_threads));
  double h2d_gbps = 0;
#ifdef LIVEDRP_HAVE_CUDA
  if (cuda_ready("replay")) {
    h2d_gbps = pinned_h2d_gbps(std::size_t(256) << 20, 5);
    Row row = engine_row("cuda", source, o.dataset, o.cpu_threads);
    row.floor_gbps = h2d_gbps;
    rows.push_back(row);
  }
#else
  std::cerr << "livedrp-bench replay: built without CUDA: no host-fed CUDA row\n";
#endif
  if (written) std::filesystem::remove(file);

  std::ostringstream table;
  table << "| path | events | events/s | GB/s | limited by | disk wait s | pipeline wait s | "
           "floor GB/s (pinned H2D) |\n|---|---|---|---|---|---|---|---|\n";
  nlohmann::json json_rows = nlohmann::json::array();
  int status = 0;
  for (const Row& r : rows) {
    table << "| " << r.path << " | " << r.events << " | " << std::fixed << std::setprecision(1)
          << r.events_per_s << " | " << std::setprecision(3) << r.gbps << " | " << r.limited_by
          << " | " << r.disk_wait_s << " | " << r.pipeline_wait_s << " | "
          << (r.floor_gbps > 0 ? std::to_string(r.floor_gbps) : std::string("-")) << " |\n";
    json_rows.push_back({{"path", r.path},
                         {"events", r.events},
                         {"seconds", r.seconds},
                         {"events_per_s", r.events_per_s},
                         {"gb_per_s", r.gbps},
                         {"limited_by", r.limited_by},
                         {"disk_wait_s", r.disk_wait_s},
                         {"pipeline_wait_s", r.pipeline_wait_s},
                         {"floor_gb_per_s", r.floor_gbps},
                         {"error", r.error}});
    if (!r.error.empty()) {
      std::cerr << "livedrp-bench replay: " << r.path << ": " << r.error << "\n";
      status = 1;
    }
  }
  std::cout << "replay of " << file_events << " events (" << event_bytes << " bytes each) from "
            << (written ? "a file written for this run" : file.string()) << ", page cache warm\n\n"
            << table.str();
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << nlohmann::json{{"benchmark", "replay"},
                          {"events", file_events},
                          {"event_bytes", event_bytes},
                          {"pinned_h2d_gb_per_s", h2d_gbps},
                          {"rows", json_rows}}
               .dump(2)
        << "\n";
  }
  if (!o.markdown_path.empty()) std::ofstream(o.markdown_path) << table.str();
  return status;
}

}  // namespace livedrp::bench
