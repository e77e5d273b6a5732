#pragma once
// The pixel-major integration path: for a matrix without pixel splitting (every pixel in at most
// one bin) and the Poisson (or no) error model, each event's image is read once, coalesced, a
// tile at a time, instead of gathered bin by bin.
//
// The image is cut into tiles of kTileRows x kTileCols pixels of a segment (fewer at a segment's
// edges; a plan without a segment shape is one long row), so that a tile covers a compact patch
// of the detector and few radial bins. At upload, each tile's entries are put in bin order (within
// a bin, in the order that spreads a warp's shared loads over the banks), and each run of one bin
// inside a tile is a "segment"; an entry is the byte offset of its pixel in the tile's shared
// image, with the flags of the first entry of each segment, and a tile's entries are padded to
// whole threads' runs (kEntriesPerThread). Per event a thread block loads its tile into shared
// memory; each thread walks its run of consecutive entries, summing in double and keeping the
// running sums at each flag. A segment's sums are then differences of running sums, plus the sums
// of the runs it spans whole, in a fixed order. Each segment's sums go to global memory as one
// partial, at a slot among its bin's (a bin's partials are consecutive, so the merge reads them
// coalesced and without an index); a second kernel, launched as the tiles finish, then adds each
// bin's partials with a warp, in a fixed order. Nothing depends on which block finishes first,
// so results are deterministic run to run, as on the bin-major path. Per event the kernel reads
// the image once, 2 bytes per entry, 2 per run of entries and 6 per segment (and the dark, when
// there is one).
//
#include <cstddef>
#include <cstdint>
#include <vector>

#include "integrate/corrections.hpp"

namespace livedrp::gpu {

struct IntegrationPlan;

namespace pixel_major {

inline constexpr std::uint32_t kTileRows = 64, kTileCols = 128;
inline constexpr std::uint32_t kTilePixels = kTileRows * kTileCols;  // 32 KiB of float32 image
inline constexpr int kThreads = 256;                                 // a block per tile
inline constexpr int kEntriesPerThread = int(kTilePixels) / kThreads;
// An entry (16 bits): the byte offset of its pixel in the tile's shared image,
// 4 * (row * kTileCols + col), so the walk uses it as an address as it stands. Entries come in
// pairs (32-bit words, the even entry in the low half), and a pair's two segment-head flags sit in
// the even entry's two low bits, which a multiple of 4 leaves free: the even entry's own flag in
// bit 1, the odd entry's in bit 0. The odd entry is then a clean offset (word >> 16) and the even
// one needs one mask. A padding entry's offset is kPaddingOffset, a slot after the tile that
// holds 0.
inline constexpr std::uint16_t kPaddingOffset = std::uint16_t(kTilePixels * 4);
inline constexpr std::uint16_t kOffsetMask = 0xFFFC;
inline constexpr std::uint16_t kEvenHead = 0x2, kOddHead = 0x1;
static_assert(kTilePixels * 4 <= 0x8000, "a tile's byte offsets and the padding slot fit 16 bits");
inline constexpr bool is_padding(std::uint32_t offset) {
  return (offset & kPaddingOffset) != 0;
}
// segment_first_entry of a segment without entries (an empty bin's).
inline constexpr std::uint16_t kNoEntries = 0xFFFF;

// The static tables, built once per plan.
struct Tables {
  std::size_t tiles = 0;
  std::vector<std::int32_t> tile_origin;           // per tile: index of its first pixel
  std::vector<std::int32_t> tile_shape;            // per tile: rows << 16 | cols
  int row_pitch = 0;                               // pixels from one row of a segment to the next
  std::vector<std::int32_t> tile_entry_start;      // tiles + 1, multiples of kEntriesPerThread
  std::vector<std::int32_t> tile_segment_start;    // tiles + 1: the tile's segments
  int max_tile_segments = 0;                       // the most segments of any tile
  std::vector<std::int32_t> segment_bin;           // per segment
  std::vector<std::uint16_t> segment_first_entry;  // per segment: in its tile, or kNoEntries
  std::vector<std::uint16_t> entry;                // per entry (tile order, padded): see above
  std::vector<std::uint16_t> run_segment;          // per run: segments its tile begins before it
  std::vector<float> normalization;                // per entry, 0 for padding
  std::vector<float> dark;                         // per entry, empty without a dark
  std::vector<std::int32_t> bin_segment_start;     // bins + 1: the bin's slots
  std::vector<std::int32_t> segment_slot;          // per segment: where its partial goes
};

// True when the plan can take this path: no splitting, an error model whose per-event sums are
// plain sums, and no pixel in two entries. Fills `tables` then. A bin without entries gets one
// empty segment (spread over the tiles, after their own), so that every bin is finalised by the
// same merge. A bin's segments take the slots bin_segment_start[bin] .. [bin + 1] in tile order.
bool build_tables(const IntegrationPlan& plan, Tables& tables);

// Device views of the tables, the per-event scratch and the settings the kernel needs.
struct DeviceTables {
  int bins;
  std::size_t pixels, tiles, segments;
  int row_pitch;
  const std::int32_t* tile_origin;
  const std::int32_t* tile_shape;
  const std::int32_t* tile_entry_start;
  const std::int32_t* tile_segment_start;
  int max_tile_segments;
  const std::int32_t* segment_slot;
  const std::uint16_t* segment_first_entry;
  const std::uint16_t* entry;
  const std::uint16_t* run_segment;
  const float* normalization;
  const float* dark;  // null without a dark
  const std::int32_t* bin_segment_start;
  const double* static_normalization;  // per bin, as on the bin-major sums path
  const double* static_count;
  const double* static_norm_sq;
  const std::int32_t* bin_entries;
  // Per frame and slot, 16-byte aligned pairs: signal and variance, the variance's sign bit set
  // when the event invalidated some of the segment's entries (a variance is a sum of values
  // >= 0, so the bit is otherwise clear, and -0.0 marks a zero variance with losses).
  double* partials;
  double* lost_partials;        // per frame and slot, when marked: lost entries, norm and norm_sq
  integrate::ErrorModel model;  // Poisson or none
  integrate::DummyTest dummy;
  double empty;
};

// Sets the kernel's shared-memory limit for these tables; once, before the first launch.
void prepare(const DeviceTables& t);
// One launch over `frames` consecutive frames; results as the bin-major kernels store them
// (7 fields per bin and frame), to device memory or straight to pinned host memory (whole
// 256-byte lines). `stream` is a cudaStream_t.
void launch(const DeviceTables& t, const float* frames, int frames_count, double* out,
            void* stream);

}  // namespace pixel_major
}  // namespace livedrp::gpu
