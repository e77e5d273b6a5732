// livedrp-bench replay: how fast a recorded run replays flat out.
//
// The files: --events events of --detector, cycling --distinct simulated events, written chunked
// (one event per chunk) to --dir twice: without a filter, and with HDF5 shuffle + gzip at level
// --deflate (unless 0). Each is read once so that it sits in the page cache. With --file, that
// file alone. Rows, each over every event of a file:
//   read, 1 reader, HDF5 library   the baseline: one reader through H5Dread (HDF5 serialises its
//              calls, decompression included, so more readers cannot help it);
//   read, 1 reader / N readers   the replay source alone (acquire/release, no pipeline), one
//              reader thread and --readers of them: the ceiling the file, the page cache and the
//              decompression put on replay; "how" says whether events were read by pread (and
//              zlib) outside HDF5 or through the library;
//   engine cpu the engine, replay flat out of the unfiltered file into the CPU backend
//              (calibration), full_ring wait, --readers readers;
//   engine cuda the same into the CUDA backend (host-fed: the read buffer becomes the pinned ring
//              slot -> H2D -> kernels), only when a CUDA device is usable; its floor is the
//              pinned host-to-device copy bandwidth measured in this run.
// Each engine row says what limited it (the producer's time waiting on the readers, disk,
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
  std::string file;  // "plain", "deflate N", or the file given
  std::size_t readers = 0;
  std::string how;  // how events were read (EventReadPath)
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
  replay::ReplaySource source(options);
  row.readers = source.readers();
  row.path =
      row.readers == 1 ? "read, 1 reader" : "read, " + std::to_string(row.readers) + " readers";
  row.how = replay::to_string(source.read_path());
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
               unsigned cpu_threads, std::size_t readers) {
  EngineConfig c;
  c.replay.readers = int(readers);
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
  row.readers = readers;
  row.how = "ring slot = read buffer";
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
  command
      .add_option("--deflate", o.deflate,
                  "gzip level of the second written file, for the deflate rows (0: none)")
      ->check(CLI::Range(0, 9))
      ->capture_default_str();
  command
      .add_option("--readers", o.readers, "N of the N-reader and engine rows (0: min(8, cores))")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  command.add_option("--file", o.file, "replay this HDF5 file instead of writing one");
  command.add_option("--dataset", o.dataset, "dataset of the events")->capture_default_str();
  command.add_option("--dir", o.directory, "where to write the file (default: temporary dir)");
  command.add_option("--cpu-threads", o.cpu_threads, "CPU backend threads (0: all cores)");
  add_common_options(command, o.seed, o.json_path, o.markdown_path);
}

namespace {

std::filesystem::path write_file(const ReplayBenchOptions& o, int deflate) {
  const DetectorDescription detector = find_detector(o.detector);
  const std::filesystem::path dir = o.directory.empty() ? std::filesystem::temp_directory_path()
                                                        : std::filesystem::path(o.directory);
  const std::filesystem::path file = dir / ("livedrp-bench-replay-" + detector.name + "-deflate" +
                                            std::to_string(deflate) + ".h5");
  ThreadPool pool(o.cpu_threads == 0 ? std::thread::hardware_concurrency() : o.cpu_threads);
  SimulatorConfig sim;
  sim.seed = o.seed;
  DetectorSimulator simulator(detector, sim, &pool);
  const auto events = simulated_events(simulator, o.distinct, pool);
  replay::WriteLayout layout;
  layout.dataset = o.dataset;
  layout.deflate = deflate;
  std::cerr << "writing " << o.events << " events of " << detector.name << " to " << file
            << (deflate > 0 ? " (shuffle + gzip " + std::to_string(deflate) + ")" : "") << "\n";
  replay::Hdf5EventWriter writer(file, detector, layout, "{}");
  for (int i = 0; i < o.events; ++i)
    writer.append(simulator.header_for(std::uint64_t(i)),
                  events[std::size_t(i) % events.size()].data());
  writer.close();
  return file;
}

}  // namespace

int run_replay(const ReplayBenchOptions& o) {
  // The files to read: (label, path, written for this run).
  struct Input {
    std::string label;
    std::filesystem::path path;
    bool written = false;
  };
  std::vector<Input> inputs;
  if (!o.file.empty()) {
    inputs.push_back({o.file, o.file, false});
  } else {
    inputs.push_back({"plain", write_file(o, 0), true});
    if (o.deflate > 0)
      inputs.push_back({"deflate " + std::to_string(o.deflate), write_file(o, o.deflate), true});
  }
  const std::size_t readers =
      o.readers > 0 ? std::size_t(o.readers) : replay::default_replay_readers();
  std::size_t event_bytes = 0;
  std::uint64_t file_events = 0;
  std::vector<Row> rows;
  for (const Input& input : inputs) {
    replay::ReplayOptions options;
    options.files = {input.path};
    options.dataset = o.dataset;
    options.readers = 1;
    {
      replay::ReplaySource probe(options);
      event_bytes = probe.detector().raw_event_bytes();
      file_events = probe.total_events();
    }
    read_row(options, event_bytes);  // warm-up: the file into the page cache
    {  // the baseline: one reader through H5Dread, as before the pread paths
      replay::ReplayOptions library = options;
      library.through_library = true;
      Row row = read_row(library, event_bytes);
      row.path = "read, 1 reader, HDF5 library";
      row.file = input.label;
      rows.push_back(row);
    }
    for (std::size_t n : {std::size_t(1), readers}) {
      options.readers = n;
      options.prefetch_events = std::max<std::size_t>(8, 2 * n);
      Row row = read_row(options, event_bytes);
      row.file = input.label;
      rows.push_back(row);
      if (readers == 1) break;
    }
  }
  const std::string source = "replay:" + inputs.front().path.string();
  rows.push_back(engine_row("cpu", source, o.dataset, o.cpu_threads, readers));
  rows.back().file = inputs.front().label;
  double h2d_gbps = 0;
#ifdef LIVEDRP_HAVE_CUDA
  if (cuda_ready("replay")) {
    h2d_gbps = pinned_h2d_gbps(std::size_t(256) << 20, 5);
    Row row = engine_row("cuda", source, o.dataset, o.cpu_threads, readers);
    row.file = inputs.front().label;
    row.floor_gbps = h2d_gbps;
    rows.push_back(row);
  }
#else
  std::cerr << "livedrp-bench replay: built without CUDA: no host-fed CUDA row\n";
#endif
  bool written = false;
  for (const Input& input : inputs)
    if (input.written) {
      std::filesystem::remove(input.path);
      written = true;
    }

  std::ostringstream table;
  table << "| path | file | readers | how | events | events/s | GB/s | limited by | disk wait s | "
           "pipeline wait s | floor GB/s (pinned H2D) "
           "|\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  nlohmann::json json_rows = nlohmann::json::array();
  int status = 0;
  for (const Row& r : rows) {
    table << "| " << r.path << " | " << r.file << " | " << r.readers << " | " << r.how << " | "
          << r.events << " | " << std::fixed << std::setprecision(1) << r.events_per_s << " | "
          << std::setprecision(3) << r.gbps << " | " << r.limited_by << " | " << r.disk_wait_s
          << " | " << r.pipeline_wait_s << " | "
          << (r.floor_gbps > 0 ? std::to_string(r.floor_gbps) : std::string("-")) << " |\n";
    json_rows.push_back({{"path", r.path},
                         {"file", r.file},
                         {"readers", r.readers},
                         {"how", r.how},
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
            << (written ? "files written for this run" : o.file) << ", page cache warm\n\n"
            << table.str();
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << nlohmann::json{{"benchmark", "replay"},
                          {"events", file_events},
                          {"event_bytes", event_bytes},
                          {"readers", readers},
                          {"deflate", o.file.empty() ? o.deflate : 0},
                          {"pinned_h2d_gb_per_s", h2d_gbps},
                          {"rows", json_rows}}
               .dump(2)
        << "\n";
  }
  if (!o.markdown_path.empty()) std::ofstream(o.markdown_path) << table.str();
  return status;
}

}  // namespace livedrp::bench
