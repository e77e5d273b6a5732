// Simulator ground truth is self-consistent: the raw bytes, the constants and the truth tell the
// same story, checked with values the tests compute themselves (erf integrals of the true peaks,
// medians, Poisson probabilities, binomial counts) and tolerances derived from the noise and
// counting statistics of the configuration.
//
// Statistical comparisons use kSigmas standard deviations: a false failure then has a probability
// of ~6e-7 per comparison, and since every draw is a function of the seed the outcome is fixed.
#include <QtTest>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <numbers>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "calib/calibrate_cpu.hpp"
#include "calib/calibration_math.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "sim/simulator.hpp"

using namespace livedrp;

namespace {

constexpr double kSigmas = 5.0;
constexpr std::uint16_t kAdcMax = 16383;  // 14-bit ADC
// Median of n normal samples: its standard deviation is sqrt(pi / 2) sigma / sqrt(n) for large n.
const double kMedianEfficiency = std::sqrt(std::numbers::pi / 2.0);
// Rounding to an integer ADC count adds a uniform error of variance 1/12 ADU^2.
constexpr double kRoundingVarianceAdu2 = 1.0 / 12.0;

// One raw event buffer of any encoding (uint16 words or float32 values).
struct RawEvent {
  explicit RawEvent(const DetectorDescription& d)
      : words(d.encoding == RawEncoding::Float32 ? 0 : d.pixels()),
        values(d.encoding == RawEncoding::Float32 ? d.pixels() : 0) {}
  void* data() { return words.empty() ? static_cast<void*>(values.data()) : words.data(); }
  const void* data() const {
    return words.empty() ? static_cast<const void*>(values.data()) : words.data();
  }
  std::size_t bytes() const { return words.size() * 2 + values.size() * 4; }
  bool operator==(const RawEvent& other) const {
    return words == other.words && values == other.values;
  }
  std::vector<std::uint16_t> words;
  std::vector<float> values;
};

// Nothing but electronics: no photons of any kind.
SimulatorConfig no_photon_config() {
  SimulatorConfig c;
  c.hit_fraction = 0;
  c.background_photons = 0;
  c.ring_peak_photons = 0;
  c.bright_spots_per_event = 0;
  return c;
}

// The configurations the suite runs the built-in detectors with.
enum class Scene {
  Default,          // SimulatorConfig{}
  NoPhotons,        // no_photon_config()
  AllHits,          // every event has Bragg peaks: bright pixels switch gain
  AllHitsNoPowder,  // every event has Bragg peaks and nothing else but bright spots
};
// Every scene deals all five ePix10ka gain configurations to the ASICs (a test fixture: the
// default configures every ASIC AHL, as a facility runs it; epix10kaDefaultIsAutoHighToLow), so
// that one event shows every configuration and all seven gain modes.
SimulatorConfig config_for(Scene scene) {
  SimulatorConfig c;
  c.epix10ka_asic_configs = every_epix10ka_config();
  switch (scene) {
    case Scene::Default:
      break;
    case Scene::NoPhotons:
      c = no_photon_config();
      break;
    case Scene::AllHits:
      c.hit_fraction = 1;
      break;
    case Scene::AllHitsNoPowder:
      c.hit_fraction = 1;
      c.background_photons = 0;  // a window sum is then all peak: no background to fit
      c.ring_peak_photons = 0;
      break;
  }
  return c;
}

// A detector described inline: `segments` segments of rows x cols, laid out in a row with gaps.
DetectorDescription small_detector(const std::string& encoding, int segments, int rows, int cols,
                                   int asic_rows, int asic_cols, int bank_columns,
                                   int gap_px = 10) {
  nlohmann::json modes = nlohmann::json::array();
  if (encoding == "jungfrau")
    modes = {{{"name", "G0"}, {"nominal_adu_per_kev", 40.0}},
             {{"name", "G1"}, {"nominal_adu_per_kev", 1.5}},
             {{"name", "G2"}, {"nominal_adu_per_kev", 0.1}}};
  else
    modes = {{{"name", "calibrated"}, {"nominal_adu_per_kev", 1.0}}};
  nlohmann::json placement = nlohmann::json::array();
  for (int s = 0; s < segments; ++s)
    placement.push_back({{"x_px", (s % 2) * (cols + gap_px)},
                         {"y_px", (s / 2) * (rows + gap_px)},
                         {"rotation_deg", 0}});
  const nlohmann::json description = {{"schema_version", 1},
                                      {"name", "small_" + encoding},
                                      {"raw_encoding", encoding},
                                      {"segments", segments},
                                      {"segment_shape", {rows, cols}},
                                      {"pixel_size_um", 75.0},
                                      {"asic_shape", {asic_rows, asic_cols}},
                                      {"bank_columns", bank_columns},
                                      {"gain_modes", modes},
                                      {"placement", placement}};
  return parse_detector_description(description, "test_simulator");
}

// Fraction of a 1-D Gaussian (centre, sigma) that falls on pixel `index` (edges at index +- 0.5).
double pixel_fraction(double centre, double sigma, int index) {
  const double scale = 1.0 / (std::numbers::sqrt2 * sigma);
  return 0.5 *
         (std::erf((index + 0.5 - centre) * scale) - std::erf((index - 0.5 - centre) * scale));
}

// Expected energy (keV) that the true sources of an event put on one pixel.
double expected_kev(const EventTruth& truth, int segment, int row, int col) {
  double sum = 0;
  for (const TruePeak& peak : truth.peaks) {
    if (peak.segment != segment || std::abs(peak.row - row) > 10 * peak.sigma_px + 1 ||
        std::abs(peak.col - col) > 10 * peak.sigma_px + 1)
      continue;
    sum += peak.intensity_kev * pixel_fraction(peak.row, peak.sigma_px, row) *
           pixel_fraction(peak.col, peak.sigma_px, col);
  }
  for (const TruePeak& spot : truth.bright_spots)
    if (spot.segment == segment && int(spot.row) == row && int(spot.col) == col)
      sum += spot.intensity_kev;
  return sum;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return 0.5 * (values[(n - 1) / 2] + values[n / 2]);
}

// Binomial count: |count - n p| within kSigmas standard deviations.
bool binomial_consistent(std::size_t count, std::size_t trials, double probability) {
  const double mean = double(trials) * probability;
  const double sigma = std::sqrt(double(trials) * probability * (1 - probability));
  return std::abs(double(count) - mean) <= kSigmas * sigma + 0.5;
}

std::uint16_t adc_of(std::uint16_t word) {
  return word & calib::kAdcBits;
}

}  // namespace

class TestSimulator : public QObject {
  Q_OBJECT

  // Building a simulator makes its constants (up to 15 M pedestal and gain pairs): the suite
  // builds each (detector, scene) once and shares it between test functions.
  ThreadPool pool_{2};
  std::map<std::pair<std::string, Scene>, std::unique_ptr<DetectorSimulator>> simulators_;

  const DetectorSimulator& simulator(const std::string& detector, Scene scene) {
    auto& slot = simulators_[{detector, scene}];
    if (!slot)
      slot =
          std::make_unique<DetectorSimulator>(find_detector(detector), config_for(scene), &pool_);
    return *slot;
  }

 private slots:
  void sameIndexGivesIdenticalBytes() {
    const DetectorSimulator& first = simulator("epix10ka2m", Scene::Default);
    const DetectorDescription& d = first.detector();
    DetectorSimulator second(d, config_for(Scene::Default), &pool_);  // built apart, same seed
    RawEvent a(d), b(d);
    first.generate(7, a.data());
    second.generate(7, b.data());
    QVERIFY(a == b);
    first.generate(7, b.data());
    QVERIFY(a == b);
    // The constants depend only on the seed.
    QVERIFY(first.constants().pixel_status == second.constants().pixel_status);
    QVERIFY(std::memcmp(first.constants().pedestal_gain.data(),
                        second.constants().pedestal_gain.data(),
                        first.constants().pedestal_gain.size() * sizeof(calib::PedestalGain)) == 0);
  }

  void differentIndexOrSeedGivesDifferentData() {
    const DetectorSimulator& jungfrau = simulator("jungfrau4m", Scene::Default);
    const DetectorDescription& d = jungfrau.detector();
    RawEvent a(d), b(d);
    jungfrau.generate(7, a.data(), nullptr, &pool_);
    jungfrau.generate(8, b.data(), nullptr, &pool_);
    // Noise of several ADU makes equal words rare (a few percent): most of them must differ.
    std::size_t differing = 0;
    for (std::size_t p = 0; p < d.pixels(); ++p) differing += a.words[p] != b.words[p];
    QVERIFY2(differing > d.pixels() * 9 / 10, qPrintable(QString::number(differing)));

    SimulatorConfig other_seed;
    other_seed.seed += 1;
    DetectorSimulator reseeded(d, other_seed, &pool_);
    std::size_t differing_pedestals = 0;
    for (std::size_t p = 0; p < d.pixels(); ++p)
      differing_pedestals +=
          reseeded.constants().at(0, p).pedestal != jungfrau.constants().at(0, p).pedestal;
    QVERIFY(differing_pedestals > d.pixels() * 9 / 10);
  }

  void poolGivesSameBytesAsSingleThread() {
    for (const char* name : {"epix10ka2m", "jungfrau4m", "generic_f32"}) {
      const DetectorSimulator& pool_built = simulator(name, Scene::AllHits);
      const DetectorDescription& d = pool_built.detector();
      DetectorSimulator serial_built(d, pool_built.config());
      QVERIFY(serial_built.constants().pixel_status == pool_built.constants().pixel_status);
      RawEvent serial(d), parallel(d);
      EventTruth serial_truth, parallel_truth;
      serial_built.generate(3, serial.data(), &serial_truth);
      pool_built.generate(3, parallel.data(), &parallel_truth, &pool_);
      QVERIFY2(serial == parallel, name);
      QCOMPARE(parallel_truth.gain_switched_pixels, serial_truth.gain_switched_pixels);
      QCOMPARE(parallel_truth.bad_gain_pixels, serial_truth.bad_gain_pixels);
      QVERIFY(parallel_truth.common_mode_adu == serial_truth.common_mode_adu);
      QCOMPARE(parallel_truth.peaks.size(), serial_truth.peaks.size());
    }
  }

  void gainsFollowTheNominalConversionPerMode() {
    for (const char* name : {"epix10ka2m", "jungfrau4m"}) {
      const DetectorSimulator& sim = simulator(name, Scene::Default);
      const DetectorDescription& d = sim.detector();
      const SimulatorConfig& config = sim.config();
      const CalibrationConstants& k = sim.constants();
      QCOMPARE(k.modes, d.modes());
      QCOMPARE(k.pixels, d.pixels());
      std::set<double> pedestal_means;
      for (int mode = 0; mode < d.modes(); ++mode) {
        // 1 / gain is the ADU per keV: nominal * (1 + spread * N(0, 1)).
        double adu_per_kev_sum = 0, pedestal_sum = 0;
        for (std::size_t p = 0; p < d.pixels(); ++p) {
          adu_per_kev_sum += 1.0 / double(k.at(mode, p).gain);
          pedestal_sum += double(k.at(mode, p).pedestal);
        }
        const double nominal = d.gain_modes[std::size_t(mode)].nominal_adu_per_kev;
        const double n = double(d.pixels());
        QVERIFY(std::abs(adu_per_kev_sum / n - nominal) <=
                kSigmas * config.gain_spread * nominal / std::sqrt(n) + 1e-6 * nominal);
        const double pedestal_mean = pedestal_sum / n;
        QVERIFY2(pedestal_mean > 1000 && pedestal_mean < 2500,
                 qPrintable(QString::number(pedestal_mean)));
        pedestal_means.insert(std::round(pedestal_mean));
      }
      // Each mode has its own pedestal level, so reading the wrong plane shows.
      QCOMPARE(int(pedestal_means.size()), d.modes());
    }
  }

  void epix10kaConfigurationIsConstantPerAsicAndCoversAllFive() {
    const DetectorSimulator& epix = simulator("epix10ka2m", Scene::Default);
    const DetectorDescription& d = epix.detector();
    std::set<int> configs;
    for (int s = 0; s < d.segments; ++s)
      for (int ar = 0; ar < d.rows; ar += d.asic_rows)
        for (int ac = 0; ac < d.cols; ac += d.asic_cols) {
          const auto config_at = [&](int r, int c) {
            return epix.constants().pixel_status[(std::size_t(s) * d.rows + r) * d.cols + c] &
                   calib::kStatusConfigBits;
          };
          const int config = config_at(ar, ac);
          for (int r = ar; r < ar + d.asic_rows; ++r)
            for (int c = ac; c < ac + d.asic_cols; ++c) QCOMPARE(config_at(r, c), config);
          configs.insert(config);
        }
    QCOMPARE(configs, (std::set<int>{0, 1, 2, 3, 4}));
  }

  // Out of the box every ASIC is auto high-to-low (what an SFX run configures), and a list deals
  // its configurations to the ASICs in turn, in segment, row, column order.
  void epix10kaDefaultIsAutoHighToLowAndAListIsDealtByAsic() {
    const DetectorDescription d = find_detector("epix10ka2m");
    const DetectorSimulator defaults(d, SimulatorConfig{}, &pool_);
    std::array<std::size_t, 8> count{};
    for (const std::uint8_t status : defaults.constants().pixel_status)
      ++count[status & calib::kStatusConfigBits];
    QCOMPARE(count[calib::kConfigAHL], d.pixels());

    SimulatorConfig dealt;
    dealt.epix10ka_asic_configs = {calib::kConfigFM, calib::kConfigFH, calib::kConfigFH};
    const DetectorSimulator two_to_one(d, dealt, &pool_);
    const int asics_across = d.cols / d.asic_cols, asics_down = d.rows / d.asic_rows;
    for (int s = 0; s < d.segments; ++s)
      for (int ar = 0; ar < asics_down; ++ar)
        for (int ac = 0; ac < asics_across; ++ac) {
          const int asic = (s * asics_down + ar) * asics_across + ac;
          const std::size_t corner =
              (std::size_t(s) * d.rows + std::size_t(ar * d.asic_rows)) * d.cols +
              std::size_t(ac * d.asic_cols);
          QCOMPARE(int(two_to_one.constants().pixel_status[corner] & calib::kStatusConfigBits),
                   asic % 3 == 0 ? int(calib::kConfigFM) : int(calib::kConfigFH));
        }
  }

  void everyEpix10kaModeOccursAndSwitchCountMatchesTruth() {
    const DetectorSimulator& epix = simulator("epix10ka2m", Scene::Default);
    const DetectorDescription& d = epix.detector();
    RawEvent raw(d);
    std::array<std::size_t, calib::kEpix10kaModes> mode_counts{};
    for (std::uint64_t event = 0; event < 3; ++event) {
      EventTruth truth;
      epix.generate(event, raw.data(), &truth, &pool_);
      std::size_t low_gain_bits = 0;
      for (std::size_t p = 0; p < d.pixels(); ++p) {
        const std::uint8_t status = epix.constants().pixel_status[p];
        const calib::DecodedPixel pixel = calib::decode_epix10ka(raw.words[p], status);
        if (pixel.bad) continue;
        ++mode_counts[std::size_t(pixel.mode)];
        if (raw.words[p] & 0x4000) {
          ++low_gain_bits;
          // Only the auto-ranging configurations switch.
          const int config = status & calib::kStatusConfigBits;
          QVERIFY(config == calib::kConfigAHL || config == calib::kConfigAML);
        }
      }
      QVERIFY(truth.gain_switched_pixels > 0);
      QCOMPARE(low_gain_bits, truth.gain_switched_pixels);
      QCOMPARE(truth.bad_gain_pixels, std::size_t(0));
    }
    for (int mode = 0; mode < calib::kEpix10kaModes; ++mode)
      QVERIFY2(mode_counts[std::size_t(mode)] > 0, qPrintable(QString("mode %1").arg(mode)));
  }

  void jungfrauStagesAndBadBitsOccurAndMatchTruth() {
    const DetectorSimulator& jungfrau = simulator("jungfrau4m", Scene::Default);
    const DetectorDescription& d = jungfrau.detector();
    const SimulatorConfig& config = jungfrau.config();
    RawEvent raw(d);
    std::array<std::size_t, 4> stage_counts{};  // by bits 15:14
    std::size_t bad_total = 0, unmasked_total = 0;
    for (std::uint64_t event = 0; event < 2; ++event) {
      EventTruth truth;
      jungfrau.generate(event, raw.data(), &truth, &pool_);
      std::size_t switched = 0, bad = 0;
      for (std::size_t p = 0; p < d.pixels(); ++p) {
        if (jungfrau.constants().masked(p)) {
          QCOMPARE(raw.words[p] >> 14, 0);  // defective pixels stay in g0
          continue;
        }
        ++unmasked_total;
        const unsigned stage = raw.words[p] >> 14;
        ++stage_counts[stage];
        switched += stage == 1 || stage == 3;
        bad += stage == 2;
      }
      QCOMPARE(switched, truth.gain_switched_pixels);
      QCOMPARE(bad, truth.bad_gain_pixels);
      bad_total += bad;
    }
    QVERIFY(stage_counts[0] > 0);  // g0
    QVERIFY(stage_counts[1] > 0);  // g1
    QVERIFY(stage_counts[3] > 0);  // g2
    QVERIFY(stage_counts[2] > 0);  // invalid 10
    QVERIFY2(binomial_consistent(bad_total, unmasked_total, config.bad_gain_bits_fraction),
             qPrintable(QString("%1 bad of %2").arg(bad_total).arg(unmasked_total)));
  }

  // A pixel leaves its high gain exactly when the charge would overflow the 14-bit ADC there:
  // the energy it measured in the low stage, put back through the higher stage's pedestal and
  // gain, lands above 2^14 - 1 (within the low stage's noise); pixels that stayed never clip.
  void gainSwitchesOnlyWhenTheHigherStageWouldOverflow() {
    for (const char* name : {"epix10ka2m", "jungfrau4m"}) {
      const DetectorSimulator& sim = simulator(name, Scene::AllHits);
      const DetectorDescription& d = sim.detector();
      const SimulatorConfig& config = sim.config();
      const CalibrationConstants& k = sim.constants();
      RawEvent raw(d);
      EventTruth truth;
      sim.generate(0, raw.data(), &truth, &pool_);
      std::size_t checked_switched = 0;
      for (std::size_t p = 0; p < d.pixels(); ++p) {
        if (k.masked(p)) continue;
        const std::uint16_t word = raw.words[p];
        const calib::DecodedPixel pixel = d.encoding == RawEncoding::Epix10ka
                                              ? calib::decode_epix10ka(word, k.pixel_status[p])
                                              : calib::decode_jungfrau(word, k.pixel_status[p]);
        if (pixel.bad) continue;
        const int config_bits = k.pixel_status[p] & calib::kStatusConfigBits;
        const bool auto_ranging = d.encoding == RawEncoding::Jungfrau ||
                                  config_bits == calib::kConfigAHL ||
                                  config_bits == calib::kConfigAML;
        if (!auto_ranging) continue;
        // The stage below the one read out (Jungfrau g2 <- g1 <- g0; ePix10ka L <- H or M).
        int previous = -1;
        if (d.encoding == RawEncoding::Jungfrau)
          previous = pixel.mode - 1;
        else if (pixel.mode == calib::kAHL_L)
          previous = calib::kAHL_H;
        else if (pixel.mode == calib::kAML_L)
          previous = calib::kAML_M;
        const bool final_stage =
            d.encoding == RawEncoding::Jungfrau ? pixel.mode == 2 : previous >= 0;
        if (!final_stage)
          QVERIFY2(adc_of(word) < kAdcMax, qPrintable(QString("%1 pixel %2").arg(name).arg(p)));
        if (previous < 0) continue;
        const double common_mode = truth.common_mode_adu[p / std::size_t(d.bank_columns)];
        const calib::PedestalGain now = k.at(pixel.mode, p), before = k.at(previous, p);
        const double energy_kev = (adc_of(word) - now.pedestal - common_mode) * now.gain;
        const double reading_before = before.pedestal + common_mode + energy_kev / before.gain;
        // Noise and rounding of the low-stage reading, carried into the higher stage's ADU.
        const double uncertainty_adu =
            kSigmas * std::sqrt(config.noise_adu * config.noise_adu + kRoundingVarianceAdu2) *
            (1.0 + double(now.gain) / double(before.gain));
        QVERIFY2(reading_before > kAdcMax - uncertainty_adu,
                 qPrintable(QString("%1 pixel %2: %3 ADU in mode %4")
                                .arg(name)
                                .arg(p)
                                .arg(reading_before)
                                .arg(previous)));
        ++checked_switched;
      }
      QCOMPARE(checked_switched, truth.gain_switched_pixels);
    }
  }

  // Calibrating with the simulator's own constants (common mode on) returns each true peak: the
  // summed keV in a +-4 sigma window equals the expected energy of the true sources on its
  // unmasked pixels within kSigmas of: electronic noise and ADC rounding at each pixel's gain,
  // Poisson statistics of the photons, and the error of each bank row's common-mode median
  // (shared by all window pixels of that bank row). Peaks with a clipped (saturated) pixel are
  // left out: the ADC lost their charge.
  void calibrationRecoversTruePeaks() {
    for (const char* name : {"epix10ka2m", "jungfrau4m", "generic_f32"}) {
      const DetectorSimulator& sim = simulator(name, Scene::AllHitsNoPowder);
      const DetectorDescription& d = sim.detector();
      const SimulatorConfig& config = sim.config();
      const CalibrationConstants& k = sim.constants();
      const bool integer_adc = d.encoding != RawEncoding::Float32;
      const double pixel_noise2 = integer_adc
                                      ? config.noise_adu * config.noise_adu + kRoundingVarianceAdu2
                                      : config.float32_noise_kev * config.float32_noise_kev;
      const double median_sigma_adu =
          d.bank_columns > 0 ? kMedianEfficiency * std::sqrt(pixel_noise2 / d.bank_columns) : 0;
      calib::CalibrationParams params;
      params.common_mode = true;
      RawEvent raw(d);
      std::vector<float> calibrated(d.pixels());
      std::size_t tested = 0, saturated = 0, with_switched_pixels = 0;
      double pull_squared_sum = 0;
      for (std::uint64_t event = 0; event < 2; ++event) {
        EventTruth truth;
        sim.generate(event, raw.data(), &truth, &pool_);
        QVERIFY(truth.hit);
        calibrate_event_cpu(d, k, params, raw.data(), calibrated.data(), &pool_);
        for (const TruePeak& peak : truth.peaks) {
          const int half = int(std::ceil(4 * peak.sigma_px));
          const int row0 = int(std::lround(peak.row)) - half,
                    col0 = int(std::lround(peak.col)) - half;
          double measured = 0, expected = 0, variance = 0;
          bool clipped = false, switched = false;
          std::vector<std::pair<std::size_t, double>> bank_gain;  // bank row, summed gain
          for (int r = row0; r <= row0 + 2 * half; ++r)
            for (int c = col0; c <= col0 + 2 * half; ++c) {
              const std::size_t p = (std::size_t(peak.segment) * d.rows + r) * d.cols + c;
              const calib::DecodedPixel pixel =
                  calib::decode_raw(d.encoding, raw.data(), p, k.pixel_status[p]);
              if (pixel.bad) continue;
              if (integer_adc && adc_of(raw.words[p]) == kAdcMax) clipped = true;
              switched =
                  switched || (d.encoding == RawEncoding::Epix10ka ? pixel.mode >= calib::kAHL_L
                                                                   : pixel.mode > 0);
              const double gain = k.at(pixel.mode, p).gain;
              const double pixel_kev = expected_kev(truth, peak.segment, r, c);
              measured += calibrated[p];
              expected += pixel_kev;
              variance += pixel_noise2 * gain * gain + pixel_kev * config.photon_energy_kev;
              if (d.bank_columns > 0) {
                const std::size_t bank_row = p / std::size_t(d.bank_columns);
                if (bank_gain.empty() || bank_gain.back().first != bank_row)
                  bank_gain.push_back({bank_row, 0.0});
                bank_gain.back().second += gain;
              }
            }
          if (clipped) {
            ++saturated;
            continue;
          }
          for (const auto& [bank_row, gain_sum] : bank_gain)
            variance += (gain_sum * median_sigma_adu) * (gain_sum * median_sigma_adu);
          const double pull = (measured - expected) / std::sqrt(variance);
          QVERIFY2(std::abs(pull) < kSigmas,
                   qPrintable(QString("%1 event %2 peak at segment %3 (%4, %5), %6 photons: "
                                      "measured %7 keV, expected %8 keV, sigma %9 keV")
                                  .arg(name)
                                  .arg(event)
                                  .arg(peak.segment)
                                  .arg(peak.row)
                                  .arg(peak.col)
                                  .arg(peak.photons)
                                  .arg(measured)
                                  .arg(expected)
                                  .arg(std::sqrt(variance))));
          pull_squared_sum += pull * pull;
          ++tested;
          with_switched_pixels += switched;
        }
      }
      // Enough peaks were compared, bright ones with switched pixels among them, and the spread
      // of the pulls matches the derived uncertainty (mean pull^2 is 1 +- sqrt(2 / tested)).
      const double mean_pull_squared = pull_squared_sum / double(tested);
      qInfo("%s: %zu peaks recovered (%zu with switched pixels), %zu clipped; mean pull^2 %.2f",
            name, tested, with_switched_pixels, saturated, mean_pull_squared);
      QVERIFY(tested >= 20);
      if (integer_adc) QVERIFY(with_switched_pixels > 0);
      QVERIFY(std::abs(mean_pull_squared - 1.0) < kSigmas * std::sqrt(2.0 / double(tested)));
    }
  }

  // On an event without photons, the median of (adc - pedestal) over a bank row's good pixels is
  // the common-mode offset the simulator added, to within the median's statistical error
  // sqrt(pi / 2) * sigma / sqrt(n), sigma^2 = noise^2 + 1/12 (ADC rounding).
  void commonModeTruthIsRecoveredByBankRowMedians() {
    for (const char* name : {"epix10ka2m", "jungfrau4m"}) {
      const DetectorSimulator& sim = simulator(name, Scene::NoPhotons);
      const DetectorDescription& d = sim.detector();
      const SimulatorConfig& config = sim.config();
      const CalibrationConstants& k = sim.constants();
      RawEvent raw(d);
      EventTruth truth;
      sim.generate(5, raw.data(), &truth, &pool_);
      QCOMPARE(truth.common_mode_adu.size(), d.bank_rows());
      const double pixel_sigma =
          std::sqrt(config.noise_adu * config.noise_adu + kRoundingVarianceAdu2);
      double difference_sum = 0, difference_sq_sum = 0, worst = 0, truth_sq_sum = 0;
      double predicted_variance_sum = 0;
      std::vector<double> offsets;
      for (std::size_t bank_row = 0; bank_row < d.bank_rows(); ++bank_row) {
        offsets.clear();
        for (std::size_t p = bank_row * d.bank_columns; p < (bank_row + 1) * d.bank_columns; ++p) {
          const calib::DecodedPixel pixel =
              calib::decode_raw(d.encoding, raw.data(), p, k.pixel_status[p]);
          if (!pixel.bad)
            offsets.push_back(double(pixel.adc) - double(k.at(pixel.mode, p).pedestal));
        }
        const double median_sigma =
            kMedianEfficiency * pixel_sigma / std::sqrt(double(offsets.size()));
        const double difference = median(offsets) - double(truth.common_mode_adu[bank_row]);
        difference_sum += difference;
        difference_sq_sum += difference * difference;
        predicted_variance_sum += median_sigma * median_sigma;
        worst = std::max(worst, std::abs(difference) / median_sigma);
        truth_sq_sum += double(truth.common_mode_adu[bank_row]) * truth.common_mode_adu[bank_row];
      }
      const double rows = double(d.bank_rows());
      const double rms = std::sqrt(difference_sq_sum / rows);
      const double predicted_rms = std::sqrt(predicted_variance_sum / rows);
      qInfo("%s: median - truth: mean %.4f ADU, rms %.4f ADU (predicted %.4f), worst %.2f sigma",
            name, difference_sum / rows, rms, predicted_rms, worst);
      // Unbiased, with the predicted spread: the large-n formula is within ~5% at n = 48..64.
      QVERIFY(std::abs(difference_sum / rows) < kSigmas * predicted_rms / std::sqrt(rows));
      QVERIFY(std::abs(rms / predicted_rms - 1.0) < 0.1);
      // Max of ~50 000 normal deviates stays below 6 sigma (P(|z| > 6) * 5e4 ~ 1e-4).
      QVERIFY(worst < 6.0);
      // The offsets themselves have the configured spread (relative error of an rms: 1/sqrt(2N)).
      QVERIFY(std::abs(std::sqrt(truth_sq_sum / rows) / config.common_mode_sigma_adu - 1.0) <
              kSigmas / std::sqrt(2 * rows));
    }
  }

  void hitFractionMatchesConfig() {
    // is_hit() depends on the seed and the index only: a small detector is built quickly.
    SimulatorConfig config;
    config.hit_fraction = 0.1;
    DetectorSimulator sim(small_detector("float32", 1, 64, 64, 64, 64, 0), config);
    constexpr std::size_t kIndices = 20000;
    std::size_t hits = 0;
    for (std::uint64_t i = 0; i < kIndices; ++i) hits += sim.is_hit(i);
    QVERIFY2(binomial_consistent(hits, kIndices, config.hit_fraction),
             qPrintable(QString("%1 hits of %2").arg(hits).arg(kIndices)));
  }

  // Generated events agree with is_hit(), and hits carry peaks within the configured ranges, away
  // from ASIC edges. A small Jungfrau-like detector keeps 200 events cheap.
  // A representative pool holds the hit fraction in whole events: the earliest hit and non-hit
  // indices, ascending, distinct; a fraction of 0 or 1 gives the first indices.
  void representativeIndicesHoldTheHitFraction() {
    const DetectorDescription d = find_detector("generic_f32");
    SimulatorConfig config;
    config.hit_fraction = 0.1;
    const DetectorSimulator tenth(d, config, &pool_);
    const std::vector<std::uint64_t> indices = tenth.representative_indices(20);
    QCOMPARE(indices.size(), std::size_t(20));
    QVERIFY(std::is_sorted(indices.begin(), indices.end()));
    QVERIFY(std::adjacent_find(indices.begin(), indices.end()) == indices.end());
    std::size_t hits = 0;
    for (std::uint64_t index : indices) hits += tenth.is_hit(index) ? 1 : 0;
    QCOMPARE(hits, std::size_t(2));
    // The earliest of each kind: every index below the last one taken that is left out is of a
    // kind the pool already had enough of.
    std::size_t hits_before = 0, misses_before = 0;
    for (std::uint64_t index = 0; index <= indices.back(); ++index) {
      const bool taken = std::binary_search(indices.begin(), indices.end(), index);
      const bool hit = tenth.is_hit(index);
      if (!taken) QVERIFY(hit ? hits_before == 2 : misses_before == 18);
      if (taken) (hit ? hits_before : misses_before) += 1;
    }
    for (const double fraction : {0.0, 1.0}) {
      config.hit_fraction = fraction;
      const DetectorSimulator all_or_none(d, config, &pool_);
      const std::vector<std::uint64_t> first = all_or_none.representative_indices(5);
      QCOMPARE(first, (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
    }
  }

  void generatedTruthAgreesWithIsHit() {
    const DetectorDescription d = small_detector("jungfrau", 2, 64, 128, 32, 64, 64);
    SimulatorConfig config;
    config.hit_fraction = 0.3;
    DetectorSimulator sim(d, config);
    RawEvent raw(d);
    std::size_t hits = 0;
    constexpr std::uint64_t kEvents = 200;
    for (std::uint64_t i = 0; i < kEvents; ++i) {
      EventTruth truth;
      sim.generate(i, raw.data(), &truth);
      QCOMPARE(truth.index, i);
      QCOMPARE(truth.hit, sim.is_hit(i));
      QCOMPARE(int(truth.bright_spots.size()), config.bright_spots_per_event);
      hits += truth.hit;
      if (!truth.hit) {
        QVERIFY(truth.peaks.empty());
        continue;
      }
      QVERIFY(int(truth.peaks.size()) >= config.peaks_per_hit_min);
      QVERIFY(int(truth.peaks.size()) <= config.peaks_per_hit_max);
      for (const TruePeak& peak : truth.peaks) {
        QVERIFY(peak.photons >= config.peak_photons_min && peak.photons <= config.peak_photons_max);
        QVERIFY(peak.sigma_px >= config.peak_sigma_min_px &&
                peak.sigma_px <= config.peak_sigma_max_px);
        QCOMPARE(peak.intensity_kev, peak.photons * config.photon_energy_kev);
        const double in_asic_row = std::fmod(peak.row, d.asic_rows);
        const double in_asic_col = std::fmod(peak.col, d.asic_cols);
        QVERIFY(in_asic_row >= config.peak_edge_margin_px &&
                in_asic_row <= d.asic_rows - 1 - config.peak_edge_margin_px);
        QVERIFY(in_asic_col >= config.peak_edge_margin_px &&
                in_asic_col <= d.asic_cols - 1 - config.peak_edge_margin_px);
      }
    }
    QVERIFY(binomial_consistent(hits, kEvents, config.hit_fraction));
  }

  // Masked pixels are exactly the dead ones (same reading on every event: their pedestal) and the
  // hot ones (far above their pedestal on every event); their counts match the fractions.
  void maskedPixelsAreExactlyTheDeadAndHotOnes() {
    const DetectorSimulator& epix = simulator("epix10ka2m", Scene::NoPhotons);
    const DetectorDescription& d = epix.detector();
    const SimulatorConfig& config = epix.config();
    const CalibrationConstants& k = epix.constants();
    // A live pixel repeats a reading between two events with probability ~1 / (2 sqrt(pi) 9)
    // (noise plus common mode, ~9 ADU): over 8 events all equal has ~1e-11 per pixel.
    constexpr int kEvents = 8;
    std::vector<RawEvent> events;
    for (int e = 0; e < kEvents; ++e) {
      events.emplace_back(d);
      epix.generate(std::uint64_t(e), events.back().data(), nullptr, &pool_);
    }
    std::size_t dead = 0, hot = 0;
    for (std::size_t p = 0; p < d.pixels(); ++p) {
      const int mode = k.pixel_status[p] & calib::kStatusConfigBits;  // unswitched mode
      const double pedestal = k.at(mode, p).pedestal;
      bool constant = true, always_high = true;
      for (int e = 0; e < kEvents; ++e) {
        constant = constant && events[std::size_t(e)].words[p] == events[0].words[p];
        always_high = always_high && adc_of(events[std::size_t(e)].words[p]) - pedestal >
                                         config.hot_pixel_offset_adu / 2;
      }
      QVERIFY(!(constant && always_high));
      QCOMPARE(k.masked(p), constant || always_high);
      if (constant) {
        ++dead;
        QVERIFY(std::abs(adc_of(events[0].words[p]) - pedestal) <= 0.5);
      }
      hot += always_high;
    }
    QVERIFY2(binomial_consistent(dead, d.pixels(), config.dead_pixel_fraction),
             qPrintable(QString::number(dead)));
    QVERIFY2(binomial_consistent(hot, d.pixels(), config.hot_pixel_fraction),
             qPrintable(QString::number(hot)));
  }

  // Photon counts are Poisson: float32 data without noise is photons * E exactly, so the count
  // histogram can be compared with the Poisson probabilities bin by bin, for a mean drawn by
  // inversion and one above the inversion limit (normal approximation: mean and variance).
  void photonCountsArePoisson() {
    const DetectorDescription d = find_detector("generic_f32");
    for (const double mean : {0.5, 80.0}) {
      SimulatorConfig config = no_photon_config();
      config.float32_noise_kev = 0;
      config.dead_pixel_fraction = 0;
      config.hot_pixel_fraction = 0;
      config.background_photons = mean;
      DetectorSimulator sim(d, config, &pool_);
      RawEvent raw(d);
      sim.generate(0, raw.data(), nullptr, &pool_);
      std::vector<std::size_t> histogram(64);
      double sum = 0, sum_sq = 0;
      for (float value : raw.values) {
        const double photons = double(value) / config.photon_energy_kev;
        QCOMPARE(photons, std::round(photons));
        sum += photons;
        sum_sq += photons * photons;
        if (photons < double(histogram.size())) ++histogram[std::size_t(photons)];
      }
      const double n = double(d.pixels());
      const double sample_mean = sum / n, sample_variance = sum_sq / n - sample_mean * sample_mean;
      QVERIFY(std::abs(sample_mean - mean) < kSigmas * std::sqrt(mean / n));
      // Variance of a sample variance of a Poisson: (mean + 2 mean^2) / n.
      QVERIFY(std::abs(sample_variance - mean) < kSigmas * std::sqrt((mean + 2 * mean * mean) / n));
      if (mean < 30) {
        double probability = std::exp(-mean);
        for (std::size_t count = 0; count < 6; ++count) {
          QVERIFY2(
              binomial_consistent(histogram[count], d.pixels(), probability),
              qPrintable(QString("%1 pixels with %2 photons").arg(histogram[count]).arg(count)));
          probability *= mean / double(count + 1);
        }
      }
    }
  }

  // Integer images: each healthy pixel's word is its photon count (Poisson: the histogram bin by
  // bin), the description's gap rows and columns and the dead pixels read the encoding's bad-pixel
  // marker (all ones; INT32_MIN for int32) and are masked, hot pixels count
  // hot_pixel_offset_adu (+ noise) and are masked; nothing else is masked.
  void integerImagesAreCountsWithMarkersAtGapsAndDefects() {
    for (const char* encoding : {"uint16", "uint32", "int32"}) {
      nlohmann::json description = to_json(small_detector(encoding, 1, 300, 200, 300, 200, 0));
      description["gaps"] = {{"rows", {{100, 7}}}, {"cols", {{150, 3}}}};
      const DetectorDescription d = parse_detector_description(description, "test");
      const double mean = 0.5;
      SimulatorConfig config = no_photon_config();
      config.background_photons = mean;
      config.dead_pixel_fraction = 0.01;
      config.hot_pixel_fraction = 0.01;
      DetectorSimulator sim(d, config, &pool_);
      std::vector<std::byte> raw(d.raw_event_bytes());
      sim.generate(0, raw.data(), nullptr, &pool_);
      const std::int64_t marker = d.encoding == RawEncoding::Uint16   ? 65535
                                  : d.encoding == RawEncoding::Uint32 ? 4294967295LL
                                                                      : -2147483648LL;
      std::size_t dead = 0, hot = 0, healthy = 0;
      std::vector<std::size_t> histogram(6);
      for (std::size_t p = 0; p < d.pixels(); ++p) {
        std::int64_t word = 0;
        if (d.encoding == RawEncoding::Uint16) {
          std::uint16_t w;
          std::memcpy(&w, raw.data() + 2 * p, 2);
          word = w;
        } else if (d.encoding == RawEncoding::Uint32) {
          std::uint32_t w;
          std::memcpy(&w, raw.data() + 4 * p, 4);
          word = w;
        } else {
          std::int32_t w;
          std::memcpy(&w, raw.data() + 4 * p, 4);
          word = w;
        }
        const int row = int(p / 200), col = int(p % 200);
        const bool gap = (row >= 100 && row < 107) || (col >= 150 && col < 153);
        const bool is_hot = word > 1000 && word != marker;
        QVERIFY2(!gap || word == marker,
                 qPrintable(QString("%1 gap pixel %2 reads %3").arg(encoding).arg(p).arg(word)));
        QCOMPARE(sim.constants().masked(p), gap || word == marker || is_hot);
        const auto pg = sim.constants().at(0, p);
        QCOMPARE(pg.pedestal, 0.0f);
        QCOMPARE(pg.gain, 1.0f);
        if (gap) continue;
        if (word == marker) {
          ++dead;
        } else if (is_hot) {
          ++hot;
          QVERIFY(std::abs(double(word) - config.hot_pixel_offset_adu) <= 6 * config.noise_adu);
        } else {
          ++healthy;
          QVERIFY(word >= 0);
          if (word < 6) ++histogram[std::size_t(word)];
        }
      }
      const std::size_t sensor = d.pixels() - std::size_t(7 * 200 + 3 * 300 - 7 * 3);
      QCOMPARE(dead + hot + healthy, sensor);
      QVERIFY2(binomial_consistent(dead, sensor, config.dead_pixel_fraction),
               qPrintable(QString("%1: %2 dead").arg(encoding).arg(dead)));
      QVERIFY2(binomial_consistent(hot, sensor, config.hot_pixel_fraction),
               qPrintable(QString("%1: %2 hot").arg(encoding).arg(hot)));
      double probability = std::exp(-mean);
      for (std::size_t count = 0; count < histogram.size(); ++count) {
        QVERIFY2(
            binomial_consistent(histogram[count], healthy, probability),
            qPrintable(
                QString("%1: %2 pixels count %3").arg(encoding).arg(histogram[count]).arg(count)));
        probability *= mean / double(count + 1);
      }
    }
  }

  // Powder rings are circles around the beam in the assembled image: the mean photon count of the
  // pixels at one radius follows background + crest * exp(-(r - R)^2 / 2 s^2) summed over rings,
  // with radii and beam centre computed here from the placement (bounding-box centre).
  void powderRingsAreCentredOnTheBeam() {
    const DetectorDescription d = small_detector("float32", 4, 256, 256, 256, 256, 0);
    SimulatorConfig config = no_photon_config();
    config.float32_noise_kev = 0;
    config.background_photons = 0.02;
    config.ring_peak_photons = 0.25;
    DetectorSimulator sim(d, config, &pool_);
    // Bounding box of the four segments (2 x 2, 10 px gaps): 522 x 522, centre (261, 261).
    const double beam = (2 * 256 + 10) / 2.0;
    QCOMPARE(sim.powder_geometry().beam_x_px, beam);
    QCOMPARE(sim.powder_geometry().beam_y_px, beam);
    std::vector<double> radii;
    for (double fraction : config.ring_radius_fractions) radii.push_back(fraction * beam);
    auto model = [&](double radius) {
      double mean = config.background_photons;
      for (double ring : radii)
        mean +=
            config.ring_peak_photons * std::exp(-(radius - ring) * (radius - ring) /
                                                (2 * config.ring_sigma_px * config.ring_sigma_px));
      return mean;
    };
    // Radial bins of 1 px: summed photons, summed model means and pixels over 20 events.
    constexpr int kEvents = 20;
    const std::size_t bins = std::size_t(std::ceil(beam * std::numbers::sqrt2)) + 1;
    std::vector<double> photons(bins), expected(bins), pixels(bins);
    RawEvent raw(d);
    for (int e = 0; e < kEvents; ++e) {
      sim.generate(std::uint64_t(e), raw.data(), nullptr, &pool_);
      for (int s = 0; s < d.segments; ++s)
        for (int r = 0; r < d.rows; ++r)
          for (int c = 0; c < d.cols; ++c) {
            const std::size_t p = (std::size_t(s) * d.rows + r) * d.cols + c;
            if (sim.constants().masked(p)) continue;
            const SegmentPlacement& place = d.placement[std::size_t(s)];
            const double radius =
                std::hypot(place.x_px + c + 0.5 - beam, place.y_px + r + 0.5 - beam);
            const std::size_t bin = std::size_t(radius);
            photons[bin] += raw.values[p] / config.photon_energy_kev;
            expected[bin] += model(radius);
            pixels[bin] += 1;
          }
    }
    for (std::size_t bin = 0; bin < bins; ++bin) {
      if (expected[bin] < 100) continue;  // corners and centre: too few pixels to judge
      QVERIFY2(std::abs(photons[bin] - expected[bin]) < kSigmas * std::sqrt(expected[bin]),
               qPrintable(QString("radius %1: %2 photons, expected %3")
                              .arg(bin)
                              .arg(photons[bin])
                              .arg(expected[bin])));
    }
    // On each ring crest the rate is several times the background: the comparison had contrast.
    for (double ring : radii) {
      const std::size_t bin = std::size_t(ring);
      QVERIFY(photons[bin] / pixels[bin] > 5 * config.background_photons);
    }
  }

  void headersRiseWithIndex() {
    const DetectorSimulator& sim = simulator("generic_f32", Scene::Default);
    const SimulatorConfig& config = sim.config();
    const EventHeader first = sim.header_for(0);
    QCOMPARE(first.sequence, std::uint64_t(0));
    QCOMPARE(first.pulse_id, config.first_pulse_id);
    QCOMPARE(first.timestamp_ns, config.start_time_ns);
    const EventHeader later = sim.header_for(1200);
    QCOMPARE(later.sequence, std::uint64_t(1200));
    QCOMPARE(later.pulse_id, config.first_pulse_id + 1200 * config.pulses_per_event);
    // 1200 events at 120 Hz: exactly 10 s later.
    QCOMPARE(later.timestamp_ns - first.timestamp_ns, std::int64_t(10'000'000'000));
  }

  void invalidConfigurationIsRejectedWithTheField() {
    const DetectorDescription d = find_detector("jungfrau4m");
    SimulatorConfig config;
    config.hit_fraction = 1.5;
    try {
      DetectorSimulator sim(d, config);
      QFAIL("expected InputError");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("hit_fraction"), e.what());
    }
    config = SimulatorConfig{};
    config.peak_sigma_max_px = 3.0;  // 4 sigma support no longer fits in the 8 px edge margin
    try {
      DetectorSimulator sim(d, config);
      QFAIL("expected InputError");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("peak_edge_margin_px"), e.what());
    }
    for (const std::vector<std::uint8_t>& configs :
         {std::vector<std::uint8_t>{}, std::vector<std::uint8_t>{calib::kConfigAHL, 5}}) {
      config = SimulatorConfig{};
      config.epix10ka_asic_configs = configs;
      try {
        DetectorSimulator sim(d, config);
        QFAIL("expected InputError");
      } catch (const InputError& e) {
        QVERIFY2(QString(e.what()).contains("epix10ka_asic_configs"), e.what());
      }
    }
  }

  // One ePix10ka2M event (2.16 Mpixel) in well under a second on one core, faster with a pool.
  void generationTimePerEvent() {
#ifndef NDEBUG
    QSKIP("timing is meaningful in optimised builds only");
#endif
    constexpr double kMaxSecondsPerEvent = 1.0;
    constexpr int kEvents = 3;
    for (const char* name : {"epix10ka2m", "jungfrau4m", "generic_f32"}) {
      const DetectorSimulator& sim = simulator(name, Scene::AllHits);  // the slowest events
      const DetectorDescription& d = sim.detector();
      RawEvent raw(d);
      auto seconds_per_event = [&](ThreadPool* with) {
        const auto start = std::chrono::steady_clock::now();
        for (int e = 0; e < kEvents; ++e) sim.generate(std::uint64_t(e), raw.data(), nullptr, with);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
               kEvents;
      };
      const double single = seconds_per_event(nullptr);
      const double pooled = seconds_per_event(&pool_);
      qInfo("%s (%zu pixels): %.1f ms per event on one thread, %.1f ms with a %u-thread pool", name,
            d.pixels(), single * 1e3, pooled * 1e3, pool_.size());
      if (std::string(name) == "epix10ka2m") QVERIFY(single < kMaxSecondsPerEvent);
    }
  }
};

QTEST_GUILESS_MAIN(TestSimulator)
#include "test_simulator.moc"
