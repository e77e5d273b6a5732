#pragma once
// livedrp-bench pipeline: the engine's configured stage list, driven through its public API
// (exec/engine.hpp), over a matrix of backends, feeding paths, stage sets, codecs, streams and
// launch modes; per cell events/s, each stage's time per event, the stage that bounds the rate,
// and the fraction of the memory floor reached (see bench_pipeline.cpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/detector.hpp"

namespace CLI {
class App;
}

namespace livedrp::bench {

struct PipelineBenchOptions {
  std::string detector = "epix10ka2m";
  int events = 2000;       // per timed CUDA cell
  int cpu_events = 50;     // per timed CPU cell (the CPU backend is the reference, not fast)
  int warmup_events = -1;  // of the warm-up run before each cell; -1: max(1, events / 10)
  std::vector<std::string> backends = {"cpu", "cuda"};
  std::vector<std::string> sources = {"host", "device"};  // runtime.source
  std::vector<int> streams = {1, 4};                      // runtime.streams (CUDA cells)
  std::vector<std::string> launch = {"graph"};            // runtime.launch (CUDA cells)
  // Stage sets, one row group each: "calibrate", "all", or stage names joined by '+'
  // ("calibrate+integrate"); calibration always runs.
  std::vector<std::string> stages = {"calibrate", "all"};
  std::vector<std::string> compression = {"lossy"};  // codecs of the sets that compress
  double error_bound = 0.5;                          // lossy, in the calibrated unit (keV)
  int npt = 1000;                                    // radial bins of the integration stage
  std::string poni;          // empty: one written for the simulator's beam (removed after the run)
  int simulator_pool = 16;   // distinct simulated events the engine generates and cycles
  unsigned cpu_threads = 0;  // CPU backend threads and host-copy threads; 0: all cores
  std::size_t copy_mib = 256;  // size of the copy baselines (well over any L2)
  std::uint64_t seed = 20260101;
  std::string json_path, markdown_path;
};

void add_pipeline_options(CLI::App& command, PipelineBenchOptions& options);
// 0 done (refused and skipped cells included), 1 a cell failed or lost events; throws
// InputError on bad options.
int run_pipeline(const PipelineBenchOptions& options);

// The bytes one event must move through memory for the stages configured: the floor model of
// the command. Only the event's own data counts, each array read or written once per stage that
// touches it; what every event shares (calibration constants, the integrator's pixel-to-bin
// tables, the peak finder's radius map and mask) is not counted, as it may stay in cache, so the
// floor is optimistic and the fraction of it a path reaches is a lower figure (the per-stage
// benchmarks, `calibrate`, `integrate`, `peaks`, count those tables too).
struct PipelineBytes {
  // calibration: raw event read + float32 calibrated image written
  std::size_t calibrate_read = 0, calibrate_written = 0;
  // codec: its input read (raw words lossless, the calibrated image lossy) + its stream written
  // (the measured compressed size: data-dependent)
  std::size_t compress_read = 0, compress_written = 0;
  std::size_t integrate_read = 0;  // calibrated image read
  std::size_t peak_read = 0;       // calibrated image read (peakfinder8)
  // host-fed CUDA only: the raw event over the host-to-device link, against the pinned copy
  // bandwidth (a separate resource from device memory, so it is a second, parallel floor)
  std::size_t host_to_device = 0;
  std::size_t memory_total() const {
    return calibrate_read + calibrate_written + compress_read + compress_written + integrate_read +
           peak_read;
  }
};

struct PipelineStages {
  bool compress = false, integrate = false, peak = false;  // calibrate always runs
};

// `codec_in` and `codec_out`: bytes per event into and out of the codec (0 when it is off).
// `host_to_device`: the events are copied from host memory to the GPU (host-fed CUDA path).
PipelineBytes pipeline_bytes_per_event(const DetectorDescription& detector,
                                       const PipelineStages& stages, std::size_t codec_in,
                                       std::size_t codec_out, bool host_to_device);

}  // namespace livedrp::bench
