#include "stages/integrate/live_integrator.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "integrate/array_values.hpp"
#include "integrate/layout.hpp"
#include "integrate/poni.hpp"
#include "integrate/shipped_geometry.hpp"
#include "io/array_file.hpp"

namespace livedrp::stages {

integrate::Integrator make_live_integrator(const LiveIntegrationConfig& config,
                                           const DetectorDescription& detector,
                                           const CalibrationConstants& constants) {
  integrate::IntegrationConfig c;
  if (const auto unit = integrate::radial_unit_from_name(config.unit))
    c.unit = *unit;
  else
    throw InputError("integration.unit: unknown unit '" + config.unit + "'");
  c.splitting = config.method == "bbox" ? integrate::Splitting::BBox : integrate::Splitting::None;
  c.bins = config.npt;
  c.radial_range = config.radial_range;
  c.azimuth_range = config.azimuth_range;
  c.solid_angle = config.solid_angle;
  c.polarization = config.polarization;
  c.error_model = config.error_model == "azimuthal" ? integrate::ErrorModel::Azimuthal
                                                    : integrate::ErrorModel::Poisson;
  try {
    integrate::validate(c);
  } catch (const InputError& e) {
    throw InputError(std::string("integration: ") + e.what());
  }
  integrate::PoniGeometry poni;
  try {
    poni = integrate::load_poni(config.poni);
  } catch (const InputError& e) {
    throw InputError(std::string("integration.poni: ") + e.what());
  }
  std::vector<std::uint8_t> mask(detector.pixels(), 0);
  if (!config.mask.empty()) {
    io::Array array;
    try {
      array = io::read_array(io::parse_array_location(config.mask));
    } catch (const InputError& e) {
      throw InputError(std::string("integration.mask: ") + e.what());
    }
    // Any shape of the event's pixel count in segment, row, column order: [segments, rows,
    // cols] or the stacked [segments * rows, cols].
    if (array.elements() != detector.pixels())
      throw InputError("integration.mask: '" + config.mask + "' has shape " +
                       io::shape_text(array.shape) + " (" + std::to_string(array.elements()) +
                       " values); the detector " + detector.name + " has " +
                       std::to_string(detector.pixels()) + " pixels");
    mask = integrate::mask_values(array);
  }
  for (std::size_t k = 0; k < mask.size(); ++k)
    if (constants.masked(k)) mask[k] = 1;
  try {
    integrate::Integrator integrator(poni, integrate::layout_from_detector(detector), c);
    integrator.set_mask(std::move(mask));
    return integrator;
  } catch (const InputError& e) {
    throw InputError(std::string("integration: ") + e.what());
  }
}

}  // namespace livedrp::stages
