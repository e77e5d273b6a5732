#pragma once
// `livedrp-engine pedestal`: calibration constants (pedestal, noise, bad-pixel mask per gain mode)
// from dark runs, written as a constants file (calib/pedestal.hpp, docs/formats.md).
// `livedrp-engine simulate-dark`: dark runs of the simulated detector (no photons, optionally a
// forced gain stage) as recorded HDF5 events, with the simulator's true constants beside them.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace livedrp::tools {

struct PedestalCommandOptions;
struct SimulateDarkOptions;

class PedestalCommand {
 public:
  explicit PedestalCommand(CLI::App& app);
  ~PedestalCommand();
  bool parsed() const;
  // `command_line` is recorded in the output file. Exit status: 0 done, 1 the output could not be
  // written, 2 bad input (named).
  int run(const std::string& command_line) const;

 private:
  CLI::App* command_;
  std::unique_ptr<PedestalCommandOptions> options_;
};

class SimulateDarkCommand {
 public:
  explicit SimulateDarkCommand(CLI::App& app);
  ~SimulateDarkCommand();
  bool parsed() const;
  int run() const;

 private:
  CLI::App* command_;
  std::unique_ptr<SimulateDarkOptions> options_;
};

}  // namespace livedrp::tools
