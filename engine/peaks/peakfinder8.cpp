#include "peaks/peakfinder8.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "core/thread_pool.hpp"

namespace livedrp::peaks {

SlabLayout slab_layout(const DetectorDescription& detector) {
  if (detector.segments < 1 || detector.rows < 1 || detector.cols < 1)
    throw InputError("peak finder: detector '" + detector.name + "' has no pixels");
  const int asic_rows = detector.asic_rows > 0 ? detector.asic_rows : detector.rows;
  const int asic_cols = detector.asic_cols > 0 ? detector.asic_cols : detector.cols;
  SlabLayout layout;
  layout.height = detector.segments * detector.rows;
  layout.width = detector.cols;
  layout.segment_rows = detector.rows;
  for (int segment = 0; segment < detector.segments; ++segment)
    for (int row = 0; row < detector.rows; row += asic_rows)
      for (int col = 0; col < detector.cols; col += asic_cols)
        layout.asics.push_back({segment * detector.rows + row, col, asic_rows, asic_cols, segment});
  return layout;
}

std::vector<float> radius_map(const DetectorDescription& detector, double beam_x_px,
                              double beam_y_px) {
  std::vector<float> radius(detector.pixels());
  const SegmentGrid grid = detector.grid();
  std::size_t p = 0;
  for (int segment = 0; segment < detector.segments; ++segment) {
    const SegmentPlacement& placement = detector.placement.at(std::size_t(segment));
    for (int row = 0; row < detector.rows; ++row)
      for (int col = 0; col < detector.cols; ++col, ++p) {
        const AssembledPoint centre = assembled_point(placement, grid, row + 0.5, col + 0.5);
        radius[p] = float(std::hypot(centre.x - beam_x_px, centre.y - beam_y_px));
      }
  }
  return radius;
}

PeakFinder8::PeakFinder8(SlabLayout layout, std::vector<float> radius,
                         const std::vector<std::uint8_t>& bad_mask, const PeakFinderParams& params)
    : layout_(std::move(layout)), params_(params) {
  if (const std::string problem = validate(params); !problem.empty())
    throw InputError("peak finder: " + problem);
  const std::size_t pixels = layout_.pixels();
  if (pixels == 0) throw InputError("peak finder: the slab has no pixels");
  if (radius.size() != pixels)
    throw InputError("peak finder: the radius map has " + std::to_string(radius.size()) +
                     " values for a slab of " + std::to_string(pixels) + " pixels");
  if (!bad_mask.empty() && bad_mask.size() != pixels)
    throw InputError("peak finder: the mask has " + std::to_string(bad_mask.size()) +
                     " values for a slab of " + std::to_string(pixels) + " pixels");
  for (const Asic& a : layout_.asics)
    if (a.first_ss < 0 || a.first_fs < 0 || a.height < 1 || a.width < 1 ||
        a.first_ss + a.height > layout_.height || a.first_fs + a.width > layout_.width)
      throw InputError("peak finder: an ASIC at (ss " + std::to_string(a.first_ss) + ", fs " +
                       std::to_string(a.first_fs) + ") of " + std::to_string(a.height) + "x" +
                       std::to_string(a.width) + " leaves the " + std::to_string(layout_.height) +
                       "x" + std::to_string(layout_.width) + " slab");

  bin_.resize(pixels);
  good_.resize(pixels);
  int bins = 0;
  for (std::size_t p = 0; p < pixels; ++p) {
    const float r = radius[p];
    if (!std::isfinite(r) || r < 0 || r > 1e6f)
      throw InputError("peak finder: radius " + std::to_string(r) + " at pixel " +
                       std::to_string(p) + " (must be finite, 0..1e6 pixels)");
    bin_[p] = radius_bin(r);
    bins = std::max(bins, bin_[p] + 1);
    // The reference's resolution limits are strict on both sides.
    const bool in_range = r > params_.min_res && r < params_.max_res;
    good_[p] = in_range && (bad_mask.empty() || bad_mask[p] == 0) ? 1 : 0;
  }
  // Each bin's good pixels in ascending order: the summation order of radial_threshold.hpp.
  bin_offsets_.assign(std::size_t(bins) + 1, 0);
  for (std::size_t p = 0; p < pixels; ++p)
    if (good_[p]) ++bin_offsets_[std::size_t(bin_[p]) + 1];
  for (std::size_t b = 0; b < std::size_t(bins); ++b) bin_offsets_[b + 1] += bin_offsets_[b];
  bin_pixels_.resize(bin_offsets_.back());
  std::vector<std::uint32_t> fill(bin_offsets_.begin(), bin_offsets_.end() - 1);
  for (std::size_t p = 0; p < pixels; ++p)
    if (good_[p]) bin_pixels_[fill[std::size_t(bin_[p])]++] = std::uint32_t(p);
  stats_.resize(std::size_t(bins));
  binned_values_.resize(bin_pixels_.size());
  in_peak_.resize(pixels);
  std::size_t largest_asic = 0;
  for (const Asic& a : layout_.asics)
    largest_asic = std::max(largest_asic, std::size_t(a.height) * std::size_t(a.width));
  members_.resize(largest_asic);
}

void PeakFinder8::compute_radial_statistics(const float* data, ThreadPool* pool) {
  // The bins' values gathered once, in summation order (each bin's good pixels, ascending): the
  // iterations then read them in a row instead of gathering from the image five times.
  const std::size_t entries = bin_pixels_.size();
  float* const values = binned_values_.data();
  const auto gather = [&](std::size_t begin, std::size_t end) {
    const std::uint32_t* const pixel = bin_pixels_.data();
    for (std::size_t j = begin; j < end; ++j) {
      if (j + 64 < end) __builtin_prefetch(data + pixel[j + 64]);
      values[j] = data[pixel[j]];
    }
  };
  // A bin's statistics depend on its own values alone, so each bin runs all its iterations in
  // turn, and bins go to the pool's threads independently.
  const auto bins = [&](std::size_t begin, std::size_t end) {
    double lane_sum[kRadialLanes], lane_squares[kRadialLanes];
    for (std::size_t b = begin; b < end; ++b) {
      const std::uint32_t first = bin_offsets_[b], n = bin_offsets_[b + 1] - first;
      const float* const bin_values = values + first;
      RadialBinStats bin{};
      for (int iteration = 0; iteration < params_.iterations; ++iteration) {
        std::fill(std::begin(lane_sum), std::end(lane_sum), 0.0);
        std::fill(std::begin(lane_squares), std::end(lane_squares), 0.0);
        std::uint32_t count = 0;
        // Entry k goes to lane k % kRadialLanes whether it enters or not; one that does not adds
        // +0.0, which leaves every lane's sum as it was (a lane starts at +0.0 and +0.0 + -0.0
        // is +0.0), so the sums are those of radial_threshold.hpp's order, without a branch.
        for (std::uint32_t base = 0; base < n; base += kRadialLanes) {
          const std::uint32_t lanes = std::min<std::uint32_t>(kRadialLanes, n - base);
          for (std::uint32_t lane = 0; lane < lanes; ++lane) {
            const float value = bin_values[base + lane];
            const bool enters = enters_radial_statistics(value, bin);
            // The value, or +0.0 when it does not enter: a mask of its bits (a select the
            // vectoriser accepts, where `enters ? value : 0.0f` became a branch).
            const std::uint32_t keep = 0u - std::uint32_t(enters);
            const double term =
                double(std::bit_cast<float>(std::bit_cast<std::uint32_t>(value) & keep));
            lane_sum[lane] += term;
            lane_squares[lane] += term * term;
            count += std::uint32_t(enters);
          }
        }
        for (int stride = kRadialLanes / 2; stride > 0; stride /= 2)
          for (int lane = 0; lane < stride; ++lane) {
            lane_sum[lane] += lane_sum[lane + stride];
            lane_squares[lane] += lane_squares[lane + stride];
          }
        const RadialBinStats next = finish_radial_bin(lane_sum[0], lane_squares[0], count,
                                                      params_.minimum_snr, params_.adc_threshold);
        // Which values enter depends on the thresholds alone: once an iteration leaves them as
        // they were, every later one sums the same values in the same order and repeats this
        // result, so the remaining iterations are skipped (same statistics bit for bit).
        const bool settled = next.upper == bin.upper && next.lower == bin.lower;
        bin = next;
        if (settled) break;
      }
      stats_[b] = bin;
    }
  };
  if (pool) {
    pool->parallel_for(entries, gather);
    // Bins differ in size (rings grow with the radius, the detector's corners cut them) and in
    // how soon they settle: threads draw 16 bins at a time.
    pool->parallel_for_dynamic(stats_.size(), 16, bins);
  } else {
    gather(0, entries);
    bins(0, stats_.size());
  }
}

PeakList PeakFinder8::find(const float* data, ThreadPool* pool) {
  compute_radial_statistics(data, pool);
  std::memset(in_peak_.data(), 0, in_peak_.size());
  PeakList out;
  const std::size_t asics = layout_.asics.size();
  if (!pool || pool->size() <= 1 || asics <= 1) {
    for (const Asic& asic : layout_.asics) search_asic(data, asic, members_.data(), out);
  } else {
    // A search reads and claims pixels of its own ASIC only (every neighbour, ring and centroid
    // test is bounded by the ASIC), so ASICs go to threads independently, each into its own
    // list; the lists joined in ASIC order are the one-thread list, cut at max_num_peaks.
    // ASICs differ in cost (only some gain modes are searched, peaks cluster): threads draw one
    // at a time. Each thread keeps its own scratch for a growing peak's pixels.
    asic_lists_.resize(asics);
    pool->parallel_for_dynamic(asics, 1, [&](std::size_t begin, std::size_t end) {
      thread_local std::vector<std::int32_t> members;
      if (members.size() < members_.size()) members.resize(members_.size());
      for (std::size_t a = begin; a < end; ++a) {
        asic_lists_[a].peaks.clear();
        asic_lists_[a].found = 0;
        search_asic(data, layout_.asics[a], members.data(), asic_lists_[a]);
      }
    });
    for (const PeakList& list : asic_lists_) {
      out.found += list.found;
      for (const Peak& peak : list.peaks)
        if (int(out.peaks.size()) < params_.max_num_peaks) out.peaks.push_back(peak);
    }
  }
  out.hit = out.found >= params_.min_peaks_for_hit;
  return out;
}

void PeakFinder8::search_asic(const float* data, const Asic& asic, std::int32_t* members,
                              PeakList& out) {
  SearchView view = search_settings();
  view.data = data;
  view.bin = bin_.data();
  view.good = good_.data();
  view.stats = stats_.data();
  view.in_peak = in_peak_.data();
  view.members = members;
  const std::size_t width = std::size_t(layout_.width);
  // Seeds: not on the ASIC's border rows and columns, as the reference.
  for (int ss = asic.first_ss + 1; ss < asic.first_ss + asic.height - 1; ++ss)
    for (int fs = asic.first_fs + 1; fs < asic.first_fs + asic.width - 1; ++fs) {
      const std::size_t seed = std::size_t(ss) * width + std::size_t(fs);
      if (in_peak_[seed] != 0 || !above_its_threshold(view, seed)) continue;
      Peak peak;
      if (!search_from_seed(view, asic, seed, peak)) continue;
      if (int(out.peaks.size()) < params_.max_num_peaks) out.peaks.push_back(peak);
      ++out.found;
    }
}

}  // namespace livedrp::peaks
