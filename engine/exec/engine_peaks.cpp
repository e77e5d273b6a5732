#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "exec/engine_impl.hpp"
#include "protocol/peaks_topic.hpp"

namespace livedrp {
using namespace engine_detail;

void Engine::Impl::account_peaks(const CompletedEvent& done) {
  std::optional<protocol::EventPeaks> message;
  const bool image_due = live_image && live_image->due(Clock::now());
  if (done.searched && peak_book) {
    peak_book->add(std::uint64_t(std::max(0, done.peaks.found)), done.peaks.hit, done.peaks_us);
    if (done.peaks.hit || image_due) {
      peaks::PeakFinderParams params;
      {
        std::lock_guard lock(peak_mutex);
        const std::size_t v = std::size_t(done.params_version);
        params = peak_param_history.at(v >= 1 && v <= peak_param_history.size() ? v - 1 : 0);
      }
      message =
          event_peaks(done.header, done.peaks, params, done.params_version, false, assembly.get());
      if (done.peaks.hit) peak_book->offer_hit(*message);
    }
  }
  if (image_due && ring && output_readable) {
    // The raw words now, while the ring slot is still this event's; the calibrated pixels while
    // the backend's output is (until the next submit).
    live_image->capture(
        done.header,
        [&](std::byte* raw, float* calibrated) {
          std::memcpy(raw, ring->slot_data(done.ring_slot), detector.raw_event_bytes());
          backend->read_output(done, calibrated);
        },
        message);
  }
}

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

void Engine::Impl::publish_image() {
  if (!publisher || !live_image) return;
  std::optional<protocol::ImageFrame> image;
  try {
    image = live_image->take();
    if (!image) return;
    protocol::Message message = protocol::make_image_message(*image);
    message.run = config.run;
    publisher->publish(message);
  } catch (const std::exception& e) {
    // An infinite pixel from corrupt data, say: that image is skipped, the run goes on.
    spdlog::warn("engine: image of event {} not published: {}", image ? image->sequence : 0,
                 e.what());
  }
}

PeakParamsState Engine::peak_params() const {
  const Impl& d = *impl_;
  PeakParamsState state;
  state.enabled = d.peak_geometry.has_value();
  if (!state.enabled) {
    state.params = d.config.peak_finding.params;
    return state;
  }
  std::lock_guard lock(d.peak_mutex);
  state.params = d.peak_param_history.back();
  state.version = d.peak_param_history.size();
  return state;
}

namespace {
InputError peak_finding_off() {
  return InputError(
      "peak finding is off in this configuration; turn it on with an apply request, "
      "{\"peak_finding\": {\"enabled\": true}} (the run restarts with it)");
}
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
  if (!d.peak_geometry) throw peak_finding_off();
  if (const std::string problem = peaks::validate(params); !problem.empty())
    throw InputError(problem);
  if (d.device_source) throw fixed_on_device("changing the peak finder's parameters in a run");
  // One change at a time, so that the version prepared is the version applied.
  std::lock_guard serial(d.peak_set_mutex);
  std::uint64_t version = 0;
  {
    std::lock_guard lock(d.peak_mutex);
    version = d.peak_param_history.size() + 1;
  }
  // The finder's tables (and the CUDA backend's device finders) are built here, on the caller's
  // thread; the engine thread only swaps them in, so the events keep flowing meanwhile.
  const peaks::PeakFinder8 finder = d.peak_geometry->finder(params);
  Backend* prepared_for = d.active_backend.load();
  std::shared_ptr<Backend::PreparedPeakParams> prepared;
  try {
    prepared = prepared_for->prepare_peak_params(finder, version);
  } catch (const RuntimeFault& e) {
    // E.g. no device memory for another set of finders: the engine thread builds them instead.
    spdlog::warn(
        "engine: preparing peak-finder parameters off the engine thread failed ({}); "
        "the engine thread builds them",
        e.what());
  }
  d.run_on_engine_thread([&] {
    // The backend may have been replaced (fallback to the CPU) since the preparation.
    if (prepared && d.backend.get() == prepared_for)
      d.backend->set_prepared_peak_params(std::move(prepared));
    else
      d.backend->set_peak_params(finder, version);
    std::lock_guard lock(d.peak_mutex);
    d.peak_param_history.push_back(params);
  });
  d.peak_book->set_params_version(version);
  spdlog::info("engine: peak-finder parameters version {} in force", version);
  return version;
}

PeakRerun Engine::rerun_peaks(std::optional<std::uint64_t> frames) {
  Impl& d = *impl_;
  if (!d.peak_geometry) throw peak_finding_off();
  if (d.device_source) throw fixed_on_device("re-running the peak finder over kept frames");
  const int kept = d.config.peak_finding.recent_frames;
  if (kept == 0)
    throw InputError(
        "no frames are kept for re-runs: peak_finding.recent_frames is 0 (set it to 1..256)");
  if (frames && (*frames == 0 || *frames > std::uint64_t(kept)))
    throw InputError("frames must be 1.." + std::to_string(kept) +
                     " (peak_finding.recent_frames), got " + std::to_string(*frames));
  std::vector<RerunFrame> lists;
  peaks::PeakFinderParams params;
  PeakRerun result;
  d.run_on_engine_thread([&] {
    lists = d.backend->rerun_peaks(std::size_t(frames.value_or(std::uint64_t(kept))));
    std::lock_guard lock(d.peak_mutex);
    params = d.peak_param_history.back();
    result.params_version = d.peak_param_history.size();
  });
  for (const RerunFrame& frame : lists) {
    result.sequences.push_back(frame.header.sequence);
    result.peaks_found.push_back(std::uint64_t(std::max(0, frame.peaks.found)));
    result.hits += frame.peaks.hit ? 1 : 0;
    d.publish_peaks(event_peaks(frame.header, frame.peaks, params, result.params_version, true,
                                d.assembly.get()));
    d.peak_book->count_sent_rerun();
  }
  return result;
}

}  // namespace livedrp
