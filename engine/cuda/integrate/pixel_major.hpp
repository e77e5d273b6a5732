#pragma once
// The pixel-major integration path: for a matrix without pixel splitting (every pixel in at most
// one bin) and the Poisson (or no) error model, each event's image is read once, coalesced, a
// tile at a time, instead of gathered bin by bin.
//
// The image is cut into tiles of kTileRows x kTileCols pixels of a segment (fewer at a segment's
// edges; a plan without a segment shape is one long row), so that a tile covers a compact patch
// of the detector and few radial bins. At upload, each tile's entries
// are put in (bin, pixel) order, and each run of one bin inside a tile is a "segment". Per event
// a thread block loads its tile into shared memory, preprocesses its entries into shared memory
// in tile order, and each thread sums one segment (signal and variance, and the sums of entries
// the event invalidates) into one partial; the thread that counts the last partial of a bin (a
// per-bin counter) adds that bin's partials in segment order, which is fixed at upload, so the
// result does not depend on which thread merges or when:
// results are deterministic run to run, as on the bin-major path. Per event the kernel reads the
// image once and a 2-byte in-tile pixel index per entry (and the dark, when there is one).
//
// Plain C++ (no CUDA types); the kernel is in pixel_major.cu.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "integrate/corrections.hpp"

namespace livedrp::gpu {

struct IntegrationPlan;

namespace pixel_major {

inline constexpr std::uint32_t kTileRows = 32, kTileCols = 128;
inline constexpr std::uint32_t kTilePixels = kTileRows * kTileCols;  // 16 KiB of float32 image

// The static tables, built once per plan.
struct Tables {
  std::size_t tiles = 0;
  std::vector<std::int32_t> tile_origin;         // per tile: index of its first pixel
  std::vector<std::int32_t> tile_shape;          // per tile: rows << 16 | cols
  int row_pitch = 0;                             // pixels from one row of a segment to the next
  std::vector<std::int32_t> tile_segment_start;  // tiles + 1: the tile's segments
  std::vector<std::int32_t> segment_begin;       // segments + 1: the segment's entries
  std::vector<std::int32_t> segment_bin;         // per segment
  std::vector<std::uint16_t> local_pixel;        // per entry (tile order): row * kTileCols + col
  std::vector<float> normalization;              // per entry (tile order)
  std::vector<float> dark;                       // per entry (tile order), empty without a dark
  std::vector<std::int32_t> bin_segment_start;   // bins + 1: the bin's segments in bin_segments
  std::vector<std::int32_t> bin_segments;        // segment ids of each bin, in tile order
};

// True when the plan can take this path: no splitting, an error model whose per-event sums are
// plain sums, and no pixel in two entries. Fills `tables` then. A bin without entries gets one
// empty segment, so that every bin is finalised by the same merge.
bool build_tables(const IntegrationPlan& plan, Tables& tables);

// Device views of the tables, the per-event scratch and the settings the kernel needs.
struct DeviceTables {
  int bins;
  std::size_t pixels, tiles, segments;
  int row_pitch;
  const std::int32_t* tile_origin;
  const std::int32_t* tile_shape;
  const std::int32_t* tile_segment_start;
  const std::int32_t* segment_begin;
  const std::int32_t* segment_bin;
  const std::uint16_t* local_pixel;
  const float* normalization;
  const float* dark;  // null without a dark
  const std::int32_t* bin_segment_start;
  const std::int32_t* bin_segments;
  const double* static_normalization;  // per bin, as on the bin-major sums path
  const double* static_count;
  const double* static_norm_sq;
  const std::int32_t* bin_entries;
  double* partials;             // per frame and segment: signal, variance, lost entries
  double* lost_partials;        // per frame and segment: lost norm, count, norm_sq (when any)
  unsigned* segments_done;      // per frame and bin, zero between launches
  integrate::ErrorModel model;  // Poisson or none
  integrate::DummyTest dummy;
  double empty;
};

// Sets the kernel's shared-memory limit; once per device, before the first launch.
void prepare();
// One launch over `frames` consecutive frames; results as the bin-major kernels store them
// (7 fields per bin and frame). `stream` is a cudaStream_t.
void launch(const DeviceTables& t, const float* frames, int frames_count, double* out,
            void* stream);

}  // namespace pixel_major
}  // namespace livedrp::gpu
