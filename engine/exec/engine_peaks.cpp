#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "exec/engine_impl.hpp"
#include "exec/peak_requests.hpp"
#include "protocol/peaks_topic.hpp"

namespace livedrp {
using namespace engine_detail;

void Engine::Impl::publish_peaks(const protocol::EventPeaks& peaks) {
  if (!publisher) return;
  try {
    protocol::Message message = protocol::make_peaks_message(peaks);
    message.run = config.run;
    publisher->publish(message);
  } catch (const protocol::ProtocolError& e) {
    // A list the protocol refuses (a non-finite value from corrupt pixels) is not sent.
    spdlog::warn("engine: peaks of event {} not published: {}", peaks.sequence, e.what());
  }
}

PeakParamsState Engine::peak_params() const {
  const Impl& d = *impl_;
  PeakParamsState state;
  state.enabled = d.peak_stage != nullptr;
  if (!state.enabled) {
    state.params = d.config.peak_finding.params;
    return state;
  }
  state.params = d.peak_stage->params().current();
  state.version = d.peak_stage->params().version();
  return state;
}

namespace {
// The device-resident lanes' finders are recorded into their graphs at set-up, and no calibrated
// frame is kept on the host side of that path.
InputError fixed_on_device(const char* what) {
  return InputError(std::string(what) +
                    " is not available with runtime.source 'device': the device-resident lanes "
                    "search with the finders recorded at the run's start and keep no frames; "
                    "apply {\"peak_finding\": {\"params\": ...}} (the run restarts with them) "
                    "or use runtime.source 'host'");
}
}  // namespace

std::uint64_t Engine::set_peak_params(const peaks::PeakFinderParams& params) {
  Impl& d = *impl_;
  if (!d.peak_stage) throw peak_finding_off_error();
  if (const std::string problem = peaks::validate(params); !problem.empty())
    throw InputError(problem);
  if (d.device_source) throw fixed_on_device("changing the peak finder's parameters in a run");
  // One change at a time, so that the version prepared is the version applied.
  std::lock_guard serial(d.peak_set_mutex);
  // The finder's tables (and, on a CUDA backend, the device finders) are built here, on the
  // caller's thread; the engine thread only swaps them in, so the events keep flowing meanwhile.
  Backend* prepared_for = d.active_backend.load();
  const bool on_device = prepared_for->name() == "cuda";
  std::shared_ptr<stages::PeakStage::Prepared> prepared;
  try {
    prepared = d.peak_stage->prepare_change(params, on_device);
  } catch (const RuntimeFault& e) {
    // E.g. no device memory for another set of finders: the engine thread builds them instead.
    spdlog::warn(
        "engine: preparing peak-finder parameters off the engine thread failed ({}); "
        "the engine thread builds them",
        e.what());
  }
  std::uint64_t version = 0;
  d.run_on_engine_thread([&] {
    // The backend may have been replaced (fallback to the CPU) since the preparation.
    const bool now_on_device = d.backend->name() == "cuda";
    if (!prepared || d.backend.get() != prepared_for)
      prepared = d.peak_stage->prepare_change(params, now_on_device);
    d.peak_stage->apply_change(prepared);
    version = prepared->version;
  });
  spdlog::info("engine: peak-finder parameters version {} in force", version);
  return version;
}

PeakRerun Engine::rerun_peaks(std::optional<std::uint64_t> frames) {
  Impl& d = *impl_;
  if (!d.peak_stage) throw peak_finding_off_error();
  if (d.device_source) throw fixed_on_device("re-running the peak finder over kept frames");
  const int kept = d.config.peak_finding.recent_frames;
  check_rerun_frames(kept, frames);
  std::vector<stages::PeakRerunFrame> lists;
  PeakRerun result;
  d.run_on_engine_thread([&] {
    lists = d.peak_stage->rerun(std::size_t(frames.value_or(std::uint64_t(kept))),
                                d.backend->name() == "cuda");
    result.params_version = d.peak_stage->params().version();
  });
  for (const stages::PeakRerunFrame& frame : lists) {
    result.sequences.push_back(frame.header.sequence);
    result.pulse_ids.push_back(frame.header.pulse_id);
    result.peaks_found.push_back(std::uint64_t(std::max(0, frame.peaks.found)));
    result.hits += frame.peaks.hit ? 1 : 0;
    protocol::EventPeaks message =
        d.peak_stage->message(frame.header, frame.peaks, result.params_version, true);
    if (frame.peaks.hit && (!result.newest_hit || message.pulse_id > result.newest_hit->pulse_id))
      result.newest_hit = message;
    d.publish_peaks(message);
    d.peak_stage->book().count_sent_rerun();
  }
  return result;
}

}  // namespace livedrp
