#pragma once
// The peak-finding topics (docs/protocol.md):
//   `peaks`  one hit event's peakfinder8 list, rate-limited (the newest hit since the last message)
//   `image`  the assembled calibrated image of one event a few times a second, with that event's
//            peaks and the gain-mode occupancy per segment
// and the `peak_finding` block of `stats` (hit rate). The peak list travels as two binary frames:
//   float32 [n, 8]: fs, ss, x, y, intensity, max_value, sigma, snr
//   int32   [n, 2]: segment, num_pixels
// fs/ss are slab coordinates (the event array stacked as (segments * rows) x cols, pixel centres at
// integers, as the offline CSV); x/y are the same point in the assembled image's pixels (column,
// row of the `image` frame), so a viewer draws circles without knowing the geometry.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/assembly_layout.hpp"
#include "protocol/message.hpp"

namespace livedrp::protocol {

inline constexpr std::string_view kTopicPeaks = "peaks";
inline constexpr std::string_view kTopicImage = "image";

// Upper bounds a subscriber relies on before allocating.
inline constexpr std::uint64_t kMaxPeaksPerMessage = 65'536;
inline constexpr std::uint64_t kMaxImageSide = 16'384;  // assembled image rows and columns
inline constexpr std::uint64_t kMaxGainModes = 16;      // names in `gain_modes`, "bad" included
// Segments of an `image` (the occupancy frame's rows): far above any detector's (the ePix10ka2M
// has 16, a Jungfrau 16M 32), low enough that a forged header cannot make a subscriber allocate.
inline constexpr std::uint64_t kMaxImageSegments = 4'096;

struct PeakRow {
  float fs = 0, ss = 0;  // slab coordinates
  float x = 0, y = 0;    // assembled-image pixel coordinates (column, row)
  float intensity = 0;   // integrated, local background subtracted
  float max_value = 0;
  float sigma = 0;  // local background sigma
  float snr = 0;
  std::int32_t segment = 0;
  std::int32_t num_pixels = 0;
};

// One event's peaks. `found` may exceed peaks.size() (max_num_peaks cuts the list).
struct EventPeaks {
  std::uint64_t sequence = 0;  // the event's (message header)
  std::uint64_t pulse_id = 0;
  std::uint64_t found = 0;
  bool hit = false;                     // found >= min_peaks_for_hit
  std::uint64_t min_peaks_for_hit = 0;  // as in force for this event
  std::uint64_t params_version = 0;     // which parameter set found them (1, 2, ... per run)
  bool rerun = false;                   // from a re-run on recent frames, not the live flow
  std::vector<PeakRow> peaks;
};

void validate(const EventPeaks& peaks);  // throws ProtocolError naming the field
Message make_peaks_message(const EventPeaks& peaks);
EventPeaks peaks_from_message(const Message& message);  // reads and validates; ProtocolError

// The assembled calibrated image of one event. Pixels no detector pixel maps to (gaps) are NaN;
// masked pixels are the calibration's 0. Assembly places each pixel centre at the nearest image
// pixel of the detector's placement (no interpolation).
struct ImageFrame {
  std::uint64_t sequence = 0;
  std::uint64_t pulse_id = 0;
  std::uint64_t height = 0, width = 0;
  std::vector<float> pixels;  // height * width, row-major
  std::string unit;           // of the values, e.g. "keV" (the calibration's output unit);
                              // empty when unknown (float32 data calibrated upstream)
  // Gain-mode occupancy of this event's raw data: fraction of each segment's pixels per mode,
  // segments x modes (each row sums to 1 with `bad` included as the last column).
  std::vector<std::string> gain_modes;  // mode names as the detector names them, then "bad"
  std::uint64_t segments = 0;
  std::vector<float> gain_occupancy;  // segments * gain_modes.size(); empty: raw had no modes
  // The event's peaks when the pipeline finds peaks (may be empty), else absent.
  bool has_peaks = false;
  EventPeaks peaks;
  // The event's source time stamp (its doorbell), Unix ns; 0 when unknown (payload field
  // `source_time_ns`, absent then). A viewer measures its event-to-screen time from it.
  std::int64_t source_time_ns = 0;
  // When the engine made the message (its header's time_ns), filled in by image_from_message: a
  // viewer's publish-to-screen time is measured from it.
  std::int64_t message_time_ns = 0;
  // How the detector's pixels were placed on the image (payload field `assembly`): a viewer maps
  // an image pixel back to its segment and raw pixel with it (core/detector_pixel_lookup.hpp).
  // nullopt from engines older than the field, or encoders that do not send it. Its height and
  // width are the image's.
  std::optional<AssemblyLayout> assembly;
};

void validate(const ImageFrame& image);  // throws ProtocolError
Message make_image_message(const ImageFrame& image);
ImageFrame image_from_message(const Message& message);  // reads and validates; ProtocolError

// The `stats` payload's optional `peak_finding` block (present when the pipeline finds peaks).
struct PeakFindingStats {
  std::uint64_t interval_events = 0;  // events searched in the last stats interval
  std::uint64_t interval_hits = 0;
  std::uint64_t interval_peaks = 0;  // peaks found (passing every test) in those events
  std::uint64_t total_events = 0;    // the same since the run started
  std::uint64_t total_hits = 0;
  std::uint64_t total_peaks = 0;
  double interval_hit_rate = 0;      // interval_hits / interval_events; NaN when no event
  std::uint64_t params_version = 0;  // parameter set in force
  std::uint64_t peaks_messages = 0;  // `peaks` messages sent this run
  std::uint64_t hits_not_sent = 0;   // hits not published because a newer one came first
};

nlohmann::json to_json(const PeakFindingStats& stats);
PeakFindingStats peak_finding_stats_from_json(const nlohmann::json& block);  // ProtocolError

}  // namespace livedrp::protocol
