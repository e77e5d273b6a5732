#pragma once
// The `profile` topic (docs/protocol.md): the radial profile of the latest event and a running
// average over the last events, on one axis of bin centres. The numbers travel as binary frames
// (float64; float32 accepted), the description as the payload:
//   payload {"unit": "q_A^-1", "bins": 1000, "average_window": 100, "average_events": 37}
//   frames  [centres[bins], latest[bins], average[bins]]
// The header's sequence and pulse_id are those of the latest event.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/message.hpp"

namespace livedrp::protocol {

inline constexpr std::string_view kTopicProfile = "profile";

// More bins than any detector has distinct radii at pixel resolution; bounds what a subscriber
// allocates per profile (the GUI keeps a history of them).
inline constexpr std::uint64_t kMaxProfileBins = 65'536;

// The radial axis, named as pyFAI names it so that a PONI user recognises it.
enum class RadialUnit : std::uint8_t {
  TwoThetaDeg,       // "2th_deg": scattering angle 2θ in degrees
  QInverseNm,        // "q_nm^-1": momentum transfer in nm⁻¹
  QInverseAngstrom,  // "q_A^-1": momentum transfer in Å⁻¹
  RadiusMm,          // "r_mm": distance from the beam centre on the detector plane, mm
};
std::string_view to_string(RadialUnit unit);
RadialUnit radial_unit_from_string(std::string_view name);  // throws ProtocolError naming them all
std::span<const RadialUnit> all_radial_units();

struct RadialProfile {
  RadialUnit unit = RadialUnit::TwoThetaDeg;
  std::uint64_t sequence = 0;  // the latest event's (message header)
  std::uint64_t pulse_id = 0;
  // Events the running average is taken over, as configured, and the events it holds now: fewer
  // than the window while a run has not yet seen that many.
  std::uint64_t average_window = 1;
  std::uint64_t average_events = 1;
  std::vector<double> centres;  // bin centres in `unit`: finite, strictly increasing
  // Mean intensity per bin, of the latest event and averaged. NaN = no pixel in the bin (all
  // masked, or outside the detector): not a zero.
  std::vector<double> latest;
  std::vector<double> average;
};

// Checks what both ends must agree on: 1..kMaxProfileBins bins, three arrays of that length,
// finite increasing centres, intensities finite or NaN, 1 <= average_events <= average_window.
// Throws ProtocolError naming the field.
void validate(const RadialProfile& profile);

// Topic, payload and frames filled in, sequence and pulse_id from the profile, time_ns set to
// now; run is the caller's. Throws ProtocolError for a profile that validate() refuses.
Message make_profile_message(const RadialProfile& profile);
// Reads and validates a decoded `profile` message. Throws ProtocolError.
RadialProfile profile_from_message(const Message& message);

}  // namespace livedrp::protocol
