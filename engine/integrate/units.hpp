#pragma once
// Radial units of the integrated profile, as pyFAI names them. pyFAI bins in an internal unit
// (2theta in rad, q in nm^-1, r in m) and multiplies by the unit's scale only to report; doing the
// same keeps the bin edges, and so which pixel falls in which bin, identical to pyFAI's.
#include <cmath>
#include <optional>
#include <string_view>

#include "core/host_device.hpp"
#include "integrate/geometry.hpp"

namespace livedrp::integrate {

enum class RadialUnit { TwoThetaDeg, QNm, QA, RMm };

// "2th_deg", "q_nm^-1", "q_A^-1", "r_mm"; nullopt for anything else.
std::optional<RadialUnit> radial_unit_from_name(std::string_view name);
std::string_view to_string(RadialUnit unit);
// True when the unit needs the wavelength (q).
inline bool needs_wavelength(RadialUnit unit) {
  return unit == RadialUnit::QNm || unit == RadialUnit::QA;
}

// Internal value * scale = reported value (pyFAI's Unit.scale).
LIVEDRP_HD double unit_scale(RadialUnit unit) {
  switch (unit) {
    case RadialUnit::TwoThetaDeg:
      return 180.0 / kPi;
    case RadialUnit::QA:
      return 0.1;
    case RadialUnit::RMm:
      return 1000.0;
    case RadialUnit::QNm:
    default:
      return 1.0;
  }
}

// The internal radial value of a point at lab position t (pyFAI's calc_tth, calc_q, calc_r).
LIVEDRP_HD double internal_radial(RadialUnit unit, const LabPosition& t, double wavelength_m) {
  switch (unit) {
    case RadialUnit::TwoThetaDeg:
      return two_theta(t);
    case RadialUnit::QNm:
    case RadialUnit::QA:
      return q_nm(two_theta(t), wavelength_m);
    case RadialUnit::RMm:
    default:
      return std::sqrt(t.t1 * t.t1 + t.t2 * t.t2);  // m
  }
}

}  // namespace livedrp::integrate
