#pragma once
// How the GUI writes the protocol's radial units: axis titles and read-out values. The wire
// names ("q_A^-1") are for machines; people read "q (Å⁻¹)".
#include <QString>

#include "protocol/profile_topic.hpp"

namespace livedrp::widgets {

// The protocol's name: "2th_deg", "q_A^-1", ...
QString radialUnitWireName(protocol::RadialUnit unit);
// "2θ (°)", "q (nm⁻¹)", "q (Å⁻¹)", "r (mm)".
QString radialAxisTitle(protocol::RadialUnit unit);
// "2θ = 12.345°", "q = 1.234 Å⁻¹", ...
QString radialValueText(protocol::RadialUnit unit, double value);

}  // namespace livedrp::widgets
