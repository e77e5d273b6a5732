#pragma once
// A processing rank's engine and the sums it keeps for the collector (rank_sums.hpp), which an
// apply request replaces (docs/mpi.md, "Control"): in two steps, so that a configuration one
// rank cannot build changes no rank. prepare() builds the new engine beside the running one, on
// a thread of its own (building one takes seconds: the rank's MPI thread goes on reporting and
// the running engine goes on processing); commit() stops and drains the running one and starts
// the prepared one; discard() drops it. Called on the rank's MPI thread only.
// Every engine it builds is this rank's: its share of the events (or its own input, mpi.inputs)
// and output files named for its rank, in the next free segment (exec/write_segments.hpp), so
// that no two ranks, and no two runs of one rank, write the same file.
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "exec/engine.hpp"
#include "exec/write_segments.hpp"
#include "mpi/rank_messages.hpp"
#include "mpi/rank_sums.hpp"

namespace livedrp::mpi {

class RankEngines {
 public:
  // Builds the first engine (not started) of MPI rank `rank` for the share `share` of the
  // events (with mpi.inputs, its own input mpi.inputs[share.index]); the rank publishes nothing
  // (the collector publishes for the run). Throws InputError (naming the input, for one of
  // mpi.inputs).
  RankEngines(const EngineConfig& config, EventShare share, int rank);

  Engine& engine() { return *current_.engine; }
  const Engine& engine() const { return *current_.engine; }
  const RankSums& sums() const { return *current_.sums; }
  RankMessages& messages() { return *current_.messages; }
  // Counts the engines started by commit(): a loop that waits for the end sees a new run.
  std::uint64_t generation() const { return generation_; }

  // Starts building an engine for `config` (one at a time: a second call waits for the first).
  void prepare(const EngineConfig& config);
  // Whether the build prepare() started has ended; then its error ("" when it succeeded).
  std::optional<std::string> prepared();
  // The same, waiting for it (the collector's own share, which it answers at once).
  std::string wait_prepared();
  // Asks the running engine to stop, so that commit() finds it drained; commit_ready() says when
  // it is (the rank goes on reporting meanwhile). Throws InputError when nothing is prepared.
  void begin_commit();
  bool commit_ready() const { return current_.engine->finished(); }
  void commit();  // throws InputError when nothing is prepared
  void discard();

 private:
  struct Built {
    std::unique_ptr<RankSums> sums;          // outlives its engine's run (the engine's observer)
    std::unique_ptr<RankMessages> messages;  // likewise (its stage message sink)
    std::unique_ptr<Engine> engine;
  };
  // What this rank's engine runs of `config`: its input, its rank's file names, nothing
  // published, the next free segment of its files. Throws InputError.
  EngineConfig next_config(const EngineConfig& config) const;
  // An engine of next_config()'s configuration.
  Built build(const EngineConfig& own) const;

  EventShare share_;
  int rank_;
  WriteSegments segments_;
  Built current_, prepared_;
  std::future<Built> building_;
  std::string build_error_;
  std::uint64_t generation_ = 0;
};

}  // namespace livedrp::mpi
