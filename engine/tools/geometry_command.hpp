#pragma once
// `livedrp-engine geometry`: a CrystFEL .geom for the hit files of `run --write-hits`, from a
// detector description's placement and its PONI (io/crystfel_geometry_writer.hpp).
#include <memory>

#include <CLI/CLI.hpp>

namespace livedrp::tools {

class GeometryCommand {
 public:
  explicit GeometryCommand(CLI::App& app);
  ~GeometryCommand();
  bool parsed() const;
  // Exit status: 0 done, 1 the output could not be written, 2 bad input (named on stderr).
  int run() const;

 private:
  struct Options;
  CLI::App* command_;
  std::unique_ptr<Options> options_;
};

}  // namespace livedrp::tools
