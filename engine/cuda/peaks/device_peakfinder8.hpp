#pragma once
// peakfinder8 on the GPU: the CPU finder's geometry (radius bins, good pixels, per-bin pixel lists,
// ASICs) uploaded once, and per event the same radial statistics (the same summation order) and
// the same per-seed search (peaks/peak_search.hpp), so the peak lists equal the CPU's. Plain C++
// header (no CUDA types), like cuda/device.hpp.
//
// Per event: a statistics kernel (a block per band of up to four consecutive radius bins reads
// the band's pixels in pixel order, places each value in its bin's list in shared memory, runs
// every bin's iterations from there, and flags the few pixels not below their bin's final
// threshold, per ASIC a bit per pixel: "above" it, and "not below" it), the search kernel (a
// block of warps per ASIC, its candidate bitmap the "above" flags and its background bitmap the
// good pixels not flagged "not below", both with an owner map in shared memory, the flags cleared
// for the next event:
// the warps search seeds independently, each connected set of candidates grown from its first
// seed in raster order alone, exactly as the CPU grows it; see the kernel's comment for why that
// gives the CPU's peaks; the peaks put back in seed order), a kernel that concatenates the ASICs'
// lists in ASIC order and cuts at max_num_peaks, one copy back. No memsets per event.
#include <memory>
#include <vector>

#include "cuda/device.hpp"
#include "peaks/peakfinder8.hpp"

namespace livedrp::gpu {

class DevicePeakFinder8 {
 public:
  explicit DevicePeakFinder8(const peaks::PeakFinder8& reference);
  ~DevicePeakFinder8();
  // Another finder of the same geometry and parameters that shares this one's read-only device
  // tables (radius bins, per-bin pixel lists, ASICs): one copy in device memory and in the L2
  // cache serves every stream's finder. Each finder keeps its own scratch and results.
  std::unique_ptr<DevicePeakFinder8> sibling() const;
  DevicePeakFinder8(const DevicePeakFinder8&) = delete;
  DevicePeakFinder8& operator=(const DevicePeakFinder8&) = delete;

  // Enqueues the search of `device_data` (the slab's pixels, float32, device memory) on `stream`,
  // ending with the copy of the results to pinned host memory. No host wait.
  void enqueue(const float* device_data, const Stream& stream);
  // Waits for `stream`; the list of the last enqueue.
  peaks::PeakList collect(const Stream& stream);

  // For consumers that keep results on the device (the device-resident pipeline): as enqueue()
  // without the copy to the host. The list stays at device_list(), laid out as a ListHeader and
  // then up to capacity() peaks (`stored` of them valid), until the next enqueue on this finder.
  struct ListHeader {
    int found;   // peaks found in the event (may exceed stored)
    int stored;  // peaks in the list, at most capacity()
  };
  void enqueue_on_device(const float* device_data, const Stream& stream);
  const void* device_list() const;
  int capacity() const;  // max_num_peaks
  // A list laid out as device_list() is (header, then `stored` peaks), wherever it was copied to.
  peaks::PeakList list_from(const void* list) const;
  // The GPU time of each of the search's kernels on one frame, in microseconds, as a benchmark
  // breaks it down: each kernel launched `repeats` times in turn on `stream` between timing events
  // (waits for `stream`).
  struct KernelTimes {
    double statistics_us = 0;  // radial statistics, every iteration, and the threshold flags
    double search_us = 0;      // seeds searched, peaks put in seed order per ASIC
    double gather_us = 0;      // the ASICs' lists into one
  };
  KernelTimes time_kernels(const float* device_data, const Stream& stream, int repeats);
  // The radial statistics of the last event (waits for `stream`; tests and tools).
  std::vector<peaks::RadialBinStats> radial_stats(const Stream& stream) const;

 public:
  struct State;  // defined in the .cu only

 private:
  explicit DevicePeakFinder8(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace livedrp::gpu
