#include "tools/geometry_command.hpp"

#include <fstream>
#include <iostream>
#include <string>

#include "core/detector.hpp"
#include "core/error.hpp"
#include "integrate/shipped_geometry.hpp"
#include "io/crystfel_geometry_writer.hpp"

namespace livedrp::tools {

struct GeometryCommand::Options {
  std::string detector, poni, output;
};

GeometryCommand::GeometryCommand(CLI::App& app)
    : command_(app.add_subcommand("geometry",
                                  "Write a CrystFEL .geom for the hit files of `run --write-hits` "
                                  "(docs/formats.md, \"Hit files for CrystFEL\")")),
      options_(std::make_unique<Options>()) {
  command_
      ->add_option("--detector", options_->detector,
                   "A built-in detector name or description .json")
      ->required();
  command_->add_option("--poni", options_->poni,
                       "PONI file or builtin:NAME (default: the detector's shipped geometry)");
  command_->add_option("--output", options_->output, "The .geom file to write, or - for stdout")
      ->required();
}

GeometryCommand::~GeometryCommand() = default;

bool GeometryCommand::parsed() const {
  return command_->parsed();
}

int GeometryCommand::run() const {
  const Options& o = *options_;
  std::string text;
  try {
    const DetectorDescription detector = find_detector(o.detector);
    std::string poni = o.poni;
    if (poni.empty()) {
      const auto shipped = integrate::shipped_poni_reference(detector.name);
      if (!shipped)
        throw InputError("no geometry ships for detector " + detector.name +
                         ": give its PONI with --poni FILE");
      poni = *shipped;
    }
    text = io::crystfel_geometry_text(detector, integrate::load_poni(poni), poni);
  } catch (const InputError& e) {
    std::cerr << "livedrp-engine: error: " << e.what() << "\n";
    return 2;
  }
  if (o.output == "-") {
    std::cout << text;
    return 0;
  }
  std::ofstream out(o.output);
  out << text;
  out.close();
  if (!out) {
    std::cerr << "livedrp-engine: error: cannot write '" << o.output << "'\n";
    return 1;
  }
  std::cerr << "livedrp-engine: wrote " << o.output << "\n";
  return 0;
}

}  // namespace livedrp::tools
