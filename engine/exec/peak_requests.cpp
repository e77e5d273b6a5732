#include "exec/peak_requests.hpp"

#include <string>

#include "core/error.hpp"

namespace livedrp {

nlohmann::json peak_params_reply(const PeakParamsState& state) {
  return {{"params", peaks::to_json(state.params)},
          {"params_version", state.version},
          {"enabled", state.enabled}};
}

peaks::PeakFinderParams apply_peak_params_request(Engine& engine, const nlohmann::json& request) {
  const nlohmann::json& given =
      request.is_object() && request.contains("params") ? request.at("params") : request;
  if (!given.is_object())
    throw InputError("params must be a JSON object of peak-finder parameters, got " + given.dump());
  const PeakParamsState state = engine.peak_params();
  if (!state.enabled)
    engine.set_peak_params(state.params);  // throws the "peak finding is off" text
  nlohmann::json merged = peaks::to_json(state.params);
  merged.update(given);
  const peaks::PeakFinderParams params = peaks::parse_peak_params(merged, "params");
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
