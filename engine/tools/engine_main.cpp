// livedrp-engine: the headless engine. `run` drives a source through the pipeline and publishes
// over ZeroMQ; progress goes to stderr, the final summary to stdout.
// With --control ENDPOINT the run is driven by an EngineController behind a control socket
// (docs/protocol.md, "Control socket"): it can be reconfigured, stopped and restarted remotely, and
// the process serves until interrupted (SIGINT, SIGTERM) or asked to "shutdown"; the summary
// printed then is the last run's.
// A replay source (replay:FILE.h5[:/dataset]) prints its position, percent, rate, time left and
// what limits it; --record DIR records the source's events to HDF5 files (docs/formats.md).
// Exit status: 0 done, 1 the run failed (device fault), 2 bad input (arguments, config, endpoint).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/detector.hpp"
#include "core/error.hpp"
#include "exec/engine.hpp"
#include "exec/engine_controller.hpp"
#include "publish/bind_endpoint.hpp"
#include "publish/control_replies.hpp"
#include "publish/control_server.hpp"
#include "publish/curve_server.hpp"
#include "stream/stream_source.hpp"
#include "tools/geometry_command.hpp"
#include "tools/integrate_command.hpp"
#include "tools/peaks_command.hpp"
#include "tools/pedestal_command.hpp"
#ifdef LIVEDRP_HAVE_MPI
#include "mpi/mpi_run.hpp"
#endif

namespace {

constexpr int kExitRunFailed = 1;
constexpr int kExitBadInput = 2;

std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) {
  interrupted = true;
}

int bad_input(const std::string& what) {
  std::cerr << "livedrp-engine: error: " << what << "\n";
  return kExitBadInput;
}

std::string drops_text(const livedrp::protocol::StatsPayload& stats) {
  std::string text;
  for (const auto& [reason, count] : stats.drops_by_reason)
    if (count) text += (text.empty() ? " (" : ", ") + reason + " " + std::to_string(count);
  return text.empty() ? text : text + ")";
}

nlohmann::json summary_replay_json(const livedrp::ReplayStatus& r) {
  return {{"position", r.position},
          {"handed", r.handed},
          {"total_events", r.total_events},
          {"loops", r.loops},
          {"pace", r.pace},
          {"pace_note", r.pace_note},
          {"disk_wait_s", r.disk_wait_s},
          {"pipeline_wait_s", r.pipeline_wait_s},
          {"read_gbps", r.read_gbps},
          {"limited_by", r.limited_by},
          {"read_errors", r.read_errors},
          {"skipped_files", r.skipped_files}};
}

// JSON has no NaN: a quantity not measured (no event) is null.
nlohmann::json finite_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json();
}

nlohmann::json summary_json(const livedrp::EngineConfig& config,
                            const livedrp::RunSummary& summary) {
  const auto& s = summary.stats;
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& stage : s.stages)
    stages.push_back({{"name", stage.name}, {"mean_us", stage.mean_us}, {"gbps", stage.gbps}});
  nlohmann::json result = {{"events_in", s.events_in},
                           {"events_processed", s.events_processed},
                           {"events_dropped", s.events_dropped},
                           {"drops_by_reason", s.drops_by_reason},
                           {"order_errors", s.order_errors},
                           {"elapsed_s", s.elapsed_s},
                           {"event_rate_hz", s.event_rate_hz},
                           {"input_gbps", s.input_gbps},
                           {"latency_p50_us", finite_or_null(s.latency_p50_us)},
                           {"latency_p99_us", finite_or_null(s.latency_p99_us)},
                           {"latency_max_us", finite_or_null(s.latency_max_us)},
                           {"backend", s.backend},
                           {"device", s.device},
                           {"stages", stages},
                           {"error", summary.error},
                           {"config", config.to_json()}};
  if (s.compression)
    result["compression"] = {
        {"codec", s.compression->codec},
        {"error_bound", s.compression->error_bound},
        {"bytes_in", s.compression->total_bytes_in},
        {"bytes_out", s.compression->total_bytes_out},
        {"gbps", s.compression->gbps},
        {"ratio", s.compression->total_bytes_out > 0 ? double(s.compression->total_bytes_in) /
                                                           double(s.compression->total_bytes_out)
                                                     : 0.0}};
  if (s.source_stream) result["source_stream"] = livedrp::protocol::to_json(s)["source_stream"];
  if (s.ranks) result["ranks"] = livedrp::protocol::to_json(*s.ranks);
  if (s.rate_bound)
    result["rate_bound"] = {{"by", s.rate_bound->by},
                            {"busy_fraction", finite_or_null(s.rate_bound->busy_fraction)},
                            {"why", s.rate_bound->why}};
  if (const auto& p = s.peak_finding)
    result["peak_finding"] = {{"events", p->total_events},
                              {"hits", p->total_hits},
                              {"peaks", p->total_peaks},
                              {"params_version", p->params_version},
                              {"peaks_messages", p->peaks_messages},
                              {"hits_not_sent", p->hits_not_sent}};
  return result;
}

// Progress of a replay: where it is, how fast, how long still, and what holds it back.
void print_replay_progress(const livedrp::protocol::StatsPayload& s, const livedrp::ReplayStatus& r,
                           std::uint64_t event_limit, bool loop) {
  std::uint64_t goal = loop ? 0 : r.total_events;
  if (event_limit > 0) goal = goal == 0 ? event_limit : std::min(goal, event_limit);
  std::string where = std::to_string(r.handed) + " events";
  std::string left;
  if (goal > 0) {
    char text[96];
    std::snprintf(text, sizeof text, " of %llu (%.1f%%)", (unsigned long long)goal,
                  100.0 * double(r.handed) / double(goal));
    where += text;
    if (s.event_rate_hz > 0 && !r.paused) {
      std::snprintf(text, sizeof text, ", %.0f s left",
                    double(goal - std::min(goal, r.handed)) / s.event_rate_hz);
      left = text;
    }
  }
  std::fprintf(stderr,
               "  %.1f s: %s, %llu processed, %llu dropped, %.1f events/s, %.3f GB/s%s%s%s\n",
               s.elapsed_s, where.c_str(), (unsigned long long)s.events_processed,
               (unsigned long long)s.events_dropped, s.event_rate_hz, s.input_gbps, left.c_str(),
               r.paused ? ", paused" : "",
               r.limited_by.empty() ? "" : (", limited by " + r.limited_by).c_str());
}

void print_progress(const livedrp::protocol::StatsPayload& s) {
  std::fprintf(stderr, "  %.1f s: %llu processed, %llu dropped, %.1f events/s, %.3f GB/s\n",
               s.elapsed_s, (unsigned long long)s.events_processed,
               (unsigned long long)s.events_dropped, s.event_rate_hz, s.input_gbps);
}

// A live writer's line of the summary: what it wrote, and every event it did not.
void print_writer(const char* label, const char* unit, const livedrp::WriterStatus& w) {
  if (!w.active) return;
  std::printf("%s: %llu %s in %zu file(s)", label, (unsigned long long)w.written, unit,
              w.files.size());
  if (w.dropped > 0)
    std::printf(", %llu not written (writer queue full)", (unsigned long long)w.dropped);
  if (w.failed > 0)
    std::printf(", %llu not written (writing stopped)", (unsigned long long)w.failed);
  if (w.peaks_left_out > 0)
    std::printf(", %llu peaks past max_num_peaks not listed", (unsigned long long)w.peaks_left_out);
  std::printf("\n");
  for (const auto& file : w.files) std::printf("  %s\n", file.c_str());
}

void print_writers(const livedrp::WriteStatus& written) {
  print_writer("hit files", "hits", written.hits);
  print_writer("profiles", "profiles", written.profiles);
  print_writer("average image", "events averaged", written.average);
}

// Prints the summary (stdout, and --summary-json); returns the exit status. `written`: a plain
// run's writers; `segments`: under --control, the writers of every run the session started
// (written is then the last one's).
int report(const livedrp::EngineConfig& config, const livedrp::RunSummary& summary,
           const std::string& summary_file,
           const std::optional<livedrp::ReplayStatus>& replay = std::nullopt,
           const std::optional<livedrp::RecordStatus>& record = std::nullopt,
           livedrp::WriteStatus written = {},
           const std::optional<std::vector<livedrp::WriteSegment>>& segments = std::nullopt) {
  if (segments && !segments->empty()) written = segments->back().status;
  const auto& s = summary.stats;
  std::printf("events in: %llu, processed: %llu, dropped: %llu%s, order errors: %llu\n",
              (unsigned long long)s.events_in, (unsigned long long)s.events_processed,
              (unsigned long long)s.events_dropped, drops_text(s).c_str(),
              (unsigned long long)s.order_errors);
  std::printf("rate: %.1f events/s, input: %.3f GB/s, elapsed: %.2f s, backend: %s (%s)\n",
              s.event_rate_hz, s.input_gbps, s.elapsed_s, s.backend.c_str(), s.device.c_str());
  if (s.events_processed > 0)
    std::printf("latency (source to result, whole run): p50 %.0f us, p99 %.0f us, max %.0f us\n",
                s.latency_p50_us, s.latency_p99_us, s.latency_max_us);
  for (const auto& stage : s.stages)
    std::printf("stage %s: %.1f us/event, %.2f GB/s\n", stage.name.c_str(), stage.mean_us,
                stage.gbps);
  if (s.rate_bound)
    std::printf("rate bound by %s (last busy interval): %s\n", s.rate_bound->by.c_str(),
                s.rate_bound->why.c_str());
  if (const auto& c = s.compression; c && c->total_bytes_out > 0)
    std::printf("compression %s: %llu -> %llu bytes, ratio %.3f\n", c->codec.c_str(),
                (unsigned long long)c->total_bytes_in, (unsigned long long)c->total_bytes_out,
                double(c->total_bytes_in) / double(c->total_bytes_out));
  if (const auto& p = s.peak_finding; p && p->total_events > 0)
    std::printf("peak finding: %llu events searched, %llu hits (%.1f%%), %.1f peaks/event\n",
                (unsigned long long)p->total_events, (unsigned long long)p->total_hits,
                100.0 * double(p->total_hits) / double(p->total_events),
                double(p->total_peaks) / double(p->total_events));
  if (s.ranks)
    for (const auto& rank : s.ranks->processing)
      std::printf("rank %llu: %s, in %llu, processed %llu, dropped %llu, %.2f s%s%s\n",
                  (unsigned long long)rank.rank, rank.state.c_str(),
                  (unsigned long long)rank.events_in, (unsigned long long)rank.events_processed,
                  (unsigned long long)rank.events_dropped, rank.elapsed_s,
                  rank.error.empty() ? "" : ": ", rank.error.c_str());
  if (const auto& source = s.source_stream) {
    std::string rejected;
    for (const auto& [reason, count] : source->rejected)
      rejected += (rejected.empty() ? "" : ", ") + reason + " " + std::to_string(count);
    std::printf(
        "%s stream: %llu messages, %llu events assembled, %llu acquisitions (%llu ended), "
        "rejected: %s\n",
        source->kind.c_str(), (unsigned long long)source->messages,
        (unsigned long long)source->events, (unsigned long long)source->acquisitions,
        (unsigned long long)source->acquisitions_ended,
        rejected.empty() ? "none" : rejected.c_str());
    if (!source->last_problem.empty())
      std::printf("%s stream: last problem: %s\n", source->kind.c_str(),
                  source->last_problem.c_str());
  }
  if (replay)
    std::printf(
        "replay: %llu events handed on of %llu, %llu loops, pace %s, disk wait %.3f s, "
        "pipeline wait %.3f s, read %.3f GB/s, limited by %s\n",
        (unsigned long long)replay->handed, (unsigned long long)replay->total_events,
        (unsigned long long)replay->loops, replay->pace.c_str(), replay->disk_wait_s,
        replay->pipeline_wait_s, replay->read_gbps,
        replay->limited_by.empty() ? "-" : replay->limited_by.c_str());
  if (replay)
    for (const auto& skipped : replay->skipped_files)
      std::printf("replay: left out (cannot be read): %s\n", skipped.c_str());
  if (record && record->active) {
    std::printf("recorded: %llu events in %zu files", (unsigned long long)record->events,
                record->files.size());
    if (record->dropped > 0)
      std::printf(", %llu not recorded (writer queue full)", (unsigned long long)record->dropped);
    if (record->failed > 0)
      std::printf(", %llu not recorded (recording stopped)", (unsigned long long)record->failed);
    std::printf("\n");
    for (const auto& file : record->files) std::printf("  %s\n", file.c_str());
  }
  if (segments)
    for (const livedrp::WriteSegment& segment : *segments) {
      std::printf("writers of run %lld (segment %d, %llu events processed, %llu hits):\n",
                  static_cast<long long>(segment.run), segment.segment,
                  (unsigned long long)segment.events_processed, (unsigned long long)segment.hits);
      print_writers(segment.status);
    }
  else
    print_writers(written);
  if (!summary_file.empty()) {
    std::ofstream out(summary_file);
    nlohmann::json json = summary_json(config, summary);
    if (replay) json["replay"] = summary_replay_json(*replay);
    if (record && record->active)
      json["record"] = {{"events", record->events},
                        {"dropped", record->dropped},
                        {"failed", record->failed},
                        {"error", record->error},
                        {"files", record->files}};
    if (written.hits.active) json["write"]["hits"] = livedrp::writer_json(written.hits);
    if (written.profiles.active) json["write"]["profiles"] = livedrp::writer_json(written.profiles);
    if (written.average.active) json["write"]["average"] = livedrp::writer_json(written.average);
    if (segments) json["write_segments"] = livedrp::write_segments_json(*segments);
    out << json.dump(2) << "\n";
    if (!out) return bad_input("cannot write summary file '" + summary_file + "'");
  }
  if (!summary.error.empty()) {
    std::cerr << "livedrp-engine: run failed: " << summary.error << "\n";
    return kExitRunFailed;
  }
  // Every event was processed, but an output asked for is not whole.
  std::vector<livedrp::WriteStatus> all_written{written};
  if (segments)
    for (const livedrp::WriteSegment& segment : *segments) all_written.push_back(segment.status);
  for (const livedrp::WriteStatus& each : all_written)
    for (const auto* w : {&each.hits, &each.profiles, &each.average})
      if (!w->error.empty()) {
        std::cerr << "livedrp-engine: writing stopped: " << w->error << "\n";
        return kExitRunFailed;
      }
  if (record && !record->error.empty()) {
    std::cerr << "livedrp-engine: recording stopped: " << record->error << "\n";
    return kExitRunFailed;
  }
  return 0;
}

// The run under a control socket: serves until interrupted or asked to shut down.
int run_controlled(const livedrp::EngineConfig& config, const std::string& control_endpoint,
                   const std::string& summary_file, livedrp::ControlAccess access,
                   const std::vector<std::string>& control_roots) {
  auto last_print = std::chrono::steady_clock::now();  // outlives the controller's engines
  std::unique_ptr<livedrp::EngineController> controller;
  std::unique_ptr<livedrp::ControlServer> server;
  try {
    controller = std::make_unique<livedrp::EngineController>(config);
    livedrp::ControlRoots roots(control_roots);
    if (!roots.confined() && access == livedrp::ControlAccess::Full &&
        !livedrp::is_loopback_endpoint(control_endpoint))
      spdlog::warn(
          "control requests from other machines may name any file; --control-root DIR confines "
          "them, --control-read-only lets them only look");
    server = std::make_unique<livedrp::ControlServer>(*controller, control_endpoint, access,
                                                      std::move(roots));
  } catch (const livedrp::InputError& e) {
    return bad_input(e.what());
  } catch (const livedrp::RuntimeFault& e) {
    return bad_input(e.what());
  }
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  const livedrp::EngineConfig in_force = controller->config();
  std::cerr << "livedrp-engine: " << in_force.source << " (backend " << in_force.backend
            << "), publishing on "
            << (controller->publish_endpoint().empty() ? "nothing" : controller->publish_endpoint())
            << "\n"
            << "livedrp-engine: backend " << controller->backend_note() << "\n"
            << "livedrp-engine: control socket on " << server->endpoint() << "\n"
            << std::flush;
  controller->set_progress_callback([&last_print](const livedrp::protocol::StatsPayload& s) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_print < std::chrono::seconds(1)) return;
    last_print = now;
    print_progress(s);
  });
  controller->start();
  while (!interrupted && !server->shutdown_requested())
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // Requests that arrive from here on are still answered until the server goes; a "start" among
  // them would be stopped again by the stop() below.
  controller->stop();
  server.reset();
  std::cerr << "livedrp-engine: "
            << (interrupted ? "interrupted" : "shut down by a control request") << "\n";
  return report(controller->config(), controller->summary(), summary_file, std::nullopt,
                std::nullopt, {}, controller->write_segments());
}

#ifdef LIVEDRP_HAVE_MPI
// One rank of `mpirun -n N livedrp-engine run` (engine/mpi, docs/mpi.md): rank 0 prints the
// merged run's summary, the other ranks print nothing but their errors.
int run_mpi_rank(livedrp::mpi::Session& session, const livedrp::EngineConfig& config,
                 const std::string& summary_file, const livedrp::mpi::ControlOptions& control) {
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  const livedrp::mpi::RankOutcome outcome =
      livedrp::mpi::run_rank(session, config, interrupted, control);
  if (!outcome.startup_error.empty()) return bad_input(outcome.startup_error);
  if (outcome.exit_code != 0) return outcome.exit_code;
  if (!outcome.collector) return outcome.summary.error.empty() ? 0 : kExitRunFailed;
  return report(config, outcome.summary, summary_file);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"livedrp-engine: live detector data reduction (headless)"};
  app.set_version_flag("--version", std::string("livedrp-engine ") + LIVEDRP_VERSION);
  app.require_subcommand(1);

  CLI::App* run =
      app.add_subcommand("run", "Run a source through the pipeline and publish results");
  std::string config_file, source, backend, publish, constants_file, summary_file, control,
      record_dir, replay_detector, stream_detector;
  std::uint64_t record_max_mb = 0;
  std::string write_hits, write_profiles, write_average;
  std::int64_t hits_per_file = 0;
  bool record_hits_only = false;
  bool flat_out = false, loop = false;
  std::uint64_t events = 0;
  double rate = -1;
  int ring_slots = 0;
  bool no_common_mode = false, verbose = false, control_read_only = false;
  std::vector<std::string> control_roots, curve_clients;
  std::string curve_key;
  run->add_option("--config", config_file,
                  "Pipeline configuration (JSON); options below override it");
  run->add_option("--source", source,
                  "sim:epix10ka2m | sim:jungfrau4m | sim:generic_f32 | sim:eiger2x4m "
                  "(`livedrp-engine detectors` lists them) | replay:FILE.h5[:/dataset] "
                  "(FILE may be a directory of .h5 files or a comma-separated list) | "
                  "sls:tcp://HOST:PORT[,tcp://HOST:PORT...] (slsDetector receivers) | "
                  "dectris:tcp://HOST:PORT (SIMPLON stream v2)");
  run->add_flag("--flat-out", flat_out, "Replay as fast as disk and pipeline allow");
  run->add_flag("--loop", loop, "Replay: start again at the first event after the last");
  run->add_option("--replay-detector", replay_detector,
                  "Replay: the detector (name or description file) when the file does not say");
  run->add_option("--stream-detector", stream_detector,
                  "sls/dectris: the detector (name or description file) the stream feeds");
  run->add_option("--record", record_dir, "Record the source's events to HDF5 files in DIR");
  run->add_option("--record-max-mb", record_max_mb,
                  "Roll the recording over to a new file before it passes this size (MiB)");
  run->add_flag("--record-hits-only", record_hits_only,
                "With --record: record only hit events (peakfinder8's; needs peak_finding)");
  run->add_option("--write-hits", write_hits,
                  "Write hit events (peakfinder8's hit flag; needs peak_finding in --config) to "
                  "CXI files for CrystFEL in DIR (docs/formats.md, \"Hit files\")");
  run->add_option("--hits-per-file", hits_per_file,
                  "With --write-hits: hits per CXI file (default 1000)");
  run->add_option("--write-profiles", write_profiles,
                  "Write every event's radial profile and pulse id to this NeXus file (.h5; needs "
                  "integration in --config)");
  run->add_option("--write-average", write_average,
                  "Write the run's average calibrated image, assembled in a PONI's frame, to this "
                  "NeXus file (.h5)");
  run->add_option("--events", events, "Stop after N events (0: until interrupted)");
  run->add_option("--rate", rate, "Source rate in Hz (0: as fast as possible)");
  run->add_option("--backend", backend, "cpu | cuda | auto");
  run->add_option("--publish", publish,
                  "ZeroMQ endpoint to publish on (default tcp://127.0.0.1:5555; '' publishes "
                  "nothing)");
  run->add_option("--constants", constants_file,
                  "Calibration constants (HDF5, see docs/formats.md)");
  run->add_option("--ring-slots", ring_slots, "Doorbell ring depth");
  run->add_flag("--no-common-mode", no_common_mode, "Skip the common-mode correction");
  run->add_option("--summary-json", summary_file, "Write the final summary as JSON to this file");
  run->add_option("--control", control,
                  "Serve a control socket (REP, JSON) on this endpoint, e.g. tcp://127.0.0.1:5556 "
                  "or tcp://127.0.0.1:* (the bound endpoint is printed on stderr); the process "
                  "then serves until interrupted or sent a \"shutdown\" request");
  run->add_option("--control-root", control_roots,
                  "With --control: a folder the control requests may name files in (repeatable); "
                  "a path outside every root is refused (default: any path)");
  run->add_flag("--control-read-only", control_read_only,
                "With --control: answer only status, get_config and get_peak_params (nothing that "
                "changes, stops or shuts the run down, or reads a file)");
  run->add_option("--curve-key", curve_key,
                  "ZeroMQ CURVE: this engine's secret key file (from `keygen`); the publish and "
                  "control sockets then admit only the clients of --curve-clients");
  run->add_option("--curve-clients", curve_clients,
                  "With --curve-key: a client's public key file (.pub) or a folder of them "
                  "(repeatable)");
  run->add_flag("-v,--verbose", verbose, "Log engine details");

  CLI::App* keygen = app.add_subcommand(
      "keygen", "Make a ZeroMQ CURVE key pair: STEM.key (secret, mode 0600) and STEM.pub");
  std::string key_stem;
  keygen->add_option("STEM", key_stem, "Path and name of the key files, without extension")
      ->required();

  CLI::App* detectors = app.add_subcommand("detectors", "List the built-in detectors");
  livedrp::tools::IntegrateCommand integrate(app);
  livedrp::tools::GeometryCommand geometry(app);
  livedrp::tools::PeaksCommand peaks(app);
  livedrp::tools::PedestalCommand pedestal(app);
  livedrp::tools::SimulateDarkCommand simulate_dark(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return bad_input(e.what());
  }
  spdlog::set_level(verbose ? spdlog::level::info : spdlog::level::warn);
#ifdef LIVEDRP_HAVE_MPI
  // Started by mpirun/srun as one of several ranks: MPI comes up before any thread does.
  std::unique_ptr<livedrp::mpi::Session> mpi_session;
  if (run->parsed() && livedrp::mpi::launched_as_rank()) {
    try {
      mpi_session = std::make_unique<livedrp::mpi::Session>();
    } catch (const livedrp::RuntimeFault& e) {
      std::cerr << "livedrp-engine: error: " << e.what() << "\n";
      return kExitRunFailed;
    }
  }
#endif
  if (integrate.parsed()) return integrate.run();
  if (geometry.parsed()) return geometry.run();
  if (peaks.parsed()) return peaks.run();
  if (pedestal.parsed()) {
    std::string command_line;  // recorded in the constants file
    for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
    return pedestal.run(command_line);
  }
  if (simulate_dark.parsed()) return simulate_dark.run();

  if (keygen->parsed()) {
    try {
      const livedrp::protocol::CurveKeyPair keys = livedrp::protocol::generate_curve_key_pair();
      livedrp::protocol::write_curve_key_files(key_stem, keys);
      std::cout << "secret key: " << key_stem << ".key (keep it; mode 0600)\n"
                << "public key: " << key_stem << ".pub (" << keys.public_key << ")\n";
      return 0;
    } catch (const livedrp::InputError& e) {
      return bad_input(e.what());
    } catch (const livedrp::RuntimeFault& e) {
      std::cerr << "livedrp-engine: error: " << e.what() << "\n";
      return 1;
    }
  }

  if (detectors->parsed()) {
    for (const auto& name : livedrp::builtin_detector_names()) {
      const auto d = livedrp::find_detector(name);
      std::cout << name << ": " << d.segments << " x " << d.rows << "x" << d.cols << " "
                << livedrp::to_string(d.encoding) << " - " << d.description << "\n";
    }
    return 0;
  }

  // Before the engine and the control server: their sockets take CURVE from it when they bind,
  // and it outlives them.
  std::unique_ptr<livedrp::CurveServer> curve_server;
  std::unique_ptr<livedrp::Engine> engine;
  livedrp::EngineConfig config;
  try {
    if (!curve_clients.empty() && curve_key.empty())
      throw livedrp::InputError("--curve-clients needs --curve-key FILE.key");
    if (!curve_key.empty()) {
      curve_server = std::make_unique<livedrp::CurveServer>(
          livedrp::load_curve_server(curve_key, curve_clients));
      std::cerr << "livedrp-engine: CURVE on: server public key " << curve_server->public_key()
                << ", " << curve_server->client_count() << " client key(s) admitted\n";
    }
    config = config_file.empty() ? livedrp::EngineConfig{}
                                 : livedrp::load_engine_config_file(config_file);
    if (!source.empty()) config.source = source;
    if (run->count("--events")) config.events = events;
    // Under MPI with mpi.inputs each processing rank runs its own input instead of `source`: the
    // replay and stream options are for those.
    const std::vector<std::string> sources =
        config.mpi.inputs.empty() ? std::vector<std::string>{config.source} : config.mpi.inputs;
    const auto any_source = [&sources](const auto& is) {
      return std::any_of(sources.begin(), sources.end(), is);
    };
    const bool replay_source =
        any_source([](const std::string& s) { return s.rfind("replay:", 0) == 0; });
    if (run->count("--rate")) {
      if (!(rate >= 0))
        throw livedrp::InputError("--rate must be >= 0 Hz, got " + std::to_string(rate));
      config.rate_hz = rate;
      // For a replay, --rate chooses the pace (0: flat out) instead of the recorded timestamps.
      if (replay_source) config.replay.pace = rate > 0 ? "rate" : "flat_out";
    }
    if (flat_out) {
      if (run->count("--rate") && rate > 0)
        throw livedrp::InputError("--flat-out and --rate " + std::to_string(rate) +
                                  " contradict each other");
      config.replay.pace = "flat_out";
      config.rate_hz = 0;
    }
    if (loop) config.replay.loop = true;
    if (!replay_detector.empty()) config.replay.detector = replay_detector;
    if (!stream_detector.empty()) config.stream.detector = stream_detector;
    if (!record_dir.empty()) config.record.directory = record_dir;
    if (run->count("--record-max-mb")) {
      if (record_max_mb < 1) throw livedrp::InputError("--record-max-mb must be at least 1");
      config.record.max_file_bytes = record_max_mb << 20;
    }
    if (record_hits_only) {
      if (config.record.directory.empty())
        throw livedrp::InputError("--record-hits-only needs --record DIR");
      config.record.hits_only = true;
    }
    if (run->count("--write-hits")) {
      if (write_hits.empty()) throw livedrp::InputError("--write-hits needs a folder, got ''");
      config.write.hits_directory = write_hits;
    }
    if (run->count("--hits-per-file")) {
      if (hits_per_file < 1)
        throw livedrp::InputError("--hits-per-file must be at least 1, got " +
                                  std::to_string(hits_per_file));
      if (config.write.hits_directory.empty())
        throw livedrp::InputError("--hits-per-file needs --write-hits DIR");
      config.write.hits_per_file = std::uint64_t(hits_per_file);
    }
    if (run->count("--write-profiles")) {
      if (write_profiles.empty())
        throw livedrp::InputError("--write-profiles needs a file name, got ''");
      config.write.profiles = write_profiles;
    }
    if (run->count("--write-average")) {
      if (write_average.empty())
        throw livedrp::InputError("--write-average needs a file name, got ''");
      config.write.average = write_average;
    }
    if (!stream_detector.empty() && !any_source(livedrp::stream::is_stream_source))
      throw livedrp::InputError("--stream-detector needs an sls: or dectris: source, got '" +
                                config.source + "'");
    if (!replay_source && (flat_out || loop || !replay_detector.empty()))
      throw livedrp::InputError("--flat-out, --loop and --replay-detector need a replay source");
    if (!backend.empty()) {
      if (backend != "cpu" && backend != "cuda" && backend != "auto")
        throw livedrp::InputError("--backend must be cpu, cuda or auto, got '" + backend + "'");
      config.backend = backend;
    }
    if (run->count("--publish")) config.publish = publish;
    if (!constants_file.empty()) config.constants_file = constants_file;
    if (run->count("--ring-slots")) {
      if (ring_slots < 1) throw livedrp::InputError("--ring-slots must be at least 1");
      config.ring_slots = ring_slots;
    }
    if (no_common_mode) config.calibration.common_mode = false;
    if (control_read_only && !run->count("--control"))
      throw livedrp::InputError("--control-read-only needs --control ENDPOINT");
    if (!control_roots.empty() && !run->count("--control"))
      throw livedrp::InputError("--control-root needs --control ENDPOINT");
    const bool mpi_run =
#ifdef LIVEDRP_HAVE_MPI
        mpi_session != nullptr;
#else
        false;
#endif
    if (mpi_run && !source.empty() && !config.mpi.inputs.empty())
      throw livedrp::InputError("--source '" + source +
                                "' and mpi.inputs both name the run's input; under MPI each "
                                "processing rank takes its own of mpi.inputs: leave one out");
    if (run->count("--control")) {
      if (control.empty()) throw livedrp::InputError("--control needs an endpoint, got ''");
    } else if (!mpi_run) {
      engine = std::make_unique<livedrp::Engine>(config);
    }
  } catch (const livedrp::InputError& e) {
    return bad_input(e.what());
  } catch (const livedrp::RuntimeFault& e) {
    return bad_input(e.what());
  }

#ifdef LIVEDRP_HAVE_MPI
  if (mpi_session)
    return run_mpi_rank(
        *mpi_session, config, summary_file,
        {control,
         control_read_only ? livedrp::ControlAccess::ReadOnly : livedrp::ControlAccess::Full,
         control_roots});
#endif
  if (!engine)
    return run_controlled(
        config, control, summary_file,
        control_read_only ? livedrp::ControlAccess::ReadOnly : livedrp::ControlAccess::Full,
        control_roots);

  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  std::cerr << "livedrp-engine: " << engine->config().source << " on " << engine->backend_name()
            << " (" << engine->device_name() << "), publishing on "
            << (engine->publish_endpoint().empty() ? "nothing" : engine->publish_endpoint()) << "\n"
            << "livedrp-engine: backend " << engine->backend_note() << "\n";
  for (const auto& skipped : engine->replay_status().skipped_files)
    std::cerr << "livedrp-engine: replay: left out (cannot be read): " << skipped << "\n";
  auto last_print = std::chrono::steady_clock::now();
  livedrp::Engine* e = engine.get();
  engine->set_progress_callback([&last_print, e](const livedrp::protocol::StatsPayload& s) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_print < std::chrono::seconds(1)) return;
    last_print = now;
    if (const auto r = e->replay_status(); r.active)
      print_replay_progress(s, r, e->config().events, e->config().replay.loop);
    else
      print_progress(s);
  });
  engine->start();
  while (!engine->finished()) {
    if (interrupted) engine->request_stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  engine->wait();

  std::optional<livedrp::ReplayStatus> replay;
  if (auto r = engine->replay_status(); r.active) replay = r;
  return report(engine->config(), engine->summary(), summary_file, replay, engine->record_status(),
                engine->write_status());
}
