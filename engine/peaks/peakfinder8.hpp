#pragma once
// peakfinder8 (Cheetah's algorithm, as in OM and CrystFEL) on the CPU: the reference the CUDA
// backend is compared with.
//
// Per event: radial statistics over 1-pixel radius bins, iterated; seeds are good pixels above
// their bin's upper threshold, scanned ASIC by ASIC in raster order (not on the ASIC's border
// rows and columns, as the reference); a peak grows over the 8-neighbourhood within its ASIC;
// peaks with too few or too many pixels are dropped (their pixels stay claimed); the local
// background is the ring up to 2 * local_bg_radius around the centroid (pixels below threshold,
// not in a peak); intensity = sum(value - local mean), SNR = intensity / local sigma; dropped when
// SNR < minimum_snr, when the peak's maximum does not reach the ring's maximum, or when the
// re-centroided position leaves the ASIC.
//
// Deliberate differences from CrystFEL's peakfinder8.c: sums in double, in a fixed order (see
// radial_threshold.hpp); the peak's flood fill visits exactly the peak's pixels (the reference's
// loop also looks around one stale list entry, which can only add pixels when an earlier peak's
// list was longer).
#include <cstdint>
#include <string>
#include <vector>

#include "core/detector.hpp"
#include "peaks/peak_params.hpp"
#include "peaks/peak_search.hpp"
#include "peaks/radial_threshold.hpp"

namespace livedrp {
class ThreadPool;
}

namespace livedrp::peaks {

// The slab and its ASICs. For a DetectorDescription the slab stacks the segments along the slow
// scan: (segments * rows) x cols, in the engine's pixel order.
struct SlabLayout {
  int height = 0, width = 0;
  int segment_rows = 0;  // rows per segment (0 when the slab is one panel)
  std::vector<Asic> asics;
  std::size_t pixels() const { return std::size_t(height) * std::size_t(width); }
};
SlabLayout slab_layout(const DetectorDescription& detector);

// Radius in pixels of every pixel centre from the beam, through the detector's placement (a large
// pixel at an ASIC edge from its true centre: core/detector.hpp assembled_point).
std::vector<float> radius_map(const DetectorDescription& detector, double beam_x_px,
                              double beam_y_px);

struct PeakList {
  std::vector<Peak> peaks;  // at most max_num_peaks, in the order found
  int found = 0;            // peaks that passed every test (may exceed peaks.size())
  bool hit = false;         // found >= min_peaks_for_hit
};

// Per geometry and parameters: radius bins, the good-pixel map (mask, resolution limits) and the
// scratch of one event. One object per thread.
class PeakFinder8 {
 public:
  // radius: per slab pixel, in pixels; bad_mask: per slab pixel, non-zero = bad (livedrp's
  // convention), may be empty. Throws InputError when sizes or parameters are wrong.
  PeakFinder8(SlabLayout layout, std::vector<float> radius,
              const std::vector<std::uint8_t>& bad_mask, const PeakFinderParams& params);

  // data: layout.pixels() calibrated values. A pool shares the radial statistics' bins and the
  // ASICs' searches among its threads: the same sums and searches, so the same list.
  PeakList find(const float* data, ThreadPool* pool = nullptr);

  const std::vector<RadialBinStats>& radial_stats() const { return stats_; }
  const SlabLayout& layout() const { return layout_; }
  const PeakFinderParams& params() const { return params_; }
  // The geometry a GPU finder uploads: per pixel radius bin and use, and per bin its good pixels
  // (bin_pixels[bin_offsets[b] .. bin_offsets[b + 1]), ascending).
  const std::vector<std::int32_t>& pixel_bins() const { return bin_; }
  const std::vector<std::uint8_t>& good_pixels() const { return good_; }
  const std::vector<std::uint32_t>& bin_offsets() const { return bin_offsets_; }
  const std::vector<std::uint32_t>& bin_pixels() const { return bin_pixels_; }
  // The search settings of the shared per-seed code, without the event's pointers.
  SearchView search_settings() const {
    SearchView v;
    v.width = layout_.width;
    v.segment_rows = layout_.segment_rows;
    v.min_pixel_count = params_.min_pixel_count;
    v.max_pixel_count = params_.max_pixel_count;
    v.local_bg_radius = params_.local_bg_radius;
    v.minimum_snr = params_.minimum_snr;
    return v;
  }

 private:
  void compute_radial_statistics(const float* data, ThreadPool* pool);
  void search_asic(const float* data, const Asic& asic, std::int32_t* members, PeakList& out);

  SlabLayout layout_;
  PeakFinderParams params_;
  std::vector<std::int32_t> bin_;   // per pixel
  std::vector<std::uint8_t> good_;  // per pixel: 1 = used (mask and resolution limits)
  std::vector<std::uint32_t> bin_offsets_, bin_pixels_;
  std::vector<float> binned_values_;  // per event: the values at bin_pixels_
  std::vector<RadialBinStats> stats_;
  std::vector<std::uint8_t> in_peak_;  // per pixel, per event: 0 free, 1 claimed, 2 in a peak
  std::vector<std::int32_t> members_;  // the growing peak's pixels (slab indices)
  std::vector<PeakList> asic_lists_;   // per ASIC, when a pool searches them
};

}  // namespace livedrp::peaks
