#pragma once
// livedrp-bench resident: the device-resident source and its consumers (see bench_resident.cpp).
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace livedrp::bench {

struct ResidentOptions {
  std::string detector = "epix10ka2m";  // or "epix10ka_segment"
  std::uint64_t events = 20000;         // timed events per row
  std::vector<std::string> launch = {"plain", "graph", "device_graph", "persistent"};
  std::vector<int> lanes = {1, 4};
  std::vector<std::string> producer = {"in_place", "copy"};
  std::vector<std::string> common_mode = {"off", "on"};
  int ring_slots = 32;
  double rate_hz = 0;
  bool checksum = false;
  std::uint64_t seed = 20260101;
  std::string json_path, markdown_path;
};

void add_resident_options(CLI::App& command, ResidentOptions& options);
// 0 done, 1 run failure; throws InputError on bad input.
int run_resident(const ResidentOptions& options);

}  // namespace livedrp::bench
