#include "protocol/profile_topic.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include "protocol/payload_reader.hpp"

namespace livedrp::protocol {

namespace {

using detail::float64_frame;
using detail::PayloadReader;
using nlohmann::json;

struct UnitName {
  RadialUnit unit;
  std::string_view name;
};

constexpr std::array<UnitName, 4> kUnitNames{{
    {RadialUnit::TwoThetaDeg, "2th_deg"},
    {RadialUnit::QInverseNm, "q_nm^-1"},
    {RadialUnit::QInverseAngstrom, "q_A^-1"},
    {RadialUnit::RadiusMm, "r_mm"},
}};

constexpr std::array<RadialUnit, 4> kUnits{RadialUnit::TwoThetaDeg, RadialUnit::QInverseNm,
                                           RadialUnit::QInverseAngstrom, RadialUnit::RadiusMm};

std::string known_unit_names() {
  std::string names;
  for (const UnitName& entry : kUnitNames) {
    if (!names.empty()) names += ", ";
    names += "\"" + std::string(entry.name) + "\"";
  }
  return names;
}

// The three frames, in their order on the wire.
constexpr std::array<std::string_view, 3> kFrameNames{"centres", "latest", "average"};

[[noreturn]] void fail(const std::string& what) {
  throw ProtocolError(std::string(kTopicProfile) + " message: " + what);
}

void check_array(std::string_view name, const std::vector<double>& values, std::size_t bins,
                 bool centres) {
  if (values.size() != bins) {
    fail(std::string(name) + " has " + std::to_string(values.size()) + " values for " +
         std::to_string(bins) + " bins");
  }
  for (std::size_t bin = 0; bin < values.size(); ++bin) {
    const double value = values[bin];
    const std::string where = std::string(name) + "[" + std::to_string(bin) + "]";
    if (centres) {
      if (!std::isfinite(value)) fail(where + " is not a finite number");
      if (bin > 0 && !(value > values[bin - 1]))
        fail(where + " = " + std::to_string(value) + " does not increase on " +
             std::to_string(values[bin - 1]) + " (centres must be strictly increasing)");
    } else if (std::isinf(value)) {
      // NaN is a bin without pixels; infinity is an overflow or a division by zero upstream.
      fail(where + " is infinite");
    }
  }
}

std::vector<double> values_of(const Frame& frame, std::size_t index, std::uint64_t bins) {
  const std::string name =
      "frame " + std::to_string(index) + " (" + std::string(kFrameNames[index]) + ")";
  if (frame.dtype != DType::Float64 && frame.dtype != DType::Float32)
    fail(name + " must be float64 or float32, got " + std::string(to_string(frame.dtype)));
  if (frame.shape.size() != 1 || frame.shape[0] != bins) {
    std::string shape = "[";
    for (std::size_t axis = 0; axis < frame.shape.size(); ++axis)
      shape += (axis ? ", " : "") + std::to_string(frame.shape[axis]);
    fail(name + " must have shape [" + std::to_string(bins) + "] (payload 'bins'), got " + shape +
         "]");
  }
  // decode() has checked that the bytes match the shape; copy them out element by element,
  // since a frame's bytes carry no alignment guarantee.
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

}  // namespace

std::string_view to_string(RadialUnit unit) {
  for (const UnitName& entry : kUnitNames)
    if (entry.unit == unit) return entry.name;
  throw ProtocolError("unknown radial unit code " + std::to_string(int(unit)));
}

RadialUnit radial_unit_from_string(std::string_view name) {
  for (const UnitName& entry : kUnitNames)
    if (entry.name == name) return entry.unit;
  throw ProtocolError("unknown radial unit " + detail::describe(json(std::string(name))) +
                      "; known: " + known_unit_names());
}

std::span<const RadialUnit> all_radial_units() {
  return kUnits;
}

void validate(const RadialProfile& profile) {
  to_string(profile.unit);  // throws for a value outside the enum
  const std::size_t bins = profile.centres.size();
  if (bins == 0) fail("a profile needs at least one bin");
  if (bins > kMaxProfileBins)
    fail(std::to_string(bins) + " bins is more than " + std::to_string(kMaxProfileBins));
  check_array(kFrameNames[0], profile.centres, bins, true);
  check_array(kFrameNames[1], profile.latest, bins, false);
  check_array(kFrameNames[2], profile.average, bins, false);
  if (profile.average_window == 0) fail("average_window must be at least 1");
  if (profile.average_events == 0 || profile.average_events > profile.average_window)
    fail("average_events must be in 1..average_window (" + std::to_string(profile.average_window) +
         "), got " + std::to_string(profile.average_events));
}

Message make_profile_message(const RadialProfile& profile) {
  validate(profile);
  Message message;
  message.topic = std::string(kTopicProfile);
  message.sequence = profile.sequence;
  message.pulse_id = profile.pulse_id;
  message.time_ns = detail::now_ns();
  message.payload = {{"unit", to_string(profile.unit)},
                     {"bins", profile.centres.size()},
                     {"average_window", profile.average_window},
                     {"average_events", profile.average_events}};
  message.frames = {float64_frame(profile.centres), float64_frame(profile.latest),
                    float64_frame(profile.average)};
  return message;
}

RadialProfile profile_from_message(const Message& message) {
  if (message.topic != kTopicProfile)
    fail("topic is '" + message.topic + "', not '" + std::string(kTopicProfile) + "'");
  const PayloadReader reader(message.payload, std::string(kTopicProfile));
  reader.require_object("the payload");

  RadialProfile profile;
  const std::string unit = reader.string("unit");
  const auto known = std::find_if(kUnitNames.begin(), kUnitNames.end(),
                                  [&](const UnitName& entry) { return entry.name == unit; });
  if (known == kUnitNames.end())
    reader.fail("unit", "must be one of " + known_unit_names() + ", got " +
                            detail::describe(message.payload.at("unit")));
  profile.unit = known->unit;
  const std::uint64_t bins = reader.count("bins");
  if (bins == 0 || bins > kMaxProfileBins)
    reader.fail("bins", "must be in 1.." + std::to_string(kMaxProfileBins) + ", got " +
                            std::to_string(bins));
  profile.average_window = reader.count("average_window");
  profile.average_events = reader.count("average_events");
  if (message.frames.size() != kFrameNames.size())
    fail("needs 3 frames (centres, latest, average), got " + std::to_string(message.frames.size()));
  profile.centres = values_of(message.frames[0], 0, bins);
  profile.latest = values_of(message.frames[1], 1, bins);
  profile.average = values_of(message.frames[2], 2, bins);
  profile.sequence = message.sequence;
  profile.pulse_id = message.pulse_id;
  validate(profile);
  return profile;
}

}  // namespace livedrp::protocol
