#pragma once
// `livedrp-engine peaks`: offline peakfinder8 over a slab or a stack of slabs, to a CSV peak list,
// a CXI file CrystFEL reads, or a CrystFEL stream (tools/peaks_stream.hpp; engine/peaks).
#include <memory>

#include <CLI/CLI.hpp>

namespace livedrp::tools {

struct PeaksOptions;

// Registers the subcommand on `app`; run() runs it once it was parsed.
class PeaksCommand {
 public:
  explicit PeaksCommand(CLI::App& app);
  ~PeaksCommand();
  bool parsed() const;
  // Exit status: 0 done, 1 the output could not be written or the device failed, 2 bad input.
  int run() const;

 private:
  CLI::App* command_;
  std::unique_ptr<PeaksOptions> options_;
};

}  // namespace livedrp::tools
