#pragma once
// The pipeline configuration's "fidelity" section (docs/protocol.md, `fidelity`): how often the
// engine takes an event's lossy stream back through decompression, integration and peak finding
// to show what the codec's error bound costs.
#include <nlohmann/json.hpp>

#include "core/config_fields.hpp"

namespace livedrp {

struct FidelityConfig {
  // Off by default: each sample costs two integrations and two peak searches of a whole event on
  // a thread of its own, which a machine that only records should not pay for.
  bool enabled = false;
  // Events sampled a second, at most. A few a second is what a person reading the dock can
  // follow; the evaluation of one ePix10ka2M sample takes 50 to 350 ms of one core, so a sample
  // that comes due while the last one is still being evaluated is skipped (and counted).
  double samples_hz = 2.0;
  // A peak of the decompressed image is the same peak as one of the original when their
  // centroids lie within this many pixels (slab coordinates). Two pixels: a Bragg peak spans a
  // few pixels, and an error bound that moves a centroid further has changed the peak.
  double match_radius_px = 2.0;
};

// Samples per second accepted: above 0 (0 would never sample; turn it off with enabled) and at
// most 50, beyond which the sampler would be busy all the time on any detector worth sampling.
inline constexpr double kMaxFidelitySamplesHz = 50.0;
// A match radius beyond this would pair unrelated peaks of a busy pattern.
inline constexpr double kMaxFidelityMatchRadiusPx = 50.0;

// Reads the section's fields into `config`; throws InputError naming "fidelity.<field>".
void read_fidelity_section(FieldReader& reader, FidelityConfig& config);
// The section as the configuration echoes it.
nlohmann::json fidelity_section_json(const FidelityConfig& config);

}  // namespace livedrp
