#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "calib/calibration_math.hpp"
#include "exec/stream_config.hpp"
#include "protocol/topics.hpp"

namespace livedrp {

class Publisher;

// Live compression of every processed event (JSON "compression"). "lossless" compresses the raw
// detector data (what would be stored); "lossy" compresses the calibrated float32 image with an
// absolute error bound in the output unit. One independent stream per event.
struct CompressionConfig {
  std::string codec = "off";  // "off", "lossless", "lossy"
  double error_bound = 0.5;   // lossy only; finite and > 0
  std::uint32_t chunk_bytes = 16384;
  bool enabled() const { return codec != "off"; }
};

// The pipeline configuration: the same JSON drives the CLI, the GUI and the benchmarks, and is
// echoed in the `status` topic and in every summary.
struct EngineConfig {
  std::string source = "sim:epix10ka2m";  // "sim:DETECTOR"
  std::uint64_t events = 0;               // stop after this many events; 0 = until stopped
  double rate_hz = 0;                     // source rate; 0 = as fast as possible
  // What the source does when the ring is full: "drop" the event (a live detector cannot wait),
  // "wait" for a free slot (measures pipeline capacity), or "auto": drop when rate_hz > 0, else
  // wait.
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
  unsigned cpu_threads = 0;        // CPU backend threads; 0 = all cores
  CompressionConfig compression;

  // Validates every field; throws InputError naming the field, the value and what is allowed.
  static EngineConfig from_json(const nlohmann::json& json, const std::string& origin);
  nlohmann::json to_json() const;
};

struct RunSummary {
  protocol::StatsPayload stats;  // cumulative counters; rates over the whole run
  bool finished = false;
  std::string error;  // non-empty when the run stopped on a fault
};

// Source -> doorbell ring -> calibrate (CPU or CUDA backend) -> accounting -> publisher, on its own
// threads. Every event the source produces is processed or counted as dropped with a reason.
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
  // Called from the engine thread at each stats interval (for CLI progress).
  void set_progress_callback(std::function<void(const protocol::StatsPayload&)> callback);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace livedrp
