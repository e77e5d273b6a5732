#pragma once
// Azimuthal integration to a 1-D radial profile on the CPU, numerically compatible with pyFAI 0.21:
// integrate1d_ng with method ("no", "histogram", "cython") (pixel centres; its azimuthal error
// model as the ("no", "csr") engine has it) or ("bbox", "csr", "cython") (bounding-box splitting),
// and sigma_clip_ng (radial statistics with sigma clipping). Per-pixel and per-bin math lives in
// the LIVEDRP_HD headers (corrections.hpp, accumulate.hpp, bbox.hpp) for a CUDA backend to share.
//
// What depends only on the geometry and the configuration is computed once and kept: per-pixel
// radial position and chi, the CSR matrix (bins x pixels), the static per-pixel normalisation
// (solid angle * polarisation * flat, 0 where masked). Changing the mask, the flat, the
// polarisation or the solid-angle switch rebuilds only the normalisation (and, with bbox
// splitting, the CSR, which leaves masked pixels out as pyFAI's does); changing the unit rebuilds
// positions and the CSR; the number of bins, a range or the splitting only the CSR.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/thread_pool.hpp"
#include "integrate/accumulate.hpp"
#include "integrate/banded_entries.hpp"
#include "integrate/corrections.hpp"
#include "integrate/csr.hpp"
#include "integrate/layout.hpp"
#include "integrate/poni.hpp"
#include "integrate/units.hpp"

namespace livedrp::integrate {

// none: each pixel whole into the bin of its centre (pyFAI ("no", "histogram")); bbox: split
// over the bins its radial bounding box covers (pyFAI ("bbox", "csr")).
enum class Splitting { None, BBox };

struct IntegrationConfig {
  RadialUnit unit = RadialUnit::QNm;
  Splitting splitting = Splitting::None;
  int bins = 100;
  // In `unit`; none: pyFAI's default, from the smallest to the largest pixel position, the top edge
  // one float32 epsilon above: without splitting over the whole (assembled) image, masked pixels
  // included (for a CrystFEL geometry every pixel a panel places); with bbox over the boxes of
  // the unmasked pixels, clipped at 0.
  std::optional<std::pair<double, double>> radial_range;
  // Degrees, pyFAI's chi (-180, 180]; a range whose end is below its start wraps through 180.
  std::optional<std::pair<double, double>> azimuth_range;
  bool solid_angle = true;
  std::optional<double> polarization;  // pyFAI's polarization_factor; none: no correction
  ErrorModel error_model = ErrorModel::Poisson;
  std::optional<double> dummy;  // pixels (raw, dark or flat) of this value are invalid
  double delta_dummy = 0.0;     // tolerance for dummy
};

// Throws InputError naming the field that is wrong (bins < 1, a range that is empty or not finite,
// a polarisation factor outside [-1, 1], ...).
void validate(const IntegrationConfig& config);

// One frame's profile, one entry per bin. radial in the configured unit (bin centres); sigma is
// pyFAI's (the standard error of the mean); std the standard deviation of one pixel's normalised
// value (finalize_bin); the sums (signal, variance, normalisation, count) as pyFAI reports them.
struct Profile {
  std::vector<double> radial, intensity, sigma, std;
  std::vector<double> signal, variance, normalization, count;
};

class Integrator {
 public:
  // Throws InputError when the geometry cannot give the unit (q without a wavelength) or the
  // configuration is invalid.
  Integrator(const PoniGeometry& poni, PixelLayout layout, IntegrationConfig config);

  const IntegrationConfig& config() const { return config_; }
  const PixelLayout& layout() const { return layout_; }
  std::size_t pixels() const { return layout_.pixels(); }

  void set_config(const IntegrationConfig& config);
  // Threads for the builds and the per-bin sums (not owned; nullptr: the calling thread only).
  // Results do not depend on it. One integrate() at a time per pool.
  void set_thread_pool(ThreadPool* pool);
  // Non-zero masks a pixel; empty: no mask. Sizes must be pixels() (InputError otherwise). The
  // layout's own bad pixels (PixelLayout::bad) stay masked whatever is given here.
  void set_mask(std::vector<std::uint8_t> mask);
  void set_dark(std::vector<float> dark);  // empty: none
  void set_flat(std::vector<float> flat);  // empty: none

  // frame: pixels() values in layout order (segment, row, column).
  Profile integrate(std::span<const float> frame);

  // Radial statistics with sigma clipping (pyFAI 0.21 sigma_clip_ng): per bin, up to `max_iter`
  // times, pixels further than max(cutoff, Chauvenet) x spread from the mean are dropped and the
  // bin summed again. The profile is that of the kept pixels (intensity: the clipped mean, std:
  // its standard deviation). Entries are rejected per (bin, pixel), so with bbox splitting a pixel
  // rejected in one bin still counts in its other bins. Throws InputError for max_iter < 0 or a
  // cutoff that is not a finite number >= 0.
  struct SigmaClip {
    int max_iter = 5;
    double cutoff = 5.0;
  };
  Profile sigma_clip(std::span<const float> frame, const SigmaClip& clip);

  // Built state, for tests and for a device backend that uploads it.
  const CsrMatrix& csr();
  std::span<const float> normalization();
  const BinGrid& bin_grid();
  const std::vector<float>& dark() const { return dark_; }  // empty: none
  // Per pixel in layout order, of its centre: 2theta and chi (rad), NaN for a pixel the layout
  // does not place (a geometry's pixel of no panel).
  std::span<const double> pixel_two_theta();
  std::span<const double> pixel_chi();
  // How many times each stage was built (tests check that only what changed is rebuilt).
  struct BuildCounts {
    int positions = 0, normalization = 0, csr = 0;
  };
  BuildCounts build_counts() const { return counts_; }

 private:
  // The PONI's detector orientation on the geometry, and what its named pyFAI detector brings to
  // the layout (the module gaps' mask); refuses what livedrp cannot place as pyFAI does.
  void apply_named_detector(const PoniGeometry& poni);
  void ensure_built();
  void parallel(std::size_t count, const std::function<void(std::size_t, std::size_t)>& body) const;
  PixelCentre centre_of(std::size_t pixel) const;
  // The assembled rectangle and the area (in normal pixels) of input pixel k (layout.hpp).
  PixelSpan span_of(std::size_t pixel) const;
  int area_of(std::size_t pixel) const;
  bool placed(std::size_t pixel) const;
  PixelOffset offset_of(std::size_t pixel) const;
  bool masked(std::size_t pixel) const;
  void check_frame(std::span<const float> frame) const;
  DummyTest dummy_test() const;
  // Runs body(band) for every band of banded_, on the pool when there is one.
  void for_each_band(const std::function<void(std::size_t band)>& body) const;
  // One band's bin sums (acc[i]: bin band_first_bin[band] + i).
  template <bool Azimuthal, bool UnitShares>
  void sum_band(std::span<const float> frame, std::size_t band,
                std::vector<BinAccumulator>& acc) const;
  Profile empty_profile() const;
  void store_bin(Profile& p, int bin, const BinAccumulator& acc) const;
  void build_positions();
  void build_normalization();
  void build_csr();
  CsrMatrix build_no_split_csr();
  void build_deltas();
  CsrMatrix build_bbox_csr();

  ThreadPool* pool_ = nullptr;
  GeometryParams geometry_;
  PixelLayout layout_;
  IntegrationConfig config_;
  std::vector<std::uint8_t> mask_;
  std::vector<float> dark_, flat_;

  // Per pixel: chi and 2theta (rad) for the corrections, radial in the internal unit.
  std::vector<double> chi_, two_theta_, radial_;
  // bbox only: largest centre-to-corner distance, radial (internal unit) and chi.
  std::vector<double> delta_radial_, delta_chi_;
  double default_min_ = 0.0, default_max_ = 0.0;  // over the assembled image
  RadialUnit positions_unit_ = RadialUnit::QNm;
  std::vector<float> normalization_;
  BinGrid grid_;
  CsrMatrix csr_;
  // csr_'s entries in bands for the per-event walk (banded_entries.hpp). 32 bands: a few per
  // thread for balance, wide enough (about 30 bins of 1000) that neighbouring bands rarely share
  // a cache line of the frame. Results do not depend on the number.
  static constexpr int kBands = 32;
  BandedEntries banded_;
  bool positions_valid_ = false, normalization_valid_ = false, csr_valid_ = false;
  bool deltas_valid_ = false;
  BuildCounts counts_;
};

// pyFAI's normalize_azimuth_range: degrees to radians in [-pi, pi), the end moved up by 2 pi when
// it is not above the start.
std::pair<double, double> azimuth_range_radians(std::pair<double, double> degrees);

}  // namespace livedrp::integrate
