#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "calib/calibration_math.hpp"
#include "core/event.hpp"
#include "exec/event_share.hpp"
#include "exec/latency_histogram.hpp"
#include "exec/stream_config.hpp"
#include "peaks/peak_params.hpp"
#include "protocol/peaks_topic.hpp"
#include "protocol/topics.hpp"
#include "stages/fidelity/fidelity_config.hpp"

namespace livedrp {

class Publisher;
namespace stages {
class Stage;
struct StageOutput;
}  // namespace stages

// Live compression of every processed event (JSON "compression"). "lossless" compresses the raw
// detector data (what would be stored); "lossy" compresses the calibrated float32 image with an
// absolute error bound in the output unit. One independent stream per event.
struct CompressionConfig {
  std::string codec = "off";  // "off", "lossless", "lossy"
  double error_bound = 0.5;   // lossy only; finite and > 0
  std::uint32_t chunk_bytes = 16384;
  bool enabled() const { return codec != "off"; }
};

// Replay of HDF5 files (source "replay:PATH[:/dataset]", JSON "replay"; docs/formats.md).
struct ReplayConfig {
  std::string dataset;            // used when the source names none; empty: found in the file
  std::string detector;           // a name or description path; empty: from the file
  std::string pace = "recorded";  // "recorded" (timestamps), "rate" (rate_hz), "flat_out"
  bool loop = false;
  int prefetch_events = 8;  // events read ahead of the pipeline
  int readers = 0;          // reader threads filling them; 0: min(8, cores)
};

// Live detector streams (source "sls:tcp://HOST:PORT[,...]" or "dectris:tcp://HOST:PORT"; JSON
// "stream"; engine/stream/stream_source.hpp).
struct StreamInputConfig {
  // The detector the stream feeds: a built-in name or a description file. Empty: jungfrau4m for
  // sls; for dectris the geometry of the first start message.
  std::string detector;
  double module_timeout_s = 0.5;  // an event missing a module part this long is dropped
  int queue_events = 64;          // assembled events waiting for the engine; past it: dropped
  int pending_events = 32;        // events waiting for their last parts; past it: dropped
  double max_message_mb = 1024;   // larger messages are refused
  double wait_for_start_s = 10;   // dectris without a detector: wait this long for a start
};

// Recording of the source's events to HDF5 (JSON "record"); off when directory is empty.
struct RecordConfig {
  std::string directory;
  std::uint64_t max_file_bytes = 4ull << 30;  // roll over to the next file before passing this
  std::string dataset = "/entry/data/data";
  std::string layout = "segments";  // [N, segments, rows, cols]; "stacked": [N, seg*rows, cols]
  int deflate = 0;                  // 0: none; 1..9: gzip level (with byte shuffle)
  // The livedrp codec as the HDF5 filter (docs/formats.md): "off", "lossless" (uint16 or float32
  // detector words) or "lossy" (float32 words, within error_bound); not with deflate.
  std::string codec = "off";
  double error_bound = 0;
  // When the writer's queue is full (disk slower than the source): "drop" the event from the
  // recording and count it (never stalls the pipeline), "wait" for the disk (back-pressure), or
  // "auto": drop for live sources, wait for a replay (files are not live).
  std::string when_full = "auto";
  int queue_events = 16;  // events waiting for the writer thread
  // Only the events peakfinder8 calls hits (needs peak_finding): recorded by the engine thread
  // once the event is searched, from its ring slot, instead of by the source.
  bool hits_only = false;
  bool enabled() const { return !directory.empty(); }
};

// The live writers (JSON "write"; docs/formats.md, "Hit files" and "Live profile series"): hit
// events (peakfinder8's hit flag) with their calibrated image and peak lists to CXI files for
// CrystFEL, and every event's radial profile to one NeXus file. Each writer has a queue and a
// thread of its own; when a queue is full, when_full decides as record.when_full does ("auto":
// drop for a live source, a stream or a paced simulator, wait otherwise).
struct WriteConfig {
  std::string hits_directory;          // empty: no hit files; needs peak_finding.enabled
  std::uint64_t hits_per_file = 1000;  // a new file after this many hits
  std::string profiles;                // FILE.h5; empty: none; needs integration.enabled
  std::string average;                 // FILE.h5: the assembled average image; empty: none
  std::string when_full = "auto";      // "auto", "drop", "wait"
  int queue_events = 16;               // events waiting for each writer
  // Which start of the run under --control this is (docs/formats.md, "Segments of a controlled
  // run"): 1 writes the names above; 2, 3, ... names derived from them (io/segment_names.hpp).
  // The EngineController and the GUI's engine host set it for every engine they build
  // (exec/write_segments.hpp).
  int segment = 1;
  static constexpr int kMaxSegment = 999999;

  bool enabled() const { return !hits_directory.empty() || !profiles.empty() || !average.empty(); }
  // Writers that copy whole calibrated images into their queues (their memory is checked).
  bool copies_images() const { return !hits_directory.empty() || !average.empty(); }
};

// Live azimuthal integration of every processed event (JSON "integration"; the offline
// `integrate` command's options, same meaning). The engine keeps the latest radial profile and a
// running average over the last `average_events` events, and publishes them on the `profile`
// topic `publish_hz` times a second.
struct LiveIntegrationConfig {
  bool enabled = false;
  std::string poni;              // pyFAI PONI file (required when enabled)
  int npt = 1000;                // radial bins
  std::string unit = "q_nm^-1";  // "2th_deg", "q_nm^-1", "q_A^-1", "r_mm"
  std::string method = "no";     // "no" (pixel centres) or "bbox" (bounding-box splitting)
  std::optional<std::pair<double, double>> radial_range;   // in `unit`; none: pyFAI's default
  std::optional<std::pair<double, double>> azimuth_range;  // degrees
  std::optional<double> polarization;                      // none: no correction
  bool solid_angle = true;
  // "FILE.npy" or "FILE.h5:/dataset", one event's shape (segments, rows, cols or stacked);
  // non-zero masks a pixel. The calibration constants' bad pixels are masked as well.
  std::string mask;
  std::string error_model = "poisson";  // "poisson" or "azimuthal"
  int average_events = 100;             // running-average window
  double publish_hz = 4.0;              // `profile` messages per second
};

// Live peak finding (JSON "peak_finding"): peakfinder8 on every calibrated event, `peaks` messages
// for hit events (at most peaks_hz a second, the newest hit), and the last recent_frames
// calibrated frames kept for re-runs with new parameters (Engine::rerun_peaks).
struct LivePeakFindingConfig {
  bool enabled = false;
  peaks::PeakFinderParams params;  // the PARAMS.json names of `livedrp-engine peaks --params`
  // Beam in assembled-image pixels (x, y); none: the centre of assembled_bounds (the simulator's).
  std::optional<std::pair<double, double>> beam;
  std::string radius_map;  // FILE.npy or FILE.h5:/dataset, one event's pixels; replaces the beam
  std::string mask;        // the same form; non-zero = bad (the constants' bad pixels are too)
  // ePix10ka gain configurations searched ("FH", "FM", "FL", "AHL", "AML"; epix10ka_config_names):
  // pixels configured otherwise join the mask. A run mixing configurations needs it: the noise of
  // fixed medium and low gain, in keV, is far above high gain's, so one threshold per radius bin
  // cannot fit both and the low-gain ASICs give false peaks by the thousand. Empty: every pixel
  // is searched. Refused for detectors without a per-pixel configuration (Jungfrau, float32).
  // Part of the mask, so fixed for a run: changing it restarts the run (apply), not
  // set_peak_params.
  std::vector<std::string> search_gain_configs;
  double peaks_hz = 10;    // `peaks` messages per second at most
  int recent_frames = 16;  // calibrated frames kept for re-runs, 0..256
};

// The `image` topic (JSON "image"): the latest processed event's assembled calibrated image, its
// gain-mode occupancy and its peaks, publish_hz times a second (0 = off).
struct ImagePublishConfig {
  double publish_hz = 2;
};

// Many engines running one run under MPI (JSON "mpi"; engine/mpi, docs/mpi.md). A single engine
// ignores it.
struct MpiRunConfig {
  // "dedicated": rank 0 only merges and publishes (OnDA/OM's collector), so that its work never
  // slows a share; "processing": rank 0 takes a share of the events as well.
  std::string collector = "dedicated";
  // A processing rank not heard from this long is lost (its process or node is gone): the
  // collector reports it with its last counts and the run goes on without it (as far as the MPI
  // launcher lets the other ranks live on: docs/mpi.md).
  double silent_after_s = 10;
  // One GPU per rank: the processing ranks of a node, in rank order, take these CUDA devices in
  // turn (the k-th takes devices[k % size]: fewer devices than ranks share them), each seeing
  // only its own (CUDA_VISIBLE_DEVICES, set before the engine touches CUDA). Empty: every rank
  // sees the devices its process was started with.
  std::vector<int> devices;
  // How the processing ranks share a common source (the simulator on the host, a replay of one
  // file set; exec/event_share.hpp): "event_index", event i goes to the share i modulo the
  // processing ranks; "pulse_id", the event with pulse id p to the share p modulo them.
  std::string share_by = "event_index";
  // Each processing rank its own input instead (one file set, or one detector stream endpoint,
  // per rank): one source as `source` takes it, for each processing rank in rank order; every
  // rank takes all of its own input's events (`events` then counts each rank's). Empty: the
  // ranks share `source`. Its length is checked against the processing ranks at start-up.
  std::vector<std::string> inputs;
  // Set by the MPI run on each processing rank's engine, never read from JSON: the rank's
  // number in the MPI world, which names its output files (write.*, record: io/segment_names.hpp)
  // so that no two ranks write the same file. -1: not a rank of an MPI run (the configured names).
  int rank = -1;
};

// The pipeline configuration: the same JSON drives the CLI, the GUI and the benchmarks, and is
// echoed in the `status` topic and in every summary.
struct EngineConfig {
  // "sim:DETECTOR", "replay:PATH[:/dataset]", "sls:tcp://HOST:PORT[,...]" or
  // "dectris:tcp://HOST:PORT"
  std::string source = "sim:epix10ka2m";
  std::uint64_t events = 0;  // stop after this many events; 0 = until stopped
  double rate_hz = 0;        // source rate; 0 = as fast as possible
  // What the source does when the ring is full: "drop" the event (a live detector cannot wait),
  // "wait" for a free slot (measures pipeline capacity), or "auto": drop when rate_hz > 0, else
  // wait. A replay source waits under "auto" unless paced at a rate: files are not live.
  std::string full_ring = "auto";
  std::int64_t run = 1;                          // run number carried in every message
  std::string backend = "auto";                  // "cpu", "cuda", "auto"
  std::string publish = "tcp://127.0.0.1:5555";  // empty: publish nothing
  std::string constants_file;                    // HDF5 constants; empty = the simulator's own
  calib::CalibrationParams calibration;
  StreamConfig runtime;            // streams, launch mode, batch, ... (JSON "runtime")
  int ring_slots = 32;             // doorbell ring depth
  double stats_interval_s = 0.25;  // `stats` period
  std::uint64_t seed = 20260101;   // simulator seed
  double hit_fraction = 0.1;       // simulator: fraction of events with Bragg peaks
  int simulator_pool = 16;         // simulator: distinct events generated ahead and cycled
  // Simulator: which events fill the pool (JSON simulator.pool_selection): "first", events 0 ..
  // pool-1 (run event i is simulator event i % pool); "hit_fraction", events holding the hit
  // fraction in whole events (DetectorSimulator::representative_indices), so that a small pool
  // shows the configured hit rate.
  std::string simulator_pool_selection = "first";
  // Simulator: the ePix10ka gain configurations dealt to the ASICs in turn (JSON
  // simulator.gain_configs; SimulatorConfig::epix10ka_asic_configs says why AHL everywhere is the
  // default). Other detectors ignore it.
  std::vector<std::string> simulator_gain_configs = {"AHL"};
  unsigned cpu_threads = 0;  // CPU backend threads; 0 = all cores
  CompressionConfig compression;
  FidelityConfig fidelity;  // lossy compression's cost, sampled (stages/fidelity)
  ReplayConfig replay;
  StreamInputConfig stream;
  RecordConfig record;
  LiveIntegrationConfig integration;
  LivePeakFindingConfig peak_finding;
  ImagePublishConfig image;
  WriteConfig write;
  MpiRunConfig mpi;
  // Sections of the stages registered through stages/registry.hpp, by name, as each stage's
  // parse returned them (with "enabled"); the enabled ones run after the built-in stages, in
  // registration order.
  std::map<std::string, nlohmann::json> stages;

  // Validates every field; throws InputError naming the field, the value and what is allowed.
  static EngineConfig from_json(const nlohmann::json& json, const std::string& origin);
  nlohmann::json to_json() const;
};

// A pipeline configuration file (JSON, as to_json() writes it). Throws InputError naming the file
// and what is wrong: unreadable, not JSON, or a field from_json refuses.
EngineConfig load_engine_config_file(const std::string& path);

struct RunSummary {
  protocol::StatsPayload stats;  // cumulative counters; rates over the whole run
  bool finished = false;
  std::string error;  // non-empty when the run stopped on a fault
};

// Source -> doorbell ring -> calibrate (CPU or CUDA backend) -> accounting -> publisher, on its own
// threads. Every event the source produces is processed or counted as dropped with a reason.
// Where a replay stands (Engine::replay_status).
struct ReplayStatus {
  bool active = false;         // the source is a replay
  std::uint64_t position = 0;  // index (over the file list) of the last event handed on
  std::uint64_t handed = 0;    // events handed to the pipeline so far
  std::uint64_t total_events = 0;
  std::uint64_t loops = 0;
  bool paused = false;
  std::string pace;       // "recorded", "rate", "flat_out" (as in force)
  std::string pace_note;  // e.g. why "recorded" fell back to flat out
  // Time the producer waited for the prefetch thread (disk), and for a free ring slot plus the
  // pipeline's drain after the last event (pipeline).
  double disk_wait_s = 0, pipeline_wait_s = 0;
  double read_gbps = 0;    // bytes read / time spent reading, prefetch thread
  std::string limited_by;  // "disk", "pipeline" (flat out), "pacing"; "" while no wait > 1 ms
  std::uint64_t read_errors = 0;  // events that could not be read (counted as dropped)
  // Files of the run's list left out because they cannot be read: one error text each, naming
  // the file and the dataset (the rest of the list replays).
  std::vector<std::string> skipped_files;
};

// The peak finder's parameters in force on a run (Engine::peak_params).
struct PeakParamsState {
  bool enabled = false;
  peaks::PeakFinderParams params;
  std::uint64_t version = 0;  // 1 for the configuration's, + 1 per accepted change
};

// A re-run of the parameters in force over the newest kept frames (Engine::rerun_peaks), oldest
// first; every list is also published as a `peaks` message with rerun true.
struct PeakRerun {
  std::vector<std::uint64_t> sequences;
  std::vector<std::uint64_t> pulse_ids;    // per frame
  std::vector<std::uint64_t> peaks_found;  // per frame (PeakList::found)
  std::uint64_t hits = 0;
  std::uint64_t params_version = 0;
  // The hit with the highest pulse id among the frames, as published (an MPI run's collector
  // publishes the newest over its ranks); none when no frame was a hit.
  std::optional<protocol::EventPeaks> newest_hit;
};

struct RecordStatus {
  bool active = false;
  std::uint64_t events = 0;   // written
  std::uint64_t dropped = 0;  // not recorded: the writer's queue was full (when_full "drop")
  std::uint64_t failed = 0;   // not recorded: writing had failed (recording stopped there)
  std::string error;          // why writing failed (disk full, ...); empty if it did not
  std::vector<std::string> files;
};

// Every processed event as the engine thread accounts it, in admission order, after the stages'
// books took it: its header, the run's stages and each stage's result for it (same order).
using EventObserver = std::function<void(const EventHeader& header,
                                         const std::vector<std::shared_ptr<stages::Stage>>& stages,
                                         const std::vector<stages::StageOutput>& outputs)>;

// One live writer's account (Engine::write_status): every event offered to it is written,
// dropped (its queue was full under when_full "drop", or its image could not be read back) or
// failed (writing had failed; the reason in error).
struct WriterStatus {
  bool active = false;
  std::uint64_t written = 0, dropped = 0, failed = 0;
  std::uint64_t peaks_left_out = 0;  // hit files: peaks past the files' max_num_peaks columns
  std::string error;
  std::vector<std::string> files;
};
struct WriteStatus {
  WriterStatus hits, profiles, average;
};

class Engine {
 public:
  // Resolves the detector, backend and endpoint; throws InputError for bad input.
  explicit Engine(EngineConfig config);
  // Publishes through `publisher` (which outlives restarts of the engine, so subscribers stay
  // connected) instead of binding config.publish; when null, binds config.publish (if not empty).
  Engine(EngineConfig config, std::shared_ptr<Publisher> publisher);
  ~Engine();  // stops and drains
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void start();
  void request_stop();  // the source stops; events in flight are drained
  void wait();          // until the run finished (event count reached, stopped, or failed)
  bool finished() const;
  RunSummary summary() const;
  const EngineConfig& config() const;
  std::string backend_name() const;
  std::string device_name() const;
  // Why this backend runs (e.g. "auto: CUDA not usable (no CUDA device), using the CPU backend").
  std::string backend_note() const;
  std::string publish_endpoint() const;  // as bound
  // Replay controls; each throws InputError when the source is not a replay (or the index is
  // past the end). pause() holds events back at the source (nothing is dropped); step(delta)
  // pauses and hands on exactly one event: the next one for +1, else the last handed + delta.
  void pause();
  void resume();
  void step(std::int64_t delta = 1);
  void seek(std::uint64_t index);  // the next event handed on is `index`
  ReplayStatus replay_status() const;
  RecordStatus record_status() const;
  WriteStatus write_status() const;  // the live writers (config.write); safe during the run
  // Live peak finding. set_peak_params validates (InputError naming the parameter), applies the
  // parameters to events submitted from now on (no restart; the engine thread takes them over
  // within milliseconds) and returns the new version. rerun_peaks runs the parameters in force
  // over the newest `frames` kept frames (all kept ones when nullopt). Both throw InputError when
  // peak finding is off.
  PeakParamsState peak_params() const;
  std::uint64_t set_peak_params(const peaks::PeakFinderParams& params);
  PeakRerun rerun_peaks(std::optional<std::uint64_t> frames);
  // Called from the engine thread at each stats interval (for CLI progress).
  void set_progress_callback(std::function<void(const protocol::StatsPayload&)> callback);
  // Before start() (exec/event_share.hpp; the device-resident source makes only the share:
  // exec/produced_share.hpp). Throws InputError for a part of a common source that cannot be
  // split (a live stream: each event reaches one reader only) or for a share that is not one
  // (index >= count, count 0).
  void set_event_share(EventShare share);
  // Before start(). The observer runs on the engine thread for every event, so it must be quick:
  // the pipeline waits for it (engine/mpi keeps its sums with it).
  void set_event_observer(EventObserver observer);
  // Doorbell-to-release latencies of the run so far (the summary's percentiles; engine/mpi
  // merges the ranks' into the run's).
  LatencyHistogram latency_histogram() const;
  // Before start(), for an engine that publishes nothing itself (an MPI processing rank, whose
  // collector publishes): keeps the `image` topic's events (image.publish_hz of them a second)
  // for take_image(). Nothing when image.publish_hz is 0, the detector has no assembled image or
  // the source is the device-resident one (which publishes no image yet).
  void keep_images();
  // The newest kept (or, with a publisher, not yet published) image not taken before, assembled
  // on the calling thread; none when none is new.
  std::optional<protocol::ImageFrame> take_image();
  // Before start(), for an engine without a publisher (an MPI processing rank): the messages the
  // stages' books publish (each stage's topic, at its rate and at the run's end) go to `sink`,
  // on the engine's reporter thread, with the run number set. `sink` must be quick and may throw
  // protocol::ProtocolError for a message it refuses (the run goes on).
  void forward_stage_messages(std::function<void(const protocol::Message&)> sink);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace livedrp
