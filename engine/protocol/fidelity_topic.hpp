#pragma once
// The `fidelity` topic (docs/protocol.md): what the lossy codec's error bound costs, measured on
// a sampled event. The engine decodes the event's compressed stream and runs the decoded image
// and the original through integration and peakfinder8; the message carries the comparison.
//   payload {"codec": "lossy", "error_bound": 0.5, "samples": 12, "skipped": 3, ...,
//            "has_profile": true, "bins": 1000, ..., "has_peaks": true, "kept": 20, ...}
//   frames  with has_profile: [centres[bins], original[bins], decompressed[bins], relative[bins]]
// The header's sequence and pulse_id are the sampled event's.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/message.hpp"
#include "protocol/profile_topic.hpp"

namespace livedrp::protocol {

inline constexpr std::string_view kTopicFidelity = "fidelity";

struct FidelityReport {
  std::uint64_t sequence = 0;  // the sampled event's (message header)
  std::uint64_t pulse_id = 0;
  std::string codec = "lossy";  // "lossy" or "lossless"
  double error_bound = 0;       // the lossy codec's absolute bound; 0 for lossless
  // Counts of the run so far: samples evaluated, samples skipped because the previous one was
  // still being evaluated, samples whose stream could not be decoded.
  std::uint64_t samples = 0, skipped = 0, failed = 0;
  double samples_hz = 0;  // the configured sampling rate
  std::uint64_t stream_bytes = 0, uncompressed_bytes = 0;
  double max_pixel_error = 0;  // largest |decoded - original| pixel, calibrated unit
  double evaluation_ms = 0;

  bool has_profile = false;
  RadialUnit unit = RadialUnit::QInverseNm;
  std::vector<double> centres, original, decompressed;
  std::vector<double> relative;  // (decompressed - original) / |original|; NaN: not comparable
  std::uint64_t compared_bins = 0;
  double max_abs_relative = 0, mean_abs_relative = 0, rms_relative = 0;  // NaN: no bin compared

  bool has_peaks = false;
  std::uint64_t params_version = 0;
  double match_radius_px = 0;
  std::uint64_t found_original = 0, found_decompressed = 0;  // every peak that passed the tests
  std::uint64_t peaks_original = 0, peaks_decompressed = 0;  // the listed peaks that are matched
  std::uint64_t kept = 0, lost = 0, added = 0;
  double recall = 0, precision = 0;            // NaN: no peak to divide by
  double mean_shift_px = 0, max_shift_px = 0;  // NaN: no peak kept
};

// Checks what both ends must agree on (codec, bound, counts that add up, ranges, the profile's
// arrays); throws ProtocolError naming the field.
void validate(const FidelityReport& report);

// Topic, payload and frames filled in, sequence and pulse_id from the report, time_ns now; run
// is the caller's. Throws ProtocolError for a report validate() refuses.
Message make_fidelity_message(const FidelityReport& report);
// Reads and validates a decoded `fidelity` message. Throws ProtocolError.
FidelityReport fidelity_from_message(const Message& message);

}  // namespace livedrp::protocol
