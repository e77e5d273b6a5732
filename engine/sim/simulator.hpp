#pragma once
// The simulated live detector: raw events of any built-in detector, made from known constants and
// a known scene, with the truth kept beside them so every stage downstream can be checked.
//
// What one event holds, per pixel p of the detector:
//   photons  ~ Poisson(powder(p) + Bragg peaks(p) + bright spots(p))
//   ePix10ka / Jungfrau raw word:
//     adc = pedestal[mode][p] + common_mode[bank row] + noise + photons * E / gain[mode][p],
//     mode = the pixel's fixed mode, or for auto-ranging pixels (ePix10ka AHL/AML, every Jungfrau
//     pixel) the first gain stage in which adc does not overflow the 14-bit ADC; rounded, clamped.
//   float32 (already calibrated): value = photons * E + noise (keV).
//   integer images (uint16, uint32, int32; a photon-counting detector): value = photons, no
//   noise or baseline; counts the word cannot hold read as the saturation marker.
// Dead pixels read a constant, hot pixels read far above their pedestal; both are masked in
// constants(). Jungfrau pixels are sometimes written with the invalid gain bits 10. Integer images
// mark their dead pixels, and the description's gap rows and columns (masked too), with the
// encoding's bad-pixel marker, and their hot pixels count hot_pixel_offset_adu (+ noise).
//
// Every random draw is a counter-based hash of (seed, event index, pixel), so any pixel range of
// any event can be generated on any thread and gives the same bytes (see sim/random.hpp).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "calib/calibration_math.hpp"
#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "core/event.hpp"

namespace livedrp {

class ThreadPool;

struct SimulatorConfig {
  // Constants and events are functions of the seed (and the fields below) alone.
  std::uint64_t seed = 20260101;
  double hit_fraction = 0.1;       // fraction of events with Bragg peaks (decided per event index)
  double photon_energy_kev = 9.5;  // monochromatic beam; a typical hard X-ray SFX energy

  // --- Event stamps (header_for) ---
  // 120 Hz readout of a 360 Hz machine: pulse ids rise by 3 per event.
  double event_rate_hz = 120.0;
  std::uint64_t pulses_per_event = 3;
  std::uint64_t first_pulse_id = 1'000'000;
  std::int64_t start_time_ns = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z

  // --- Electronics ---
  // Gaussian electronic noise in ADU, the same in every gain mode. A few ADU as on ePix10ka and
  // Jungfrau in high gain: well below both a 9.5 keV photon there (~150 ADU) and the default quiet
  // threshold of the common mode (40 ADU), so photons and quiet pixels separate cleanly.
  double noise_adu = 4.0;
  // Noise of float32 (already calibrated) detectors, keV: a tenth of a photon.
  double float32_noise_kev = 0.8;
  // Per event, each bank row gets one Gaussian baseline offset of this sigma (ADU); kept a few
  // times below the quiet threshold so quiet pixels stay quiet with the offset added.
  double common_mode_sigma_adu = 8.0;
  // Per-pixel pedestal spread around each mode's typical pedestal (ADU), and relative gain spread.
  double pedestal_spread_adu = 150.0;
  double gain_spread = 0.03;

  // --- ePix10ka per-pixel gain configuration (calib::kConfigFH ... kConfigAML) ---
  // Dealt to the ASICs in turn: ASIC a (in segment, row, column order) gets entry a % size. A
  // facility configures a whole ePix10ka alike for an experiment, and for SFX at hard X-ray
  // energies that is auto high-to-low (AHL): a 9.5 keV photon is ~150 ADU over 4 ADU of noise in
  // high gain, and a Bragg peak's bright pixels switch to low gain rather than saturate. A layout
  // mixing configurations is a test fixture (every_epix10ka_config(): all seven gain modes on
  // one event), not a run: in fixed low gain (FL) the same photon is 1.5 ADU, under the noise, and
  // no peak-finder threshold fits FL and high-gain ASICs in one radius bin. Other detectors
  // ignore it.
  std::vector<std::uint8_t> epix10ka_asic_configs = {calib::kConfigAHL};

  // --- Defects (fractions of pixels; fixed by the seed, masked in constants()) ---
  double dead_pixel_fraction = 1e-3;   // read a constant: their pedestal, no noise, no photons
  double hot_pixel_fraction = 2e-4;    // read this far above their pedestal, plus noise:
  double hot_pixel_offset_adu = 3000;  // (float32 detectors: divided by the nominal ADU per keV)
  // Jungfrau: per event, this fraction of pixels is written with the invalid gain bits 10.
  double bad_gain_bits_fraction = 1e-4;

  // --- Forced gain (the dark runs of `livedrp-engine pedestal`) ---
  // -1: pixels switch gain as their charge asks. Otherwise every pixel reads in a forced stage,
  // as the detector does when told to, and the raw word's gain bits say so:
  //   Jungfrau 0, 1, 2: every pixel in g0, g1 or g2 (its pedestal and gain of that stage);
  //   ePix10ka 0: no pixel switches; 1: pixels of the auto configurations (AHL, AML) read in
  //   their low gain (AHL-L, AML-L) with bit 14 set, the fixed ones (FH, FM, FL) as always.
  // Dead pixels stay stuck at their unswitched reading with gain bits 0 (a stuck amplifier does
  // not follow the forced stage). Float32 detectors take only -1.
  int forced_gain_stage = -1;

  // --- Powder scattering, centred on the beam in the assembled image ---
  double background_photons = 0.02;  // flat mean photons per pixel
  double ring_peak_photons = 0.25;   // mean photons per pixel on a ring's crest
  double ring_sigma_px = 2.5;        // Gaussian radial width of a ring
  // Ring radii as fractions of the distance from the beam to the nearest edge of the assembled
  // image, so every ring is a full circle on any layout.
  std::vector<double> ring_radius_fractions = {0.22, 0.41, 0.58, 0.83};

  // --- Bragg peaks on hit events: 2-D Gaussians, photons log-uniform over a wide range so that
  // the brightest switch gain ---
  int peaks_per_hit_min = 10;
  int peaks_per_hit_max = 40;
  double peak_photons_min = 50;
  double peak_photons_max = 20000;
  double peak_sigma_min_px = 0.6;
  double peak_sigma_max_px = 1.5;
  // Peak centres keep this distance (pixels) from ASIC edges: more than the 4-sigma support of
  // the widest peak plus one pixel, so a peak's photons land on one ASIC.
  int peak_edge_margin_px = 8;

  // --- Bright spots: single pixels hit by hundreds to thousands of photons on every event, hit
  // or not (stray scattering, zingers); they make gain switching happen on every event ---
  int bright_spots_per_event = 4;
  double bright_spot_photons_min = 400;
  double bright_spot_photons_max = 5000;
};

// The five ePix10ka gain configurations FH FM FL AHL AML, for
// SimulatorConfig::epix10ka_asic_configs: ASICs cycle through them, so one event shows every
// configuration and, through the auto ones, all seven gain modes (the calibration tests' layout).
const std::vector<std::uint8_t>& every_epix10ka_config();

// A photon source in segment coordinates: pixel centres at integer (row, col).
struct TruePeak {
  int segment = 0;
  double row = 0;
  double col = 0;
  double sigma_px = 0;       // 0: all photons in the one pixel (bright spots)
  double photons = 0;        // expected photons deposited on the detector
  double intensity_kev = 0;  // photons * photon energy
};

struct EventTruth {
  std::uint64_t index = 0;
  bool hit = false;
  std::vector<TruePeak> peaks;         // Bragg peaks (hit events only)
  std::vector<TruePeak> bright_spots;  // single-pixel sources, every event
  // Per bank row (detector.bank_rows()), the offset added in ADU; empty when bank_columns == 0.
  std::vector<float> common_mode_adu;
  // Pixels that switched to a lower gain (ePix10ka auto modes to low, Jungfrau g1 and g2).
  std::size_t gain_switched_pixels = 0;
  // Jungfrau pixels written with the invalid gain bits 10 (not counted as switched).
  std::size_t bad_gain_pixels = 0;
};

// Where the powder rings are: beam centre in assembled pixels (x fast scan, y slow scan, the
// frame of SegmentPlacement) and the ring radii in pixels.
struct PowderGeometry {
  double beam_x_px = 0;
  double beam_y_px = 0;
  std::vector<double> ring_radii_px;
};

// The status word of every pixel of the simulator's constants (its defects masked, an ePix10ka
// pixel's gain configuration), as DetectorSimulator(detector, config).constants().pixel_status,
// without the pedestals, gains and powder pattern: what checking a configuration needs of them.
// Throws InputError as the simulator does for an unusable configuration.
std::vector<std::uint8_t> simulated_pixel_status(const DetectorDescription& detector,
                                                 const SimulatorConfig& config);

class DetectorSimulator {
 public:
  // Builds the constants and the powder pattern (`pool` only speeds this up). Throws InputError
  // naming the config field and value when the configuration is unusable.
  DetectorSimulator(DetectorDescription detector, SimulatorConfig config,
                    ThreadPool* pool = nullptr);

  const DetectorDescription& detector() const { return detector_; }
  const SimulatorConfig& config() const { return config_; }
  // The true constants the raw data is made with: pedestals, gains, mask, ePix10ka configuration
  // (float32 and integer images: pedestal 0, gain 1).
  const CalibrationConstants& constants() const { return constants_; }
  const PowderGeometry& powder_geometry() const { return powder_; }

  // Deterministic: the same (seed, index) gives the same bytes on any thread; thread-safe (const).
  // raw: detector.raw_event_bytes() bytes. truth may be null. pool may be null (single-threaded).
  void generate(std::uint64_t index, void* raw, EventTruth* truth = nullptr,
                ThreadPool* pool = nullptr) const;
  // Whether event `index` has Bragg peaks, without generating it.
  bool is_hit(std::uint64_t index) const;
  // `count` event indices holding the configured hit fraction in whole events: the earliest
  // llround(hit_fraction * count) hit indices and the earliest non-hit ones, in ascending order.
  // A source that cycles a small pool of events shows the hit rate of its pool; the first
  // `count` indices may hold none (the default seed's first 64 events hold one hit).
  std::vector<std::uint64_t> representative_indices(std::size_t count) const;
  // sequence = index, pulse_id = first_pulse_id + pulses_per_event * index, timestamp from
  // start_time_ns at event_rate_hz.
  EventHeader header_for(std::uint64_t index) const;

 private:
  struct EventPlan;
  EventPlan plan_event(std::uint64_t index) const;
  void generate_rows(std::uint64_t index, const EventPlan& plan, std::size_t first_row,
                     std::size_t end_row, void* raw, EventTruth* truth, std::size_t& switched,
                     std::size_t& bad_gain) const;

  DetectorDescription detector_;
  SimulatorConfig config_;
  CalibrationConstants constants_;
  PowderGeometry powder_;
  std::vector<std::uint8_t> defect_;          // per pixel: PixelDefect
  std::vector<float> powder_mean_photons_;    // per pixel: mean photons from rings + background
  std::vector<float> powder_exp_minus_mean_;  // per pixel: exp(-mean), cached for Poisson draws
};

}  // namespace livedrp
