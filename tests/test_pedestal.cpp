// Calibration constants from dark runs (calib/pedestal.hpp, `livedrp-engine pedestal`): on the
// simulator's dark runs the pedestals and noise equal its truth within their statistical bounds,
// the bad-pixel mask is exactly its dead and hot pixels (plus injected noisy and stuck-gain
// pixels), the file reads back into a calibration that leaves dark frames at zero, and bad input
// exits 2 naming the problem.
//
// Bounds. A pixel's pedestal from N frames of noise sigma has the standard error sigma / sqrt(N);
// its sample variance has the relative standard error sqrt(2 / (N - 1)), checked per pixel through
// the Wilson-Hilferty cube root (which makes the skewed chi-square normal). Every pixel must lie
// within kSigmas (6) standard errors: under Gaussian statistics one falls outside with probability
// 2e-9, so the ~1e6 pixel-modes of a test all pass by chance with probability > 0.998. The bounds
// are shown to be tight: the rms of the standardised pedestal errors is 1 within 2 % (the per-pixel
// bound is not loose by a forgotten factor), their mean is 0 within 6 / sqrt(count) (a bias of a
// hundredth of a standard error fails), and the mean variance ratio is 1 within 6 of its standard
// errors, about 0.1 % (leaving out the rounding's 1/12 ADU^2, a 0.5 % change, fails).
// The simulator rounds readings to whole ADU, which adds 1/12 ADU^2 of variance (Sheppard), so the
// noise a dark run shows is sqrt(noise^2 + 1/12) (+ the common mode's variance where it is on).
#include <QtTest>

#include <atomic>
#include <thread>

#include "dectris_publisher.hpp"
#include "replay/replay_source.hpp"
#include "tools/sls_publisher.hpp"

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include <hdf5.h>
#include <nlohmann/json.hpp>

#include "calib/calibrate_cpu.hpp"
#include "calib/constants.hpp"
#include "calib/pedestal.hpp"
#include "cli_process.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "io/array.hpp"
#include "io/hdf5_array.hpp"
#include "sim/simulator.hpp"

using namespace livedrp;

namespace {

constexpr double kSigmas = 6.0;
constexpr int kFrames = 100;
constexpr double kRoundingVariance = 1.0 / 12.0;  // ADU^2, of rounding to whole ADU

DetectorDescription test_detector(const std::string& encoding) {
  nlohmann::json modes;
  int rows = 256, cols = 512, asic_rows = 256, asic_cols = 256, bank = 64;
  if (encoding == "jungfrau") {
    modes = {{{"name", "G0"}, {"nominal_adu_per_kev", 40.0}},
             {{"name", "G1"}, {"nominal_adu_per_kev", 1.5}},
             {{"name", "G2"}, {"nominal_adu_per_kev", 0.1}}};
  } else {
    // Two segments of four ASICs: the simulator cycles FH FM FL AHL AML over the 8 ASICs.
    rows = 352, cols = 384, asic_rows = 176, asic_cols = 192, bank = 48;
    modes = nlohmann::json::array();
    const std::pair<const char*, double> list[] = {
        {"FH", 16.0},    {"FM", 5.33},    {"FL", 0.16},   {"AHL-H", 16.0},
        {"AML-M", 5.33}, {"AHL-L", 0.16}, {"AML-L", 0.16}};
    for (const auto& [name, adu] : list)
      modes.push_back({{"name", name}, {"nominal_adu_per_kev", adu}});
  }
  const nlohmann::json description = {{"schema_version", 1},
                                      {"name", "pedestal_test_" + encoding},
                                      {"raw_encoding", encoding},
                                      {"segments", 2},
                                      {"segment_shape", {rows, cols}},
                                      {"pixel_size_um", 75.0},
                                      {"asic_shape", {asic_rows, asic_cols}},
                                      {"bank_columns", bank},
                                      {"gain_modes", modes},
                                      {"placement",
                                       {{{"x_px", 0}, {"y_px", 0}, {"rotation_deg", 0}},
                                        {{"x_px", 0}, {"y_px", rows + 10}, {"rotation_deg", 0}}}}};
  return parse_detector_description(description, "test_pedestal");
}

// ePix10ka: all five gain configurations dealt to the ASICs, so that every mode's pedestal is
// taken (out of the box the simulator configures every ASIC AHL).
SimulatorConfig dark_config(int forced_stage, double common_mode_sigma) {
  SimulatorConfig c;
  c.epix10ka_asic_configs = every_epix10ka_config();
  c.hit_fraction = 0;
  c.background_photons = 0;
  c.ring_peak_photons = 0;
  c.bright_spots_per_event = 0;
  c.common_mode_sigma_adu = common_mode_sigma;
  c.forced_gain_stage = forced_stage;
  return c;
}

// The forced stages of the dark runs a detector needs: Jungfrau G0 G1 G2; ePix10ka no forcing,
// then the auto pixels forced to low gain.
std::vector<int> stages_of(const DetectorDescription& d) {
  return d.encoding == RawEncoding::Jungfrau ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 1};
}

// Optional changes to a frame before it is fed (the injected defects).
using FrameEdit = std::function<void(int stage, std::vector<std::uint16_t>& frame)>;

struct DarkResult {
  PedestalResult result;
  CalibrationConstants truth;
};

// Dark runs of `frames` frames each, every run with its own event indices (independent noise).
DarkResult run_darks(const DetectorDescription& d, double common_mode_sigma, int frames,
                     ThreadPool& pool, const FrameEdit& edit = {},
                     const PedestalOptions& options = {}) {
  DarkResult out;
  std::vector<std::uint16_t> frame(d.pixels());
  std::unique_ptr<PedestalAccumulator> accumulator;
  for (int stage : stages_of(d)) {
    const DetectorSimulator sim(d, dark_config(stage, common_mode_sigma), &pool);
    if (!accumulator) {
      out.truth = sim.constants();
      std::vector<std::uint8_t> config(d.pixels(), 0);
      for (std::size_t p = 0; p < d.pixels(); ++p)
        config[p] = out.truth.pixel_status[p] & calib::kStatusConfigBits;
      accumulator = std::make_unique<PedestalAccumulator>(d, config, &pool);
    }
    accumulator->begin_run("stage " + std::to_string(stage));
    for (int f = 0; f < frames; ++f) {
      sim.generate(std::uint64_t(stage) * 100000 + std::uint64_t(f), frame.data(), nullptr, &pool);
      if (edit) edit(stage, frame);
      accumulator->add_frame(frame.data());
    }
    accumulator->end_run();
  }
  out.result = accumulator->finish(options);
  return out;
}

QString describe(const char* what, double value, double low, double high) {
  return QString("%1 = %2, expected in [%3, %4]").arg(what).arg(value).arg(low).arg(high);
}

std::vector<float> planes_of(const std::string& path, const char* name, std::size_t count) {
  std::vector<float> values(count);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t set = H5Dopen2(file, name, H5P_DEFAULT);
  H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(set);
  H5Fclose(file);
  return values;
}

std::string string_attribute(const std::string& path, const char* name) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  std::string value;
  if (H5Aexists(file, name) > 0) {
    const hid_t attribute = H5Aopen(file, name, H5P_DEFAULT);
    const hid_t type = H5Aget_type(attribute);
    value.assign(H5Tget_size(type), '\0');
    H5Aread(attribute, type, value.data());
    value.resize(std::strlen(value.c_str()));
    H5Tclose(type);
    H5Aclose(attribute);
  }
  H5Fclose(file);
  return value;
}

}  // namespace

class TestPedestal : public QObject {
  Q_OBJECT

  ThreadPool pool_{2};
  QTemporaryDir dir_;
  std::string path(const char* name) const { return (dir_.path() + "/" + name).toStdString(); }

  // Pedestals of every truth-good pixel and needed mode within kSigmas standard errors; the rms of
  // the standardised errors 1 within 2 %, their mean 0 within kSigmas / sqrt(count).
  void check_pedestals(const DarkResult& dark, double sigma) {
    const PedestalResult& r = dark.result;
    double sum_z = 0, sum_z2 = 0, worst = 0;
    std::size_t count = 0;
    for (int m = 0; m < r.modes; ++m)
      for (std::size_t p = 0; p < r.pixels; ++p) {
        const std::size_t i = std::size_t(m) * r.pixels + p;
        if (!r.needed[i] || dark.truth.masked(p)) continue;
        QVERIFY2(r.frames[i] >= kFrames - 5,
                 qPrintable(QString("pixel %1 mode %2: %3 frames").arg(p).arg(m).arg(r.frames[i])));
        const double z = (double(r.pedestal[i]) - double(dark.truth.at(m, p).pedestal)) /
                         (sigma / std::sqrt(double(r.frames[i])));
        sum_z += z;
        sum_z2 += z * z;
        worst = std::max(worst, std::fabs(z));
        ++count;
      }
    QVERIFY(count > 0);
    QVERIFY2(worst < kSigmas, qPrintable(describe("largest |z|", worst, 0, kSigmas)));
    const double rms = std::sqrt(sum_z2 / double(count)), mean = sum_z / double(count);
    QVERIFY2(std::fabs(rms - 1) < 0.02, qPrintable(describe("rms z", rms, 0.98, 1.02)));
    const double mean_bound = kSigmas / std::sqrt(double(count));
    QVERIFY2(std::fabs(mean) < mean_bound,
             qPrintable(describe("mean z", mean, -mean_bound, mean_bound)));
  }

  // Noise of every truth-good pixel within kSigmas standard errors of `sigma`; the mean
  // of noise^2 / sigma^2 is 1 within kSigmas of its standard error over `independent` values.
  void check_noise(const DarkResult& dark, double sigma, std::size_t independent_values) {
    const PedestalResult& r = dark.result;
    double sum_ratio = 0;
    std::size_t count = 0;
    for (int m = 0; m < r.modes; ++m)
      for (std::size_t p = 0; p < r.pixels; ++p) {
        const std::size_t i = std::size_t(m) * r.pixels + p;
        if (!r.needed[i] || dark.truth.masked(p)) continue;
        const double n = r.frames[i];
        const double ratio = double(r.noise[i]) * double(r.noise[i]) / (sigma * sigma);
        // (n - 1) ratio is chi-square with n - 1 degrees of freedom, skewed to the right: its
        // Wilson-Hilferty cube root is normal to better than 1e-3 in z, so the 6-sigma bound has
        // the Gaussian tail it claims (a plain 6 sqrt(2 / (n - 1)) bound would leave a healthy
        // pixel outside with probability ~6e-7 rather than 2e-9).
        const double dof = n - 1;
        const double z = (std::cbrt(ratio) - (1 - 2 / (9 * dof))) / std::sqrt(2 / (9 * dof));
        QVERIFY2(std::fabs(z) < kSigmas,
                 qPrintable(QString("pixel %1 mode %2: noise %3, expected %4 (z %5)")
                                .arg(p)
                                .arg(m)
                                .arg(r.noise[i])
                                .arg(sigma)
                                .arg(z)));
        sum_ratio += ratio;
        ++count;
      }
    const double mean = sum_ratio / double(count);
    const double bound = kSigmas * std::sqrt(2.0 / (kFrames - 1)) /
                         std::sqrt(double(std::min(count, independent_values)));
    QVERIFY2(std::fabs(mean - 1) < bound,
             qPrintable(describe("mean variance ratio", mean, 1 - bound, 1 + bound)));
  }

  // Three dark runs of `frames` frames (stages G0, G1, G2) simulated for the Jungfrau test
  // detector into files named PREFIX_gK.h5, their constants from the files (the reference a live
  // run is compared with), and the frames of the run of stage `live_stage` read back, to be sent
  // by a stand-in detector.
  struct DarkRuns {
    DetectorDescription detector;
    std::string description;  // the detector's description file
    QStringList files;        // the three runs, by stage
    QStringList common;       // `pedestal --detector DESCRIPTION`
    std::string from_files;   // the constants of the three files
    std::vector<std::vector<std::byte>> live_frames;
  };
  bool make_dark_runs(const std::string& prefix, int frames, int live_stage, DarkRuns& runs) {
    runs.detector = test_detector("jungfrau");
    const DetectorDescription& d = runs.detector;
    runs.description = path((prefix + ".json").c_str());
    std::ofstream(runs.description) << to_json(d).dump();
    for (int stage : {0, 1, 2}) {
      const std::string file = path((prefix + "_g" + std::to_string(stage) + ".h5").c_str());
      const CliResult r = run_cli(
          "LIVEDRP_ENGINE_EXE",
          {"simulate-dark", "--detector", QString::fromStdString(runs.description), "--frames",
           QString::number(frames), "--first-event", QString::number(stage * 1000), "--gain-stage",
           QString("G%1").arg(stage), "--output", QString::fromStdString(file)});
      if (r.exit_code != 0) {
        qWarning("simulate-dark: %s", qPrintable(r.err));
        return false;
      }
      runs.files << QString::fromStdString(file);
    }
    runs.common = {"pedestal", "--detector", QString::fromStdString(runs.description)};
    runs.from_files = path((prefix + "_files.h5").c_str());
    const CliResult reference =
        run_cli("LIVEDRP_ENGINE_EXE", QStringList(runs.common)
                                          << "--input" << runs.files[0] << "--input"
                                          << runs.files[1] << "--input" << runs.files[2]
                                          << "--output" << QString::fromStdString(runs.from_files));
    if (reference.exit_code != 0) {
      qWarning("pedestal from files: %s", qPrintable(reference.err));
      return false;
    }
    replay::ReplayOptions options;
    options.files = {runs.files[live_stage].toStdString()};
    options.detector = runs.description;
    replay::ReplaySource source(options);
    replay::ReplayEvent event;
    while (source.acquire(event)) {
      runs.live_frames.emplace_back(event.data, event.data + d.raw_event_bytes());
      source.release();
    }
    return runs.live_frames.size() == std::size_t(frames);
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  // --- The simulator's forced gain stages (what the dark runs are made of) ---

  void forced_jungfrau_stage_sets_every_healthy_pixels_gain_bits() {
    const DetectorDescription d = test_detector("jungfrau");
    for (int stage : {0, 1, 2}) {
      const DetectorSimulator sim(d, dark_config(stage, 0), &pool_);
      std::vector<std::uint16_t> frame(d.pixels());
      EventTruth truth;
      sim.generate(7, frame.data(), &truth, &pool_);
      std::size_t in_stage = 0, invalid = 0;
      for (std::size_t p = 0; p < d.pixels(); ++p) {
        const calib::DecodedPixel pixel = calib::decode_jungfrau(frame[p], 0);
        if (frame[p] >> 14 == 2) {
          ++invalid;
          continue;
        }
        if (sim.constants().masked(p)) continue;  // dead pixels stay at 00; hot ones follow
        QCOMPARE(pixel.mode, stage);
        QVERIFY(std::fabs(pixel.adc - sim.constants().at(stage, p).pedestal) < 40);
        ++in_stage;
      }
      QCOMPARE(invalid, truth.bad_gain_pixels);
      // Every healthy pixel off g0 counts as switched, those with invalid bits as bad only.
      QCOMPARE(truth.gain_switched_pixels, stage == 0 ? std::size_t(0) : in_stage);
      QVERIFY(in_stage > d.pixels() * 99 / 100);
    }
  }

  void forced_epix10ka_low_gain_switches_only_the_auto_pixels() {
    const DetectorDescription d = test_detector("epix10ka");
    const DetectorSimulator sim(d, dark_config(1, 0), &pool_);
    std::vector<std::uint16_t> frame(d.pixels());
    sim.generate(3, frame.data(), nullptr, &pool_);
    for (std::size_t p = 0; p < d.pixels(); ++p) {
      if (sim.constants().masked(p)) continue;
      const std::uint8_t config = sim.constants().pixel_status[p] & calib::kStatusConfigBits;
      const calib::DecodedPixel pixel = calib::decode_epix10ka(frame[p], config);
      const int expected = config == calib::kConfigAHL   ? calib::kAHL_L
                           : config == calib::kConfigAML ? calib::kAML_L
                                                         : int(config);
      QCOMPARE(pixel.mode, expected);
    }
  }

  void forced_stage_outside_the_detectors_range_is_refused() {
    const DetectorDescription d = test_detector("epix10ka");
    QVERIFY_THROWS_EXCEPTION(InputError, DetectorSimulator(d, dark_config(2, 0)));
  }

  // A photon-counting detector's integer images have no pedestal: the accumulator refuses it,
  // saying why, for each integer encoding.
  void integer_image_detectors_are_refused_with_the_reason() {
    for (const char* encoding : {"uint16", "uint32", "int32"}) {
      nlohmann::json description = to_json(find_detector("eiger2x4m"));
      description["raw_encoding"] = encoding;
      const DetectorDescription d = parse_detector_description(description, "test");
      try {
        PedestalAccumulator accumulator(d, {}, &pool_);
        QFAIL(qPrintable(QString("%1: no error").arg(encoding)));
      } catch (const InputError& e) {
        const QString text = e.what();
        QVERIFY2(text.contains(QString("%1 integer images").arg(encoding)) &&
                     text.contains("no pedestal to measure"),
                 e.what());
      }
    }
  }

  // --- Statistics against the simulator's truth ---

  void jungfrau_pedestals_and_noise_equal_the_truth() {
    const DetectorDescription d = test_detector("jungfrau");
    const DarkResult dark = run_darks(d, 0.0, kFrames, pool_);
    const double sigma =
        std::sqrt(SimulatorConfig{}.noise_adu * SimulatorConfig{}.noise_adu + kRoundingVariance);
    check_pedestals(dark, sigma);
    check_noise(dark, sigma, d.pixels() * 3);
  }

  void epix10ka_pedestals_and_noise_equal_the_truth_in_all_seven_modes() {
    const DetectorDescription d = test_detector("epix10ka");
    const DarkResult dark = run_darks(d, 0.0, kFrames, pool_);
    const double sigma =
        std::sqrt(SimulatorConfig{}.noise_adu * SimulatorConfig{}.noise_adu + kRoundingVariance);
    for (int m = 0; m < calib::kEpix10kaModes; ++m)
      QVERIFY2(dark.result.mode_readings[std::size_t(m)] > 0,
               qPrintable(QString("mode %1").arg(m)));
    check_pedestals(dark, sigma);
    check_noise(dark, sigma, d.pixels() * 2);
    // Modes a pixel cannot be in are written as zeros.
    const PedestalResult& r = dark.result;
    for (std::size_t p = 0; p < r.pixels; ++p)
      for (int m = 0; m < r.modes; ++m) {
        const std::size_t i = std::size_t(m) * r.pixels + p;
        if (r.needed[i]) continue;
        QVERIFY(r.pedestal[i] == 0 && r.noise[i] == 0 && r.frames[i] == 0);
      }
  }

  // With the per-event bank-row baseline on, the noise is the rms of the raw reading: it holds
  // the common mode's variance too (pixels of one bank row share it: the mean's bound counts bank
  // rows, not pixels).
  void noise_holds_the_common_mode_fluctuation() {
    const DetectorDescription d = test_detector("jungfrau");
    const double cm = SimulatorConfig{}.common_mode_sigma_adu;
    const DarkResult dark = run_darks(d, cm, kFrames, pool_);
    const double noise = SimulatorConfig{}.noise_adu;
    const double sigma = std::sqrt(noise * noise + cm * cm + kRoundingVariance);
    check_pedestals(dark, sigma);
    check_noise(dark, sigma, d.bank_rows());
  }

  // --- The bad-pixel mask ---

  void mask_is_exactly_the_simulators_dead_and_hot_pixels() {
    for (const char* encoding : {"jungfrau", "epix10ka"}) {
      const DetectorDescription d = test_detector(encoding);
      const DarkResult dark = run_darks(d, SimulatorConfig{}.common_mode_sigma_adu, kFrames, pool_);
      std::size_t truth_masked = 0, dead = 0;
      for (std::size_t p = 0; p < d.pixels(); ++p) {
        const bool found = dark.result.bad_reason[p] != 0;
        QVERIFY2(found == dark.truth.masked(p),
                 qPrintable(QString("%1 pixel %2: reasons %3, simulator %4")
                                .arg(encoding)
                                .arg(p)
                                .arg(dark.result.bad_reason[p])
                                .arg(dark.truth.masked(p) ? "masked" : "good")));
        if (!found) continue;
        ++truth_masked;
        // Dead pixels read a constant; hot ones sit 3000 ADU above their pedestal.
        QVERIFY(dark.result.bad_reason[p] & (kBadDead | kBadPedestal));
        QVERIFY(!(dark.result.bad_reason[p] & kBadNoisy));
        if (dark.result.bad_reason[p] & kBadDead) ++dead;
      }
      // The simulator's fractions: 1e-3 dead, 2e-4 hot, of 262144 / 270336 pixels.
      QVERIFY2(truth_masked > 200 && dead > truth_masked / 2,
               qPrintable(QString("%1 masked, %2 dead").arg(truth_masked).arg(dead)));
    }
  }

  // Noisy pixels (noise 4 -> 20 ADU) and pixels stuck in G0 through the G1 run, injected into
  // the simulator's frames, are found; nothing else beyond the simulator's own defects.
  void injected_noisy_and_stuck_gain_pixels_are_found() {
    const DetectorDescription d = test_detector("jungfrau");
    std::vector<std::size_t> noisy, stuck;
    for (std::size_t k = 0; k < 40; ++k) {
      noisy.push_back(1000 + k * 6007);
      stuck.push_back(2000 + k * 5003);
    }
    std::mt19937_64 random(42);
    std::normal_distribution<double> extra(0.0, 20.0);
    const FrameEdit edit = [&](int stage, std::vector<std::uint16_t>& frame) {
      for (std::size_t p : noisy) {
        const int adc = (frame[p] & calib::kAdcBits) + int(std::lround(extra(random)));
        frame[p] = std::uint16_t((frame[p] & ~calib::kAdcBits) | std::clamp(adc, 0, 16383));
      }
      if (stage == 1)
        for (std::size_t p : stuck) frame[p] &= calib::kAdcBits;  // gain bits 00: G0
    };
    const DarkResult dark = run_darks(d, 0.0, kFrames, pool_, edit);
    for (std::size_t p : noisy)
      QVERIFY2(dark.result.bad_reason[p] & kBadNoisy, qPrintable(QString("pixel %1").arg(p)));
    for (std::size_t p : stuck)
      QVERIFY2(dark.result.bad_reason[p] & kBadStuckGain, qPrintable(QString("pixel %1").arg(p)));
    QCOMPARE(dark.result.runs[1].stage, std::string("G1"));
    std::size_t extra_masked = 0;
    for (std::size_t p = 0; p < d.pixels(); ++p) {
      const bool injected = std::find(noisy.begin(), noisy.end(), p) != noisy.end() ||
                            std::find(stuck.begin(), stuck.end(), p) != stuck.end();
      if (dark.result.bad_reason[p] && !dark.truth.masked(p) && !injected) ++extra_masked;
    }
    QCOMPARE(extra_masked, std::size_t(0));
  }

  // ePix10ka: AHL and AML pixels whose bit 14 stays 0 through the run forced to low gain are
  // stuck; nothing else beyond the simulator's own defects is masked.
  void epix10ka_auto_pixels_not_following_the_forced_low_gain_are_stuck() {
    const DetectorDescription d = test_detector("epix10ka");
    const DetectorSimulator reference(d, dark_config(-1, 0), &pool_);
    std::vector<std::size_t> stuck;
    for (std::size_t p = 500; p < d.pixels() && stuck.size() < 30; p += 1501) {
      const std::uint8_t config = reference.constants().pixel_status[p] & calib::kStatusConfigBits;
      if (config == calib::kConfigAHL || config == calib::kConfigAML) stuck.push_back(p);
    }
    QCOMPARE(stuck.size(), std::size_t(30));
    const FrameEdit edit = [&](int stage, std::vector<std::uint16_t>& frame) {
      if (stage == 1)
        for (std::size_t p : stuck) frame[p] &= std::uint16_t(~(1u << 14));
    };
    const DarkResult dark = run_darks(d, 0.0, kFrames, pool_, edit);
    QCOMPARE(dark.result.runs[1].stage, std::string("auto pixels forced to low gain"));
    for (std::size_t p : stuck)
      QVERIFY2(dark.result.bad_reason[p] & kBadStuckGain, qPrintable(QString("pixel %1").arg(p)));
    for (std::size_t p = 0; p < d.pixels(); ++p) {
      const bool injected = std::find(stuck.begin(), stuck.end(), p) != stuck.end();
      QVERIFY2((dark.result.bad_reason[p] != 0) == (injected || dark.truth.masked(p)),
               qPrintable(QString("pixel %1: reasons %2").arg(p).arg(dark.result.bad_reason[p])));
    }
  }

  // --- Exactness and the file ---

  // Readings near the top of the 14-bit range over many frames: the integer sums give the mean
  // and variance a two-pass long double computation gives (float32 output precision).
  void accumulation_is_exact_for_large_readings() {
    const DetectorDescription d = test_detector("jungfrau");
    PedestalAccumulator accumulator(d, {}, &pool_);
    std::vector<std::uint16_t> frame(d.pixels());
    constexpr int kLongRun = 3000;
    accumulator.begin_run("synthetic");
    auto value = [](std::size_t p, int f) {
      return std::uint16_t(16000 + (std::size_t(f) * 7 + p) % 13 + (p % 5 == 0 ? 300 : 0));
    };
    for (int f = 0; f < kLongRun; ++f) {
      for (std::size_t p = 0; p < d.pixels(); ++p) frame[p] = value(p, f);
      accumulator.add_frame(frame.data());
    }
    accumulator.end_run();
    // Only G0 has frames: the other stages are missing, and that is refused.
    QVERIFY_THROWS_EXCEPTION(InputError, accumulator.finish({}));
    // One pixel checked exactly through a second accumulator fed G1 and G2 as well.
    PedestalAccumulator full(d, {}, &pool_);
    for (unsigned stage_bits : {0x0000u, 0x4000u, 0xC000u}) {
      full.begin_run("stage");
      for (int f = 0; f < kLongRun; ++f) {
        for (std::size_t p = 0; p < d.pixels(); ++p)
          frame[p] = std::uint16_t(stage_bits | (value(p, f) & 0x3FFF));
        full.add_frame(frame.data());
      }
      full.end_run();
    }
    const PedestalResult r = full.finish({});
    for (std::size_t p : {std::size_t(0), std::size_t(1), std::size_t(12345)}) {
      long double mean = 0, m2 = 0;
      for (int f = 0; f < kLongRun; ++f) mean += (value(p, f) & 0x3FFF);
      mean /= kLongRun;
      for (int f = 0; f < kLongRun; ++f) {
        const long double dlt = (value(p, f) & 0x3FFF) - mean;
        m2 += dlt * dlt;
      }
      const double sd = double(std::sqrt(m2 / (kLongRun - 1)));
      // Within one float32 unit in the last place of the exact values (2^-10 ADU at 16000;
      // float sums of 3000 readings of 16000 would be off by whole ADU).
      for (int m = 0; m < 3; ++m) {
        const double pedestal = r.pedestal[std::size_t(m) * r.pixels + p];
        const double noise = r.noise[std::size_t(m) * r.pixels + p];
        QVERIFY2(std::fabs(pedestal - double(mean)) <= 0x1.0p-10,
                 qPrintable(QString("pedestal %1, exact %2")
                                .arg(pedestal, 0, 'g', 12)
                                .arg(double(mean), 0, 'g', 12)));
        QVERIFY2(
            std::fabs(noise - sd) <= 1e-6 * sd,
            qPrintable(QString("noise %1, exact %2").arg(noise, 0, 'g', 12).arg(sd, 0, 'g', 12)));
      }
    }
  }

  // The written file is a constants file: the engine's reader loads it, and calibrating fresh
  // dark frames with it leaves every good pixel at zero within its statistical bound
  // (sigma * sqrt(1/M + 1/N) per pixel over M frames; the mean over all pixels tighter still);
  // masked pixels give exactly 0.
  void written_constants_calibrate_dark_frames_to_zero() {
    const DetectorDescription d = test_detector("jungfrau");
    const DarkResult dark = run_darks(d, 0.0, kFrames, pool_);
    const std::vector<float> unit_gain(dark.result.pedestal.size(), 1.0f);  // offsets in ADU
    const CalibrationConstants written = pedestal_constants(d, dark.result, unit_gain);
    const std::string file = path("written.h5");
    save_pedestal_hdf5(file, d, written, dark.result, {{"command_line", "test"}});
    const CalibrationConstants loaded = load_constants_hdf5(file, d);
    QVERIFY(loaded.pedestal_gain.size() == written.pedestal_gain.size());
    for (std::size_t i = 0; i < written.pedestal_gain.size(); ++i)
      QCOMPARE(loaded.pedestal_gain[i].pedestal, written.pedestal_gain[i].pedestal);
    QVERIFY(loaded.pixel_status == written.pixel_status);
    QVERIFY(planes_of(file, "noise", dark.result.noise.size()) == dark.result.noise);

    constexpr int kCheckFrames = 50;
    calib::CalibrationParams params;
    params.common_mode = false;
    const double sigma =
        std::sqrt(SimulatorConfig{}.noise_adu * SimulatorConfig{}.noise_adu + kRoundingVariance);
    for (int stage : {0, 1, 2}) {
      const DetectorSimulator sim(d, dark_config(stage, 0.0), &pool_);
      std::vector<std::uint16_t> frame(d.pixels());
      std::vector<float> out(d.pixels());
      std::vector<double> sum(d.pixels(), 0.0);
      std::vector<int> n(d.pixels(), 0);
      for (int f = 0; f < kCheckFrames; ++f) {
        sim.generate(900000 + std::uint64_t(stage) * 1000 + std::uint64_t(f), frame.data(), nullptr,
                     &pool_);
        calibrate_event_cpu(d, loaded, params, frame.data(), out.data(), &pool_);
        for (std::size_t p = 0; p < d.pixels(); ++p) {
          if (loaded.masked(p)) {
            QCOMPARE(out[p], 0.0f);
            continue;
          }
          if (frame[p] >> 14 == 2) continue;  // invalid gain bits: 0 by the calibration
          sum[p] += out[p];
          ++n[p];
        }
      }
      double total = 0;
      std::size_t pixels = 0;
      for (std::size_t p = 0; p < d.pixels(); ++p) {
        if (loaded.masked(p) || n[p] == 0) continue;
        const double mean = sum[p] / n[p];
        const double bound = kSigmas * sigma * std::sqrt(1.0 / n[p] + 1.0 / kFrames);
        QVERIFY2(std::fabs(mean) < bound,
                 qPrintable(
                     QString("stage %1 pixel %2: mean offset %3 ADU").arg(stage).arg(p).arg(mean)));
        total += mean;
        ++pixels;
      }
      const double mean = total / double(pixels);
      const double bound =
          kSigmas * sigma * std::sqrt((1.0 / kCheckFrames + 1.0 / kFrames) / double(pixels));
      QVERIFY2(std::fabs(mean) < bound,
               qPrintable(describe("mean offset (ADU)", mean, -bound, bound)));
    }
  }

  // --- The command line ---

  void command_writes_constants_the_engine_runs_with() {
    const DetectorDescription d = test_detector("jungfrau");
    const std::string description = path("jungfrau.json");
    std::ofstream(description) << to_json(d).dump();
    QStringList inputs;
    for (int stage : {0, 1, 2}) {
      const std::string dark = path(("dark_g" + std::to_string(stage) + ".h5").c_str());
      const CliResult r =
          run_cli("LIVEDRP_ENGINE_EXE",
                  {"simulate-dark", "--detector", QString::fromStdString(description), "--frames",
                   "20", "--first-event", QString::number(stage * 1000), "--gain-stage",
                   QString("G%1").arg(stage), "--output", QString::fromStdString(dark), "--truth",
                   QString::fromStdString(path("truth.h5"))});
      QVERIFY2(r.exit_code == 0, qPrintable(r.err));
      inputs << "--input" << QString::fromStdString(dark) + (stage == 1 ? ":/entry/data/data" : "");
    }
    const std::string output = path("constants.h5");
    const CliResult r =
        run_cli("LIVEDRP_ENGINE_EXE",
                QStringList{"pedestal", "--detector", QString::fromStdString(description)}
                    << inputs << "--output" << QString::fromStdString(output));
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("gains: nominal: 1 / nominal_adu_per_kev"), qPrintable(r.out));
    QVERIFY2(r.out.contains("stage G1") && r.out.contains("stage G2"), qPrintable(r.out));
    QVERIFY(string_attribute(output, "command_line").find("pedestal --detector") !=
            std::string::npos);
    const auto inputs_json = nlohmann::json::parse(string_attribute(output, "inputs"));
    QCOMPARE(inputs_json.size(), std::size_t(3));
    QCOMPARE(inputs_json[2].at("stage").get<std::string>(), std::string("G2"));
    QCOMPARE(inputs_json[2].at("frames").get<int>(), 20);
    QVERIFY(string_attribute(output, "gain_source").rfind("nominal", 0) == 0);
    // Nominal gains: 1 / 40 keV per ADU in G0.
    QCOMPARE(planes_of(output, "gain", 3 * d.pixels())[0], float(1.0 / 40.0));

    // The engine runs the simulated detector with it.
    const CliResult engine = run_cli(
        "LIVEDRP_ENGINE_EXE", {"run", "--source", "sim:" + QString::fromStdString(description),
                               "--events", "3", "--backend", "cpu", "--publish",
                               "tcp://127.0.0.1:*", "--constants", QString::fromStdString(output)});
    QVERIFY2(engine.exit_code == 0, qPrintable(engine.err));
    QVERIFY2(engine.out.contains("processed: 3"), qPrintable(engine.out));

    // --gains copies the gains of a constants file.
    const std::string copied = path("copied.h5");
    const CliResult with_gains =
        run_cli("LIVEDRP_ENGINE_EXE",
                QStringList{"pedestal", "--detector", QString::fromStdString(description)}
                    << inputs << "--gains" << QString::fromStdString(path("truth.h5")) << "--output"
                    << QString::fromStdString(copied));
    QVERIFY2(with_gains.exit_code == 0, qPrintable(with_gains.err));
    QVERIFY2(with_gains.out.contains("gains: copied from"), qPrintable(with_gains.out));
    QVERIFY(planes_of(copied, "gain", 3 * d.pixels()) ==
            planes_of(path("truth.h5"), "gain", 3 * d.pixels()));
  }

  // Plain HDF5 datasets of raw frames, [N, pixels] or [N, segments * rows, cols], without any
  // livedrp attribute, give the constants the recordings give, bit for bit.
  void plain_frame_datasets_give_the_same_constants_as_recordings() {
    const DetectorDescription d = test_detector("jungfrau");
    const std::string description = path("plain.json");
    std::ofstream(description) << to_json(d).dump();
    QStringList recorded, flat, stacked;
    for (int stage : {0, 1, 2}) {
      const std::string dark = path(("plain_dark_g" + std::to_string(stage) + ".h5").c_str());
      const CliResult r =
          run_cli("LIVEDRP_ENGINE_EXE",
                  {"simulate-dark", "--detector", QString::fromStdString(description), "--frames",
                   "8", "--first-event", QString::number(stage * 1000), "--gain-stage",
                   QString("G%1").arg(stage), "--output", QString::fromStdString(dark)});
      QVERIFY2(r.exit_code == 0, qPrintable(r.err));
      recorded << "--input" << QString::fromStdString(dark);
      io::Array frames = io::read_hdf5_dataset(dark, "/entry/data/data");
      const std::uint64_t n = frames.shape[0];
      const std::string plain = path(("plain_g" + std::to_string(stage) + ".h5").c_str());
      frames.shape = {n, std::uint64_t(d.pixels())};
      io::write_hdf5_dataset(plain, "/flat", frames);
      frames.shape = {n, std::uint64_t(d.segments * d.rows), std::uint64_t(d.cols)};
      io::write_hdf5_dataset(plain, "/stacked/frames", frames);
      flat << "--input" << QString::fromStdString(plain) + ":/flat";
      stacked << "--input" << QString::fromStdString(plain) + ":/stacked/frames";
    }
    std::vector<std::vector<float>> pedestals;
    for (const QStringList& inputs : {recorded, flat, stacked}) {
      const std::string output =
          path(("plain_out" + std::to_string(pedestals.size()) + ".h5").c_str());
      const CliResult r =
          run_cli("LIVEDRP_ENGINE_EXE",
                  QStringList{"pedestal", "--detector", QString::fromStdString(description)}
                      << inputs << "--output" << QString::fromStdString(output));
      QVERIFY2(r.exit_code == 0, qPrintable(r.err));
      pedestals.push_back(planes_of(output, "pedestal", 3 * d.pixels()));
    }
    QVERIFY(pedestals[0] == pedestals[1]);
    QVERIFY(pedestals[0] == pedestals[2]);
  }

  // A dark run recorded over several files (a directory, as the recorder rolls a run over, or a
  // comma-separated list) is one run: the constants equal those of the same frames in one file.
  void a_directory_or_a_list_of_files_is_one_dark_run() {
    const DetectorDescription d = test_detector("jungfrau");
    const std::string description = path("split.json");
    std::ofstream(description) << to_json(d).dump();
    auto simulate = [&](const std::string& file, int stage, int first, int frames) {
      const CliResult r =
          run_cli("LIVEDRP_ENGINE_EXE",
                  {"simulate-dark", "--detector", QString::fromStdString(description), "--frames",
                   QString::number(frames), "--first-event", QString::number(first), "--gain-stage",
                   QString("G%1").arg(stage), "--output", QString::fromStdString(file)});
      QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    };
    QDir(dir_.path()).mkpath("split_g0");
    QStringList whole, split;
    for (int stage : {0, 1, 2}) {
      const std::string one = path(("whole_g" + std::to_string(stage) + ".h5").c_str());
      simulate(one, stage, stage * 1000, 10);
      whole << "--input" << QString::fromStdString(one);
    }
    simulate(path("split_g0/run-000.h5"), 0, 0, 4);
    simulate(path("split_g0/run-001.h5"), 0, 4, 6);
    split << "--input" << QString::fromStdString(path("split_g0"));
    simulate(path("split_g1a.h5"), 1, 1000, 7);
    simulate(path("split_g1b.h5"), 1, 1007, 3);
    split << "--input"
          << QString::fromStdString(path("split_g1a.h5") + "," + path("split_g1b.h5") +
                                    ":/entry/data/data");
    split << "--input" << QString::fromStdString(path("whole_g2.h5"));
    std::vector<std::vector<float>> pedestals, noise;
    for (const QStringList& inputs : {whole, split}) {
      const std::string output =
          path(("split_out" + std::to_string(pedestals.size()) + ".h5").c_str());
      const CliResult r =
          run_cli("LIVEDRP_ENGINE_EXE",
                  QStringList{"pedestal", "--detector", QString::fromStdString(description)}
                      << inputs << "--output" << QString::fromStdString(output));
      QVERIFY2(r.exit_code == 0, qPrintable(r.err));
      QVERIFY2(r.out.contains("10 frames, stage G0") && r.out.contains("10 frames, stage G1"),
               qPrintable(r.out));
      pedestals.push_back(planes_of(output, "pedestal", 3 * d.pixels()));
      noise.push_back(planes_of(output, "noise", 3 * d.pixels()));
    }
    QVERIFY(pedestals[0] == pedestals[1]);
    QVERIFY(noise[0] == noise[1]);

    // An Eiger / Jungfraujoch master file whose data_00000K links lead to the same two files.
    {
      const std::string master = path("master_g0.h5");
      const hid_t file = H5Fcreate(master.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
      const hid_t links = H5Pcreate(H5P_LINK_CREATE);
      H5Pset_create_intermediate_group(links, 1);
      QVERIFY(H5Lcreate_external("split_g0/run-000.h5", "/entry/data/data", file,
                                 "/entry/data/data_000001", links, H5P_DEFAULT) >= 0);
      QVERIFY(H5Lcreate_external("split_g0/run-001.h5", "/entry/data/data", file,
                                 "/entry/data/data_000002", links, H5P_DEFAULT) >= 0);
      H5Pclose(links);
      H5Fclose(file);
      QStringList from_master = split;
      from_master[1] = QString::fromStdString(master);
      const std::string output = path("master_out.h5");
      const CliResult r =
          run_cli("LIVEDRP_ENGINE_EXE",
                  QStringList{"pedestal", "--detector", QString::fromStdString(description)}
                      << from_master << "--output" << QString::fromStdString(output));
      QVERIFY2(r.exit_code == 0, qPrintable(r.err));
      QVERIFY2(r.out.contains("10 frames, stage G0"), qPrintable(r.out));
      QVERIFY(planes_of(output, "pedestal", 3 * d.pixels()) == pedestals[0]);
    }

    // What any source recorded by the engine (run --record DIR) leaves is such a directory.
    const QString recorded = QString::fromStdString(path("recorded"));
    const CliResult record =
        run_cli("LIVEDRP_ENGINE_EXE",
                {"run", "--source", "sim:" + QString::fromStdString(description), "--events", "4",
                 "--backend", "cpu", "--publish", "tcp://127.0.0.1:*", "--record", recorded});
    QVERIFY2(record.exit_code == 0, qPrintable(record.err));
    const CliResult from_record = run_cli(
        "LIVEDRP_ENGINE_EXE",
        QStringList{"pedestal", "--detector", QString::fromStdString(description), "--input",
                    recorded, "--input", QString::fromStdString(path("whole_g1.h5")), "--input",
                    QString::fromStdString(path("whole_g2.h5")), "--output",
                    QString::fromStdString(path("recorded_out.h5"))});
    QVERIFY2(from_record.exit_code == 0, qPrintable(from_record.err));
    QVERIFY2(from_record.out.contains("4 frames, stage G0"), qPrintable(from_record.out));
  }

  // A dark run taken live from a detector's stream (here the sls receivers' of the repository's
  // publisher) gives the constants the same frames give from a file.
  void a_live_stream_is_a_dark_run() {
    // The G0 frames of the file, streamed while the command takes its live run.
    DarkRuns runs;
    QVERIFY(make_dark_runs("live", 8, 0, runs));
    const DetectorDescription& d = runs.detector;
    const QStringList& files = runs.files;
    const QStringList& common = runs.common;
    const std::string& from_files = runs.from_files;
    const std::vector<std::vector<std::byte>>& frames = runs.live_frames;
    tools::SlsPublisher publisher(d);
    std::atomic<bool> subscribed{false};
    std::thread detector([&] {
      subscribed = publisher.wait_for_subscribers(std::chrono::seconds(120));
      for (std::size_t i = 0; i < frames.size() && subscribed; ++i)
        publisher.send_event(1 + i, frames[i].data(), 0);
    });
    const std::string from_live = path("live_stream.h5");
    const CliResult live = run_cli(
        "LIVEDRP_ENGINE_EXE", QStringList(common)
                                  << "--input" << QString::fromStdString(publisher.source_string())
                                  << "--live-frames"
                                  << "8"
                                  << "--live-timeout"
                                  << "120"
                                  << "--input" << files[1] << "--input" << files[2] << "--output"
                                  << QString::fromStdString(from_live));
    detector.join();
    QVERIFY(subscribed);
    QVERIFY2(live.exit_code == 0, qPrintable(live.err));
    QVERIFY2(live.out.contains("8 frames, stage G0"), qPrintable(live.out));
    QVERIFY(planes_of(from_live, "pedestal", 3 * d.pixels()) ==
            planes_of(from_files, "pedestal", 3 * d.pixels()));
    QVERIFY(planes_of(from_live, "noise", 3 * d.pixels()) ==
            planes_of(from_files, "noise", 3 * d.pixels()));

    // A stream that sends nothing fails the run after the timeout, naming the source.
    tools::SlsPublisher silent(d);
    const CliResult quiet =
        run_cli("LIVEDRP_ENGINE_EXE",
                QStringList(common) << "--input" << QString::fromStdString(silent.source_string())
                                    << "--live-timeout"
                                    << "1"
                                    << "--output" << QString::fromStdString(path("live_quiet.h5")));
    EXPECT_BAD_INPUT(quiet, "no frame for");
  }

  // Jungfraujoch sends a Jungfrau's raw frames as a Dectris SIMPLON stream (uint16 images of the
  // modules stacked): a dark run taken from it gives the constants of the same frames in a file.
  void a_dectris_stream_is_a_dark_run() {
    // The G1 frames of the file, sent as one series while the command takes its live run.
    DarkRuns runs;
    QVERIFY(make_dark_runs("jfjoch", 6, 1, runs));
    const DetectorDescription& d = runs.detector;
    const QStringList& files = runs.files;
    const QStringList& common = runs.common;
    const std::string& from_files = runs.from_files;
    const std::vector<std::vector<std::byte>>& frames = runs.live_frames;
    // Sends wait for the command's PULL socket (up to two minutes on a loaded machine).
    testing::DectrisPublisher publisher("tcp://127.0.0.1:*", 120000);
    const testing::SeriesSettings series{.width = std::uint32_t(d.cols),
                                         .height = std::uint32_t(d.segments * d.rows),
                                         .type = testing::PixelType::Uint16,
                                         .compression = testing::Compression::Bslz4,
                                         .number_of_images = frames.size(),
                                         .channel = "default",
                                         .announce_dtype = true};
    std::string sent_error;
    std::thread detector([&] {
      try {
        publisher.send_start(series);
        // No end message: the command stops after its frames and may be gone by then.
        for (std::size_t i = 0; i < frames.size(); ++i) publisher.send_image(series, i, frames[i]);
      } catch (const std::exception& e) {
        sent_error = e.what();
      }
    });
    const std::string from_live = path("jfjoch_stream.h5");
    const CliResult live =
        run_cli("LIVEDRP_ENGINE_EXE",
                QStringList(common)
                    << "--input" << files[0] << "--input"
                    << QString::fromStdString("dectris:" + publisher.endpoint()) << "--live-frames"
                    << "6"
                    << "--live-timeout"
                    << "120"
                    << "--input" << files[2] << "--output" << QString::fromStdString(from_live));
    detector.join();
    QVERIFY2(sent_error.empty(), sent_error.c_str());
    QVERIFY2(live.exit_code == 0, qPrintable(live.err));
    QVERIFY2(live.out.contains("6 frames, stage G1"), qPrintable(live.out));
    QVERIFY(planes_of(from_live, "pedestal", 3 * d.pixels()) ==
            planes_of(from_files, "pedestal", 3 * d.pixels()));
    QVERIFY(planes_of(from_live, "noise", 3 * d.pixels()) ==
            planes_of(from_files, "noise", 3 * d.pixels()));
  }

  // ePix10ka from the command line: the configuration from --gains (/config), the dark run and
  // the run with the auto pixels forced to low gain give all seven modes.
  void epix10ka_command_takes_the_configuration_from_the_gain_file() {
    const DetectorDescription d = test_detector("epix10ka");
    const std::string description = path("epix.json");
    std::ofstream(description) << to_json(d).dump();
    QStringList inputs;
    for (const char* stage : {"high", "low"}) {
      const std::string dark = path((std::string("epix_") + stage + ".h5").c_str());
      const CliResult r =
          run_cli("LIVEDRP_ENGINE_EXE",
                  {"simulate-dark", "--detector", QString::fromStdString(description), "--frames",
                   "10", "--first-event", stage[0] == 'l' ? "1000" : "0", "--gain-stage", stage,
                   "--gain-configs", "FH,FM,FL,AHL,AML", "--output", QString::fromStdString(dark),
                   "--truth", QString::fromStdString(path("epix_truth.h5"))});
      QVERIFY2(r.exit_code == 0, qPrintable(r.err));
      inputs << "--input" << QString::fromStdString(dark);
    }
    const std::string output = path("epix_constants.h5");
    const CliResult r =
        run_cli("LIVEDRP_ENGINE_EXE",
                QStringList{"pedestal", "--detector", QString::fromStdString(description)}
                    << inputs << "--gains" << QString::fromStdString(path("epix_truth.h5"))
                    << "--output" << QString::fromStdString(output));
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("stage auto pixels forced to low gain"), qPrintable(r.out));
    for (const char* mode : {"FH", "FM", "FL", "AHL-H", "AML-M", "AHL-L", "AML-L"})
      QVERIFY2(r.out.contains(QString("mode %1:").arg(mode)), qPrintable(r.out));
    const CalibrationConstants loaded = load_constants_hdf5(output, d);
    const CalibrationConstants truth = load_constants_hdf5(path("epix_truth.h5"), d);
    for (std::size_t p = 0; p < d.pixels(); ++p)
      QCOMPARE(loaded.pixel_status[p] & calib::kStatusConfigBits,
               truth.pixel_status[p] & calib::kStatusConfigBits);
    // Without the configuration's source the command says what it needs.
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE",
                QStringList{"pedestal", "--detector", QString::fromStdString(description)}
                    << inputs << "--output" << QString::fromStdString(output)),
        "gain configuration is needed");
    // One configuration for every pixel: only FH's mode is needed, and it is there.
    const CliResult fh =
        run_cli("LIVEDRP_ENGINE_EXE",
                QStringList{"pedestal", "--detector", QString::fromStdString(description),
                            "--gain-config", "FH"}
                    << inputs << "--output" << QString::fromStdString(path("epix_fh.h5")));
    QVERIFY2(fh.exit_code == 0, qPrintable(fh.err));
  }

  void bad_inputs_exit_2_naming_the_problem() {
    const DetectorDescription d = test_detector("jungfrau");
    const QString description = QString::fromStdString(path("bad_jungfrau.json"));
    std::ofstream(description.toStdString()) << to_json(d).dump();
    const QString dark = QString::fromStdString(path("bad_dark.h5"));
    QVERIFY(run_cli("LIVEDRP_ENGINE_EXE",
                    {"simulate-dark", "--detector", description, "--frames", "3", "--output", dark})
                .exit_code == 0);
    const QString out = QString::fromStdString(path("bad_out.h5"));
    auto pedestal = [&](const QStringList& arguments) {
      return run_cli("LIVEDRP_ENGINE_EXE", QStringList{"pedestal"} << arguments);
    };
    EXPECT_BAD_INPUT(
        pedestal({"--detector", description, "--input", "/nonexistent/dark.h5", "--output", out}),
        "/nonexistent/dark.h5 does not exist");
    EXPECT_BAD_INPUT(pedestal({"--detector", "pilatus6m", "--input", dark, "--output", out}),
                     "pilatus6m");
    EXPECT_BAD_INPUT(
        pedestal({"--detector", description, "--input", dark + ":/entry/nothing", "--output", out}),
        "/entry/nothing");
    // Frames of the wrong shape.
    io::Array wrong;
    wrong.type = io::ElementType::UInt16;
    wrong.shape = {4, 10, 10};
    wrong.bytes.assign(4 * 10 * 10 * 2, 0);
    const std::string wrong_file = path("wrong_shape.h5");
    io::write_hdf5_dataset(wrong_file, "/data", wrong);
    EXPECT_BAD_INPUT(pedestal({"--detector", description, "--input",
                               QString::fromStdString(wrong_file) + ":/data", "--output", out}),
                     "does not hold events of");
    // A dataset of no frames, and one of a rank no event layout has.
    io::Array none;
    none.type = io::ElementType::UInt16;
    none.shape = {0, std::uint64_t(d.pixels())};
    const std::string none_file = path("no_frames.h5");
    io::write_hdf5_dataset(none_file, "/frames", none);
    EXPECT_BAD_INPUT(pedestal({"--detector", description, "--input",
                               QString::fromStdString(none_file) + ":/frames", "--output", out}),
                     "holds no frames");
    io::Array five_d;
    five_d.type = io::ElementType::UInt16;
    five_d.shape = {1, 1, 1, 1, 4};
    five_d.bytes.assign(8, 0);
    io::write_hdf5_dataset(none_file, "/five", five_d);
    EXPECT_BAD_INPUT(pedestal({"--detector", description, "--input",
                               QString::fromStdString(none_file) + ":/five", "--output", out}),
                     "is not [N, segments, rows, cols]");
    // Only the G0 run (no forcing: g0): the G1 and G2 stages have no frames.
    EXPECT_BAD_INPUT(pedestal({"--detector", description, "--input", dark, "--output", out}),
                     "gain mode G1 (mode 1) has no frames");
    // A recording of another detector.
    EXPECT_BAD_INPUT(pedestal({"--detector", "jungfrau4m", "--input", dark, "--output", out}),
                     "not jungfrau4m");
    // The ePix10ka needs its pixels' gain configuration.
    EXPECT_BAD_INPUT(pedestal({"--detector", "epix10ka2m", "--input", dark, "--output", out}),
                     "gain configuration is needed");
    EXPECT_BAD_INPUT(pedestal({"--detector", "epix10ka2m", "--gain-config", "XX", "--input", dark,
                               "--output", out}),
                     "'XX' is not an ePix10ka gain configuration");
    EXPECT_BAD_INPUT(pedestal({"--detector", "generic_f32", "--input", dark, "--output", out}),
                     "float32");
    EXPECT_BAD_INPUT(pedestal({"--detector", "eiger2x4m", "--input", dark, "--output", out}),
                     "threshold removes the electronic baseline");
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE", {"simulate-dark", "--detector", "eiger2x4m",
                                                    "--frames", "2", "--output", out}),
                     "no pedestal to measure");
    EXPECT_BAD_INPUT(pedestal({"--detector", description, "--input", dark, "--gains",
                               "/nonexistent/gains.h5", "--output", out}),
                     "/nonexistent/gains.h5 does not exist");
    EXPECT_BAD_INPUT(pedestal({"--detector", description, "--input", dark, "--output", out,
                               "--stuck-fraction", "1.5"}),
                     "--stuck-fraction");
    EXPECT_BAD_INPUT(pedestal({"--detector", description, "--output", out}), "--input");
    // A file that is not HDF5, and frames of another element type.
    const std::string text_file = path("not_hdf5.h5");
    std::ofstream(text_file) << "not an HDF5 file";
    EXPECT_BAD_INPUT(pedestal({"--detector", description, "--input",
                               QString::fromStdString(text_file), "--output", out}),
                     "is not an HDF5 file");
    io::Array floats;
    floats.type = io::ElementType::Float32;
    floats.shape = {2, std::uint64_t(d.pixels())};
    floats.bytes.assign(2 * d.pixels() * 4, 0);
    const std::string float_file = path("float_frames.h5");
    io::write_hdf5_dataset(float_file, "/frames", floats);
    EXPECT_BAD_INPUT(pedestal({"--detector", description, "--input",
                               QString::fromStdString(float_file) + ":/frames", "--output", out}),
                     "element type float32");
    // An output that cannot be written: exit status 1, the file named.
    QStringList all_stages{"--input", dark};
    for (const char* stage : {"G1", "G2"}) {
      const QString file =
          QString::fromStdString(path((std::string("bad_") + stage + ".h5").c_str()));
      QVERIFY(run_cli("LIVEDRP_ENGINE_EXE", {"simulate-dark", "--detector", description, "--frames",
                                             "3", "--gain-stage", stage, "--output", file})
                  .exit_code == 0);
      all_stages << "--input" << file;
    }
    const CliResult unwritable =
        pedestal(QStringList{"--detector", description} << all_stages << "--output"
                                                        << "/nonexistent/dir/out.h5");
    QVERIFY2(unwritable.exit_code == 1, qPrintable(unwritable.err));
    QVERIFY2(unwritable.err.contains("/nonexistent/dir/out.h5"), qPrintable(unwritable.err));
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE", {"simulate-dark", "--detector", description,
                                                    "--gain-stage", "G7", "--output", out}),
                     "'G7' is not a gain stage");
  }
};

QTEST_GUILESS_MAIN(TestPedestal)
#include "test_pedestal.moc"
