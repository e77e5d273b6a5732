#include "app/analysis_files.hpp"

#include <string>

#include "core/error.hpp"
#include "integrate/shipped_geometry.hpp"
#include "io/array_file.hpp"

namespace livedrp::app {
namespace {

// An array file (FILE.npy or FILE.h5:/dataset) read whole: the reader checks the header, the
// dataset and the element type only as it reads.
void checkArray(const char* field, const std::string& location) {
  if (location.empty()) return;  // none given: nothing masked, or the beam gives the radius
  try {
    io::read_array(io::parse_array_location(location));
  } catch (const InputError& error) {
    throw InputError(std::string(field) + ": " + error.what());
  }
}

}  // namespace

void checkAnalysisFiles(const EngineConfig& config) {
  if (config.integration.enabled) {
    try {
      integrate::load_poni(config.integration.poni);
    } catch (const InputError& error) {
      throw InputError(std::string("integration.poni: ") + error.what());
    }
    checkArray("integration.mask", config.integration.mask);
  }
  if (config.peak_finding.enabled) {
    checkArray("peak_finding.mask", config.peak_finding.mask);
    checkArray("peak_finding.radius_map", config.peak_finding.radius_map);
  }
}

}  // namespace livedrp::app
