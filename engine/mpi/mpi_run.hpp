#pragma once
// One rank's part of a run of many engines (`mpirun -n N livedrp-engine run`; docs/mpi.md).
// Rank 0 is the collector: it merges the processing ranks' reports (collector.hpp) and publishes
// the merged topics on config.publish. Every processing rank runs an engine on its share of the
// events (event index modulo the processing ranks) and reports to the collector at each
// stats_interval_s with a non-blocking send, skipped while the previous one is still under way,
// so that MPI never holds an engine up. With mpi.collector "processing", rank 0 runs an engine on
// a share as well.
#include <atomic>
#include <string>
#include <vector>

#include "exec/engine.hpp"
#include "mpi/mpi_session.hpp"
#include "publish/control_server.hpp"

namespace livedrp::mpi {

// --control on an MPI run: the collector binds the endpoint and applies each request to every
// rank (docs/mpi.md, "Control"); empty endpoint: no control socket.
struct ControlOptions {
  std::string endpoint;
  ControlAccess access = ControlAccess::Full;
  std::vector<std::string> roots;  // --control-root
};

struct RankOutcome {
  // Start-up failed on some rank: on rank 0 the text names every rank that failed and why (for
  // the caller to print); other ranks leave it empty and exit with `exit_code` quietly.
  std::string startup_error;
  int exit_code = 0;             // set when startup failed
  bool collector = false;        // rank 0: `summary` is the merged run's
  RunSummary summary;            // the merged run's on rank 0; its own engine's on other ranks
  std::string publish_endpoint;  // rank 0: as bound; empty when it publishes nothing
  std::string control_endpoint;  // rank 0: as bound; empty without --control
};

// Runs this rank's part; returns when the whole run has ended. `stop` (SIGINT, SIGTERM): the
// collector stops every rank; a processing rank stops its own engine. A failure of MPI itself in
// the middle of the run is printed and the job aborted (MPI_Abort): nothing half-merged is
// reported as a result.
// With `control`, rank 0 serves the control socket until interrupted or asked to shut down, also
// after every rank's run has ended.
RankOutcome run_rank(Session& session, const EngineConfig& config, const std::atomic<bool>& stop,
                     const ControlOptions& control = {});

}  // namespace livedrp::mpi
