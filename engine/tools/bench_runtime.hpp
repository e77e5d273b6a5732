#pragma once
// livedrp-bench runtime: the stream-configuration matrix of the CUDA runtime (see bench_runtime.cpp).
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace livedrp::bench {

struct RuntimeOptions {
  std::string detector = "epix10ka2m";  // or "epix10ka_segment": one 352x384 segment of it
  int events = 4000;                    // timed events per row
  std::vector<int> streams = {1, 2, 4, 8};
  std::vector<std::string> launch = {"plain", "graph"};
  std::vector<int> batch = {1, 4};
  std::vector<std::string> segments = {"all", "one"};
  std::vector<std::string> threads = {"one_for_all"};
  std::vector<std::string> source = {"host", "device"};
  std::uint64_t seed = 20260101;
  std::string json_path, markdown_path;
};

void add_runtime_options(CLI::App& command, RuntimeOptions& options);
// Exit status as livedrp-bench's: 0 done, 1 run failure; throws InputError on bad input.
int run_runtime(const RuntimeOptions& options);

}  // namespace livedrp::bench
