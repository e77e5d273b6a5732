#include <algorithm>

#include "core/error.hpp"
#include "exec/engine_impl.hpp"

namespace livedrp {
using namespace engine_detail;

namespace {
replay::ReplaySource& replay_of(const std::unique_ptr<replay::ReplaySource>& source,
                                const char* what) {
  if (!source) throw InputError(std::string(what) + " needs a replay source (replay:FILE.h5)");
  return *source;
}
}  // namespace

void Engine::pause() {
  replay_of(impl_->replay_source, "pause");
  impl_->paused = true;
}

void Engine::resume() {
  replay_of(impl_->replay_source, "resume");
  impl_->step_budget = 0;
  impl_->paused = false;
}

void Engine::step(std::int64_t delta) {
  Impl& d = *impl_;
  replay::ReplaySource& source = replay_of(d.replay_source, "step");
  d.paused = true;
  if (delta != 1) {
    // Anything but "the next one" is a seek relative to the last event handed on.
    const std::int64_t last =
        d.replay_handed.load() > 0 ? std::int64_t(d.replay_position.load()) : -1;
    const std::int64_t target =
        std::clamp<std::int64_t>(last + delta, 0, std::int64_t(source.total_events()) - 1);
    source.seek(std::uint64_t(target));
    d.pace_reset = true;
  }
  d.step_budget = 1;
}

void Engine::seek(std::uint64_t index) {
  Impl& d = *impl_;
  replay::ReplaySource& source = replay_of(d.replay_source, "seek");
  if (index >= source.total_events())
    throw InputError("seek to event " + std::to_string(index) + ": the replay has " +
                     std::to_string(source.total_events()) + " events (0.." +
                     std::to_string(source.total_events() - 1) + ")");
  source.seek(index);
  d.pace_reset = true;
}

ReplayStatus Engine::replay_status() const {
  const Impl& d = *impl_;
  ReplayStatus status;
  if (!d.replay_source) return status;
  const replay::ReplaySource& source = *d.replay_source;
  status.active = true;
  status.position = d.replay_position.load();
  status.handed = d.replay_handed.load();
  status.total_events = source.total_events();
  status.loops = source.loops();
  status.paused = d.paused.load();
  status.pace = d.replay_pace;
  status.pace_note = d.replay_pace_note;
  status.skipped_files = d.replay_source->skipped_files();
  status.disk_wait_s = source.disk_wait_s();
  status.pipeline_wait_s = double(d.ring_wait_ns.load()) * 1e-9;
  {
    // Once the source is done, the time the pipeline still takes to drain is pipeline time too:
    // with fewer events than ring slots the producer never waits for a slot, yet the pipeline
    // is what the run waits for.
    std::lock_guard lock(d.mutex);
    if (d.producer_end != Clock::time_point{}) {
      const auto end = d.run_end != Clock::time_point{} ? d.run_end : Clock::now();
      status.pipeline_wait_s +=
          std::max(0.0, std::chrono::duration<double>(end - d.producer_end).count());
    }
  }
  status.read_gbps = source.read_s() > 0 ? double(source.bytes_read()) / source.read_s() / 1e9 : 0;
  status.read_errors = d.dropped_read_error.load();
  // Flat out, the producer waits on whichever of the two is slower; paced, on the clock.
  if (d.replay_pace != "flat_out")
    status.limited_by = "pacing";
  else if (status.disk_wait_s > 0 || status.pipeline_wait_s > 0)
    status.limited_by = std::max(status.disk_wait_s, status.pipeline_wait_s) < 1e-3 ? ""
                        : status.disk_wait_s > status.pipeline_wait_s               ? "disk"
                                                                                    : "pipeline";
  return status;
}

RecordStatus Engine::record_status() const {
  // The recorder's counters and file list may be read while its writer thread runs.
  const Impl& d = *impl_;
  RecordStatus status;
  if (!d.recorder) return status;
  status.active = true;
  status.events = d.recorder->events();
  status.dropped = d.recorder->dropped();
  status.failed = d.recorder->failed();
  status.error = d.recorder->error();
  if (status.error.empty()) {
    std::lock_guard lock(d.mutex);
    status.error = d.record_error;
  }
  for (const auto& path : d.recorder->files()) status.files.push_back(path.string());
  return status;
}

}  // namespace livedrp
