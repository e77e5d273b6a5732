#pragma once
// The pyFAI geometries livedrp ships for its simulated detectors (resources/geometry/NAME.poni,
// compiled in): the beam where the simulator centres its powder rings, at its photon energy, so
// that live integration of `sim:NAME` works out of the box. A configuration names one as
// "builtin:NAME" wherever it takes a PONI file's path (integration.poni, `integrate --poni`).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "integrate/poni.hpp"

namespace livedrp::integrate {

// The prefix of a PONI reference that names a shipped geometry instead of a file.
inline constexpr std::string_view kShippedPoniPrefix = "builtin:";

struct ShippedGeometry {
  std::string_view name;  // the detector's built-in name, e.g. "epix10ka2m"
  std::string_view poni;  // the .poni file's text
};

// Every shipped geometry, in resources/geometry/ order of the build's list.
const std::vector<ShippedGeometry>& shipped_geometries();

// "builtin:NAME" when a geometry ships for the built-in detector NAME; none otherwise.
std::optional<std::string> shipped_poni_reference(std::string_view detector_name);

// Whether `reference` names a shipped geometry ("builtin:..."), known or not.
bool is_shipped_poni_reference(std::string_view reference);

// The geometry `reference` names: "builtin:NAME" (a shipped one) or a PONI file's path. Throws
// InputError naming the reference: an unknown built-in name (with the known ones listed), or the
// file's own errors (read_poni).
PoniGeometry load_poni(const std::string& reference);

}  // namespace livedrp::integrate
