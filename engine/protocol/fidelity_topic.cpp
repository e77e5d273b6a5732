#include "protocol/fidelity_topic.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "protocol/payload_reader.hpp"

namespace livedrp::protocol {

namespace {

using detail::describe;
using detail::float64_frame;
using detail::number_or_null;
using detail::PayloadReader;
using nlohmann::json;

// The profile frames, in their order on the wire.
constexpr std::array<std::string_view, 4> kFrameNames{"centres", "original", "decompressed",
                                                      "relative"};

[[noreturn]] void fail(const std::string& what) {
  throw ProtocolError(std::string(kTopicFidelity) + " message: " + what);
}

std::string text(double value) {
  return json(value).dump();
}

void require_non_negative(const std::string& name, double value) {
  if (!std::isfinite(value) || value < 0)
    fail(name + " must be a finite number >= 0, got " + text(value));
}

// NaN exactly when `undefined` (nothing to divide by, nothing compared); otherwise in
// [low, high].
void require_defined_in(const std::string& name, double value, bool undefined, double low,
                        double high, const std::string& why_undefined) {
  if (undefined) {
    if (!std::isnan(value))
      fail(name + " must be null when " + why_undefined + ", got " + text(value));
    return;
  }
  if (!(value >= low && value <= high))
    fail(name + " must be in [" + text(low) + ", " + text(high) + "], got " +
         (std::isnan(value) ? std::string("null") : text(value)));
}

void check_bins(std::string_view name, const std::vector<double>& values, std::size_t bins,
                bool centres) {
  if (values.size() != bins)
    fail(std::string(name) + " has " + std::to_string(values.size()) + " values for " +
         std::to_string(bins) + " bins");
  for (std::size_t bin = 0; bin < bins; ++bin) {
    const std::string where = std::string(name) + "[" + std::to_string(bin) + "]";
    if (centres) {
      if (!std::isfinite(values[bin])) fail(where + " is not a finite number");
      if (bin > 0 && !(values[bin] > values[bin - 1]))
        fail(where + " does not increase (centres must be strictly increasing)");
    } else if (std::isinf(values[bin])) {
      fail(where + " is infinite");  // NaN is a bin not compared; infinity is an error upstream
    }
  }
}

std::vector<double> values_of(const Frame& frame, std::size_t index, std::uint64_t bins) {
  const std::string name =
      "frame " + std::to_string(index) + " (" + std::string(kFrameNames[index]) + ")";
  if (frame.dtype != DType::Float64 && frame.dtype != DType::Float32)
    fail(name + " must be float64 or float32, got " + std::string(to_string(frame.dtype)));
  if (frame.shape.size() != 1 || frame.shape[0] != bins)
    fail(name + " must have shape [" + std::to_string(bins) + "] (payload 'bins')");
  std::vector<double> values(bins);
  for (std::size_t bin = 0; bin < bins; ++bin) {
    if (frame.dtype == DType::Float64) {
      std::memcpy(&values[bin], frame.data.data() + bin * sizeof(double), sizeof(double));
    } else {
      float value = 0;
      std::memcpy(&value, frame.data.data() + bin * sizeof(float), sizeof(float));
      values[bin] = value;
    }
  }
  return values;
}

bool boolean(const PayloadReader& reader, const std::string& name) {
  const json& value = reader.field(name);
  if (!value.is_boolean()) reader.fail(name, "must be true or false, got " + describe(value));
  return value.get<bool>();
}

}  // namespace

void validate(const FidelityReport& r) {
  if (r.codec != "lossy" && r.codec != "lossless")
    fail("codec must be \"lossy\" or \"lossless\", got " + describe(json(r.codec)));
  if (r.codec == "lossy" ? !(std::isfinite(r.error_bound) && r.error_bound > 0)
                         : r.error_bound != 0)
    fail("error_bound must be " +
         std::string(r.codec == "lossy" ? "a finite number > 0 for the lossy codec"
                                        : "0 for the lossless codec") +
         ", got " + text(r.error_bound));
  if (!(std::isfinite(r.samples_hz) && r.samples_hz > 0))
    fail("samples_hz must be a finite number > 0, got " + text(r.samples_hz));
  require_non_negative("max_pixel_error", r.max_pixel_error);
  require_non_negative("evaluation_ms", r.evaluation_ms);
  if (!r.has_profile && !r.has_peaks)
    fail("has_profile and has_peaks are both false: a sample compares at least one of them");

  if (r.has_profile) {
    to_string(r.unit);  // throws for a value outside the enum
    const std::size_t bins = r.centres.size();
    if (bins == 0 || bins > kMaxProfileBins)
      fail("bins must be in 1.." + std::to_string(kMaxProfileBins) + ", got " +
           std::to_string(bins));
    check_bins(kFrameNames[0], r.centres, bins, true);
    check_bins(kFrameNames[1], r.original, bins, false);
    check_bins(kFrameNames[2], r.decompressed, bins, false);
    check_bins(kFrameNames[3], r.relative, bins, false);
    if (r.compared_bins > bins)
      fail("compared_bins " + std::to_string(r.compared_bins) + " is more than bins " +
           std::to_string(bins));
    const bool none = r.compared_bins == 0;
    const double infinity = std::numeric_limits<double>::infinity();
    require_defined_in("max_abs_relative", r.max_abs_relative, none, 0, infinity,
                       "compared_bins is 0");
    require_defined_in("mean_abs_relative", r.mean_abs_relative, none, 0, infinity,
                       "compared_bins is 0");
    require_defined_in("rms_relative", r.rms_relative, none, 0, infinity, "compared_bins is 0");
  }
  if (r.has_peaks) {
    if (!(std::isfinite(r.match_radius_px) && r.match_radius_px > 0))
      fail("match_radius_px must be a finite number > 0, got " + text(r.match_radius_px));
    // Compared without adding first: counts from the wire may be near 2^64.
    if (r.kept > r.peaks_original || r.kept > r.peaks_decompressed)
      fail("kept (" + std::to_string(r.kept) + ") is more than peaks_original (" +
           std::to_string(r.peaks_original) + ") or peaks_decompressed (" +
           std::to_string(r.peaks_decompressed) + ")");
    if (r.lost != r.peaks_original - r.kept)
      fail("kept (" + std::to_string(r.kept) + ") + lost (" + std::to_string(r.lost) +
           ") must equal peaks_original (" + std::to_string(r.peaks_original) + ")");
    if (r.added != r.peaks_decompressed - r.kept)
      fail("kept (" + std::to_string(r.kept) + ") + added (" + std::to_string(r.added) +
           ") must equal peaks_decompressed (" + std::to_string(r.peaks_decompressed) + ")");
    if (r.found_original < r.peaks_original || r.found_decompressed < r.peaks_decompressed)
      fail("found_original and found_decompressed must be at least the peaks listed");
    require_defined_in("recall", r.recall, r.peaks_original == 0, 0, 1, "peaks_original is 0");
    require_defined_in("precision", r.precision, r.peaks_decompressed == 0, 0, 1,
                       "peaks_decompressed is 0");
    require_defined_in("mean_shift_px", r.mean_shift_px, r.kept == 0, 0, r.match_radius_px,
                       "kept is 0");
    require_defined_in("max_shift_px", r.max_shift_px, r.kept == 0, 0, r.match_radius_px,
                       "kept is 0");
  }
}

Message make_fidelity_message(const FidelityReport& r) {
  validate(r);
  Message message;
  message.topic = std::string(kTopicFidelity);
  message.sequence = r.sequence;
  message.pulse_id = r.pulse_id;
  message.time_ns = detail::now_ns();
  json& p = message.payload;
  p = {{"codec", r.codec},
       {"error_bound", r.error_bound},
       {"samples", r.samples},
       {"skipped", r.skipped},
       {"failed", r.failed},
       {"samples_hz", r.samples_hz},
       {"stream_bytes", r.stream_bytes},
       {"uncompressed_bytes", r.uncompressed_bytes},
       {"max_pixel_error", r.max_pixel_error},
       {"evaluation_ms", r.evaluation_ms},
       {"has_profile", r.has_profile},
       {"has_peaks", r.has_peaks}};
  if (r.has_profile) {
    p["unit"] = to_string(r.unit);
    p["bins"] = r.centres.size();
    p["compared_bins"] = r.compared_bins;
    p["max_abs_relative"] = number_or_null(r.max_abs_relative);
    p["mean_abs_relative"] = number_or_null(r.mean_abs_relative);
    p["rms_relative"] = number_or_null(r.rms_relative);
    message.frames = {float64_frame(r.centres), float64_frame(r.original),
                      float64_frame(r.decompressed), float64_frame(r.relative)};
  }
  if (r.has_peaks) {
    p["params_version"] = r.params_version;
    p["match_radius_px"] = r.match_radius_px;
    p["found_original"] = r.found_original;
    p["found_decompressed"] = r.found_decompressed;
    p["peaks_original"] = r.peaks_original;
    p["peaks_decompressed"] = r.peaks_decompressed;
    p["kept"] = r.kept;
    p["lost"] = r.lost;
    p["added"] = r.added;
    p["recall"] = number_or_null(r.recall);
    p["precision"] = number_or_null(r.precision);
    p["mean_shift_px"] = number_or_null(r.mean_shift_px);
    p["max_shift_px"] = number_or_null(r.max_shift_px);
  }
  return message;
}

FidelityReport fidelity_from_message(const Message& message) {
  if (message.topic != kTopicFidelity)
    fail("topic is '" + message.topic + "', not '" + std::string(kTopicFidelity) + "'");
  const PayloadReader reader(message.payload, std::string(kTopicFidelity));
  reader.require_object("the payload");
  FidelityReport r;
  r.sequence = message.sequence;
  r.pulse_id = message.pulse_id;
  r.codec = reader.string("codec");
  r.error_bound = reader.number("error_bound");
  r.samples = reader.count("samples");
  r.skipped = reader.count("skipped");
  r.failed = reader.count("failed");
  r.samples_hz = reader.number("samples_hz");
  r.stream_bytes = reader.count("stream_bytes");
  r.uncompressed_bytes = reader.count("uncompressed_bytes");
  r.max_pixel_error = reader.number("max_pixel_error");
  r.evaluation_ms = reader.number("evaluation_ms");
  r.has_profile = boolean(reader, "has_profile");
  r.has_peaks = boolean(reader, "has_peaks");
  const std::size_t frames = r.has_profile ? kFrameNames.size() : 0;
  if (message.frames.size() != frames)
    fail("needs " + std::to_string(frames) + " frames" +
         (r.has_profile ? " (centres, original, decompressed, relative)" : " without has_profile") +
         ", got " + std::to_string(message.frames.size()));
  if (r.has_profile) {
    r.unit = radial_unit_from_string(reader.string("unit"));
    const std::uint64_t bins = reader.count("bins");
    if (bins == 0 || bins > kMaxProfileBins)
      reader.fail("bins", "must be in 1.." + std::to_string(kMaxProfileBins) + ", got " +
                              std::to_string(bins));
    r.centres = values_of(message.frames[0], 0, bins);
    r.original = values_of(message.frames[1], 1, bins);
    r.decompressed = values_of(message.frames[2], 2, bins);
    r.relative = values_of(message.frames[3], 3, bins);
    r.compared_bins = reader.count("compared_bins");
    r.max_abs_relative = reader.number("max_abs_relative");
    r.mean_abs_relative = reader.number("mean_abs_relative");
    r.rms_relative = reader.number("rms_relative");
  }
  if (r.has_peaks) {
    r.params_version = reader.count("params_version");
    r.match_radius_px = reader.number("match_radius_px");
    r.found_original = reader.count("found_original");
    r.found_decompressed = reader.count("found_decompressed");
    r.peaks_original = reader.count("peaks_original");
    r.peaks_decompressed = reader.count("peaks_decompressed");
    r.kept = reader.count("kept");
    r.lost = reader.count("lost");
    r.added = reader.count("added");
    r.recall = reader.number("recall");
    r.precision = reader.number("precision");
    r.mean_shift_px = reader.number("mean_shift_px");
    r.max_shift_px = reader.number("max_shift_px");
  }
  validate(r);
  return r;
}

}  // namespace livedrp::protocol
