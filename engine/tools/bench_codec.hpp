#pragma once
// livedrp-bench codec: the GPU codecs against a device copy and against zstd and lz4 on the CPU
// (see bench_codec.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "codec/codec_format.hpp"

namespace CLI {
class App;
}

namespace livedrp::bench {

struct CodecBenchOptions {
  int events = 200;       // timed events (or segments) per row and stream count
  int distinct = 8;       // distinct simulated events, rotated so no event stays in L2
  int cpu_events = 4;     // events per CPU baseline row
  bool cpu_only = false;  // skip the GPU rows (no device needed)
  std::uint32_t chunk_bytes = codec::kDefaultChunkBytes;  // input bytes per chunk
  std::string only;  // when not empty: only the cases whose name contains it (for profiling)
  std::vector<double> hit_densities;     // extra photon-sparse cases at these hit densities
  std::vector<int> event_streams{1, 4};  // stream counts of the whole-event launched rows
  std::vector<std::string> scopes{"event", "segment"};  // which array scopes get GPU rows
  std::uint64_t seed = 20260101;
  std::string json_path, markdown_path;
};

void add_codec_options(CLI::App& command, CodecBenchOptions& options);
// 0 done, 1 run failure; throws InputError on bad input.
int run_codec(const CodecBenchOptions& options);

}  // namespace livedrp::bench
