#include "stages/fidelity/fidelity_config.hpp"

namespace livedrp {

void read_fidelity_section(FieldReader& reader, FidelityConfig& config) {
  reader.read("enabled", config.enabled);
  reader.read_number("samples_hz", config.samples_hz, 0.0, kMaxFidelitySamplesHz);
  if (!(config.samples_hz > 0))
    reader.fail("fidelity.samples_hz",
                "must be > 0 (turn sampling off with fidelity.enabled false), got 0");
  reader.read_number("match_radius_px", config.match_radius_px, 0.0, kMaxFidelityMatchRadiusPx);
  if (!(config.match_radius_px > 0)) reader.fail("fidelity.match_radius_px", "must be > 0, got 0");
  reader.reject_unknown_keys();
}

nlohmann::json fidelity_section_json(const FidelityConfig& config) {
  return {{"enabled", config.enabled},
          {"samples_hz", config.samples_hz},
          {"match_radius_px", config.match_radius_px}};
}

}  // namespace livedrp
