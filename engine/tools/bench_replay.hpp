#pragma once
// livedrp-bench replay: flat-out replay from an HDF5 file in the page cache, through the readers
// alone (1 and N, with and without deflate) and through the engine (CPU backend; CUDA host-fed when
// a device is present, against the pinned host-to-device bandwidth measured in the same run). See
// bench_replay.cpp.
#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace livedrp::bench {

struct ReplayBenchOptions {
  std::string detector = "epix10ka2m";
  int events = 64;   // events in the file written for the run
  int distinct = 4;  // distinct simulated events, cycled
  // A second file, the same events written with HDF5 shuffle + gzip at this level, for the
  // reader rows with deflate (0: no such file).
  int deflate = 1;
  int readers = 0;   // the N of the N-reader rows and of the engine rows; 0: min(8, cores)
  std::string file;  // replay this file instead of writing one
  std::string dataset = "/entry/data/data";
  std::string directory;  // where the file is written; empty: the system's temporary directory
  unsigned cpu_threads = 0;
  std::uint64_t seed = 20260101;
  std::string json_path, markdown_path;
};

void add_replay_options(CLI::App& command, ReplayBenchOptions& options);
// 0 done, 1 run failure; throws InputError on bad input.
int run_replay(const ReplayBenchOptions& options);

}  // namespace livedrp::bench
