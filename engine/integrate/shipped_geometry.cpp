#include "integrate/shipped_geometry.hpp"

#include "core/error.hpp"

namespace livedrp::integrate {

std::optional<std::string> shipped_poni_reference(std::string_view detector_name) {
  for (const ShippedGeometry& geometry : shipped_geometries())
    if (geometry.name == detector_name)
      return std::string(kShippedPoniPrefix) + std::string(geometry.name);
  return std::nullopt;
}

bool is_shipped_poni_reference(std::string_view reference) {
  return reference.substr(0, kShippedPoniPrefix.size()) == kShippedPoniPrefix;
}

PoniGeometry load_poni(const std::string& reference) {
  if (!is_shipped_poni_reference(reference)) return read_poni(reference);
  const std::string_view name = std::string_view(reference).substr(kShippedPoniPrefix.size());
  std::string known;
  for (const ShippedGeometry& geometry : shipped_geometries()) {
    if (geometry.name == name)
      return parse_poni(geometry.poni, "shipped geometry '" + reference + "' (resources/geometry/" +
                                           std::string(name) + ".poni)");
    known +=
        (known.empty() ? "" : ", ") + std::string(kShippedPoniPrefix) + std::string(geometry.name);
  }
  throw InputError("PONI '" + reference + "': no geometry ships under that name (shipped: " +
                   known + "; or give a PONI file's path)");
}

}  // namespace livedrp::integrate
