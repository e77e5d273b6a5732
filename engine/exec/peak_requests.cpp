#include "exec/peak_requests.hpp"

#include <string>

#include "core/error.hpp"
#include "core/json_input.hpp"

namespace livedrp {

InputError peak_finding_off_error() {
  return InputError(
      "peak finding is off in this configuration; turn it on with an apply request, "
      "{\"peak_finding\": {\"enabled\": true}} (the run restarts with it)");
}

void check_rerun_frames(int kept, std::optional<std::uint64_t> frames) {
  if (kept == 0)
    throw InputError(
        "no frames are kept for re-runs: peak_finding.recent_frames is 0 (set it to 1..256)");
  if (frames && (*frames == 0 || *frames > std::uint64_t(kept)))
    throw InputError("frames must be 1.." + std::to_string(kept) +
                     " (peak_finding.recent_frames), got " + std::to_string(*frames));
}

nlohmann::json peak_params_reply(const PeakParamsState& state) {
  return {{"params", peaks::to_json(state.params)},
          {"params_version", state.version},
          {"enabled", state.enabled}};
}

peaks::PeakFinderParams merge_peak_params_request(const peaks::PeakFinderParams& in_force,
                                                  const nlohmann::json& request) {
  const nlohmann::json& given =
      request.is_object() && request.contains("params") ? request.at("params") : request;
  if (!given.is_object())
    throw InputError("params must be a JSON object of peak-finder parameters, got " +
                     json_excerpt(given));
  // The peak_finding section's other fields are read once when a run starts (search_gain_configs,
  // mask, radius_map and beam make its mask and radii): they change through an apply request,
  // which restarts the run, and a parameter request naming one says so.
  const nlohmann::json section = EngineConfig().to_json().at("peak_finding");
  for (const auto& item : given.items())
    if (item.key() != "params" && section.contains(item.key()))
      throw InputError("params: '" + item.key() +
                       "' is not a peak-finder parameter but a field of the peak_finding "
                       "configuration, read once when a run starts, so it cannot change while the "
                       "run goes; change it with an apply request, {\"peak_finding\": {\"" +
                       item.key() + "\": " + json_excerpt(item.value()) +
                       "}} (the run restarts with it)");
  nlohmann::json merged = peaks::to_json(in_force);
  merged.update(given);
  return peaks::parse_peak_params(merged, "params");
}

peaks::PeakFinderParams apply_peak_params_request(Engine& engine, const nlohmann::json& request) {
  const PeakParamsState state = engine.peak_params();
  // Peak finding off: the engine's refusal says how to turn it on.
  if (!state.enabled) engine.set_peak_params(state.params);
  const peaks::PeakFinderParams params = merge_peak_params_request(state.params, request);
  engine.set_peak_params(params);
  return params;
}

nlohmann::json rerun_peaks_reply(const PeakRerun& rerun) {
  return {{"frames", rerun.sequences.size()},
          {"hits", rerun.hits},
          {"peaks_per_frame", rerun.peaks_found},
          {"sequences", rerun.sequences},
          {"params_version", rerun.params_version}};
}

}  // namespace livedrp
