#pragma once
// peakfinder8 on the GPU: the CPU finder's geometry (radius bins, good pixels, per-bin pixel lists,
// ASICs) uploaded once, and per event the same radial statistics (the same summation order) and
// the same per-seed search (peaks/peak_search.hpp), so the peak lists equal the CPU's. Plain C++
// header (no CUDA types), like cuda/device.hpp.
//
// Per event: one statistics kernel (a block per radius bin runs every iteration and then sets the
// candidate bitmap: a bit per pixel good and above threshold), one search kernel (a warp per ASIC:
// candidate words staged in shared memory and found by ballot, their seeds taken in raster order,
// each peak grown by one lane and its background ring measured by the warp), one kernel that concatenates the ASICs' lists in ASIC order and cuts at
// max_num_peaks, one copy back.
#include <memory>
#include <vector>

#include "cuda/device.hpp"
#include "peaks/peakfinder8.hpp"

namespace livedrp::gpu {

class DevicePeakFinder8 {
 public:
  explicit DevicePeakFinder8(const peaks::PeakFinder8& reference);
  ~DevicePeakFinder8();
  DevicePeakFinder8(const DevicePeakFinder8&) = delete;
  DevicePeakFinder8& operator=(const DevicePeakFinder8&) = delete;

  // Enqueues the search of `device_data` (the slab's pixels, float32, device memory) on `stream`,
  // ending with the copy of the results to pinned host memory. No host wait.
  void enqueue(const float* device_data, const Stream& stream);
  // Waits for `stream`; the list of the last enqueue.
  peaks::PeakList collect(const Stream& stream);
  // The radial statistics of the last event (waits for `stream`; tests and tools).
  std::vector<peaks::RadialBinStats> radial_stats(const Stream& stream) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace livedrp::gpu
