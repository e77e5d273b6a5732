#pragma once
// The histogram integration path: for a matrix without pixel splitting (every pixel in at most
// one bin) and the Poisson (or no) error model, each event's image is read once, coalesced, in
// 2-D tiles of a segment, with a 2-byte bin index per pixel (the only per-pixel table an event
// needs: the corrections that do not change between events are in the bins' static sums). A
// thread block adds its tile's signal and variance into a histogram in shared memory (double
// atomics, as the CPU sums in double), adds the histogram into the frame's
// per-bin sums in global memory (double atomics), and the last block of the frame finishes every
// bin and clears the sums for the next launch. Per event this reads the image and 2 bytes a
// pixel (the dark too when there is one), nothing else: the fewest bytes of the GPU paths. The
// order of the atomic additions varies, so the last bits of a result vary from run to run (the
// bin-major path is the deterministic one).
//
// Plain C++ (no CUDA types); the kernel is in pixel_histogram.cu.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "integrate/corrections.hpp"

namespace livedrp::gpu {

struct IntegrationPlan;

namespace pixel_histogram {

inline constexpr int kTileRows = 32, kTileCols = 128;
inline constexpr int kMaxBins = 8192;  // two double histograms in a block's shared memory
inline constexpr std::uint16_t kNoBin = 0xFFFF;
inline constexpr int kSumsPerBin = 6;  // signal, variance, lost entries, norm, count, norm_sq

// The static tables, built once per plan.
struct Tables {
  int segments = 1, rows = 0, cols = 0;  // the image as segments x rows x cols (padded: see below)
  std::vector<std::uint16_t> bin_of_pixel;  // per pixel: its bin, kNoBin where it adds nothing
  std::vector<float> normalization;         // per pixel: read only for pixels an event invalidates
  std::vector<float> dark;                  // per pixel, empty without a dark
};

// True when the plan can take this path: no splitting, an error model whose per-event sums are
// plain sums, at most kMaxBins bins and no pixel in two entries. Fills `tables` then. A plan
// without a segment shape is cut into rows of kTileCols pixels.
bool build_tables(const IntegrationPlan& plan, Tables& tables);

struct DeviceTables {
  int bins;
  std::size_t pixels;
  int segments, rows, cols, tiles_per_row, tiles_per_segment;
  const std::uint16_t* bin_of_pixel;
  const float* normalization;
  const float* dark;                   // null without a dark
  const double* static_normalization;  // per bin, as on the bin-major sums path
  const double* static_count;
  const double* static_norm_sq;
  const std::int32_t* bin_entries;
  double* sums;                 // per frame and bin: kSumsPerBin doubles, zero between launches
  unsigned* tiles_done;         // per frame, zero between launches
  integrate::ErrorModel model;  // Poisson or none
  integrate::DummyTest dummy;
  double empty;
};

// Tiles of one frame.
std::size_t tiles(const DeviceTables& t);
// Sets the kernel's shared-memory limit; once per device, before the first launch.
void prepare();
// One launch over `frames` consecutive frames; results as the bin-major kernels store them
// (7 fields per bin and frame). `stream` is a cudaStream_t.
void launch(const DeviceTables& t, const float* frames, int frames_count, double* out,
            void* stream);

}  // namespace pixel_histogram
}  // namespace livedrp::gpu
