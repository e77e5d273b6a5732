#pragma once
// The peak-finder requests of the control socket (get_peak_params, set_peak_params, rerun_peaks)
// on one Engine, answered the same way by EngineController (the socket) and by the GUI's embedded
// engine host: merge and validate once, reply in one shape (docs/protocol.md).
#include <nlohmann/json.hpp>

#include "exec/engine.hpp"
#include "peaks/peak_params.hpp"

namespace livedrp {

// {"params": {...every parameter...}, "params_version": N, "enabled": bool}
nlohmann::json peak_params_reply(const PeakParamsState& state);

// `request` holds the parameters to change, bare or as {"params": {...}}: merged onto `in_force`
// (names not given keep their values) and validated. Throws InputError naming what is wrong.
peaks::PeakFinderParams merge_peak_params_request(const peaks::PeakFinderParams& in_force,
                                                  const nlohmann::json& request);

// The same, merged onto the engine's parameters in force and applied to the running engine. Returns
// the parameters now in force. Throws InputError naming what is wrong, or the engine's reason (peak
// finding off, no run).
peaks::PeakFinderParams apply_peak_params_request(Engine& engine, const nlohmann::json& request);

// {"frames", "hits", "peaks_per_frame", "sequences", "params_version"}
nlohmann::json rerun_peaks_reply(const PeakRerun& rerun);

}  // namespace livedrp
