#include "sim/simulator.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "calib/calibration_math.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "sim/random.hpp"

namespace livedrp {

using sim::hash_key;

namespace {

// Independent random streams hang off the seed by purpose, so adding a draw of one kind never
// shifts the draws of another.
enum Purpose : std::uint64_t {
  kPurposePedestalGain = 1,
  kPurposeDefect = 2,
  kPurposeEvent = 3,
  kPurposeHit = 4,
};
// Streams of one event, below its event key.
enum EventStream : std::uint64_t {
  kStreamNoise = 1,
  kStreamPhotons = 2,  // high 32 bits: Poisson uniform; low 32: Jungfrau bad-gain draw
  kStreamLargeMeanNormal = 3,
  kStreamCommonMode = 4,
  kStreamPeaks = 5,
  kStreamBrightSpots = 6,
};

// kGap: a pixel of the description's gap rows and columns (no sensor), which integer images mark.
enum PixelDefect : std::uint8_t { kHealthy = 0, kDead = 1, kHot = 2, kGap = 3 };

// Largest ADC reading: 14 bits.
constexpr double kAdcMax = double(calib::kAdcBits);
// ePix10ka gain bit (auto modes switched to low) and Jungfrau gain stage bits.
constexpr std::uint16_t kEpix10kaLowGainBit = 1u << 14;
constexpr std::uint16_t kJungfrauStageBits[3] = {0x0000, 0x4000, 0xC000};  // g0 00, g1 01, g2 11
constexpr std::uint16_t kJungfrauBadStageBits = 0x8000;                    // 10: invalid

// A Bragg peak deposits photons within +-4 sigma of its centre: a 2-D Gaussian holds all but
// 1.3e-4 of its photons there, and the deposit is renormalised so the truth stays exact.
constexpr double kPeakSupportSigmas = 4.0;
// Powder rings are evaluated within this many sigma of their radius (exp(-8^2/2) ~ 1e-14).
constexpr double kRingReachSigmas = 8.0;
// Gain spreads above this would let 1 + spread * N (N up to 5.8, see standard_normal) approach
// zero, i.e. a pixel with almost no gain.
constexpr double kMaxGainSpread = 0.1;

// Typical pedestal of each gain mode, ADU: 1000-2500 as on the real detectors, different per mode
// so that a calibration reading the wrong plane shows at once, and far enough below 2^14 that the
// range above the pedestal holds hundreds of photons in high gain.
double typical_pedestal_adu(RawEncoding encoding, int mode) {
  // FH FM FL AHL-H AML-M AHL-L AML-L
  static constexpr double kEpix10ka[calib::kEpix10kaModes] = {1600, 1500, 1400, 1650,
                                                              1550, 1250, 1200};
  // G0 G1 G2
  static constexpr double kJungfrau[calib::kJungfrauModes] = {1800, 2400, 2200};
  switch (encoding) {
    case RawEncoding::Epix10ka:
      return kEpix10ka[mode];
    case RawEncoding::Jungfrau:
      return kJungfrau[mode];
    case RawEncoding::Float32:
    case RawEncoding::Uint16:
    case RawEncoding::Uint32:
    case RawEncoding::Int32:
      return 0;
  }
  return 0;
}

// The mode a pixel is in before any switching: the ePix10ka configuration values FH FM FL AHL AML
// equal the mode indices FH FM FL AHL-H AML-M; Jungfrau starts in g0.
int unswitched_mode(RawEncoding encoding, std::uint8_t status) {
  return encoding == RawEncoding::Epix10ka ? int(status & calib::kStatusConfigBits) : 0;
}

// The mode and gain bits of a pixel in a forced-gain run (SimulatorConfig::forced_gain_stage >= 0),
// from its unswitched mode.
struct ForcedReading {
  int mode;
  std::uint16_t gain_bits;
};
ForcedReading forced_reading(RawEncoding encoding, std::uint8_t status, int stage) {
  if (encoding == RawEncoding::Jungfrau) return {stage, kJungfrauStageBits[stage]};
  const int config = status & calib::kStatusConfigBits;
  if (stage == 1 && config == calib::kConfigAHL) return {calib::kAHL_L, kEpix10kaLowGainBit};
  if (stage == 1 && config == calib::kConfigAML) return {calib::kAML_L, kEpix10kaLowGainBit};
  return {unswitched_mode(encoding, status), 0};
}

// An integer image's word for pixel p: `count` (non-negative), or, where the word cannot hold it,
// the encoding's saturation marker; bad(): the marker of a pixel without a value (gap, defect).
// The markers are those calibration_math.hpp decodes as bad.
struct IntegerImageWriter {
  RawEncoding encoding;
  void* raw;

  void count(std::size_t p, double value) const {
    switch (encoding) {
      case RawEncoding::Uint16:
        static_cast<std::uint16_t*>(raw)[p] =
            std::uint16_t(std::min(value, double(calib::kUint16Marker)));
        break;
      case RawEncoding::Uint32:
        static_cast<std::uint32_t*>(raw)[p] =
            std::uint32_t(std::min(value, double(calib::kUint32Marker)));
        break;
      default:
        static_cast<std::int32_t*>(raw)[p] =
            std::int32_t(std::min(value, double(calib::kInt32SaturatedMarker)));
        break;
    }
  }
  void bad(std::size_t p) const {
    switch (encoding) {
      case RawEncoding::Uint16:
        static_cast<std::uint16_t*>(raw)[p] = calib::kUint16Marker;
        break;
      case RawEncoding::Uint32:
        static_cast<std::uint32_t*>(raw)[p] = calib::kUint32Marker;
        break;
      default:
        static_cast<std::int32_t*>(raw)[p] = calib::kInt32ErrorMarker;
        break;
    }
  }
};

// Rounds an ADC reading to the nearest count and clamps it to the 14-bit range (clamping first
// makes the truncating conversion a rounding one: the value is non-negative).
std::uint16_t to_adc(double reading) {
  return std::uint16_t(std::clamp(reading, 0.0, kAdcMax) + 0.5);
}

[[noreturn]] void reject(const std::string& field, double value, const std::string& expected) {
  throw InputError("simulator config: field '" + field + "' = " + std::to_string(value) +
                   " is invalid: expected " + expected);
}

void check_range(const char* field, double value, double low, double high) {
  if (!(value >= low && value <= high))
    reject(field, value, "a value in [" + std::to_string(low) + ", " + std::to_string(high) + "]");
}
void check_positive(const char* field, double value) {
  if (!(value > 0) || !std::isfinite(value)) reject(field, value, "a positive finite number");
}
void check_non_negative(const char* field, double value) {
  if (!(value >= 0) || !std::isfinite(value)) reject(field, value, "a non-negative finite number");
}
void check_ordered(const char* min_field, double min_value, const char* max_field,
                   double max_value) {
  if (!(max_value >= min_value))
    reject(max_field, max_value,
           std::string("at least ") + min_field + " = " + std::to_string(min_value));
}

void validate(const SimulatorConfig& c, const DetectorDescription& d) {
  check_range("hit_fraction", c.hit_fraction, 0, 1);
  check_positive("photon_energy_kev", c.photon_energy_kev);
  check_positive("event_rate_hz", c.event_rate_hz);
  if (c.pulses_per_event == 0) reject("pulses_per_event", 0, "at least 1");
  check_non_negative("noise_adu", c.noise_adu);
  check_non_negative("float32_noise_kev", c.float32_noise_kev);
  check_non_negative("common_mode_sigma_adu", c.common_mode_sigma_adu);
  check_non_negative("pedestal_spread_adu", c.pedestal_spread_adu);
  check_range("gain_spread", c.gain_spread, 0, kMaxGainSpread);
  check_range("dead_pixel_fraction", c.dead_pixel_fraction, 0, 1);
  check_range("hot_pixel_fraction", c.hot_pixel_fraction, 0, 1 - c.dead_pixel_fraction);
  check_non_negative("hot_pixel_offset_adu", c.hot_pixel_offset_adu);
  check_range("bad_gain_bits_fraction", c.bad_gain_bits_fraction, 0, 1);
  const int max_forced_stage = d.encoding == RawEncoding::Jungfrau   ? calib::kJungfrauModes - 1
                               : d.encoding == RawEncoding::Epix10ka ? 1
                                                                     : -1;
  if (c.forced_gain_stage < -1 || c.forced_gain_stage > max_forced_stage)
    reject("forced_gain_stage", c.forced_gain_stage,
           "-1 (no forcing) to " + std::to_string(max_forced_stage) + " for detector '" + d.name +
               "'");
  check_non_negative("background_photons", c.background_photons);
  check_non_negative("ring_peak_photons", c.ring_peak_photons);
  check_positive("ring_sigma_px", c.ring_sigma_px);
  for (double fraction : c.ring_radius_fractions)
    check_positive("ring_radius_fractions[]", fraction);
  check_range("peaks_per_hit_min", c.peaks_per_hit_min, 0, 1e6);
  check_ordered("peaks_per_hit_min", c.peaks_per_hit_min, "peaks_per_hit_max", c.peaks_per_hit_max);
  check_range("peaks_per_hit_max", c.peaks_per_hit_max, 0, 1e6);
  check_positive("peak_photons_min", c.peak_photons_min);
  check_ordered("peak_photons_min", c.peak_photons_min, "peak_photons_max", c.peak_photons_max);
  check_positive("peak_sigma_min_px", c.peak_sigma_min_px);
  check_ordered("peak_sigma_min_px", c.peak_sigma_min_px, "peak_sigma_max_px", c.peak_sigma_max_px);
  const int support = int(std::ceil(kPeakSupportSigmas * c.peak_sigma_max_px));
  if (c.peak_edge_margin_px < support + 1)
    reject("peak_edge_margin_px", c.peak_edge_margin_px,
           "at least " + std::to_string(support + 1) +
               " (the 4-sigma support of peak_sigma_max_px plus one pixel)");
  if (c.hit_fraction > 0 && c.peaks_per_hit_max > 0 &&
      (d.asic_rows <= 2 * c.peak_edge_margin_px || d.asic_cols <= 2 * c.peak_edge_margin_px))
    reject("peak_edge_margin_px", c.peak_edge_margin_px,
           "less than half the ASIC size " + std::to_string(d.asic_rows) + "x" +
               std::to_string(d.asic_cols) + " of detector '" + d.name + "'");
  if (c.epix10ka_asic_configs.empty())
    reject("epix10ka_asic_configs", 0,
           "at least one ePix10ka gain configuration (a list of size >= 1)");
  for (std::uint8_t config : c.epix10ka_asic_configs)
    if (config > calib::kConfigAML)
      reject("epix10ka_asic_configs[]", config,
             "an ePix10ka gain configuration: 0 FH, 1 FM, 2 FL, 3 AHL or 4 AML");
  check_range("bright_spots_per_event", c.bright_spots_per_event, 0, 1e6);
  check_positive("bright_spot_photons_min", c.bright_spot_photons_min);
  check_ordered("bright_spot_photons_min", c.bright_spot_photons_min, "bright_spot_photons_max",
                c.bright_spot_photons_max);
}

// Runs body(begin, end) over [0, count), on the pool when there is one.
template <class Body>
void for_ranges(ThreadPool* pool, std::size_t count, const Body& body) {
  if (pool)
    pool->parallel_for(count, body);
  else
    body(0, count);
}

}  // namespace

// The event-level part of one event: which sources it has and the extra mean photons they put on
// the few pixels they touch, sorted by pixel so that any row range finds its share by bisection.
struct DetectorSimulator::EventPlan {
  struct PixelMean {
    std::size_t pixel;
    double mean_photons;
  };
  bool hit = false;
  std::vector<TruePeak> peaks;
  std::vector<TruePeak> bright_spots;
  std::vector<PixelMean> extra;
};

namespace {

// Pixel p's defect: a gap of the segment, or drawn dead, hot or healthy from the seed's key.
PixelDefect pixel_defect(const DetectorDescription& detector, const SimulatorConfig& config,
                         std::uint64_t defect_key, std::size_t p, int row, int col) {
  const double defect_draw = sim::unit_double(hash_key(defect_key, p));
  return detector.in_gap(row, col)                                              ? kGap
         : defect_draw < config.dead_pixel_fraction                             ? kDead
         : defect_draw < config.dead_pixel_fraction + config.hot_pixel_fraction ? kHot
                                                                                : kHealthy;
}

// Its status word: masked unless healthy, and an ePix10ka pixel's ASIC's gain configuration.
std::uint8_t pixel_status_of(const DetectorDescription& detector, const SimulatorConfig& config,
                             PixelDefect defect, int segment, int row, int col,
                             int asics_per_segment, int asics_per_row) {
  std::uint8_t status = defect == kHealthy ? 0 : calib::kStatusMasked;
  if (detector.encoding == RawEncoding::Epix10ka) {
    const int asic = segment * asics_per_segment + (row / detector.asic_rows) * asics_per_row +
                     col / detector.asic_cols;
    status |= config.epix10ka_asic_configs[std::size_t(asic) % config.epix10ka_asic_configs.size()];
  }
  return status;
}

}  // namespace

std::vector<std::uint8_t> simulated_pixel_status(const DetectorDescription& detector,
                                                 const SimulatorConfig& config) {
  validate(config, detector);
  const std::size_t cols = std::size_t(detector.cols);
  const std::size_t segment_rows = std::size_t(detector.segments) * std::size_t(detector.rows);
  const std::uint64_t defect_key = hash_key(config.seed, kPurposeDefect);
  const int asics_per_row = detector.cols / detector.asic_cols;
  const int asics_per_segment = asics_per_row * (detector.rows / detector.asic_rows);
  std::vector<std::uint8_t> status(detector.pixels());
  for (std::size_t segment_row = 0; segment_row < segment_rows; ++segment_row) {
    const int segment = int(segment_row / std::size_t(detector.rows));
    const int row = int(segment_row % std::size_t(detector.rows));
    for (std::size_t col = 0; col < cols; ++col) {
      const std::size_t p = segment_row * cols + col;
      status[p] = pixel_status_of(detector, config,
                                  pixel_defect(detector, config, defect_key, p, row, int(col)),
                                  segment, row, int(col), asics_per_segment, asics_per_row);
    }
  }
  return status;
}

DetectorSimulator::DetectorSimulator(DetectorDescription detector, SimulatorConfig config,
                                     ThreadPool* pool)
    : detector_(std::move(detector)), config_(std::move(config)) {
  validate(config_, detector_);
  const std::size_t pixels = detector_.pixels();
  const std::size_t segment_rows = std::size_t(detector_.segments) * std::size_t(detector_.rows);
  const std::size_t cols = std::size_t(detector_.cols);
  const int modes = detector_.modes();
  // Float32 data is calibrated already and integer images are counts: identity constants.
  const bool identity_input =
      detector_.encoding == RawEncoding::Float32 || is_integer_image(detector_.encoding);

  constants_.modes = modes;
  constants_.pixels = pixels;
  constants_.pedestal_gain.resize(std::size_t(modes) * pixels);
  constants_.pixel_status.resize(pixels);
  defect_.resize(pixels);
  powder_mean_photons_.resize(pixels);
  powder_exp_minus_mean_.resize(pixels);

  // Beam centre: the middle of the assembled image's bounding box.
  const AssembledBounds bounds = assembled_bounds(detector_);
  powder_.beam_x_px = bounds.centre().x;
  powder_.beam_y_px = bounds.centre().y;
  const double nearest_edge_px =
      0.5 * std::min(bounds.max_x - bounds.min_x, bounds.max_y - bounds.min_y);
  for (double fraction : config_.ring_radius_fractions)
    powder_.ring_radii_px.push_back(fraction * nearest_edge_px);

  // One key per mode; its draw per pixel gives the pedestal (first) and gain (second) spreads.
  std::vector<std::uint64_t> mode_keys;
  for (int mode = 0; mode < modes; ++mode)
    mode_keys.push_back(
        hash_key(hash_key(config_.seed, kPurposePedestalGain), std::uint64_t(mode)));
  const std::uint64_t defect_key = hash_key(config_.seed, kPurposeDefect);
  const int asics_per_row = detector_.cols / detector_.asic_cols;
  const int asics_per_segment = asics_per_row * (detector_.rows / detector_.asic_rows);
  const SegmentGrid grid = detector_.grid();
  const double ring_two_sigma_sq = 2.0 * config_.ring_sigma_px * config_.ring_sigma_px;
  // Beyond this distance from a ring its profile is below 1e-14 of the crest: skip the exp().
  const double ring_reach_px = kRingReachSigmas * config_.ring_sigma_px;

  for_ranges(pool, segment_rows, [&](std::size_t begin, std::size_t end) {
    for (std::size_t segment_row = begin; segment_row < end; ++segment_row) {
      const int segment = int(segment_row / std::size_t(detector_.rows));
      const int row = int(segment_row % std::size_t(detector_.rows));
      const SegmentPlacement& placement = detector_.placement[std::size_t(segment)];
      for (std::size_t col = 0; col < cols; ++col) {
        const std::size_t p = segment_row * cols + col;

        // Defects and configuration.
        const PixelDefect defect = pixel_defect(detector_, config_, defect_key, p, row, int(col));
        defect_[p] = defect;
        constants_.pixel_status[p] = pixel_status_of(detector_, config_, defect, segment, row,
                                                     int(col), asics_per_segment, asics_per_row);

        // Pedestal and gain per mode.
        for (int mode = 0; mode < modes; ++mode) {
          calib::PedestalGain& pg = constants_.pedestal_gain[std::size_t(mode) * pixels + p];
          if (identity_input) {
            pg = {0.0f, 1.0f};
            continue;
          }
          const sim::NormalPair spread =
              sim::standard_normal_pair(hash_key(mode_keys[std::size_t(mode)], p));
          const double adu_per_kev = detector_.gain_modes[std::size_t(mode)].nominal_adu_per_kev *
                                     (1.0 + config_.gain_spread * double(spread.second));
          pg.pedestal = float(typical_pedestal_adu(detector_.encoding, mode) +
                              config_.pedestal_spread_adu * double(spread.first));
          pg.gain = float(1.0 / adu_per_kev);
        }

        // Powder: flat background plus Gaussian rings around the beam.
        const AssembledPoint point = assembled_point(placement, grid, row + 0.5, double(col) + 0.5);
        const double dx = point.x - powder_.beam_x_px, dy = point.y - powder_.beam_y_px;
        const double radius = std::sqrt(dx * dx + dy * dy);
        double mean = config_.background_photons;
        for (double ring_radius : powder_.ring_radii_px) {
          const double distance = radius - ring_radius;
          if (std::abs(distance) < ring_reach_px)
            mean += config_.ring_peak_photons * std::exp(-distance * distance / ring_two_sigma_sq);
        }
        // A large pixel at an ASIC edge collects the photons of its whole area.
        mean *= double(grid.row_size(row) * grid.col_size(int(col)));
        powder_mean_photons_[p] = float(mean);
        powder_exp_minus_mean_[p] = float(std::exp(-double(float(mean))));
      }
    }
  });
}

const std::vector<std::uint8_t>& every_epix10ka_config() {
  static const std::vector<std::uint8_t> configs = {
      calib::kConfigFH, calib::kConfigFM, calib::kConfigFL, calib::kConfigAHL, calib::kConfigAML};
  return configs;
}

bool DetectorSimulator::is_hit(std::uint64_t index) const {
  return sim::unit_double(hash_key(hash_key(config_.seed, kPurposeHit), index)) <
         config_.hit_fraction;
}

std::vector<std::uint64_t> DetectorSimulator::representative_indices(std::size_t count) const {
  const auto hits_wanted = std::size_t(std::llround(config_.hit_fraction * double(count)));
  std::vector<std::uint64_t> indices;
  std::size_t hits = 0, misses = 0;
  // Every index is a hit or not, each with a non-zero share unless the fraction is 0 or 1 (then
  // only one kind is wanted), so the scan ends.
  for (std::uint64_t index = 0; indices.size() < count; ++index) {
    const bool hit = is_hit(index);
    if (hit && hits < hits_wanted) {
      ++hits;
      indices.push_back(index);
    } else if (!hit && misses < count - hits_wanted) {
      ++misses;
      indices.push_back(index);
    }
  }
  return indices;
}

EventHeader DetectorSimulator::header_for(std::uint64_t index) const {
  EventHeader header;
  header.sequence = index;
  header.pulse_id = config_.first_pulse_id + config_.pulses_per_event * index;
  header.timestamp_ns = config_.start_time_ns +
                        std::int64_t(std::llround(double(index) * 1e9 / config_.event_rate_hz));
  return header;
}

DetectorSimulator::EventPlan DetectorSimulator::plan_event(std::uint64_t index) const {
  EventPlan plan;
  plan.hit = is_hit(index);
  const std::uint64_t event_key = hash_key(hash_key(config_.seed, kPurposeEvent), index);
  const std::size_t cols = std::size_t(detector_.cols);
  const std::size_t segment_pixels = detector_.pixels_per_segment();
  const double energy = config_.photon_energy_kev;

  if (plan.hit) {
    sim::CounterStream stream(hash_key(event_key, kStreamPeaks));
    const int asics_down = detector_.rows / detector_.asic_rows;
    const int asics_across = detector_.cols / detector_.asic_cols;
    const double margin = config_.peak_edge_margin_px;
    const auto count = stream.uniform_int(config_.peaks_per_hit_min, config_.peaks_per_hit_max);
    for (std::int64_t i = 0; i < count; ++i) {
      TruePeak peak;
      peak.segment = int(stream.uniform_int(0, detector_.segments - 1));
      const auto asic_row = stream.uniform_int(0, asics_down - 1);
      const auto asic_col = stream.uniform_int(0, asics_across - 1);
      peak.row = double(asic_row * detector_.asic_rows) +
                 stream.uniform(margin, detector_.asic_rows - 1 - margin);
      peak.col = double(asic_col * detector_.asic_cols) +
                 stream.uniform(margin, detector_.asic_cols - 1 - margin);
      peak.sigma_px = stream.uniform(config_.peak_sigma_min_px, config_.peak_sigma_max_px);
      peak.photons = stream.log_uniform(config_.peak_photons_min, config_.peak_photons_max);
      peak.intensity_kev = peak.photons * energy;

      // Mean photons per pixel: the Gaussian integrated over each pixel (erf differences, pixel
      // edges at half-integers), renormalised over the support.
      const int half = int(std::ceil(kPeakSupportSigmas * peak.sigma_px));
      const int centre_row = int(std::lround(peak.row)), centre_col = int(std::lround(peak.col));
      const double scale = 1.0 / (std::numbers::sqrt2 * peak.sigma_px);
      auto fractions = [&](double centre, int first) {
        std::vector<double> f(std::size_t(2 * half + 1));
        double sum = 0;
        for (int k = 0; k <= 2 * half; ++k) {
          const double edge = double(first + k) - centre;
          f[std::size_t(k)] =
              0.5 * (std::erf((edge + 0.5) * scale) - std::erf((edge - 0.5) * scale));
          sum += f[std::size_t(k)];
        }
        for (double& value : f) value /= sum;
        return f;
      };
      const std::vector<double> row_fraction = fractions(peak.row, centre_row - half);
      const std::vector<double> col_fraction = fractions(peak.col, centre_col - half);
      for (int dr = 0; dr <= 2 * half; ++dr)
        for (int dc = 0; dc <= 2 * half; ++dc) {
          const std::size_t pixel = std::size_t(peak.segment) * segment_pixels +
                                    std::size_t(centre_row - half + dr) * cols +
                                    std::size_t(centre_col - half + dc);
          plan.extra.push_back({pixel, peak.photons * row_fraction[std::size_t(dr)] *
                                           col_fraction[std::size_t(dc)]});
        }
      plan.peaks.push_back(peak);
    }
  }

  sim::CounterStream spots(hash_key(event_key, kStreamBrightSpots));
  for (int i = 0; i < config_.bright_spots_per_event; ++i) {
    const auto pixel = std::size_t(spots.uniform_int(0, std::int64_t(detector_.pixels()) - 1));
    TruePeak spot;
    spot.segment = int(pixel / segment_pixels);
    spot.row = double((pixel % segment_pixels) / cols);
    spot.col = double(pixel % cols);
    spot.photons =
        spots.log_uniform(config_.bright_spot_photons_min, config_.bright_spot_photons_max);
    spot.intensity_kev = spot.photons * energy;
    plan.extra.push_back({pixel, spot.photons});
    plan.bright_spots.push_back(spot);
  }

  // Sort by pixel and merge sources that overlap.
  std::sort(plan.extra.begin(), plan.extra.end(),
            [](const auto& a, const auto& b) { return a.pixel < b.pixel; });
  std::size_t merged = 0;
  for (std::size_t i = 0; i < plan.extra.size(); ++i) {
    if (merged > 0 && plan.extra[merged - 1].pixel == plan.extra[i].pixel)
      plan.extra[merged - 1].mean_photons += plan.extra[i].mean_photons;
    else
      plan.extra[merged++] = plan.extra[i];
  }
  plan.extra.resize(merged);
  return plan;
}

void DetectorSimulator::generate(std::uint64_t index, void* raw, EventTruth* truth,
                                 ThreadPool* pool) const {
  const EventPlan plan = plan_event(index);
  if (truth) {
    truth->index = index;
    truth->hit = plan.hit;
    truth->peaks = plan.peaks;
    truth->bright_spots = plan.bright_spots;
    truth->common_mode_adu.assign(detector_.bank_rows(), 0.0f);
    truth->gain_switched_pixels = 0;
    truth->bad_gain_pixels = 0;
  }
  std::atomic<std::size_t> switched_total{0}, bad_gain_total{0};
  const std::size_t segment_rows = std::size_t(detector_.segments) * std::size_t(detector_.rows);
  for_ranges(pool, segment_rows, [&](std::size_t begin, std::size_t end) {
    std::size_t switched = 0, bad_gain = 0;
    generate_rows(index, plan, begin, end, raw, truth, switched, bad_gain);
    switched_total += switched;
    bad_gain_total += bad_gain;
  });
  if (truth) {
    truth->gain_switched_pixels = switched_total;
    truth->bad_gain_pixels = bad_gain_total;
  }
}

void DetectorSimulator::generate_rows(std::uint64_t index, const EventPlan& plan,
                                      std::size_t first_row, std::size_t end_row, void* raw,
                                      EventTruth* truth, std::size_t& switched,
                                      std::size_t& bad_gain) const {
  const RawEncoding encoding = detector_.encoding;
  const std::size_t cols = std::size_t(detector_.cols);
  const std::size_t bank_columns = std::size_t(detector_.bank_columns);
  const double energy = config_.photon_energy_kev;
  const float noise_sigma =
      float(encoding == RawEncoding::Float32 ? config_.float32_noise_kev : config_.noise_adu);
  const std::uint64_t event_key = hash_key(hash_key(config_.seed, kPurposeEvent), index);
  const std::uint64_t noise_key = hash_key(event_key, kStreamNoise);
  const std::uint64_t photon_key = hash_key(event_key, kStreamPhotons);
  const std::uint64_t large_mean_key = hash_key(event_key, kStreamLargeMeanNormal);
  const std::uint64_t common_mode_key = hash_key(event_key, kStreamCommonMode);
  auto* raw_words = static_cast<std::uint16_t*>(raw);
  auto* raw_values = static_cast<float*>(raw);
  const bool integer_image = is_integer_image(encoding);
  const IntegerImageWriter integer_words{encoding, raw};

  auto extra = std::lower_bound(
      plan.extra.begin(), plan.extra.end(), first_row * cols,
      [](const EventPlan::PixelMean& entry, std::size_t pixel) { return entry.pixel < pixel; });

  float common_mode = 0;
  std::size_t noise_pair_index = std::numeric_limits<std::size_t>::max();
  sim::NormalPair noise_pair{0, 0};
  for (std::size_t p = first_row * cols, end = end_row * cols; p < end; ++p) {
    // Common mode: one draw per bank row, at its first pixel (row ranges start at bank rows,
    // since bank_columns divides the ASIC and so the segment width).
    if (bank_columns > 0 && p % bank_columns == 0) {
      const std::size_t bank_row = p / bank_columns;
      common_mode = float(config_.common_mode_sigma_adu) *
                    sim::standard_normal(hash_key(common_mode_key, bank_row));
      if (truth) truth->common_mode_adu[bank_row] = common_mode;
    }
    const PixelDefect defect = PixelDefect(defect_[p]);
    const std::uint8_t status = constants_.pixel_status[p];
    const int first_mode = unswitched_mode(encoding, status);

    // An integer image has no value where there is no sensor or the pixel is defective: the
    // detector writes its marker there (Eiger: all ones).
    if (defect == kGap || (defect == kDead && integer_image)) {
      integer_words.bad(p);
      continue;
    }
    if (defect == kDead) {
      // A dead pixel's amplifier is stuck at its baseline: the same reading on every event.
      if (encoding == RawEncoding::Float32)
        raw_values[p] = 0.0f;
      else
        raw_words[p] = to_adc(double(constants_.at(first_mode, p).pedestal));
      continue;
    }
    // Noise: one normal pair per two neighbouring pixels (p / 2), so a range may start anywhere.
    if (p / 2 != noise_pair_index) {
      noise_pair_index = p / 2;
      noise_pair = sim::standard_normal_pair(hash_key(noise_key, noise_pair_index));
    }
    const float noise = noise_sigma * (p % 2 == 0 ? noise_pair.first : noise_pair.second);
    const bool forced = config_.forced_gain_stage >= 0;
    const ForcedReading forced_mode =
        forced ? forced_reading(encoding, status, config_.forced_gain_stage)
               : ForcedReading{first_mode, 0};
    if (defect == kHot) {
      if (integer_image)  // counts far above its neighbours' (a noisy counter), every event
        integer_words.count(p, std::max(0.0, std::round(config_.hot_pixel_offset_adu + noise)));
      else if (encoding == RawEncoding::Float32)
        raw_values[p] =
            float(config_.hot_pixel_offset_adu / detector_.gain_modes[0].nominal_adu_per_kev) +
            noise;
      else
        raw_words[p] = std::uint16_t(forced_mode.gain_bits |
                                     to_adc(double(constants_.at(forced_mode.mode, p).pedestal) +
                                            config_.hot_pixel_offset_adu + double(noise)));
      continue;
    }

    // Photons.
    const std::uint64_t photon_bits = hash_key(photon_key, p);
    double mean = powder_mean_photons_[p];
    double exp_minus_mean = powder_exp_minus_mean_[p];
    // Sources on the dead and hot pixels skipped above are passed over here.
    while (extra != plan.extra.end() && extra->pixel < p) ++extra;
    if (extra != plan.extra.end() && extra->pixel == p) {
      mean += extra->mean_photons;
      exp_minus_mean = std::exp(-mean);
    }
    const std::uint32_t photons =
        sim::poisson_count(mean, exp_minus_mean, sim::unit_high32(photon_bits),
                           [&] { return sim::standard_normal(hash_key(large_mean_key, p)); });
    const double energy_kev = double(photons) * energy;

    if (integer_image) {  // a photon-counting pixel: its count, no noise, no baseline
      integer_words.count(p, double(photons));
      continue;
    }
    if (encoding == RawEncoding::Float32) {
      raw_values[p] = float(energy_kev) + noise;
      continue;
    }

    // ADC reading in a mode: pedestal, baseline, and the deposited energy at the pixel's gain.
    const double baseline_adu = double(common_mode) + double(noise);
    auto reading = [&](int mode) {
      const calib::PedestalGain pg = constants_.at(mode, p);
      return double(pg.pedestal) + baseline_adu +
             (photons > 0 ? energy_kev / double(pg.gain) : 0.0);
    };
    std::uint16_t gain_bits = 0;
    int mode = first_mode;
    double adc = reading(mode);
    if (forced) {
      // The stage is forced: no switching, whatever the charge (the reading clamps).
      mode = forced_mode.mode;
      adc = reading(mode);
      gain_bits = forced_mode.gain_bits;
      if (encoding == RawEncoding::Jungfrau &&
          sim::unit_low32(photon_bits) < config_.bad_gain_bits_fraction) {
        gain_bits = kJungfrauBadStageBits;
        ++bad_gain;
      } else if (mode != first_mode) {
        ++switched;
      }
    } else if (encoding == RawEncoding::Epix10ka) {
      // Auto-ranging configurations drop to their low gain when the charge would overflow.
      const int config = status & calib::kStatusConfigBits;
      if (adc > kAdcMax && (config == calib::kConfigAHL || config == calib::kConfigAML)) {
        mode = config == calib::kConfigAHL ? calib::kAHL_L : calib::kAML_L;
        adc = reading(mode);
        gain_bits = kEpix10kaLowGainBit;
        ++switched;
      }
    } else {
      // Jungfrau: g0 -> g1 -> g2, each time the reading would overflow the current stage.
      while (adc > kAdcMax && mode + 1 < calib::kJungfrauModes) adc = reading(++mode);
      gain_bits = kJungfrauStageBits[mode];
      if (sim::unit_low32(photon_bits) < config_.bad_gain_bits_fraction) {
        gain_bits = kJungfrauBadStageBits;
        ++bad_gain;
      } else if (mode > 0) {
        ++switched;
      }
    }
    raw_words[p] = std::uint16_t(gain_bits | to_adc(adc));
  }
}

}  // namespace livedrp
