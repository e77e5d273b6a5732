#pragma once
// The engine's side of a live detector stream (sources "sls:", "dectris:"): the source opened
// from the pipeline configuration, the detector's own mask put into the calibration constants,
// and the source's counts in the `stats` payload. The producer loop stays the engine's.
#include <cstdint>
#include <memory>
#include <optional>

#include "calib/constants.hpp"
#include "exec/engine.hpp"
#include "protocol/topics.hpp"
#include "stream/stream_source.hpp"

namespace livedrp {

// Opens config.source with config.stream's settings; throws InputError (a device-resident
// placement, a malformed source, a detector the stream cannot feed).
std::unique_ptr<stream::StreamSource> open_configured_stream(const EngineConfig& config);

// The detector open_configured_stream would give, found without connecting (nullopt: only the
// stream's start message tells); throws InputError as it does for what it checks before that.
std::optional<DetectorDescription> configured_stream_detector(const EngineConfig& config);

// Marks the pixels the detector itself reports bad (StreamSource::detector_bad_pixels) as masked
// in `constants`; returns how many. Masks of later acquisitions are not applied to a running
// engine.
std::size_t mask_detector_bad_pixels(const stream::StreamSource& source,
                                     CalibrationConstants& constants);

// Adds the source's block (source_stream) and its dropped events (drops_by_reason) to `stats`;
// returns the events the source began but could not hand on, which entered all the same.
std::uint64_t add_stream_stats(const stream::StreamSource& source, const std::string& source_name,
                               protocol::StatsPayload& stats);

}  // namespace livedrp
