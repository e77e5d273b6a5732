#include "peaks/peakfinder8.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.hpp"

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
  std::size_t p = 0;
  for (int segment = 0; segment < detector.segments; ++segment) {
    const SegmentPlacement& placement = detector.placement.at(std::size_t(segment));
    for (int row = 0; row < detector.rows; ++row)
      for (int col = 0; col < detector.cols; ++col, ++p) {
        const AssembledPoint centre = assembled_point(placement, row + 0.5, col + 0.5);
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
  stats_.resize(std::size_t(bins));
  sum_.resize(std::size_t(bins));
  sum_squares_.resize(std::size_t(bins));
  count_.resize(std::size_t(bins));
  in_peak_.resize(pixels);
}

void PeakFinder8::compute_radial_statistics(const float* data) {
  std::fill(stats_.begin(), stats_.end(), RadialBinStats{});
  const std::size_t pixels = layout_.pixels();
  for (int iteration = 0; iteration < params_.iterations; ++iteration) {
    std::fill(sum_.begin(), sum_.end(), 0.0);
    std::fill(sum_squares_.begin(), sum_squares_.end(), 0.0);
    std::fill(count_.begin(), count_.end(), 0u);
    for (std::size_t p = 0; p < pixels; ++p) {
      if (!good_[p]) continue;
      const std::int32_t b = bin_[p];
      const float value = data[p];
      if (!enters_radial_statistics(value, stats_[std::size_t(b)])) continue;
      sum_[std::size_t(b)] += double(value);
      sum_squares_[std::size_t(b)] += double(value) * double(value);
      ++count_[std::size_t(b)];
    }
    for (std::size_t b = 0; b < stats_.size(); ++b)
      stats_[b] = finish_radial_bin(sum_[b], sum_squares_[b], count_[b], params_.minimum_snr,
                                    params_.adc_threshold);
  }
}

PeakList PeakFinder8::find(const float* data) {
  compute_radial_statistics(data);
  std::memset(in_peak_.data(), 0, in_peak_.size());
  PeakList out;
  for (const Asic& asic : layout_.asics) search_asic(data, asic, out);
  out.hit = out.found >= params_.min_peaks_for_hit;
  return out;
}

void PeakFinder8::search_asic(const float* data, const Asic& asic, PeakList& out) {
  const int width = layout_.width;
  const int ss_end = asic.first_ss + asic.height, fs_end = asic.first_fs + asic.width;
  auto index = [width](int ss, int fs) { return std::size_t(ss) * std::size_t(width) + fs; };
  auto is_candidate = [&](std::size_t p) {
    return good_[p] && in_peak_[p] == 0 && above_threshold(data[p], stats_[std::size_t(bin_[p])]);
  };

  for (int seed_ss = asic.first_ss + 1; seed_ss < ss_end - 1; ++seed_ss) {
    for (int seed_fs = asic.first_fs + 1; seed_fs < fs_end - 1; ++seed_fs) {
      const std::size_t seed = index(seed_ss, seed_fs);
      if (!is_candidate(seed)) continue;

      // Grow over the 8-neighbourhood within the ASIC. The first centroid weighs each pixel by
      // its value above its radius bin's mean.
      members_.clear();
      members_.push_back(std::int32_t(seed));
      in_peak_[seed] = 1;
      double sum_i = 0, sum_fs = 0, sum_ss = 0;
      for (std::size_t next = 0; next < members_.size(); ++next) {
        const std::size_t p = std::size_t(members_[next]);
        const int ss = int(p / std::size_t(width)), fs = int(p % std::size_t(width));
        const double above = double(data[p]) - double(stats_[std::size_t(bin_[p])].mean);
        sum_i += above;
        sum_fs += above * fs;
        sum_ss += above * ss;
        for (int dss = -1; dss <= 1; ++dss)
          for (int dfs = -1; dfs <= 1; ++dfs) {
            const int nss = ss + dss, nfs = fs + dfs;
            if (nss < asic.first_ss || nss >= ss_end || nfs < asic.first_fs || nfs >= fs_end)
              continue;
            const std::size_t n = index(nss, nfs);
            if (!is_candidate(n)) continue;
            in_peak_[n] = 1;
            members_.push_back(std::int32_t(n));
          }
      }
      const int count = int(members_.size());
      if (count < params_.min_pixel_count || count > params_.max_pixel_count) continue;
      if (std::fabs(sum_i) < 1e-10) continue;

      // Local background: the ring around the rounded centroid, in ASIC coordinates.
      const int centre_ss = int(std::rint(sum_ss / std::fabs(sum_i)));
      const int centre_fs = int(std::rint(sum_fs / std::fabs(sum_i)));
      const int reach = 2 * params_.local_bg_radius;
      double ring_sum = 0, ring_squares = 0, ring_max = 0;
      std::uint32_t ring_count = 0;
      for (int dss = -reach; dss < reach; ++dss)
        for (int dfs = -reach; dfs < reach; ++dfs) {
          const int ss = centre_ss + dss, fs = centre_fs + dfs;
          if (ss < asic.first_ss || ss >= ss_end || fs < asic.first_fs || fs >= fs_end) continue;
          if (!in_background_ring(dfs, dss, params_.local_bg_radius)) continue;
          const std::size_t p = index(ss, fs);
          const float value = data[p];
          if (!good_[p] || in_peak_[p] != 0 || !(value < stats_[std::size_t(bin_[p])].upper))
            continue;
          ring_sum += value;
          ring_squares += double(value) * double(value);
          ring_max = std::max(ring_max, double(value));
          ++ring_count;
        }
      double local_mean = 0, local_sigma = 0.01;  // the reference's values for an empty ring
      if (ring_count > 0) {
        local_mean = ring_sum / ring_count;
        const double variance = ring_squares / ring_count - local_mean * local_mean;
        if (variance >= 0) local_sigma = std::sqrt(variance);
      } else {
        // The radius bin of the centroid pixel, as the reference; the centroid lies in the
        // ASIC (the weights above the bin mean are positive), so the index is in the slab.
        const int ss = std::clamp(centre_ss, asic.first_ss, ss_end - 1);
        const int fs = std::clamp(centre_fs, asic.first_fs, fs_end - 1);
        local_mean = stats_[std::size_t(bin_[index(ss, fs)])].mean;
      }

      // Re-integrate and re-centroid with the local background.
      double intensity = 0, raw_sum = 0, raw_fs = 0, raw_ss = 0, peak_max = 0;
      for (const std::int32_t member : members_) {
        const std::size_t p = std::size_t(member);
        const double value = data[p];
        intensity += value - local_mean;
        raw_sum += value;
        raw_fs += value * double(p % std::size_t(width));
        raw_ss += value * double(p / std::size_t(width));
        peak_max = std::max(peak_max, value - local_mean);
      }
      if (std::fabs(raw_sum) < 1e-10) continue;
      const double fs = raw_fs / std::fabs(raw_sum), ss = raw_ss / std::fabs(raw_sum);
      const double snr = std::fabs(local_sigma) > 1e-10 ? intensity / local_sigma : 0.0;
      if (snr < params_.minimum_snr) continue;
      if (peak_max < ring_max - local_mean) continue;
      if (fs < asic.first_fs || fs > fs_end - 1 || ss < asic.first_ss || ss > ss_end - 1) continue;

      for (const std::int32_t member : members_) in_peak_[std::size_t(member)] = 2;
      if (int(out.peaks.size()) < params_.max_num_peaks) {
        Peak peak;
        peak.fs = float(fs);
        peak.ss = float(ss);
        peak.segment = asic.segment;
        peak.ss_in_segment =
            float(layout_.segment_rows > 0 ? ss - double(asic.segment) * layout_.segment_rows : ss);
        peak.intensity = float(intensity);
        peak.num_pixels = count;
        peak.max_value = float(peak_max);
        peak.local_sigma = float(local_sigma);
        peak.snr = float(snr);
        out.peaks.push_back(peak);
      }
      ++out.found;
    }
  }
}

}  // namespace livedrp::peaks
