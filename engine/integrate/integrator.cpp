#include "integrate/integrator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "integrate/bbox.hpp"

namespace livedrp::integrate {
namespace {

std::string number_text(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

// numpy.linspace(start, stop, n) as pyFAI reports bin centres: start + i * step, the last exactly
// stop.
std::vector<double> linspace(double start, double stop, int n) {
  std::vector<double> out(static_cast<std::size_t>(n));
  if (n == 1) {
    out[0] = start;
    return out;
  }
  const double step = (stop - start) / double(n - 1);
  for (int i = 0; i < n; ++i) out[std::size_t(i)] = double(i) * step + start;
  out.back() = stop;
  return out;
}

}  // namespace

std::pair<double, double> azimuth_range_radians(std::pair<double, double> degrees) {
  // pyFAI's deg2rad: (d / 180) modulo 2 (Python's modulo, never negative), moved to [-1, 1).
  const auto to_rad = [](double d) {
    double rp = std::fmod(d / 180.0, 2.0);
    if (rp < 0.0) rp += 2.0;
    if (rp >= 1.0) rp -= 2.0;
    return rp * kPi;
  };
  std::pair<double, double> r{to_rad(degrees.first), to_rad(degrees.second)};
  if (r.second <= r.first) r.second += 2.0 * kPi;
  return r;
}

void validate(const IntegrationConfig& c) {
  // A profile of more bins than a detector has pixels is a typo, and would only waste memory.
  constexpr int kMaxBins = 1 << 24;
  if (c.bins < 1 || c.bins > kMaxBins)
    throw InputError("number of bins must be in 1.." + std::to_string(kMaxBins) + ", got " +
                     std::to_string(c.bins));
  if (c.radial_range) {
    const auto [lo, hi] = *c.radial_range;
    if (!std::isfinite(lo) || !std::isfinite(hi) || lo == hi)
      throw InputError("radial range " + number_text(lo) + " .. " + number_text(hi) +
                       " must be two different finite numbers");
  }
  if (c.azimuth_range) {
    const auto [lo, hi] = *c.azimuth_range;
    if (!std::isfinite(lo) || !std::isfinite(hi))
      throw InputError("azimuth range " + number_text(lo) + " .. " + number_text(hi) +
                       " must be finite (degrees)");
  }
  if (c.polarization && !(*c.polarization >= -1.0 && *c.polarization <= 1.0))
    throw InputError("polarization factor must be in [-1, 1], got " + number_text(*c.polarization));
  if (c.dummy && !std::isfinite(*c.dummy))
    throw InputError("dummy value must be finite, got " + number_text(*c.dummy));
  if (!(c.delta_dummy >= 0.0) || !std::isfinite(c.delta_dummy))
    throw InputError("delta dummy must be a finite number >= 0, got " + number_text(c.delta_dummy));
}

Integrator::Integrator(const PoniGeometry& poni, PixelLayout layout, IntegrationConfig config)
    : geometry_(make_geometry_params(poni)), layout_(std::move(layout)) {
  if (!(poni.distance > 0.0) || !(poni.pixel1 > 0.0) || !(poni.pixel2 > 0.0))
    throw InputError("geometry needs a positive distance and pixel sizes");
  if (layout_.pixels() == 0) throw InputError("detector layout has no pixels");
  if (!layout_.placement.empty() && layout_.placement.size() != std::size_t(layout_.segments))
    throw InputError("detector layout places " + std::to_string(layout_.placement.size()) +
                     " segments, it has " + std::to_string(layout_.segments));
  if (!layout_.bad.empty() && layout_.bad.size() != pixels())
    throw InputError("detector layout marks " + std::to_string(layout_.bad.size()) +
                     " pixels bad or good, it has " + std::to_string(pixels()));
  if (layout_.geometry && (layout_.segments != 1 || !layout_.placement.empty() ||
                           layout_.geometry->panel_of_pixel.size() != pixels()))
    throw InputError("CrystFEL geometry '" + layout_.geometry->source +
                     "': its layout must be one slab with a panel index per pixel");
  apply_named_detector(poni);
  set_config(config);
}

void Integrator::apply_named_detector(const PoniGeometry& poni) {
  const bool plain = layout_.placement.empty() && !layout_.geometry && layout_.segments == 1;
  if (poni.orientation != kDefaultOrientation) {
    // A CrystFEL geometry places its panels in pyFAI's native frame already
    // (layout_from_geometry); flipping its slab indices as well would place them twice.
    if (layout_.geometry)
      throw InputError("CrystFEL geometry '" + layout_.geometry->source +
                       "' with a PONI of detector orientation " + std::to_string(poni.orientation) +
                       ": the geometry places the panels itself; give a PONI of orientation 3");
    // pyFAI flips the image it is given: for a segmented detector the assembled one.
    const FrameExtent extent = assembled_extent(layout_);
    orient_geometry(geometry_, poni.orientation, extent.rows, extent.cols);
  }
  if (!poni.named) return;
  // pyFAI's raw Jungfrau widens its chip-border pixels; a plain image of uniform pixels would put
  // most of them a pixel or more from where pyFAI does.
  if (poni.named->large_pixel_chip > 0 && plain)
    throw InputError("PONI detector '" + poni.detector +
                     "' is pyFAI's raw Jungfrau module, whose pixels at the borders of its " +
                     std::to_string(poni.named->large_pixel_chip) +
                     "-pixel chips are twice as wide; livedrp places them only with a detector "
                     "description that has them (--detector, e.g. jungfrau4m), not on a plain "
                     "image");
  // pyFAI masks a named detector's module gaps (Detector.calc_mask) unless told otherwise.
  if (plain) {
    const std::vector<std::uint8_t> gaps = poni_detector_mask(poni, layout_.rows, layout_.cols);
    if (!gaps.empty()) {
      if (layout_.bad.empty()) layout_.bad.assign(pixels(), 0);
      for (std::size_t k = 0; k < gaps.size(); ++k) layout_.bad[k] |= gaps[k];
    }
  }
}

void Integrator::set_config(const IntegrationConfig& c) {
  validate(c);
  if (needs_wavelength(c.unit) && !(geometry_.wavelength > 0.0))
    throw InputError(std::string("unit ") + std::string(to_string(c.unit)) +
                     " needs the wavelength, which the PONI file does not give");
  const IntegrationConfig old = config_;
  config_ = c;
  if (!positions_valid_ || positions_unit_ != c.unit) {
    positions_valid_ = false;
    csr_valid_ = false;
  }
  if (old.bins != c.bins || old.radial_range != c.radial_range ||
      old.azimuth_range != c.azimuth_range || old.splitting != c.splitting)
    csr_valid_ = false;
  if (old.solid_angle != c.solid_angle || old.polarization != c.polarization ||
      old.dummy != c.dummy || old.delta_dummy != c.delta_dummy)
    normalization_valid_ = false;
}

void Integrator::set_mask(std::vector<std::uint8_t> mask) {
  if (!mask.empty() && mask.size() != pixels())
    throw InputError("mask has " + std::to_string(mask.size()) + " pixels, the detector " +
                     std::to_string(pixels()));
  mask_ = std::move(mask);
  normalization_valid_ = false;
  if (config_.splitting == Splitting::BBox) csr_valid_ = false;
}

void Integrator::set_dark(std::vector<float> dark) {
  if (!dark.empty() && dark.size() != pixels())
    throw InputError("dark has " + std::to_string(dark.size()) + " pixels, the detector " +
                     std::to_string(pixels()));
  dark_ = std::move(dark);  // applied per event: nothing to rebuild
}

void Integrator::set_flat(std::vector<float> flat) {
  if (!flat.empty() && flat.size() != pixels())
    throw InputError("flat has " + std::to_string(flat.size()) + " pixels, the detector " +
                     std::to_string(pixels()));
  flat_ = std::move(flat);
  normalization_valid_ = false;
}

void Integrator::set_thread_pool(ThreadPool* pool) {
  pool_ = pool;
}

void Integrator::parallel(std::size_t count,
                          const std::function<void(std::size_t, std::size_t)>& body) const {
  // Below a few thousand items the hand-over costs more than it saves.
  if (pool_ && pool_->size() > 1 && count >= 4096)
    pool_->parallel_for(count, body);
  else if (count > 0)
    body(0, count);
}

PixelCentre Integrator::centre_of(std::size_t k) const {
  const std::size_t per_segment = std::size_t(layout_.rows) * std::size_t(layout_.cols);
  const std::size_t in_segment = k % per_segment;
  return pixel_centre(layout_, int(k / per_segment), int(in_segment / std::size_t(layout_.cols)),
                      int(in_segment % std::size_t(layout_.cols)));
}

PixelSpan Integrator::span_of(std::size_t k) const {
  const std::size_t per_segment = std::size_t(layout_.rows) * std::size_t(layout_.cols);
  const std::size_t in_segment = k % per_segment;
  return pixel_span(layout_, int(k / per_segment), int(in_segment / std::size_t(layout_.cols)),
                    int(in_segment % std::size_t(layout_.cols)));
}

int Integrator::area_of(std::size_t k) const {
  const std::size_t in_segment = k % (std::size_t(layout_.rows) * std::size_t(layout_.cols));
  return pixel_area(layout_, int(in_segment / std::size_t(layout_.cols)),
                    int(in_segment % std::size_t(layout_.cols)));
}

bool Integrator::placed(std::size_t k) const {
  return !layout_.geometry || layout_.geometry->panel_of_pixel[k] >= 0;
}

PixelOffset Integrator::offset_of(std::size_t k) const {
  if (layout_.geometry) {
    // pyFAI subtracts the PONI from a corner-given detector's float32 centres in float32 too
    // (numpy keeps the array's type), as pyfai_pixel_offset does for a regular detector.
    const PlanePoint c = corners_centre(*geometry_pixel_corners(layout_, k));
    return {static_cast<double>(c.p1 - static_cast<float>(geometry_.poni1)),
            static_cast<double>(c.p2 - static_cast<float>(geometry_.poni2))};
  }
  const PixelCentre centre = centre_of(k);
  return pyfai_pixel_offset(geometry_, centre.c1, centre.c2);
}

bool Integrator::masked(std::size_t k) const {
  return (!mask_.empty() && mask_[k] != 0) || (!layout_.bad.empty() && layout_.bad[k] != 0) ||
         !placed(k);
}

void Integrator::build_positions() {
  const std::size_t n = pixels();
  chi_.resize(n);
  two_theta_.resize(n);
  radial_.resize(n);
  const RadialUnit unit = config_.unit;
  const double wavelength = geometry_.wavelength;
  parallel(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) {
      if (!placed(k)) {
        // No position: never binned (bin_index refuses NaN) nor in the default range.
        chi_[k] = two_theta_[k] = radial_[k] = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      const PixelOffset off = offset_of(k);
      const LabPosition t = lab_position(geometry_, off.p1, off.p2);
      chi_[k] = chi(t);
      two_theta_[k] = two_theta(t);
      radial_[k] = internal_radial(unit, t, wavelength);
    }
  });
  // pyFAI's default range comes from every pixel of the image it is given, masked or not: for a
  // segmented detector that is the assembled image, gaps included; for a CrystFEL geometry every
  // pixel a panel places (a pixel of no panel has no position to take).
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  const auto take = [&](double v) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  };
  for (const double v : radial_) take(v);
  if (!layout_.placement.empty()) {
    const FrameExtent extent = assembled_extent(layout_);
    for (int r = 0; r < extent.rows; ++r)
      for (int c = 0; c < extent.cols; ++c) {
        const PixelOffset off = pyfai_pixel_offset(geometry_, r + 0.5, c + 0.5);
        take(internal_radial(unit, lab_position(geometry_, off.p1, off.p2), wavelength));
      }
  }
  default_min_ = lo;
  default_max_ = hi;
  positions_unit_ = unit;
  positions_valid_ = true;
  deltas_valid_ = false;
  ++counts_.positions;
}

void Integrator::build_deltas() {
  // pyFAI's delta arrays: the 4 corners of a pixel sit on the integer grid, in double (indices
  // from numpy.arange), and their radial and chi values are stored as float32.
  const std::size_t n = pixels();
  delta_radial_.resize(n);
  delta_chi_.resize(n);
  const RadialUnit unit = config_.unit;
  parallel(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) {
      double dr = 0.0, dc = 0.0;
      const auto take_corner = [&](double p1, double p2) {
        const LabPosition t = lab_position(geometry_, p1, p2);
        const double corner = float(internal_radial(unit, t, geometry_.wavelength));
        dr = std::max(dr, std::fabs(corner - radial_[k]));
        dc = std::max(dc, chi_delta(chi_[k], float(chi(t))));
      };
      if (layout_.geometry) {
        // The geometry's float32 corners, the PONI subtracted in double (pyFAI's calc_rad_azim).
        if (const auto corners = geometry_pixel_corners(layout_, k))
          for (const PlanePoint& c : *corners)
            take_corner(double(c.p1) - geometry_.poni1, double(c.p2) - geometry_.poni2);
      } else {
        // The pixel's true extent: a large pixel at an ASIC edge spreads over all of it.
        const PixelSpan span = span_of(k);
        for (const double e1 : {span.min_c1, span.max_c1})
          for (const double e2 : {span.min_c2, span.max_c2})
            take_corner(oriented1(geometry_, e1) * geometry_.pixel1 - geometry_.poni1,
                        oriented2(geometry_, e2) * geometry_.pixel2 - geometry_.poni2);
      }
      delta_radial_[k] = dr;
      delta_chi_[k] = dc;
    }
  });
  deltas_valid_ = true;
}

CsrMatrix Integrator::build_bbox_csr() {
  const std::size_t n = pixels();
  double lo = 0.0, hi = 0.0;
  if (config_.radial_range) {
    const double scale = unit_scale(config_.unit);
    const double a = config_.radial_range->first / scale, b = config_.radial_range->second / scale;
    lo = std::min(a, b);
    hi = std::max(a, b);
  } else {
    lo = std::numeric_limits<double>::infinity();
    hi = -lo;
    for (std::size_t k = 0; k < n; ++k) {
      if (masked(k)) continue;
      lo = std::min(lo, radial_[k] - delta_radial_[k]);
      hi = std::max(hi, radial_[k] + delta_radial_[k]);
    }
    if (!std::isfinite(lo) || !std::isfinite(hi))
      throw InputError("every pixel is masked or has no finite radial position");
    // Radial positions (2theta, q, r) are never negative: pyFAI clips the range at 0.
    lo = std::max(0.0, lo);
    hi = std::max(0.0, hi);
  }
  grid_ = make_bin_grid(config_.bins, lo, hi);
  std::optional<std::pair<double, double>> azimuth;
  if (config_.azimuth_range) azimuth = azimuth_range_radians(*config_.azimuth_range);
  std::vector<CsrEntry> entries;
  entries.reserve(n + n / 4);
  for (std::size_t k = 0; k < n; ++k) {
    if (masked(k)) continue;
    // In 1-D pyFAI keeps or drops a pixel whole by its chi box: kept when the box touches the
    // range.
    if (azimuth &&
        (chi_[k] + delta_chi_[k] < azimuth->first || chi_[k] - delta_chi_[k] > azimuth->second))
      continue;
    const BBoxSpan span = bbox_span(grid_, radial_[k], delta_radial_[k]);
    if (!span.inside) continue;
    for (int b = span.first; b <= span.last; ++b)
      entries.push_back({b, std::int32_t(k), bbox_coef(span, b)});
  }
  return integrate::build_csr(entries, config_.bins);
}

void Integrator::build_normalization() {
  const std::size_t n = pixels();
  normalization_.resize(n);
  const DummyTest dummy{config_.dummy.has_value(), float(config_.dummy.value_or(0.0)),
                        float(config_.delta_dummy)};
  parallel(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) {
      const float flat = flat_.empty() ? 1.0f : flat_[k];
      if (masked(k) || is_dummy(dummy, flat)) {
        normalization_[k] = 0.0f;
        continue;
      }
      float pol = 1.0f, sa = 1.0f;
      if (config_.polarization)
        pol = polarization_correction(two_theta_[k], chi_[k], *config_.polarization);
      // A large pixel at an ASIC edge subtends about its area's solid angle, F or F x F normal
      // pixels' at its centre; normalising by it keeps its intensity per normal pixel in line with
      // its neighbours' (F = 1 leaves the product, and so the float, unchanged).
      if (config_.solid_angle)
        sa = float(solid_angle(cos_incidence(geometry_, offset_of(k))) * double(area_of(k)));
      normalization_[k] = static_normalization(false, flat, pol, sa);
    }
  });
  normalization_valid_ = true;
  ++counts_.normalization;
}

void Integrator::build_csr() {
  if (config_.splitting == Splitting::BBox) {
    if (!deltas_valid_) build_deltas();
    csr_ = build_bbox_csr();
  } else {
    csr_ = build_no_split_csr();
  }
  banded_ = band_entries(csr_, pixels(), kBands);
  csr_valid_ = true;
  ++counts_.csr;
}

CsrMatrix Integrator::build_no_split_csr() {
  double lo = default_min_, hi = default_max_;
  if (config_.radial_range) {
    const double scale = unit_scale(config_.unit);
    const double a = config_.radial_range->first / scale, b = config_.radial_range->second / scale;
    lo = std::min(a, b);
    hi = std::max(a, b);
  }
  if (!std::isfinite(lo) || !std::isfinite(hi))
    throw InputError("no pixel has a finite radial position in this geometry");
  grid_ = make_bin_grid(config_.bins, lo, hi);
  std::optional<std::pair<double, double>> azimuth;
  if (config_.azimuth_range) azimuth = azimuth_range_radians(*config_.azimuth_range);
  std::vector<int> bin_of_pixel(pixels());
  for (std::size_t k = 0; k < bin_of_pixel.size(); ++k) {
    // pyFAI masks pixels outside the azimuth range by comparing chi with the range's ends.
    const bool outside = azimuth && (chi_[k] > azimuth->second || chi_[k] < azimuth->first);
    bin_of_pixel[k] = outside ? -1 : bin_index(grid_, radial_[k]);
  }
  return build_csr_no_split(bin_of_pixel, config_.bins);
}

void Integrator::ensure_built() {
  if (!positions_valid_) {
    build_positions();
    normalization_valid_ = false;  // polarisation uses the positions
    csr_valid_ = false;
  }
  if (!normalization_valid_) build_normalization();
  if (!csr_valid_) build_csr();
}

const CsrMatrix& Integrator::csr() {
  ensure_built();
  return csr_;
}

std::span<const float> Integrator::normalization() {
  ensure_built();
  return normalization_;
}

const BinGrid& Integrator::bin_grid() {
  ensure_built();
  return grid_;
}

std::span<const double> Integrator::pixel_two_theta() {
  ensure_built();
  return two_theta_;
}

std::span<const double> Integrator::pixel_chi() {
  ensure_built();
  return chi_;
}

void Integrator::check_frame(std::span<const float> frame) const {
  if (frame.size() != pixels())
    throw InputError("frame has " + std::to_string(frame.size()) + " pixels, the detector " +
                     std::to_string(pixels()));
}

DummyTest Integrator::dummy_test() const {
  return {config_.dummy.has_value(), float(config_.dummy.value_or(0.0)),
          float(config_.delta_dummy)};
}

Profile Integrator::empty_profile() const {
  const int bins = config_.bins;
  Profile p;
  p.radial = linspace(grid_.min + 0.5 * grid_.delta, grid_.max - 0.5 * grid_.delta, bins);
  for (double& r : p.radial) r *= unit_scale(config_.unit);
  for (auto* v :
       {&p.intensity, &p.sigma, &p.std, &p.signal, &p.variance, &p.normalization, &p.count})
    v->resize(std::size_t(bins));
  return p;
}

void Integrator::store_bin(Profile& p, int bin, const BinAccumulator& acc) const {
  const BinResult r = finalize_bin(acc, config_.dummy.value_or(0.0), config_.error_model);
  const auto i = std::size_t(bin);
  p.intensity[i] = r.intensity;
  p.sigma[i] = r.sigma;
  p.std[i] = r.std;
  p.signal[i] = acc.signal;
  p.variance[i] = acc.variance;
  p.normalization[i] = acc.normalization;
  p.count[i] = acc.count;
}

void Integrator::for_each_band(const std::function<void(std::size_t band)>& body) const {
  const std::size_t bands = banded_.bands();
  const auto run = [&](std::size_t first, std::size_t last) {
    for (std::size_t band = first; band < last; ++band) body(band);
  };
  if (pool_ && pool_->size() > 1 && bands > 1)
    pool_->parallel_for(bands, run);
  else
    run(0, bands);
}

template <bool Azimuthal, bool UnitShares>
void Integrator::sum_band(std::span<const float> frame, std::size_t band,
                          std::vector<BinAccumulator>& acc) const {
  const int first_bin = banded_.band_first_bin[band];
  acc.assign(std::size_t(banded_.band_first_bin[band + 1] - first_bin), BinAccumulator{});
  const DummyTest dummy = dummy_test();
  const ErrorModel model = config_.error_model;
  const float* const dark = dark_.empty() ? nullptr : dark_.data();
  const float* const norm = normalization_.data();
  const std::int32_t* const pixel = banded_.pixel.data();
  const std::int32_t* const bin = banded_.bin.data();
  const float* const coef = banded_.coef.data();
  const std::size_t end = banded_.band_start[band + 1];
  // The walk runs forwards but skips between a ring's stretches of each row, which the hardware
  // prefetcher does not follow: the pixels 64 entries ahead are asked for by hand (measured 1.5x
  // on the development VM; 32 and 128 ahead did no better).
  constexpr std::size_t kAhead = 64;
  for (std::size_t e = banded_.band_start[band]; e < end; ++e) {
    if (e + kAhead < end) {
      const auto ahead = std::size_t(pixel[e + kAhead]);
      __builtin_prefetch(frame.data() + ahead);
      __builtin_prefetch(norm + ahead);
      if (dark) __builtin_prefetch(dark + ahead);
    }
    const auto k = std::size_t(pixel[e]);
    const PixelSample s = preprocess_pixel(frame[k], dark ? dark[k] : 0.0f, norm[k], model, dummy);
    BinAccumulator& a = acc[std::size_t(bin[e] - first_bin)];
    // A share of exactly 1 multiplies nothing away: the literal gives the same sums.
    const double share = UnitShares ? 1.0 : double(coef[e]);
    if constexpr (Azimuthal)
      accumulate_azimuthal(a, s, share);
    else
      accumulate(a, s, share);
  }
}

Profile Integrator::integrate(std::span<const float> frame) {
  check_frame(frame);
  ensure_built();
  const bool azimuthal = config_.error_model == ErrorModel::Azimuthal;
  Profile p = empty_profile();
  // Bands are independent and each bin sums its pixels in ascending order whichever thread takes
  // its band, so any split over threads gives the same numbers.
  for_each_band([&](std::size_t band) {
    std::vector<BinAccumulator> acc;
    const bool unit = banded_.unit_shares;
    if (azimuthal)
      unit ? sum_band<true, true>(frame, band, acc) : sum_band<true, false>(frame, band, acc);
    else
      unit ? sum_band<false, true>(frame, band, acc) : sum_band<false, false>(frame, band, acc);
    const int first_bin = banded_.band_first_bin[band];
    for (std::size_t i = 0; i < acc.size(); ++i) store_bin(p, first_bin + int(i), acc[i]);
  });
  return p;
}

Profile Integrator::sigma_clip(std::span<const float> frame, const SigmaClip& clip) {
  if (clip.max_iter < 0)
    throw InputError("sigma clipping needs max_iter >= 0, got " + std::to_string(clip.max_iter));
  if (!std::isfinite(clip.cutoff) || clip.cutoff < 0.0)
    throw InputError("sigma clipping cutoff must be a finite number >= 0, got " +
                     number_text(clip.cutoff));
  check_frame(frame);
  ensure_built();
  const bool azimuthal = config_.error_model == ErrorModel::Azimuthal;
  Profile p = empty_profile();
  struct Entry {
    PixelSample s;
    float coef;
  };
  const DummyTest dummy = dummy_test();
  for_each_band([&](std::size_t band) {
    // Each bin's valid entries still in, dealt out walking the band in pixel order: the same
    // entries in the same order as the bin's CSR row.
    const int first_bin = banded_.band_first_bin[band];
    std::vector<std::vector<Entry>> kept_of(
        std::size_t(banded_.band_first_bin[band + 1] - first_bin));
    for (std::size_t e = banded_.band_start[band]; e < banded_.band_start[band + 1]; ++e) {
      const auto k = std::size_t(banded_.pixel[e]);
      const PixelSample s = preprocess_pixel(frame[k], dark_.empty() ? 0.0f : dark_[k],
                                             normalization_[k], config_.error_model, dummy);
      if (s.count != 0.0f && banded_.coef[e] != 0.0f)
        kept_of[std::size_t(banded_.bin[e] - first_bin)].push_back({s, banded_.coef[e]});
    }
    for (std::size_t i = 0; i < kept_of.size(); ++i) {
      std::vector<Entry>& kept = kept_of[i];
      const auto sum = [&] {
        BinAccumulator acc;
        for (const Entry& e : kept) {
          if (azimuthal)
            accumulate_azimuthal(acc, e.s, e.coef);
          else
            accumulate(acc, e.s, e.coef);
        }
        return acc;
      };
      BinAccumulator acc = sum();
      for (int iteration = 0; iteration < clip.max_iter; ++iteration) {
        if (acc.normalization == 0.0 || acc.count == 0.0) break;
        const double mean = acc.signal / acc.normalization;
        const double threshold = clip_threshold(acc.count, clip.cutoff, clip_spread(acc));
        const auto end = std::remove_if(kept.begin(), kept.end(), [&](const Entry& e) {
          return clip_rejects(e.s, mean, threshold);
        });
        if (end == kept.end()) break;
        kept.erase(end, kept.end());
        acc = sum();
      }
      store_bin(p, first_bin + int(i), acc);
    }
  });
  return p;
}

}  // namespace livedrp::integrate
