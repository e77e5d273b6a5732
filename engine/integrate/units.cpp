#include "integrate/units.hpp"

namespace livedrp::integrate {

std::optional<RadialUnit> radial_unit_from_name(std::string_view name) {
  if (name == "2th_deg") return RadialUnit::TwoThetaDeg;
  if (name == "q_nm^-1") return RadialUnit::QNm;
  if (name == "q_A^-1") return RadialUnit::QA;
  if (name == "r_mm") return RadialUnit::RMm;
  return std::nullopt;
}

std::string_view to_string(RadialUnit unit) {
  switch (unit) {
    case RadialUnit::TwoThetaDeg:
      return "2th_deg";
    case RadialUnit::QNm:
      return "q_nm^-1";
    case RadialUnit::QA:
      return "q_A^-1";
    case RadialUnit::RMm:
      return "r_mm";
  }
  return "?";
}

}  // namespace livedrp::integrate
