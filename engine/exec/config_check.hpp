#pragma once
// A whole configuration checked against its detector without a run (issue 34): what the Engine
// constructor refuses, found the way it finds it (exec/run_setup.hpp) and worded as it words it,
// so that a control request ("check") or the GUI's Apply can refuse a mask of another shape, a
// PONI that cannot place the detector, gain configurations the detector lacks, ... before the
// configuration goes anywhere. No backend, no device work, no file created, no socket bound or
// connected; of the simulator's constants only the status words the built-in stages read are
// made (a constants file is read, and a registered stage gets the whole constants). A replay's
// files are read (its detector is in them); a live stream's detector is taken from stream.detector
// (a dectris stream without one: only the stream's start message tells, so the stages are checked
// when the run starts). What only a run finds (an output file that exists, a device that runs out
// of memory) is left to it.
#include "exec/engine.hpp"

namespace livedrp {

// Throws InputError naming the field, as Engine(config) would.
void check_engine_config(const EngineConfig& config);

}  // namespace livedrp
