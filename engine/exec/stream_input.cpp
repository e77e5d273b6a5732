#include "exec/stream_input.hpp"

#include <chrono>
#include <cmath>

#include "calib/calibration_math.hpp"
#include "core/error.hpp"

namespace livedrp {
namespace {

std::chrono::milliseconds milliseconds_of(double seconds) {
  return std::chrono::milliseconds(std::int64_t(std::llround(seconds * 1e3)));
}

}  // namespace

namespace {

// config.stream as the stream sources take it, after the checks open_configured_stream makes
// before it opens one.
stream::StreamOptions configured_stream_options(const EngineConfig& config) {
  if (config.runtime.source == SourcePlacement::Device)
    throw InputError(
        "runtime.source 'device' runs the simulated detector on the GPU; a live stream "
        "source is host-fed: use runtime.source 'host'");
  const StreamInputConfig& c = config.stream;
  stream::StreamOptions options;
  options.detector = c.detector;
  options.module_timeout = milliseconds_of(c.module_timeout_s);
  options.queue_events = std::size_t(c.queue_events);
  options.pending_events = std::size_t(c.pending_events);
  options.max_message_bytes = std::size_t(c.max_message_mb * 1024.0 * 1024.0);
  options.wait_for_start = milliseconds_of(c.wait_for_start_s);
  return options;
}

}  // namespace

std::unique_ptr<stream::StreamSource> open_configured_stream(const EngineConfig& config) {
  return stream::open_stream_source(config.source, configured_stream_options(config));
}

std::optional<DetectorDescription> configured_stream_detector(const EngineConfig& config) {
  return stream::stream_source_detector(config.source, configured_stream_options(config));
}

std::size_t mask_detector_bad_pixels(const stream::StreamSource& source,
                                     CalibrationConstants& constants) {
  const std::vector<std::uint8_t> bad = source.detector_bad_pixels();
  std::size_t masked = 0;
  for (std::size_t p = 0; p < bad.size() && p < constants.pixel_status.size(); ++p)
    if (bad[p] != 0) {
      constants.pixel_status[p] |= calib::kStatusMasked;
      ++masked;
    }
  return masked;
}

std::uint64_t add_stream_stats(const stream::StreamSource& source, const std::string& source_name,
                               protocol::StatsPayload& stats) {
  const stream::StreamCounts counts = source.counts();
  for (const auto& [reason, count] : counts.dropped) stats.drops_by_reason[reason] += count;
  protocol::SourceStreamStats block;
  block.kind = source_name.substr(0, source_name.find(':'));
  block.messages = counts.messages;
  block.events = counts.events;
  block.acquisitions = counts.acquisitions;
  block.acquisitions_ended = counts.acquisitions_ended;
  block.rejected = counts.rejected;
  block.last_problem = counts.last_problem;
  stats.source_stream = std::move(block);
  return counts.dropped_total();
}

}  // namespace livedrp
