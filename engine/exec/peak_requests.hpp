#pragma once
// The peak-finder requests of the control socket (get_peak_params, set_peak_params, rerun_peaks)
// on one Engine, answered the same way by EngineController (the socket) and by the GUI's embedded
// engine host: merge and validate once, reply in one shape (docs/protocol.md).
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "exec/engine.hpp"
#include "peaks/peak_params.hpp"

namespace livedrp {

// Why a peak request is refused when peak finding is off (the same text from an engine and from
// an MPI run's collector, which refuses it once for all ranks).
InputError peak_finding_off_error();
// rerun_peaks' "frames" against peak_finding.recent_frames (`kept`): at least one frame kept,
// and frames 1..kept. Throws InputError naming the field.
void check_rerun_frames(int kept, std::optional<std::uint64_t> frames);

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
