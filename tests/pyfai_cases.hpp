#pragma once
// The pyFAI reference cases of tests/reference/pyfai (integrate_cases.json, written by
// make_integrate_refs.py) set up as Integrators: shared by the CPU suite (test_integrate_pyfai)
// and the GPU suite (test_gpu_integrate), so both integrate exactly the same configurations.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "integrate/array_values.hpp"
#include "integrate/integrator.hpp"
#include "integrate/poni.hpp"
#include "io/npy.hpp"

#include "test_data.hpp"

namespace livedrp::integrate::testing {

inline std::filesystem::path reference_dir() {
  return livedrp::testing::test_reference_dir() / "pyfai";
}

inline nlohmann::json load_cases() {
  std::ifstream in(reference_dir() / "integrate_cases.json");
  return nlohmann::json::parse(in);
}

struct Setup {
  std::unique_ptr<Integrator> integrator;
  io::Array input;
  io::Array reference;  // (npt, 7) or (frames, npt, 7)
};

inline Setup setup_case(const nlohmann::json& c) {
  IntegrationConfig config;
  config.unit = *radial_unit_from_name(c.at("unit").get<std::string>());
  config.bins = c.at("npt").get<int>();
  config.splitting = c.value("method", "no") == "bbox" ? Splitting::BBox : Splitting::None;
  if (c.contains("radial_range"))
    config.radial_range =
        std::pair{c["radial_range"][0].get<double>(), c["radial_range"][1].get<double>()};
  if (c.contains("azimuth_range"))
    config.azimuth_range =
        std::pair{c["azimuth_range"][0].get<double>(), c["azimuth_range"][1].get<double>()};
  config.solid_angle = c.value("solid_angle", true);
  if (c.contains("polarization")) config.polarization = c["polarization"].get<double>();
  config.error_model = c.value("error_model", "poisson") == "azimuthal" ? ErrorModel::Azimuthal
                                                                        : ErrorModel::Poisson;
  if (c.contains("dummy")) config.dummy = c["dummy"].get<double>();
  config.delta_dummy = c.value("delta_dummy", 0.0);

  Setup s;
  s.input = io::read_npy(reference_dir() / c.at("input").get<std::string>());
  s.reference = io::read_npy(reference_dir() / c.at("reference").get<std::string>());
  PixelLayout layout;
  if (c.contains("segments")) {
    const auto& seg = c["segments"];
    layout.segments = seg.at("count").get<int>();
    layout.rows = seg.at("rows").get<int>();
    layout.cols = seg.at("cols").get<int>();
    for (const auto& p : seg.at("placement"))
      layout.placement.push_back({p.at("x_px").get<double>(), p.at("y_px").get<double>(), 0});
  } else {
    const auto& shape = s.input.shape;
    layout = plain_layout(int(shape[shape.size() - 2]), int(shape[shape.size() - 1]));
  }
  const PoniGeometry poni = read_poni(reference_dir() / c.at("poni").get<std::string>());
  s.integrator = std::make_unique<Integrator>(poni, layout, config);
  if (c.contains("mask"))
    s.integrator->set_mask(
        mask_values(io::read_npy(reference_dir() / c["mask"].get<std::string>())));
  if (c.contains("dark"))
    s.integrator->set_dark(
        float_values(io::read_npy(reference_dir() / c["dark"].get<std::string>())));
  if (c.contains("flat"))
    s.integrator->set_flat(
        float_values(io::read_npy(reference_dir() / c["flat"].get<std::string>())));
  return s;
}

}  // namespace livedrp::integrate::testing
