#pragma once
// Which segment of its live writers an engine writes (docs/formats.md, "Segments of a controlled
// run"), for every owner that builds one engine after another with the same configuration: the
// EngineController (`livedrp-engine run --control`) and the GUI's embedded engine host
// (app/engine_host.cpp), and an MPI run's processing rank (mpi/rank_engines.hpp), whose files
// carry its rank's name as well. Each keeps one WriteSegments for its life, so the k-th start with
// the same write paths writes segment k, and a start with new paths writes segment 1's names. No
// Qt.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "exec/engine.hpp"

namespace livedrp {

// The live writers of one run an owner started: its run number, its segment (which start of the
// configured writers it was) and what they wrote, to which files.
struct WriteSegment {
  std::int64_t run = 0;
  int segment = 1;
  std::uint64_t events_processed = 0;  // by the run (its writers' events)
  std::uint64_t hits = 0;              // peakfinder8's hits of the run (its hit files' events)
  WriteStatus status;
};

// True when any writer of `status` is on.
bool any_writer(const WriteStatus& status);
// Every file `status`'s writers wrote, comma-separated (hit files, profiles, average).
std::string write_file_list(const WriteStatus& status);
// The writers of `engine` (started or finished) as a WriteSegment.
WriteSegment write_segment_of(const Engine& engine);

class WriteSegments {
 public:
  // Sets config.write.segment to the first segment none of whose first files (the first hit
  // file, the profile file, the average file of config.run) an engine of this owner created; 1
  // when config.write has no writer. A file that exists for any other reason is left to the
  // writers, which refuse it ("it exists"). Throws InputError past WriteConfig::kMaxSegment.
  void choose(EngineConfig& config) const;
  // Notes the first files of `config`'s segment as created: call once its engine is built (an
  // engine that failed to build created none that stay).
  void note_created(const EngineConfig& config);

  // The first file of each writer of `write` in segment `segment` of run `run`, absolute and
  // normal (so "hits" and "./hits" are one folder): every segment's writers create these when
  // the engine is built (hit files roll over to more later). `rank`: an MPI run's processing
  // rank's names (config.mpi.rank; -1: the plain names).
  static std::vector<std::string> first_files(const WriteConfig& write, std::int64_t run,
                                              int segment, int rank = -1);

 private:
  std::set<std::string> created_;
};

}  // namespace livedrp
