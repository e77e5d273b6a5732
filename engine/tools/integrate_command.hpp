#pragma once
// `livedrp-engine integrate`: offline azimuthal integration of an image or a stack of frames to
// radial profiles in CSV, with pyFAI's numbers (engine/integrate).
#include <memory>

#include <CLI/CLI.hpp>

namespace livedrp::tools {

struct IntegrateOptions;

// Registers the subcommand on `app`; run_integrate_command() runs it once it was parsed.
class IntegrateCommand {
 public:
  explicit IntegrateCommand(CLI::App& app);
  ~IntegrateCommand();
  bool parsed() const;
  // Exit status: 0 done, 1 the output could not be written, 2 bad input (named on stderr).
  int run() const;

 private:
  CLI::App* command_;
  std::unique_ptr<IntegrateOptions> options_;
};

}  // namespace livedrp::tools
