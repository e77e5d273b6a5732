// livedrp-bench pipeline: the engine's stage list, run whole, on both feeding paths.
//
//   livedrp-bench pipeline [--detector NAME] [--events N] [--cpu-events N] [--warmup-events N]
//                          [--backends cpu,cuda] [--sources host,device] [--streams 1,4]
//                          [--launch plain,graph,device_graph,persistent]
//                          [--stages calibrate,all,calibrate+integrate,...]
//                          [--compression lossless,lossy] [--error-bound B] [--npt N] [--poni F]
//                          [--simulator-pool N] [--cpu-threads N] [--copy-mib M] [--seed S]
//                          [--json FILE] [--markdown FILE]
//
// Every cell of the matrix (backend x source x stage set x codec x streams x launch) is one
// EngineConfig, run through the engine's public API (Engine: start, wait, summary), so what is
// timed is what `livedrp-engine run` and the GUI run: source sim:DETECTOR, `events` events flat
// out (rate 0) with full_ring "wait" (the source waits for a free slot, so nothing is dropped
// and the rate is the pipeline's capacity), nothing published, the backend, runtime.source,
// runtime.streams and runtime.launch, and the stages of the set: calibration always; the codec
// (lossless: the raw words; lossy: the calibrated image at --error-bound); integration (--npt
// bins in q over a PONI placed at the simulator's beam); peakfinder8 (the parameters of
// bench_peaks and the peak tests; on the ePix10ka only the FH and AHL ASICs are searched, as
// test_engine_peak_gain_mask does, since one threshold per radius cannot fit the other gains).
// The CPU backend has one lane and ignores the runtime settings (exec/backend.cpp): its cells
// run once per source and stage set, streams and launch shown as "-".
//
// Before each cell a warm-up run of the same configuration (its own Engine: it warms the
// device, the driver and the caches; the timed engine allocates its buffers when it is built,
// before its clock starts). Cells the engine refuses (InputError: a combination it does not
// implement, such as the CPU backend on runtime.source device) are rows "refused: <reason>";
// CUDA cells without a usable device are "skipped: <reason>"; a run that faults or does not
// account for every event is "failed" and makes the exit status 1.
//
// Per cell:
//   events/s   events processed / the run's elapsed time (RunSummary; the simulator's event pool
//              is generated before the clock starts)
//   raw GB/s   events/s x the raw event bytes
//   stage us   the engine's mean time per event of each configured stage (stats.stages; the
//              codec's from the compression block when the stage list has no "compress")
//   bound      the stage with the largest busy fraction, mean_us x events/s / lanes (lanes: the
//              CUDA streams; the CPU backend runs one event at a time: one lane)
//   floor      events/s that moving pipeline_bytes_per_event at the copy bandwidth measured in
//              this process allows: the device-to-device copy on the GPU, a parallel memcpy on the
//              thread pool for the CPU (both counting bytes read + written); on the host-fed CUDA
//              path also the raw event at the pinned host-to-device bandwidth, a separate link,
//              so the floor is the lower of the two rates ("by": mem or h2d).
//   of floor   events/s / floor events/s.
//
// Fused/unfused: EngineConfig has no switch for reading the calibrated image once for several
// stages, so the matrix has no such axis; the floor model counts one read of the calibrated
// image per stage that reads it (unfused).
#include "bench_pipeline.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "exec/backend.hpp"
#include "exec/engine.hpp"
#include "exec/stream_config.hpp"
#include "integrate/layout.hpp"
#include "sim/simulator.hpp"

namespace livedrp::bench {

PipelineBytes pipeline_bytes_per_event(const DetectorDescription& detector,
                                       const PipelineStages& stages, std::size_t codec_in,
                                       std::size_t codec_out, bool host_to_device) {
  const std::size_t image = detector.pixels() * sizeof(float);
  PipelineBytes b;
  b.calibrate_read = detector.raw_event_bytes();
  b.calibrate_written = image;
  if (stages.compress) {
    b.compress_read = codec_in;
    b.compress_written = codec_out;
  }
  if (stages.integrate) b.integrate_read = image;
  if (stages.peak) b.peak_read = image;
  if (host_to_device) b.host_to_device = detector.raw_event_bytes();
  return b;
}

namespace {

using Clock = std::chrono::steady_clock;

// The names the engine gives its stages in stats.stages.
constexpr const char* kCalibrate = "calibrate";
constexpr const char* kCompress = "compress";
constexpr const char* kIntegrate = "integrate";
constexpr const char* kPeak = "peak";
constexpr std::size_t kStageCount = 4;
constexpr std::array<const char*, kStageCount> kStageNames = {kCalibrate, kCompress, kIntegrate,
                                                              kPeak};

// Repeats of the copy baselines (the median is taken).
constexpr int kCopyRepeats = 7;
// The host copy in chunks of this size, spread over the pool.
constexpr std::size_t kHostCopyChunk = std::size_t(1) << 20;
// The simulator's photon energy: the PONI's wavelength, so that q matches its rings.
constexpr double kHcKevAngstrom = 12.398419843320026;

bool configured(const PipelineStages& s, std::size_t stage) {
  switch (stage) {
    case 0:
      return true;
    case 1:
      return s.compress;
    case 2:
      return s.integrate;
    default:
      return s.peak;
  }
}

PipelineStages parse_stage_set(const std::string& text) {
  if (text == "all") return {true, true, true};
  PipelineStages s;
  std::stringstream in(text);
  std::string name;
  bool any = false;
  while (std::getline(in, name, '+')) {
    any = true;
    if (name == kCalibrate) continue;
    if (name == kCompress)
      s.compress = true;
    else if (name == kIntegrate)
      s.integrate = true;
    else if (name == kPeak)
      s.peak = true;
    else
      throw InputError("--stages '" + text + "': unknown stage '" + name +
                       "' (expected 'all' or calibrate, compress, integrate, peak joined by '+')");
  }
  if (!any) throw InputError("--stages: an empty stage set");
  return s;
}

LaunchMode launch_mode(const std::string& name) {
  for (const LaunchMode m :
       {LaunchMode::Plain, LaunchMode::Graph, LaunchMode::DeviceGraph, LaunchMode::Persistent})
    if (to_string(m) == name) return m;
  throw InputError("--launch: unknown launch mode '" + name +
                   "' (expected plain, graph, device_graph or persistent)");
}

// peakfinder8's parameters of bench_peaks and tests/test_engine_peak_gain_mask.cpp: above two
// 9.5 keV photons in one pixel, three pixels at least.
peaks::PeakFinderParams peak_params() {
  peaks::PeakFinderParams p;
  p.adc_threshold = 20.0f;
  p.minimum_snr = 5;
  p.min_pixel_count = 3;
  p.max_pixel_count = 200;
  p.min_peaks_for_hit = 2;
  return p;
}

// A PONI for `detector` with the beam where the simulator puts its powder rings (the middle of
// the assembled image), 120 mm away, tilted a little, at the simulator's photon energy, as the
// live-integration tests write it. Removed when the run ends.
class SimulatorPoni {
 public:
  explicit SimulatorPoni(const DetectorDescription& detector) {
    const double pixel = detector.pixel_size_um * 1e-6;
    const integrate::FrameExtent extent =
        integrate::assembled_extent(integrate::layout_from_detector(detector));
    const AssembledPoint beam = assembled_bounds(detector).centre();
    std::random_device random;
    path_ = std::filesystem::temp_directory_path() /
            ("livedrp-bench-pipeline-" + detector.name + "-" + std::to_string(random()) + ".poni");
    std::ostringstream text;
    text << std::setprecision(17) << "poni_version: 2\n"
         << "Detector: Detector\n"
         << "Detector_config: {\"pixel1\": " << pixel << ", \"pixel2\": " << pixel
         << ", \"max_shape\": [" << extent.rows << ", " << extent.cols << "]}\n"
         << "Distance: 0.12\n"
         << "Poni1: " << beam.y * pixel << "\n"
         << "Poni2: " << beam.x * pixel << "\n"
         << "Rot1: 0.01\nRot2: -0.02\nRot3: 0\n"
         << "Wavelength: " << kHcKevAngstrom * 1e-10 / SimulatorConfig{}.photon_energy_kev << "\n";
    text_ = text.str();
    std::ofstream out(path_);
    out << text_;
    if (!out) throw InputError("cannot write the PONI file " + path_.string());
  }
  ~SimulatorPoni() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  SimulatorPoni(const SimulatorPoni&) = delete;
  SimulatorPoni& operator=(const SimulatorPoni&) = delete;
  std::string path() const { return path_.string(); }
  const std::string& text() const { return text_; }  // echoed in the JSON: the file is removed

 private:
  std::filesystem::path path_;
  std::string text_;
};

// Parallel memcpy over the pool, read + write bytes per second / 1e9, median of the repeats
// after one pass that faults the pages in.
double host_copy_gbps(ThreadPool& pool, std::size_t bytes, int repeats) {
  std::vector<std::uint8_t> src(bytes), dst(bytes);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = std::uint8_t(i * 131u);
  const std::size_t chunks = (bytes + kHostCopyChunk - 1) / kHostCopyChunk;
  std::vector<double> gbps;
  for (int r = 0; r < repeats + 1; ++r) {
    const auto t0 = Clock::now();
    pool.parallel_for(chunks, [&](std::size_t begin, std::size_t end) {
      const std::size_t first = begin * kHostCopyChunk;
      const std::size_t last = std::min(bytes, end * kHostCopyChunk);
      if (last > first) std::memcpy(dst.data() + first, src.data() + first, last - first);
    });
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r > 0) gbps.push_back(2.0 * double(bytes) / s * 1e-9);
  }
  return percentile(gbps, 0.5);
}

struct Baselines {
  double device_copy_gbps = 0;  // 0: not measured
  double pinned_h2d_gbps = 0;
  double host_copy_gbps = 0;
  std::size_t bytes = 0;
  unsigned host_threads = 0;
};

struct Cell {
  // The configuration.
  std::string backend, source, stages_label, codec = "off", launch = "-";
  PipelineStages stages;
  int streams = 0;  // 0: the CPU backend (one lane, runtime settings not used)
  std::uint64_t events = 0;
  std::uint64_t warmup_events = 0;
  nlohmann::json config;  // EngineConfig::to_json() of the timed run
  // The outcome.
  std::string status = "ok";  // "ok", "refused", "skipped", "failed"
  std::string reason;
  std::string device, backend_note;
  protocol::StatsPayload stats;
  std::array<std::optional<double>, kStageCount> stage_us{};  // configured stages with a time
  std::array<double, kStageCount> busy{};
  std::string bound;
  double bound_busy = 0;
  std::optional<double> compression_ratio;
  PipelineBytes bytes;
  double memory_floor_eps = 0, h2d_floor_eps = 0, floor_eps = 0, floor_fraction = 0;
  std::string floor_by, floor_basis;

  int lanes() const { return streams > 0 ? streams : 1; }
};

EngineConfig cell_config(const PipelineBenchOptions& o, const DetectorDescription& detector,
                         const Cell& cell, const std::string& poni, std::uint64_t events) {
  EngineConfig c;
  c.source = "sim:" + o.detector;
  c.events = events;
  c.rate_hz = 0;
  c.full_ring = "wait";
  c.backend = cell.backend;
  c.publish = "";
  c.seed = o.seed;
  c.simulator_pool = o.simulator_pool;
  c.cpu_threads = o.cpu_threads;
  c.image.publish_hz = 0;
  c.runtime.source = cell.source == "device" ? SourcePlacement::Device : SourcePlacement::Host;
  if (cell.streams > 0) {
    c.runtime.streams = cell.streams;
    c.runtime.launch = launch_mode(cell.launch);
  }
  if (cell.stages.compress) {
    c.compression.codec = cell.codec;
    c.compression.error_bound = o.error_bound;
  }
  if (cell.stages.integrate) {
    c.integration.enabled = true;
    c.integration.poni = poni;
    c.integration.npt = o.npt;
  }
  if (cell.stages.peak) {
    c.peak_finding.enabled = true;
    c.peak_finding.params = peak_params();
    if (detector.encoding == RawEncoding::Epix10ka)
      c.peak_finding.search_gain_configs = {"FH", "AHL"};
  }
  return c;
}

struct EngineRun {
  RunSummary summary;
  std::string device, backend_note;
};

EngineRun run_engine(const EngineConfig& config) {
  Engine engine(config);
  engine.start();
  engine.wait();
  return {engine.summary(), engine.device_name(), engine.backend_note()};
}

std::string lost_events(const protocol::StatsPayload& s, std::uint64_t events) {
  if (s.events_processed == events && s.events_dropped == 0 && s.order_errors == 0) return {};
  std::ostringstream why;
  why << "processed " << s.events_processed << " of " << events << " events, dropped "
      << s.events_dropped;
  for (const auto& [reason, count] : s.drops_by_reason)
    if (count > 0) why << " (" << reason << " " << count << ")";
  why << ", order errors " << s.order_errors;
  return why.str();
}

// Stage times, the bound stage and the floor, from the timed run's summary.
void evaluate(Cell& cell, const DetectorDescription& detector, const Baselines& base) {
  const protocol::StatsPayload& s = cell.stats;
  const double eps = s.event_rate_hz;
  for (const protocol::StageTiming& t : s.stages)
    for (std::size_t k = 0; k < kStageCount; ++k)
      if (t.name == kStageNames[k] && configured(cell.stages, k) && t.mean_us > 0)
        cell.stage_us[k] = t.mean_us;
  std::size_t codec_in = 0, codec_out = 0;
  if (cell.stages.compress && s.compression && s.events_processed > 0) {
    const protocol::CompressionStats& c = *s.compression;
    codec_in = std::size_t(c.total_bytes_in / s.events_processed);
    codec_out = std::size_t(c.total_bytes_out / s.events_processed);
    if (c.total_bytes_out > 0)
      cell.compression_ratio = double(c.total_bytes_in) / double(c.total_bytes_out);
    // An engine that reports the codec only in the compression block: its time per event from
    // the bytes it took in and its GB/s over them.
    if (!cell.stage_us[1] && c.gbps > 0 && std::isfinite(c.gbps))
      cell.stage_us[1] =
          double(c.total_bytes_in) / (c.gbps * 1e9) / double(s.events_processed) * 1e6;
  }
  for (std::size_t k = 0; k < kStageCount; ++k) {
    if (!cell.stage_us[k]) continue;
    cell.busy[k] = *cell.stage_us[k] * 1e-6 * eps / double(cell.lanes());
    if (cell.bound.empty() || cell.busy[k] > cell.bound_busy) {
      cell.bound = kStageNames[k];
      cell.bound_busy = cell.busy[k];
    }
  }
  const bool cuda = cell.backend == "cuda";
  const bool host_fed_cuda = cuda && cell.source == "host";
  cell.bytes = pipeline_bytes_per_event(detector, cell.stages, codec_in, codec_out, host_fed_cuda);
  const double memory_gbps = cuda ? base.device_copy_gbps : base.host_copy_gbps;
  cell.floor_basis = cuda ? "device-to-device copy" : "host parallel memcpy";
  if (memory_gbps > 0)
    cell.memory_floor_eps = memory_gbps * 1e9 / double(cell.bytes.memory_total());
  cell.floor_eps = cell.memory_floor_eps;
  cell.floor_by = "mem";
  if (host_fed_cuda && base.pinned_h2d_gbps > 0) {
    cell.h2d_floor_eps = base.pinned_h2d_gbps * 1e9 / double(cell.bytes.host_to_device);
    if (cell.h2d_floor_eps < cell.floor_eps) {
      cell.floor_eps = cell.h2d_floor_eps;
      cell.floor_by = "h2d";
    }
  }
  cell.floor_fraction = cell.floor_eps > 0 ? eps / cell.floor_eps : 0;
}

void run_cell(Cell& cell, const PipelineBenchOptions& o, const DetectorDescription& detector,
              const std::string& poni, const Baselines& base) {
  const EngineConfig timed = cell_config(o, detector, cell, poni, cell.events);
  cell.config = timed.to_json();
  try {
    if (cell.warmup_events > 0) {
      const EngineRun warm = run_engine(cell_config(o, detector, cell, poni, cell.warmup_events));
      if (!warm.summary.error.empty()) {
        cell.status = "failed";
        cell.reason = "warm-up run: " + warm.summary.error;
        return;
      }
    }
    const EngineRun run = run_engine(timed);
    cell.stats = run.summary.stats;
    cell.device = run.device;
    cell.backend_note = run.backend_note;
    if (!run.summary.error.empty()) {
      cell.status = "failed";
      cell.reason = run.summary.error;
    } else if (const std::string lost = lost_events(cell.stats, cell.events); !lost.empty()) {
      cell.status = "failed";
      cell.reason = lost;
    }
    evaluate(cell, detector, base);
  } catch (const InputError& e) {
    cell.status = "refused";
    cell.reason = e.what();
  } catch (const std::exception& e) {  // RuntimeFault: a device or set-up failure
    cell.status = "failed";
    cell.reason = e.what();
  }
}

// ------------------------------------------------------------------------------------------------
// Output

std::string fixed(double value, int digits) {
  if (!std::isfinite(value)) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << value;
  return s.str();
}

std::string stage_text(const Cell& cell, std::size_t k) {
  if (!configured(cell.stages, k)) return "-";
  if (!cell.stage_us[k]) return "n/a";
  return fixed(*cell.stage_us[k], *cell.stage_us[k] < 100 ? 1 : 0);
}

const std::vector<std::string>& table_header() {
  static const std::vector<std::string> header = {
      "backend",  "source",     "stages",   "codec",    "streams",  "launch",  "events",
      "events/s", "raw GB/s",   "calib us", "codec us", "integ us", "peak us", "bound",
      "busy",     "floor ev/s", "by",       "of floor", "ratio"};
  return header;
}
constexpr std::size_t kConfigColumns = 6;

std::vector<std::string> table_row(const Cell& c) {
  std::vector<std::string> row = {c.backend,
                                  c.source,
                                  c.stages_label,
                                  c.codec,
                                  c.streams > 0 ? std::to_string(c.streams) : "-",
                                  c.streams > 0 ? c.launch : "-"};
  if (c.status == "refused" || c.status == "skipped" ||
      (c.status == "failed" && c.stats.events_processed == 0)) {
    row.push_back(c.status + ": " + c.reason);
    return row;
  }
  row.push_back(std::to_string(c.stats.events_processed));
  row.push_back(fixed(c.stats.event_rate_hz, 1));
  row.push_back(fixed(c.stats.input_gbps, 3));
  for (std::size_t k = 0; k < kStageCount; ++k) row.push_back(stage_text(c, k));
  row.push_back(c.bound.empty() ? "-" : c.bound);
  row.push_back(c.bound.empty() ? "-" : fixed(c.bound_busy, 2));
  row.push_back(c.floor_eps > 0 ? fixed(c.floor_eps, 0) : "-");
  row.push_back(c.floor_eps > 0 ? c.floor_by : "-");
  row.push_back(c.floor_eps > 0 ? fixed(c.floor_fraction, 3) : "-");
  row.push_back(c.compression_ratio ? fixed(*c.compression_ratio, 2) : "-");
  if (c.status == "failed") row.push_back("failed: " + c.reason);
  return row;
}

// Fixed-width columns; a row shorter than the header (refused, skipped) runs its last text on.
std::string fixed_width_table(const std::vector<Cell>& cells) {
  const std::vector<std::string>& header = table_header();
  std::vector<std::vector<std::string>> rows;
  for (const Cell& c : cells) rows.push_back(table_row(c));
  std::vector<std::size_t> width(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& row : rows)
    if (row.size() >= header.size())
      for (std::size_t i = 0; i < header.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (const auto& row : rows)  // the configuration columns of every row
    for (std::size_t i = 0; i < kConfigColumns && i < row.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  std::ostringstream out;
  const auto line = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i > 0) out << "  ";
      if (i >= header.size() || (i == kConfigColumns && row.size() == kConfigColumns + 1)) {
        out << row[i];  // a trailing note: no padding
        continue;
      }
      if (i < kConfigColumns || header[i] == "bound" || header[i] == "by")
        out << std::left << std::setw(int(width[i])) << row[i];
      else
        out << std::right << std::setw(int(width[i])) << row[i];
    }
    out << "\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
  return out.str();
}

std::string markdown_table(const std::vector<Cell>& cells) {
  const std::vector<std::string>& header = table_header();
  std::ostringstream out;
  out << "|";
  for (const std::string& h : header) out << " " << h << " |";
  out << " note |\n|";
  for (std::size_t i = 0; i <= header.size(); ++i) out << "---|";
  out << "\n";
  for (const Cell& c : cells) {
    std::vector<std::string> row = table_row(c);
    std::string note;
    if (row.size() == kConfigColumns + 1) {
      note = row.back();
      row.pop_back();
    } else if (row.size() > header.size()) {
      note = row.back();
      row.pop_back();
    }
    row.resize(header.size(), "-");
    out << "|";
    for (const std::string& v : row) out << " " << v << " |";
    out << " " << note << " |\n";
  }
  return out.str();
}

std::string floor_model_text() {
  return "bytes/event = calibrate (raw read + float32 image written) + codec (its input read: raw "
         "words lossless (uint32 and int32 images: the float32 image), the float32 image lossy; + "
         "its measured compressed stream written) + "
         "integrate (float32 image read) + peak (float32 image read); shared per-event-invariant "
         "tables (calibration constants, integration pixel-to-bin tables, peakfinder radius map "
         "and mask) not counted. Floor events/s = copy GB/s (read + write, measured in this "
         "process: device-to-device on the GPU, parallel memcpy for the CPU backend) / "
         "bytes/event; on the host-fed CUDA path also pinned H2D GB/s / raw bytes, the floor being "
         "the lower of the two. The device-resident source's own writes of the event into GPU "
         "memory (an FPGA's DMA in a real system) are not counted.";
}

nlohmann::json cell_json(const Cell& c) {
  nlohmann::json stage_us = nlohmann::json::object(), busy = nlohmann::json::object();
  for (std::size_t k = 0; k < kStageCount; ++k) {
    if (!configured(c.stages, k)) continue;
    stage_us[kStageNames[k]] = c.stage_us[k] ? nlohmann::json(*c.stage_us[k]) : nlohmann::json();
    busy[kStageNames[k]] = c.stage_us[k] ? nlohmann::json(c.busy[k]) : nlohmann::json();
  }
  nlohmann::json stages = nlohmann::json::array();
  for (std::size_t k = 0; k < kStageCount; ++k)
    if (configured(c.stages, k)) stages.push_back(kStageNames[k]);
  nlohmann::json j = {{"backend", c.backend},
                      {"source", c.source},
                      {"stage_set", c.stages_label},
                      {"stages", stages},
                      {"codec", c.codec},
                      {"streams", c.streams > 0 ? nlohmann::json(c.streams) : nlohmann::json()},
                      {"launch", c.streams > 0 ? nlohmann::json(c.launch) : nlohmann::json()},
                      {"lanes", c.lanes()},
                      {"events", c.events},
                      {"warmup_events", c.warmup_events},
                      {"status", c.status},
                      {"reason", c.reason},
                      {"config", c.config}};
  if (c.status == "refused" || c.status == "skipped") return j;
  const protocol::StatsPayload& s = c.stats;
  j["device"] = c.device;
  j["backend_note"] = c.backend_note;
  j["events_in"] = s.events_in;
  j["events_processed"] = s.events_processed;
  j["events_dropped"] = s.events_dropped;
  j["drops_by_reason"] = s.drops_by_reason;
  j["order_errors"] = s.order_errors;
  j["elapsed_s"] = s.elapsed_s;
  j["events_per_s"] = s.event_rate_hz;
  j["raw_gb_per_s"] = s.input_gbps;
  j["stage_us"] = stage_us;
  j["stage_busy"] = busy;
  j["bound"] = c.bound.empty() ? nlohmann::json() : nlohmann::json(c.bound);
  j["bound_busy"] = c.bound_busy;
  // On one lane (the CPU backend) 1 - busy_sum is the time per event outside the timed stages.
  double busy_sum = 0;
  for (const double b : c.busy) busy_sum += b;
  j["busy_sum"] = busy_sum;
  if (s.compression)
    j["compression"] = {
        {"codec", s.compression->codec},
        {"error_bound", s.compression->error_bound},
        {"bytes_in", s.compression->total_bytes_in},
        {"bytes_out", s.compression->total_bytes_out},
        {"ratio", c.compression_ratio ? nlohmann::json(*c.compression_ratio) : nlohmann::json()},
        {"gb_per_s", s.compression->gbps}};
  j["bytes_per_event"] = {
      {"calibrate_read", c.bytes.calibrate_read}, {"calibrate_written", c.bytes.calibrate_written},
      {"compress_read", c.bytes.compress_read},   {"compress_written", c.bytes.compress_written},
      {"integrate_read", c.bytes.integrate_read}, {"peak_read", c.bytes.peak_read},
      {"memory_total", c.bytes.memory_total()},   {"host_to_device", c.bytes.host_to_device}};
  j["floor"] = {{"basis", c.floor_basis},
                {"memory_events_per_s", c.memory_floor_eps},
                {"host_to_device_events_per_s",
                 c.h2d_floor_eps > 0 ? nlohmann::json(c.h2d_floor_eps) : nlohmann::json()},
                {"events_per_s", c.floor_eps},
                {"limited_by", c.floor_by == "h2d" ? "host-to-device copy" : "memory"}};
  j["floor_fraction"] = c.floor_fraction;
  return j;
}

}  // namespace

void add_pipeline_options(CLI::App& command, PipelineBenchOptions& o) {
  command.add_option("--detector", o.detector, "built-in detector name or a .json description")
      ->capture_default_str();
  command.add_option("--events", o.events, "events per timed CUDA cell")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  command.add_option("--cpu-events", o.cpu_events, "events per timed CPU cell")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  command
      .add_option("--warmup-events", o.warmup_events,
                  "events of the warm-up run before each cell (-1: a tenth of the cell's, at "
                  "least 1; 0: none)")
      ->check(CLI::Range(-1, 1000000))
      ->capture_default_str();
  command.add_option("--backends", o.backends, "backends (comma-separated): cpu, cuda")
      ->delimiter(',')
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  command.add_option("--sources", o.sources, "feeding paths, runtime.source: host, device")
      ->delimiter(',')
      ->check(CLI::IsMember({"host", "device"}))
      ->capture_default_str();
  command.add_option("--streams", o.streams, "runtime.streams of the CUDA cells")
      ->delimiter(',')
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  command
      .add_option("--launch", o.launch,
                  "runtime.launch of the CUDA cells: plain, graph, device_graph, persistent")
      ->delimiter(',')
      ->check(CLI::IsMember({"plain", "graph", "device_graph", "persistent"}))
      ->capture_default_str();
  command
      .add_option("--stages", o.stages,
                  "stage sets, one row group each: calibrate, all, or calibrate, compress, "
                  "integrate, peak joined by '+'")
      ->delimiter(',')
      ->capture_default_str();
  command
      .add_option("--compression", o.compression,
                  "codecs of the stage sets that compress: lossless, lossy")
      ->delimiter(',')
      ->check(CLI::IsMember({"lossless", "lossy"}))
      ->capture_default_str();
  command.add_option("--error-bound", o.error_bound, "lossy codec's absolute bound (keV)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command.add_option("--npt", o.npt, "radial bins of the integration stage")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  command.add_option("--poni", o.poni,
                     "PONI file for the integration stage (default: one written for the "
                     "simulator's beam)");
  command
      .add_option("--simulator-pool", o.simulator_pool,
                  "distinct simulated events each engine generates before its clock starts")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  command.add_option("--cpu-threads", o.cpu_threads, "CPU backend and host-copy threads (0: all)")
      ->capture_default_str();
  command.add_option("--copy-mib", o.copy_mib, "size of the copy baselines (MiB)")
      ->check(CLI::Range(16, 16384))
      ->capture_default_str();
  add_common_options(command, o.seed, o.json_path, o.markdown_path);
}

int run_pipeline(const PipelineBenchOptions& o) {
  const DetectorDescription detector = find_detector(o.detector);
  std::vector<std::pair<std::string, PipelineStages>> stage_sets;
  for (const std::string& text : o.stages) stage_sets.emplace_back(text, parse_stage_set(text));
  for (const std::string& name : o.launch) launch_mode(name);
  const bool want_cpu = std::count(o.backends.begin(), o.backends.end(), "cpu") > 0;
  const bool want_cuda = std::count(o.backends.begin(), o.backends.end(), "cuda") > 0;
  const bool any_integration = std::any_of(stage_sets.begin(), stage_sets.end(),
                                           [](const auto& s) { return s.second.integrate; });

  // The CUDA cells run only where a device is usable; otherwise each is a "skipped" row.
  std::optional<std::string> no_cuda;
  if (want_cuda && !cuda_ready("pipeline"))
    no_cuda = cuda_unavailable_reason().value_or("CUDA not usable");

  Baselines base;
  base.bytes = o.copy_mib << 20;
  if (want_cpu) {
    ThreadPool pool(o.cpu_threads ? o.cpu_threads
                                  : std::max(1u, std::thread::hardware_concurrency()));
    base.host_threads = pool.size();
    base.host_copy_gbps = host_copy_gbps(pool, base.bytes, kCopyRepeats);
    std::cerr << "host parallel memcpy (" << pool.size() << " threads): " << base.host_copy_gbps
              << " GB/s\n";
  }
#ifdef LIVEDRP_HAVE_CUDA
  if (want_cuda && !no_cuda) {
    base.device_copy_gbps = device_copy_gbps(base.bytes, kCopyRepeats);
    base.pinned_h2d_gbps = pinned_h2d_gbps(base.bytes, kCopyRepeats);
    std::cerr << "device-to-device copy " << base.device_copy_gbps << " GB/s, pinned H2D "
              << base.pinned_h2d_gbps << " GB/s\n";
  }
#endif

  std::optional<SimulatorPoni> written_poni;
  std::string poni = o.poni;
  if (any_integration && poni.empty()) {
    written_poni.emplace(detector);
    poni = written_poni->path();
  }

  std::vector<Cell> cells;
  for (const std::string& backend : o.backends)
    for (const std::string& source : o.sources)
      for (const auto& [label, stages] : stage_sets) {
        const std::vector<std::string> codecs =
            stages.compress ? o.compression : std::vector<std::string>{"off"};
        for (const std::string& codec : codecs) {
          Cell cell;
          cell.backend = backend;
          cell.source = source;
          cell.stages_label = label;
          cell.stages = stages;
          cell.codec = codec;
          const bool cuda = backend == "cuda";
          cell.events = std::uint64_t(cuda ? o.events : o.cpu_events);
          cell.warmup_events =
              o.warmup_events >= 0
                  ? std::min<std::uint64_t>(std::uint64_t(o.warmup_events), cell.events)
                  : std::max<std::uint64_t>(1, cell.events / 10);
          if (!cuda) {  // one lane; the runtime settings are CUDA's
            cells.push_back(cell);
            continue;
          }
          for (const int streams : o.streams)
            for (const std::string& launch : o.launch) {
              Cell c = cell;
              c.streams = streams;
              c.launch = launch;
              cells.push_back(c);
            }
        }
      }

  for (Cell& cell : cells) {
    if (cell.backend == "cuda" && no_cuda) {
      cell.status = "skipped";
      cell.reason = *no_cuda;
      cell.config = cell_config(o, detector, cell, poni, cell.events).to_json();
    } else {
      run_cell(cell, o, detector, poni, base);
    }
    std::cerr << cell.backend << " " << cell.source << " " << cell.stages_label << " "
              << cell.codec;
    if (cell.streams > 0) std::cerr << " " << cell.streams << " streams " << cell.launch;
    if (cell.status == "ok")
      std::cerr << ": " << cell.stats.event_rate_hz << " events/s, bound " << cell.bound << ", "
                << cell.floor_fraction << " of the floor\n";
    else
      std::cerr << ": " << cell.status << ": " << cell.reason << "\n";
  }

  const std::string table = fixed_width_table(cells);
  std::cout << "livedrp-bench pipeline: " << detector.name << ", " << detector.pixels()
            << " pixels, raw " << detector.raw_event_bytes() << " bytes/event\n"
            << "copy baselines (" << (base.bytes >> 20) << " MiB, read + write): ";
  if (base.host_copy_gbps > 0)
    std::cout << "host memcpy " << fixed(base.host_copy_gbps, 1) << " GB/s (" << base.host_threads
              << " threads)";
  if (base.device_copy_gbps > 0)
    std::cout << (base.host_copy_gbps > 0 ? ", " : "") << "device-to-device "
              << fixed(base.device_copy_gbps, 1) << " GB/s, pinned H2D "
              << fixed(base.pinned_h2d_gbps, 1) << " GB/s";
  std::cout << "\nstage times: mean us per event; busy = us x events/s / lanes; of floor = "
               "events/s / floor events/s (by: mem = memory copy bandwidth, h2d = pinned "
               "host-to-device)\n\n"
            << table;

  int status = 0;
  for (const Cell& c : cells)
    if (c.status == "failed") status = 1;

  nlohmann::json json_cells = nlohmann::json::array();
  for (const Cell& c : cells) json_cells.push_back(cell_json(c));
  const nlohmann::json report = {
      {"schema_version", 1},
      {"tool", "livedrp-bench pipeline"},
      {"options",
       {{"detector", o.detector},
        {"events", o.events},
        {"cpu_events", o.cpu_events},
        {"warmup_events", o.warmup_events},
        {"backends", o.backends},
        {"sources", o.sources},
        {"streams", o.streams},
        {"launch", o.launch},
        {"stages", o.stages},
        {"compression", o.compression},
        {"error_bound", o.error_bound},
        {"npt", o.npt},
        {"poni", o.poni},
        {"simulator_pool", o.simulator_pool},
        {"cpu_threads", o.cpu_threads},
        {"copy_mib", o.copy_mib},
        {"seed", o.seed}}},
      {"detector", to_json(detector)},
      {"poni",
       {{"path", poni},
        {"written_for_simulator", written_poni.has_value()},
        {"text", written_poni ? nlohmann::json(written_poni->text()) : nlohmann::json()}}},
      {"floor_model", floor_model_text()},
      {"fusion",
       "not configurable: EngineConfig has no fused/unfused switch; the floor counts "
       "one calibrated-image read per stage that reads it"},
      {"baselines",
       {{"copy_bytes", base.bytes},
        {"host_memcpy_gb_per_s", base.host_copy_gbps},
        {"host_threads", base.host_threads},
        {"device_to_device_copy_gb_per_s", base.device_copy_gbps},
        {"pinned_h2d_gb_per_s", base.pinned_h2d_gbps}}},
      {"cells", json_cells}};
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    if (!(out << report.dump(2) << "\n")) throw InputError("cannot write --json " + o.json_path);
  }
  if (!o.markdown_path.empty()) {
    std::ofstream out(o.markdown_path);
    if (!(out << markdown_table(cells)))
      throw InputError("cannot write --markdown " + o.markdown_path);
  }
  return status;
}

}  // namespace livedrp::bench
