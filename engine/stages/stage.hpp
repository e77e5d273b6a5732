#pragma once
// The stage contract (issue 32, "a stage is an object"; DESIGN.md, Data flow). A stage is one unit
// with four parts, all reached through the types below, so that backends and the engine run an
// ordered list of stages without knowing their names:
//   configuration  a JSON section of the pipeline configuration, under the stage's name, read
//                  with FieldReader (StageType::parse): errors name "<stage>.<field>";
//   CPU part       Stage::run_cpu: one event's calibrated image in host memory -> its result;
//   CUDA part      Stage::make_cuda_lane (optional): per backend lane, the device buffers it owns
//                  and the kernels it records into the event's stream (captured into a CUDA
//                  graph when the launch mode records graphs); its result lands in pinned host
//                  memory the backend owns and is read by collect() once the stream is past it;
//   book           Stage::make_book: what the engine accumulates per event, in admission order,
//                  what it adds to `stats`, and what it publishes, on its own topic, at the
//                  engine's report ticks.
// A per-event result is typed in the stage and carried type-erased (std::any) through the
// backend's CompletedEvent and the engine: only the stage's own CPU part, CUDA part and book
// know its type.
//
// How the built-in stages map onto it (see docs/stages.md):
//   integrate  on the contract: stages/integrate/integrate_stage (CPU part Integrator, CUDA
//              part a DeviceIntegrator per lane, result ProfileResult, book IntegrationBook,
//              `profile` at integration.publish_hz), built by the engine from "integration".
//   peaks      on the contract: stages/peaks/peak_stage (CPU part PeakFinder8::find, CUDA part a
//              DevicePeakFinder8 per event position on a stream of its own, joined at the
//              launch's end; result PeakResult, book LivePeakBook (stats.peak_finding, `peaks`
//              for hits)), built by the engine from "peak_finding". Its run-time parameter
//              changes and re-runs over kept frames are the stage's own API (PeakStage), which
//              the engine calls on its submitting thread.
//   compress   on the contract: stages/compress/compress_stage (CPU part CpuCompressor, CUDA part
//              a DeviceCodec per lane, result CompressedSize, book CompressionBook filling
//              stats.compression), built by the engine from "compression".
//   image      on the contract: stages/image/image_stage (CPU part a copy of a sampled event's
//              raw words and calibrated image, CUDA part their copy into pinned memory on the
//              lane's stream, both only for the event due at image.publish_hz; result
//              ImageResult; book ImageBook, `image` with the event's peaks, read from the peak
//              stage's result of the same event), built by the engine from "image", last in
//              the list.
#include <any>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "calib/constants.hpp"
#include "core/config_fields.hpp"
#include "core/detector.hpp"
#include "core/event.hpp"
#include "protocol/message.hpp"
#include "protocol/topics.hpp"

namespace livedrp {
class ThreadPool;
namespace gpu {
class Stream;
}
}  // namespace livedrp

namespace livedrp::stages {

// What a stage is built against: the run's detector and calibration constants (e.g. to mask the
// constants' bad pixels, or to size its tables).
struct StageContext {
  const DetectorDescription& detector;
  const CalibrationConstants& constants;
};

// One event as the CPU part sees it, on the backend's thread; valid during run_cpu only.
struct CpuEvent {
  const EventHeader& header;
  const void* raw = nullptr;          // detector.raw_event_bytes() of the detector's own words
  std::span<const float> calibrated;  // detector.pixels() floats, segment-major
  ThreadPool* pool = nullptr;         // the backend's pool, for stages that split an event
};

// One event as the CUDA part records it. Every pointer is the same each time `position` is
// used, which is what lets the backend capture a position's recording once into a graph.
struct CudaEvent {
  int position = 0;  // 0 .. CudaLaneSpec::positions - 1, an event slot of the lane
  // The event itself: meaningful only to a stage that is not captured (capturable() false), as a
  // captured recording is replayed for later events.
  const EventHeader* header = nullptr;
  std::uint64_t admission = 0;
  const void* raw = nullptr;          // device memory, the raw event
  const float* calibrated = nullptr;  // device memory, detector.pixels() floats
  void* result = nullptr;             // pinned host memory, result_bytes() long, owned by backend
};

// What the CUDA backend tells a lane's part when it makes it.
struct CudaLaneSpec {
  int lane = 0;       // backend lane (CUDA stream) index
  int positions = 1;  // event positions of the lane (slots per stream x batch)
  int lanes = 1;      // lanes of the backend (lane is 0 .. lanes - 1)
};

// A stage's CUDA part on one backend lane. Everything here is set up once; record() only
// enqueues asynchronous work (no allocation, no host wait), so the backend may capture it.
class CudaStageLane {
 public:
  virtual ~CudaStageLane() = default;
  // Pinned bytes one event's result takes; the backend gives each position a block of them.
  virtual std::size_t result_bytes() const = 0;
  // Enqueues the event's work on `stream` (after the calibration that wrote event.calibrated),
  // ending with the result's bytes copied into event.result.
  virtual void record(const CudaEvent& event, const gpu::Stream& stream) = 0;
  // After the stream has completed the position's work: its typed result from the pinned bytes.
  virtual std::any collect(int position, const void* result) const = 0;
  // False for a stage whose recording differs from event to event (its own streams, buffers
  // chosen per event, parameters swapped during the run): the backend then calls record() for
  // every event instead of replaying a captured graph.
  virtual bool capturable() const { return true; }
  // Called once per event after every stage of the launch has recorded, on the lane's stream:
  // where work that a stage forked onto streams of its own (to run beside the later stages)
  // joins the lane again before the launch's end.
  virtual void join(const CudaEvent& event, const gpu::Stream& stream) {
    (void)event;
    (void)stream;
  }
  // The GPU time the position's last event took in this stage, in microseconds, for a stage that
  // times its own work; negative: the backend's share of the launch's time is used.
  virtual double event_us(int position) const {
    (void)position;
    return -1;
  }
};

// A stage's result and the time its part took for that event (the CUDA part: its launch's time
// shared evenly among the launch's events).
struct StageOutput {
  std::any result;
  double us = 0;
};

// One event's results of every stage of the run, by stage name, for a book that reads another
// stage's result of the same event (the image topic carries its event's peaks). Valid during the
// call it is given to only.
class EventResults {
 public:
  EventResults(const std::vector<std::string>& names, const std::vector<StageOutput>& outputs)
      : names_(names), outputs_(outputs) {}
  // The result of the stage named `stage`, or null when the run has no such stage.
  const std::any* find(std::string_view stage) const {
    for (std::size_t k = 0; k < names_.size() && k < outputs_.size(); ++k)
      if (names_[k] == stage) return &outputs_[k].result;
    return nullptr;
  }

 private:
  const std::vector<std::string>& names_;
  const std::vector<StageOutput>& outputs_;
};

// The engine-side part of a stage. The engine serialises every call on one book (the consumer
// thread adds, the reporter thread publishes and reports), so a book needs no lock of its own.
class StageBook {
 public:
  virtual ~StageBook() = default;
  // Every processed event, in admission order, with the result the stage's CPU or CUDA part
  // gave it.
  virtual void add(const EventHeader& header, const std::any& result) = 0;
  // The same with the time the stage's part took for the event (the CUDA part: its launch's time
  // shared among the launch's events), for a book that reports a throughput of its own; the
  // engine calls this one, which by default leaves the time out.
  virtual void add_timed(const EventHeader& header, const std::any& result, double us) {
    (void)us;
    add(header, result);
  }
  // The same with every stage's result of the event (`event`), for a book that reads another
  // stage's; the engine calls this one, which by default reads the book's own result only.
  virtual void add_event(const EventHeader& header, const std::any& result, double us,
                         const EventResults& event) {
    (void)event;
    add_timed(header, result, us);
  }
  // At each report tick (stats_interval_s) and once more at the end of the run (`last`): the
  // messages to publish now, topic and payload set; the engine sets the run number. May be none.
  virtual std::vector<protocol::Message> publish(bool last) = 0;
  // The stage's block of the stats payload (stats.stage_stats[name]): for the interval since the
  // last call, or over the whole run when `whole_run` (the summary). null: nothing to add.
  virtual nlohmann::json stats_block(bool whole_run) = 0;
  // How often publish() wants to be asked between report ticks, for a topic with a rate of its
  // own (the built-in `profile`); 0: at the report ticks only; kEveryStep: at every step of the
  // reporter between ticks (a few milliseconds), for a book whose messages should leave as soon
  // as their event is accounted and that publishes only when it has one (the `image`).
  static constexpr double kEveryStep = std::numeric_limits<double>::infinity();
  virtual double publish_hz() const { return 0; }
  // The protocol's own blocks of `stats` that a built-in stage's book fills (stats.compression),
  // for the interval or the whole run; a stage defined outside the engine uses stats_block.
  virtual void fill_stats(protocol::StatsPayload& stats, bool whole_run) {
    (void)stats;
    (void)whole_run;
  }
};

// A configured stage for one run. Shared by the backend (run_cpu, make_cuda_lane) and the engine
// (make_book); run_cpu is called on the backend's submitting thread, one event at a time.
class Stage {
 public:
  virtual ~Stage() = default;
  virtual std::string name() const = 0;  // its configuration section, stats entry and topic
  // Bytes of its input per event, for its GB/s in stats (the calibrated image: pixels x 4).
  virtual std::uint64_t input_bytes() const = 0;
  virtual std::any run_cpu(const CpuEvent& event) = 0;
  // The CUDA part for one lane; null when the stage has none (the CUDA backend then refuses it).
  virtual std::unique_ptr<CudaStageLane> make_cuda_lane(const CudaLaneSpec& spec) const {
    (void)spec;
    return nullptr;
  }
  virtual std::unique_ptr<StageBook> make_book() const = 0;
};

// What registers a stage: its name and how its configuration section is read and built.
struct StageType {
  std::string name;  // [a-z0-9_]+, the section key; not one of the engine's own sections
  // Reads the stage's fields from its section (the registry has read "enabled" already) and
  // returns them with every default filled in, as the configuration echoes them. Throws
  // InputError through the reader (naming "<name>.<field>"); unknown keys are refused after.
  std::function<nlohmann::json(FieldReader& section)> parse;
  // The stage for a run, from what parse returned. Throws InputError for what only the
  // detector or the files can refuse.
  std::function<std::unique_ptr<Stage>(const nlohmann::json& settings, const StageContext& context)>
      build;
};

using StageList = std::vector<std::shared_ptr<Stage>>;

}  // namespace livedrp::stages
