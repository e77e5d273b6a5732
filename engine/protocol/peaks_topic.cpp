#include "protocol/peaks_topic.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>

#include "protocol/image_assembly_block.hpp"
#include "protocol/payload_reader.hpp"

namespace livedrp::protocol {

namespace {

using detail::describe;
using detail::number_or_null;
using detail::PayloadReader;
using nlohmann::json;

// Columns of the peak list's float frame and of its integer frame, in their order on the wire.
constexpr std::array<std::string_view, 8> kPeakFloatColumns{
    "fs", "ss", "x", "y", "intensity", "max_value", "sigma", "snr"};
constexpr std::array<std::string_view, 2> kPeakIntColumns{"segment", "num_pixels"};

// An occupancy row may miss 1 by float32 rounding of its fractions (a few ulp per mode), never by
// more than this: anything larger is a wrong count upstream.
constexpr double kOccupancySumTolerance = 1e-3;

// Name of the mode column that counts bad pixels (the last one, calib/gain_occupancy.hpp).
constexpr std::string_view kBadModeName = "bad";

[[noreturn]] void fail(std::string_view topic, const std::string& what) {
  throw ProtocolError(std::string(topic) + " message: " + what);
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string text = "[";
  for (std::size_t axis = 0; axis < shape.size(); ++axis)
    text += (axis ? ", " : "") + std::to_string(shape[axis]);
  return text + "]";
}

// --- validation -----------------------------------------------------------------------------

// Checks one event's list. `image_width`/`image_height`/`segments` are 0 when the list travels
// without an image (the `peaks` topic), where x/y and segment cannot be checked against bounds.
void check_peaks(std::string_view topic, const EventPeaks& peaks, std::uint64_t image_width,
                 std::uint64_t image_height, std::uint64_t segments) {
  if (peaks.peaks.size() > kMaxPeaksPerMessage)
    fail(topic, "count " + std::to_string(peaks.peaks.size()) + " is more than " +
                    std::to_string(kMaxPeaksPerMessage) + " peaks");
  if (peaks.found < peaks.peaks.size())
    fail(topic, "found (" + std::to_string(peaks.found) + ") is less than the " +
                    std::to_string(peaks.peaks.size()) + " peaks listed");
  const bool hit = peaks.found >= peaks.min_peaks_for_hit;
  if (peaks.hit != hit)
    fail(topic, std::string("hit is ") + (peaks.hit ? "true" : "false") + " but found (" +
                    std::to_string(peaks.found) + ") and min_peaks_for_hit (" +
                    std::to_string(peaks.min_peaks_for_hit) + ") make it " +
                    (hit ? "true" : "false"));
  for (std::size_t index = 0; index < peaks.peaks.size(); ++index) {
    const PeakRow& row = peaks.peaks[index];
    const std::string where = "peak " + std::to_string(index) + ": ";
    const std::array<float, 8> values{row.fs,        row.ss,        row.x,     row.y,
                                      row.intensity, row.max_value, row.sigma, row.snr};
    for (std::size_t column = 0; column < values.size(); ++column)
      if (!std::isfinite(values[column]))
        fail(topic, where + std::string(kPeakFloatColumns[column]) + " is not a finite number");
    if (row.sigma < 0) fail(topic, where + "sigma " + std::to_string(row.sigma) + " is negative");
    if (row.segment < 0)
      fail(topic, where + "segment " + std::to_string(row.segment) + " is negative");
    if (segments > 0 && std::uint64_t(row.segment) >= segments)
      fail(topic, where + "segment " + std::to_string(row.segment) + " is not below segments (" +
                      std::to_string(segments) + ")");
    if (row.num_pixels < 1)
      fail(topic, where + "num_pixels must be at least 1, got " + std::to_string(row.num_pixels));
    // A centroid is a weighted mean of pixel centres, and every pixel centre lies inside its
    // image pixel: so inside [-0.5, side - 0.5] on both axes.
    if (image_width > 0 && (row.x < -0.5 || row.x > double(image_width) - 0.5))
      fail(topic, where + "x " + std::to_string(row.x) + " is outside the image (width " +
                      std::to_string(image_width) + ")");
    if (image_height > 0 && (row.y < -0.5 || row.y > double(image_height) - 0.5))
      fail(topic, where + "y " + std::to_string(row.y) + " is outside the image (height " +
                      std::to_string(image_height) + ")");
  }
}

// --- encoding -------------------------------------------------------------------------------

// The index of the first infinite value, or `count` when there is none. The look at every value
// is one branch-free pass over their bits, which the compiler vectorises (an image has millions
// and is sent a few times a second); only an image that has one is searched again for where.
std::size_t first_infinite(const float* values, std::size_t count) {
  std::uint32_t any = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, values + i, sizeof bits);
    any |= std::uint32_t((bits & 0x7FFFFFFFu) == 0x7F800000u);
  }
  if (any == 0) return count;
  for (std::size_t i = 0; i < count; ++i)
    if (std::isinf(values[i])) return i;
  return count;
}

Frame float32_frame(std::vector<std::uint64_t> shape, const float* values, std::size_t count) {
  Frame frame;
  frame.dtype = DType::Float32;
  frame.shape = std::move(shape);
  // One pass (assign copies without zeroing first): an image is millions of values.
  const auto* bytes = reinterpret_cast<const std::byte*>(values);
  if (count) frame.data.assign(bytes, bytes + count * sizeof(float));
  return frame;
}

std::array<Frame, 2> peak_frames(const EventPeaks& peaks) {
  const std::size_t count = peaks.peaks.size();
  std::vector<float> floats;
  floats.reserve(count * kPeakFloatColumns.size());
  std::vector<std::int32_t> ints;
  ints.reserve(count * kPeakIntColumns.size());
  for (const PeakRow& row : peaks.peaks) {
    floats.insert(floats.end(),
                  {row.fs, row.ss, row.x, row.y, row.intensity, row.max_value, row.sigma, row.snr});
    ints.insert(ints.end(), {row.segment, row.num_pixels});
  }
  Frame int_frame;
  int_frame.dtype = DType::Int32;
  int_frame.shape = {count, kPeakIntColumns.size()};
  int_frame.data.resize(ints.size() * sizeof(std::int32_t));
  if (!ints.empty()) std::memcpy(int_frame.data.data(), ints.data(), int_frame.data.size());
  return {float32_frame({count, kPeakFloatColumns.size()}, floats.data(), floats.size()),
          std::move(int_frame)};
}

// The payload fields of a peak list, shared by `peaks` and by `image` when it carries peaks.
void write_peak_fields(const EventPeaks& peaks, json& payload) {
  payload["found"] = peaks.found;
  payload["hit"] = peaks.hit;
  payload["min_peaks_for_hit"] = peaks.min_peaks_for_hit;
  payload["params_version"] = peaks.params_version;
  payload["rerun"] = peaks.rerun;
  payload["count"] = peaks.peaks.size();
}

// --- decoding -------------------------------------------------------------------------------

bool boolean(const PayloadReader& reader, const std::string& name) {
  const json& value = reader.field(name);
  if (!value.is_boolean()) reader.fail(name, "must be true or false, got " + describe(value));
  return value.get<bool>();
}

void check_frame(std::string_view topic, const Frame& frame, const std::string& name,
                 const std::vector<std::uint64_t>& shape, bool float_frame) {
  if (float_frame) {
    // float64 is accepted for a float32 frame: a client in numpy's default precision need not
    // convert, and nothing is lost on the way down to the float32 fields.
    if (frame.dtype != DType::Float32 && frame.dtype != DType::Float64)
      fail(topic,
           name + " must be float32 (or float64), got " + std::string(to_string(frame.dtype)));
  } else if (frame.dtype != DType::Int32) {
    fail(topic, name + " must be int32, got " + std::string(to_string(frame.dtype)));
  }
  if (frame.shape != shape)
    fail(topic,
         name + " must have shape " + shape_text(shape) + ", got " + shape_text(frame.shape));
}

// Element `index` of a float32 or float64 frame; a frame's bytes carry no alignment guarantee.
float float_at(const Frame& frame, std::size_t index) {
  if (frame.dtype == DType::Float64) {
    double value = 0;
    std::memcpy(&value, frame.data.data() + index * sizeof(double), sizeof(double));
    return float(value);
  }
  float value = 0;
  std::memcpy(&value, frame.data.data() + index * sizeof(float), sizeof(float));
  return value;
}

std::int32_t int32_at(const Frame& frame, std::size_t index) {
  std::int32_t value = 0;
  std::memcpy(&value, frame.data.data() + index * sizeof(std::int32_t), sizeof(std::int32_t));
  return value;
}

// Reads the peak fields of a payload and the two peak frames starting at `first_frame`.
EventPeaks read_peaks(std::string_view topic, const Message& message, const PayloadReader& reader,
                      std::size_t first_frame) {
  EventPeaks peaks;
  peaks.sequence = message.sequence;
  peaks.pulse_id = message.pulse_id;
  peaks.found = reader.count("found");
  peaks.hit = boolean(reader, "hit");
  peaks.min_peaks_for_hit = reader.count("min_peaks_for_hit");
  peaks.params_version = reader.count("params_version");
  peaks.rerun = boolean(reader, "rerun");
  const std::uint64_t count = reader.count("count");
  if (count > kMaxPeaksPerMessage)
    reader.fail("count", "must be at most " + std::to_string(kMaxPeaksPerMessage) + ", got " +
                             std::to_string(count));
  const std::string first = "frame " + std::to_string(first_frame) + " (peak values)";
  const std::string second =
      "frame " + std::to_string(first_frame + 1) + " (peak segment, num_pixels)";
  const Frame& floats = message.frames[first_frame];
  const Frame& ints = message.frames[first_frame + 1];
  check_frame(topic, floats, first, {count, kPeakFloatColumns.size()}, true);
  check_frame(topic, ints, second, {count, kPeakIntColumns.size()}, false);
  peaks.peaks.resize(count);
  for (std::size_t index = 0; index < count; ++index) {
    PeakRow& row = peaks.peaks[index];
    const std::size_t base = index * kPeakFloatColumns.size();
    row.fs = float_at(floats, base + 0);
    row.ss = float_at(floats, base + 1);
    row.x = float_at(floats, base + 2);
    row.y = float_at(floats, base + 3);
    row.intensity = float_at(floats, base + 4);
    row.max_value = float_at(floats, base + 5);
    row.sigma = float_at(floats, base + 6);
    row.snr = float_at(floats, base + 7);
    row.segment = int32_at(ints, index * kPeakIntColumns.size() + 0);
    row.num_pixels = int32_at(ints, index * kPeakIntColumns.size() + 1);
  }
  return peaks;
}

void require_topic(const Message& message, std::string_view topic) {
  if (message.topic != topic)
    fail(topic, "topic is '" + message.topic + "', not '" + std::string(topic) + "'");
}

}  // namespace

// --- peaks ----------------------------------------------------------------------------------

void validate(const EventPeaks& peaks) {
  check_peaks(kTopicPeaks, peaks, 0, 0, 0);
}

Message make_peaks_message(const EventPeaks& peaks) {
  validate(peaks);
  Message message;
  message.topic = std::string(kTopicPeaks);
  message.sequence = peaks.sequence;
  message.pulse_id = peaks.pulse_id;
  message.time_ns = detail::now_ns();
  write_peak_fields(peaks, message.payload);
  auto frames = peak_frames(peaks);
  message.frames = {std::move(frames[0]), std::move(frames[1])};
  return message;
}

EventPeaks peaks_from_message(const Message& message) {
  require_topic(message, kTopicPeaks);
  const PayloadReader reader(message.payload, std::string(kTopicPeaks));
  reader.require_object("the payload");
  if (message.frames.size() != 2)
    fail(kTopicPeaks, "needs 2 frames (peak values, peak segment and num_pixels), got " +
                          std::to_string(message.frames.size()));
  EventPeaks peaks = read_peaks(kTopicPeaks, message, reader, 0);
  validate(peaks);
  return peaks;
}

// --- image ----------------------------------------------------------------------------------

void validate(const ImageFrame& image) {
  const std::string_view topic = kTopicImage;
  if (image.height == 0 || image.height > kMaxImageSide)
    fail(topic, "height must be in 1.." + std::to_string(kMaxImageSide) + ", got " +
                    std::to_string(image.height));
  if (image.width == 0 || image.width > kMaxImageSide)
    fail(topic, "width must be in 1.." + std::to_string(kMaxImageSide) + ", got " +
                    std::to_string(image.width));
  if (image.pixels.size() != image.height * image.width)
    fail(topic, "image has " + std::to_string(image.pixels.size()) + " values for " +
                    std::to_string(image.height) + " x " + std::to_string(image.width) + " pixels");
  // NaN is a gap between segments; infinity is an overflow upstream.
  if (const std::size_t pixel = first_infinite(image.pixels.data(), image.pixels.size());
      pixel < image.pixels.size())
    fail(topic, "image pixel (row " + std::to_string(pixel / image.width) + ", column " +
                    std::to_string(pixel % image.width) + ") is infinite");
  if (image.segments == 0 || image.segments > kMaxImageSegments)
    fail(topic, "segments must be in 1.." + std::to_string(kMaxImageSegments) + ", got " +
                    std::to_string(image.segments));

  const std::size_t modes = image.gain_modes.size();
  if (modes > kMaxGainModes)
    fail(topic, "gain_modes has " + std::to_string(modes) + " names, more than " +
                    std::to_string(kMaxGainModes) + " (\"bad\" included)");
  if (modes > 0) {
    if (modes < 2 || image.gain_modes.back() != kBadModeName)
      fail(topic, "gain_modes must list at least one mode and end with \"bad\"");
    std::set<std::string> seen;
    for (const std::string& name : image.gain_modes) {
      if (name.empty()) fail(topic, "gain_modes has an empty name");
      if (!seen.insert(name).second) fail(topic, "gain_modes names '" + name + "' twice");
    }
  }
  const std::size_t expected = modes ? image.segments * modes : 0;
  if (image.gain_occupancy.size() != expected)
    fail(topic, "gain_occupancy has " + std::to_string(image.gain_occupancy.size()) +
                    " values for " + std::to_string(modes ? image.segments : 0) + " segments x " +
                    std::to_string(modes) + " modes");
  for (std::size_t segment = 0; modes && segment < image.segments; ++segment) {
    double sum = 0;
    for (std::size_t mode = 0; mode < modes; ++mode) {
      const float fraction = image.gain_occupancy[segment * modes + mode];
      if (!(fraction >= 0.0f && fraction <= 1.0f))
        fail(topic, "gain_occupancy[" + std::to_string(segment) + "][" + std::to_string(mode) +
                        "] (" + image.gain_modes[mode] + ") = " + std::to_string(fraction) +
                        " is not a fraction in [0, 1]");
      sum += fraction;
    }
    if (std::fabs(sum - 1.0) > kOccupancySumTolerance)
      fail(topic, "gain_occupancy row of segment " + std::to_string(segment) + " sums to " +
                      std::to_string(sum) + ", not 1");
  }

  if (image.assembly)
    detail::check_assembly(*image.assembly, image.height, image.width, image.segments);

  if (image.has_peaks) {
    if (image.peaks.sequence != image.sequence || image.peaks.pulse_id != image.pulse_id)
      fail(topic, "the peaks are of event " + std::to_string(image.peaks.sequence) + " (pulse " +
                      std::to_string(image.peaks.pulse_id) + "), the image of " +
                      std::to_string(image.sequence) + " (pulse " + std::to_string(image.pulse_id) +
                      ")");
    check_peaks(topic, image.peaks, image.width, image.height, image.segments);
  }
}

Message make_image_message(const ImageFrame& image) {
  validate(image);
  Message message;
  message.topic = std::string(kTopicImage);
  message.sequence = image.sequence;
  message.pulse_id = image.pulse_id;
  message.time_ns = detail::now_ns();
  message.payload = {{"height", image.height},     {"width", image.width},
                     {"unit", image.unit},         {"gain_modes", image.gain_modes},
                     {"segments", image.segments}, {"has_peaks", image.has_peaks}};
  if (image.has_peaks) write_peak_fields(image.peaks, message.payload);
  if (image.source_time_ns != 0) message.payload["source_time_ns"] = image.source_time_ns;
  if (image.assembly) message.payload["assembly"] = detail::assembly_to_json(*image.assembly);

  const std::size_t modes = image.gain_modes.size();
  message.frames.push_back(
      float32_frame({image.height, image.width}, image.pixels.data(), image.pixels.size()));
  message.frames.push_back(float32_frame({modes ? image.segments : 0, modes},
                                         image.gain_occupancy.data(), image.gain_occupancy.size()));
  if (image.has_peaks) {
    auto frames = peak_frames(image.peaks);
    message.frames.push_back(std::move(frames[0]));
    message.frames.push_back(std::move(frames[1]));
  }
  return message;
}

ImageFrame image_from_message(const Message& message) {
  require_topic(message, kTopicImage);
  const std::string_view topic = kTopicImage;
  const PayloadReader reader(message.payload, std::string(kTopicImage));
  reader.require_object("the payload");

  ImageFrame image;
  image.sequence = message.sequence;
  image.pulse_id = message.pulse_id;
  image.message_time_ns = message.time_ns;
  image.height = reader.count("height");
  image.width = reader.count("width");
  if (image.height == 0 || image.height > kMaxImageSide)
    reader.fail("height", "must be in 1.." + std::to_string(kMaxImageSide) + ", got " +
                              std::to_string(image.height));
  if (image.width == 0 || image.width > kMaxImageSide)
    reader.fail("width", "must be in 1.." + std::to_string(kMaxImageSide) + ", got " +
                             std::to_string(image.width));
  image.unit = reader.string("unit");
  const json& modes = reader.field("gain_modes");
  if (!modes.is_array())
    reader.fail("gain_modes", "must be an array of strings, got " + describe(modes));
  if (modes.size() > kMaxGainModes)
    reader.fail("gain_modes", "has " + std::to_string(modes.size()) + " names, more than " +
                                  std::to_string(kMaxGainModes) + " (\"bad\" included)");
  for (std::size_t index = 0; index < modes.size(); ++index) {
    if (!modes[index].is_string())
      reader.fail("gain_modes[" + std::to_string(index) + "]",
                  "must be a string, got " + describe(modes[index]));
    image.gain_modes.push_back(modes[index].get<std::string>());
  }
  image.segments = reader.count("segments");
  if (image.segments == 0 || image.segments > kMaxImageSegments)
    reader.fail("segments", "must be in 1.." + std::to_string(kMaxImageSegments) + ", got " +
                                std::to_string(image.segments));
  image.has_peaks = boolean(reader, "has_peaks");
  if (const auto time = message.payload.find("source_time_ns"); time != message.payload.end()) {
    if (!time->is_number_integer())
      reader.fail("source_time_ns",
                  "must be an integer (ns since the Unix epoch), got " + describe(*time));
    image.source_time_ns = time->get<std::int64_t>();
  }
  // Optional: an image without it (an older engine) shows, its pixels' segments unknown.
  if (const auto block = message.payload.find("assembly"); block != message.payload.end())
    image.assembly = detail::assembly_from_json(*block, image.height, image.width, image.segments);

  const std::size_t expected_frames = image.has_peaks ? 4 : 2;
  if (message.frames.size() != expected_frames)
    fail(topic, "needs " + std::to_string(expected_frames) + " frames (image, gain_occupancy" +
                    (image.has_peaks ? ", peak values, peak segment and num_pixels" : "") +
                    ") with has_peaks " + (image.has_peaks ? "true" : "false") + ", got " +
                    std::to_string(message.frames.size()));

  const Frame& pixels = message.frames[0];
  check_frame(topic, pixels, "frame 0 (image)", {image.height, image.width}, true);
  image.pixels.resize(image.height * image.width);
  for (std::size_t pixel = 0; pixel < image.pixels.size(); ++pixel)
    image.pixels[pixel] = float_at(pixels, pixel);

  const std::size_t mode_count = image.gain_modes.size();
  const Frame& occupancy = message.frames[1];
  check_frame(topic, occupancy, "frame 1 (gain_occupancy)",
              {mode_count ? image.segments : 0, mode_count}, true);
  image.gain_occupancy.resize(occupancy.element_count());
  for (std::size_t index = 0; index < image.gain_occupancy.size(); ++index)
    image.gain_occupancy[index] = float_at(occupancy, index);

  if (image.has_peaks) image.peaks = read_peaks(topic, message, reader, 2);
  validate(image);
  return image;
}

// --- stats.peak_finding ---------------------------------------------------------------------

nlohmann::json to_json(const PeakFindingStats& stats) {
  return {{"interval_events", stats.interval_events},
          {"interval_hits", stats.interval_hits},
          {"interval_peaks", stats.interval_peaks},
          {"total_events", stats.total_events},
          {"total_hits", stats.total_hits},
          {"total_peaks", stats.total_peaks},
          {"interval_hit_rate", number_or_null(stats.interval_hit_rate)},
          {"params_version", stats.params_version},
          {"peaks_messages", stats.peaks_messages},
          {"hits_not_sent", stats.hits_not_sent}};
}

PeakFindingStats peak_finding_stats_from_json(const nlohmann::json& block) {
  const PayloadReader reader(block, "stats", "peak_finding.");
  if (!block.is_object())
    throw ProtocolError("stats payload: field 'peak_finding' must be an object, got " +
                        describe(block));
  PeakFindingStats stats;
  stats.interval_events = reader.count("interval_events");
  stats.interval_hits = reader.count("interval_hits");
  stats.interval_peaks = reader.count("interval_peaks");
  stats.total_events = reader.count("total_events");
  stats.total_hits = reader.count("total_hits");
  stats.total_peaks = reader.count("total_peaks");
  stats.interval_hit_rate = reader.number("interval_hit_rate");
  stats.params_version = reader.count("params_version");
  stats.peaks_messages = reader.count("peaks_messages");
  stats.hits_not_sent = reader.count("hits_not_sent");
  if (stats.interval_hits > stats.interval_events)
    reader.fail("interval_hits", "(" + std::to_string(stats.interval_hits) +
                                     ") cannot exceed interval_events (" +
                                     std::to_string(stats.interval_events) + ")");
  if (stats.total_hits > stats.total_events)
    reader.fail("total_hits", "(" + std::to_string(stats.total_hits) +
                                  ") cannot exceed total_events (" +
                                  std::to_string(stats.total_events) + ")");
  if (stats.interval_events > stats.total_events || stats.interval_hits > stats.total_hits ||
      stats.interval_peaks > stats.total_peaks)
    reader.fail("interval_events", "and the other interval counts cannot exceed the run's totals");
  if (!std::isnan(stats.interval_hit_rate) &&
      !(stats.interval_hit_rate >= 0 && stats.interval_hit_rate <= 1))
    reader.fail("interval_hit_rate",
                "must be in [0, 1] or null, got " + std::to_string(stats.interval_hit_rate));
  return stats;
}

}  // namespace livedrp::protocol
