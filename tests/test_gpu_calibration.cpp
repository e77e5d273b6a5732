// The CUDA backend against the CPU reference, bit for bit.
//
// Both backends call the same functions of calib/calibration_math.hpp and the math has no
// multiply-add shape, so every output float must be *identical* (same bits) to
// calibrate_event_cpu's; a failure reports how many pixels differ and the largest absolute and
// relative difference. Outputs are poisoned with NaN (host buffers before every read, device
// buffers before every launch of the kernel-level tests), so a pixel no kernel wrote shows up as
// NaN.
//
// Without a usable CUDA device the suite skips, unless LIVEDRP_REQUIRE_GPU=1 (the GPU machine's
// runner sets it), where it fails.
#include <QtTest>

#include "gpu_test_support.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "calib/calibrate_cpu.hpp"
#include "calib/calibration_math.hpp"
#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "core/thread_pool.hpp"
#include "exec/backend.hpp"
#include "sim/simulator.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/cuda_calibrator.hpp"
#include "cuda/device.hpp"
#endif

using namespace livedrp;

namespace {

// Events each (detector, common mode) case sends through the CUDA backend: 13 passes over 8
// distinct simulated events, each pass with other calibration parameters.
constexpr int kDistinctEvents = 8;
constexpr int kBackendEvents = 104;
// Relative difference reported (never tolerated: the test demands identical bits); the float32
// rounding of one operation is 6e-8, so anything above this would mean different math.
constexpr double kReportRelDifference = 1e-6;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Calibration parameter sets the events cycle through: thresholds around the default 40 ADU (12
// keeps few pixels quiet, 100 takes in some photons), and minimum counts that leave some bank rows
// uncorrected.
calib::CalibrationParams params_set(int index, bool common_mode) {
  struct Set {
    float threshold;
    int min_pixels;
  };
  static constexpr Set kSets[] = {{40.0f, 8}, {25.0f, 8},  {60.0f, 20},
                                  {12.0f, 8}, {40.0f, 47}, {100.0f, 1}};
  const Set set = kSets[index % int(std::size(kSets))];
  calib::CalibrationParams params;
  params.common_mode = common_mode;
  params.common_mode_threshold_adu = set.threshold;
  params.common_mode_min_pixels = set.min_pixels;
  return params;
}

struct Difference {
  std::size_t differing = 0;  // bits differ
  std::size_t unwritten = 0;  // NaN where the reference is not
  double max_abs = 0;
  double max_rel = 0;
  std::size_t first = 0;  // first differing pixel
  float first_got = 0, first_want = 0;
};

Difference compare_bits(const float* got, const float* want, std::size_t n) {
  Difference d;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::bit_cast<std::uint32_t>(got[i]) == std::bit_cast<std::uint32_t>(want[i])) continue;
    if (std::isnan(got[i]) && !std::isnan(want[i])) ++d.unwritten;
    if (d.differing++ == 0) {
      d.first = i;
      d.first_got = got[i];
      d.first_want = want[i];
    }
    const double abs = std::fabs(double(got[i]) - double(want[i]));
    d.max_abs = std::max(d.max_abs, abs);
    d.max_rel = std::max(d.max_rel, abs / std::max(std::fabs(double(want[i])), 1e-30));
  }
  return d;
}

QByteArray describe(const Difference& d, const QString& what) {
  return QString(
             "%1: %2 pixels differ (%3 unwritten/NaN), max abs diff %4, max rel diff %5 "
             "(%6 the 1e-6 that would mean different math); first at pixel %7: got %8, "
             "want %9")
      .arg(what)
      .arg(d.differing)
      .arg(d.unwritten)
      .arg(d.max_abs, 0, 'g', 9)
      .arg(d.max_rel, 0, 'g', 9)
      .arg(d.max_rel <= kReportRelDifference ? "within" : "above")
      .arg(d.first)
      .arg(double(d.first_got), 0, 'g', 9)
      .arg(double(d.first_want), 0, 'g', 9)
      .toUtf8();
}

// A small detector made by hand: one segment of rows x cols, the given encoding and bank width.
DetectorDescription small_detector(RawEncoding encoding, int rows, int cols, int bank_columns) {
  DetectorDescription d;
  d.name = "hand-made";
  d.encoding = encoding;
  d.segments = 1;
  d.rows = rows;
  d.cols = cols;
  d.pixel_size_um = 100;
  d.asic_rows = rows;
  d.asic_cols = cols;
  d.bank_columns = bank_columns;
  for (int m = 0; m < gain_modes_of(encoding); ++m)
    d.gain_modes.push_back({"m" + std::to_string(m), 1.0});
  d.placement.push_back({});
  return d;
}

CalibrationConstants constant_planes(const DetectorDescription& d, float pedestal_base,
                                     float pedestal_step, const std::vector<float>& gains) {
  CalibrationConstants c;
  c.modes = d.modes();
  c.pixels = d.pixels();
  c.pedestal_gain.resize(std::size_t(c.modes) * c.pixels);
  c.pixel_status.assign(c.pixels, 0);
  for (int m = 0; m < c.modes; ++m)
    for (std::size_t p = 0; p < c.pixels; ++p)
      c.pedestal_gain[std::size_t(m) * c.pixels + p] = {pedestal_base + pedestal_step * float(m),
                                                        gains[std::size_t(m)]};
  return c;
}

}  // namespace

class TestGpuCalibration : public QObject {
  Q_OBJECT

  // Runs `raw` (one event) through a fresh CUDA backend with `params`; returns the output.
  std::vector<float> calibrate_on_backend(const DetectorDescription& d,
                                          const CalibrationConstants& constants,
                                          const calib::CalibrationParams& params, const void* raw) {
    auto backend = make_cuda_backend(d, constants, params);
    void* slot = backend->allocate_host(d.raw_event_bytes());
    std::memcpy(slot, raw, d.raw_event_bytes());
    BackendEvent event;
    event.raw = slot;
    event.ring_slot = 0;
    backend->submit(event);
    const auto done = backend->next_completed(true);
    std::vector<float> out(d.pixels(), kNaN);
    if (done) backend->read_output(*done, out.data());
    backend->free_host(slot);
    if (!done) qWarning("the backend returned no completed event");
    return out;
  }

  std::vector<float> calibrate_on_cpu(const DetectorDescription& d,
                                      const CalibrationConstants& constants,
                                      const calib::CalibrationParams& params, const void* raw) {
    std::vector<float> out(d.pixels(), kNaN);
    calibrate_event_cpu(d, constants, params, raw, out.data(), nullptr);
    return out;
  }

  // Both kernel variants, launched directly on device buffers poisoned with NaN first, against
  // the CPU for every parameter set given.
  void check_kernels_against_cpu(const DetectorDescription& d,
                                 const CalibrationConstants& constants, const void* raw,
                                 const std::vector<calib::CalibrationParams>& param_sets,
                                 const QString& what) {
#ifdef LIVEDRP_HAVE_CUDA
    gpu::DeviceCalibrator calibrator(d, constants);
    gpu::Stream stream;
    gpu::DeviceBuffer device_raw(d.raw_event_bytes()), device_out(d.pixels() * sizeof(float));
    gpu::copy_async(device_raw.get(), raw, d.raw_event_bytes(), stream, "test raw event");
    std::vector<float> got(d.pixels());
    for (const auto variant : {gpu::KernelVariant::Vectorized, gpu::KernelVariant::Scalar}) {
      for (const auto& params : param_sets) {
        const std::vector<float> want = calibrate_on_cpu(d, constants, params, raw);
        gpu::fill_async(device_out.get(), 0xFF, device_out.bytes(), stream);
        calibrator.launch(device_raw.get(), device_out.as<float>(), params, stream, variant);
        std::fill(got.begin(), got.end(), kNaN);
        gpu::copy_async(got.data(), device_out.get(), device_out.bytes(), stream, "test output");
        stream.synchronize();
        const Difference diff = compare_bits(got.data(), want.data(), got.size());
        QVERIFY2(
            diff.differing == 0,
            describe(diff, QString("%1, %2 kernel, common mode %3, threshold %4, min %5")
                               .arg(what)
                               .arg(QString::fromStdString(std::string(gpu::to_string(variant))))
                               .arg(params.common_mode ? "on" : "off")
                               .arg(double(params.common_mode_threshold_adu))
                               .arg(params.common_mode_min_pixels))
                .constData());
      }
    }
#else
    Q_UNUSED(d)
    Q_UNUSED(constants)
    Q_UNUSED(raw)
    Q_UNUSED(param_sets)
    Q_UNUSED(what)
    QSKIP("built without CUDA");
#endif
  }

 private slots:
  void initTestCase() {
    LIVEDRP_SKIP_WITHOUT_GPU();
  }

  void backend_output_equals_cpu_bit_for_bit_data() {
    QTest::addColumn<QString>("detector");
    QTest::addColumn<bool>("common_mode");
    for (const char* name : {"epix10ka2m", "jungfrau4m", "generic_f32", "eiger2x4m"})
      for (const bool common_mode : {true, false})
        QTest::addRow("%s common mode %s", name, common_mode ? "on" : "off")
            << QString(name) << common_mode;
  }

  // >= 100 events through the backend with up to its full depth in flight, parameters changing
  // between submissions (each event must be calibrated with the parameters set before its submit).
  void backend_output_equals_cpu_bit_for_bit() {
    QFETCH(QString, detector);
    QFETCH(bool, common_mode);
    const DetectorDescription d = find_detector(detector.toStdString());
    ThreadPool pool;
    SimulatorConfig config;
    config.seed = 777 + (common_mode ? 1 : 0);
    config.hit_fraction = 0.5;  // Bragg peaks and gain switching in about half the events
    config.epix10ka_asic_configs = every_epix10ka_config();  // all seven ePix10ka gain modes
    DetectorSimulator simulator(d, config, &pool);
    const CalibrationConstants& constants = simulator.constants();

    auto backend = make_cuda_backend(d, constants, params_set(0, common_mode));
    QCOMPARE(QString::fromStdString(backend->name()), QString("cuda"));
    std::vector<void*> ring;
    for (int i = 0; i < kDistinctEvents; ++i) {
      ring.push_back(backend->allocate_host(d.raw_event_bytes()));
      simulator.generate(std::uint64_t(i), ring.back(), nullptr, &pool);
    }

    std::vector<float> got(d.pixels()), want(d.pixels());
    int submitted = 0, completed = 0;
    std::size_t pixels_checked = 0;
    while (completed < kBackendEvents) {
      while (submitted < kBackendEvents && backend->can_submit()) {
        backend->set_params(params_set(submitted / kDistinctEvents, common_mode));
        BackendEvent event;
        event.header = simulator.header_for(std::uint64_t(submitted));
        event.ring_slot = submitted % kDistinctEvents;
        event.raw = ring[std::size_t(event.ring_slot)];
        backend->submit(event);
        ++submitted;
      }
      QVERIFY(backend->in_flight() > 0);
      const auto done = backend->next_completed(true);
      QVERIFY(done.has_value());
      QCOMPARE(done->header.sequence, std::uint64_t(completed));  // arrival order
      QCOMPARE(done->ring_slot, completed % kDistinctEvents);
      QVERIFY(done->calibrate_us > 0);
      std::fill(got.begin(), got.end(), kNaN);
      backend->read_output(*done, got.data());
      const calib::CalibrationParams params = params_set(completed / kDistinctEvents, common_mode);
      calibrate_event_cpu(d, constants, params, ring[std::size_t(done->ring_slot)], want.data(),
                          &pool);
      const Difference diff = compare_bits(got.data(), want.data(), got.size());
      QVERIFY2(diff.differing == 0,
               describe(diff, QString("%1 event %2 (threshold %3, min %4)")
                                  .arg(detector)
                                  .arg(completed)
                                  .arg(double(params.common_mode_threshold_adu))
                                  .arg(params.common_mode_min_pixels))
                   .constData());
      pixels_checked += got.size();
      ++completed;
    }
    QCOMPARE(backend->in_flight(), std::size_t(0));
    QVERIFY(!backend->next_completed(false).has_value());
    for (void* slot : ring) backend->free_host(slot);
    qInfo("%s, common mode %s: %d events, %zu pixels identical to the CPU backend",
          qPrintable(detector), common_mode ? "on" : "off", completed, pixels_checked);
  }

  // The scalar kernels (the benchmark's baseline) and the vectorised ones, launched directly.
  void both_kernel_variants_equal_cpu_bit_for_bit() {
    for (const char* name : {"epix10ka2m", "jungfrau4m", "generic_f32", "eiger2x4m"}) {
      const DetectorDescription d = find_detector(name);
      ThreadPool pool;
      SimulatorConfig config;
      config.seed = 4242;
      config.hit_fraction = 1.0;
      config.epix10ka_asic_configs = every_epix10ka_config();
      DetectorSimulator simulator(d, config, &pool);
      std::vector<std::uint8_t> raw(d.raw_event_bytes());
      simulator.generate(3, raw.data(), nullptr, &pool);
      std::vector<calib::CalibrationParams> sets;
      for (int i = 0; i < 6; ++i) sets.push_back(params_set(i, true));
      sets.push_back(params_set(0, false));
      check_kernels_against_cpu(d, simulator.constants(), raw.data(), sets, name);
    }
  }

  // Integer pedestals and integer ADC offsets: many equal values in every bank row, every quiet
  // count from 0 to the row width (even and odd), offsets exactly at the threshold (not quiet).
  void common_mode_with_ties_equals_cpu() {
    for (const auto& [encoding, width] :
         {std::pair{RawEncoding::Jungfrau, 64}, std::pair{RawEncoding::Epix10ka, 48}}) {
      const int rows_per_count = 4;
      const int rows = (width + 1) * rows_per_count;
      const DetectorDescription d = small_detector(encoding, rows, width, width);
      std::vector<float> gains(std::size_t(d.modes()), 1.0f);
      for (std::size_t m = 0; m < gains.size(); ++m) gains[m] = 0.5f + 0.25f * float(m);
      CalibrationConstants c = constant_planes(d, 1000.0f, 500.0f, gains);
      std::vector<std::uint16_t> raw(d.pixels());
      std::uint32_t state = 12345;
      auto next = [&state] { return state = state * 1664525u + 1013904223u; };
      for (int r = 0; r < rows; ++r) {
        const int noisy = r / rows_per_count;  // pixels of this row that are not quiet
        for (int col = 0; col < width; ++col) {
          const std::size_t p = std::size_t(r) * std::size_t(width) + std::size_t(col);
          int offset = int(next() >> 29) - 4;  // -4 .. 3: few distinct values, many ties
          if (col < noisy) offset = (next() >> 31) ? 40 : 700;  // at the threshold, or a photon
          raw[p] = std::uint16_t(1000 + offset);  // mode 0 (Jungfrau g0 / ePix10ka FH)
        }
      }
      c.pixel_status[5] = calib::kStatusMasked;
      std::vector<calib::CalibrationParams> sets;
      for (const int min_pixels : {1, 8, 33}) {
        calib::CalibrationParams params;
        params.common_mode_threshold_adu = 40.0f;
        params.common_mode_min_pixels = min_pixels;
        sets.push_back(params);
      }
      check_kernels_against_cpu(d, c, raw.data(), sets, QString("ties, bank width %1").arg(width));
    }
  }

  // Layouts off the vector grid: a bank row of 36 pixels (not a multiple of 8) and an event of 180
  // pixels (not a multiple of 8) take the per-pixel load paths.
  void unaligned_layouts_equal_cpu() {
    const DetectorDescription d = small_detector(RawEncoding::Epix10ka, 5, 36, 36);
    std::vector<float> gains = {0.0625f, 0.1875f, 6.25f, 0.0625f, 0.1875f, 6.25f, 6.25f};
    CalibrationConstants c = constant_planes(d, 900.25f, 37.5f, gains);
    std::vector<std::uint16_t> raw(d.pixels());
    for (std::size_t p = 0; p < raw.size(); ++p) {
      c.pixel_status[p] = std::uint8_t(p % 6);  // every configuration, and 5 (invalid)
      raw[p] = std::uint16_t(900 + (p * 37) % 120 + ((p % 7 == 0) ? 0x4000 : 0));
    }
    c.pixel_status[17] |= calib::kStatusMasked;
    std::vector<calib::CalibrationParams> sets = {params_set(0, true), params_set(5, true),
                                                  params_set(0, false)};
    check_kernels_against_cpu(d, c, raw.data(), sets, "36-pixel bank rows");
  }

  // Hand-made ePix10ka words: every configuration, both sides of the gain bit, masked pixels and an
  // invalid configuration, against values worked out by hand.
  // pedestal[m] = 1000.5 + 100 m, gain[m] = 0.25 (m + 1).
  void epix10ka_words_give_hand_computed_values() {
    const DetectorDescription d = small_detector(RawEncoding::Epix10ka, 1, 48, 48);
    CalibrationConstants c =
        constant_planes(d, 1000.5f, 100.0f, {0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f});
    std::vector<std::uint16_t> raw(d.pixels(), 1000);  // FH, (1000 - 1000.5) * 0.25
    std::vector<float> expected(d.pixels(), -0.125f);
    struct Word {
      std::uint8_t status;
      std::uint16_t raw;
      float expected;
    };
    const Word words[] = {
        {calib::kConfigFH, 1500, 124.875f},                     // FH:    (1500 - 1000.5) * 0.25
        {calib::kConfigFM, 2000, 449.75f},                      // FM:    (2000 - 1100.5) * 0.5
        {calib::kConfigFL, 3000, 1349.625f},                    // FL:    (3000 - 1200.5) * 0.75
        {calib::kConfigAHL, 1400, 99.5f},                       // AHL-H: (1400 - 1300.5) * 1.0
        {calib::kConfigAHL, 0x4000 | 1500, -0.75f},             // AHL-L: (1500 - 1500.5) * 1.5
        {calib::kConfigAML, 2000, 749.375f},                    // AML-M: (2000 - 1400.5) * 1.25
        {calib::kConfigAML, 0x4000 | 2000, 699.125f},           // AML-L: (2000 - 1600.5) * 1.75
        {calib::kStatusMasked | calib::kConfigFH, 1500, 0.0f},  // masked
        {5, 1500, 0.0f},                                        // no such configuration: bad
        {7, 1500, 0.0f},                                        // no such configuration: bad
        {calib::kConfigFH, 0xC000 | 1200,
         49.875f},                               // FH ignores the gain bits: (1200 - 1000.5) * .25
        {calib::kConfigFL, 0x3FFF, 11386.875f},  // FL at full scale: (16383 - 1200.5) * 0.75
    };
    for (std::size_t i = 0; i < std::size(words); ++i) {
      c.pixel_status[i] = words[i].status;
      raw[i] = words[i].raw;
      expected[i] = words[i].expected;
    }
    calib::CalibrationParams params;
    params.common_mode = false;
    const std::vector<float> got = calibrate_on_backend(d, c, params, raw.data());
    for (std::size_t i = 0; i < expected.size(); ++i)
      QVERIFY2(got[i] == expected[i], qPrintable(QString("pixel %1: got %2, expected %3")
                                                     .arg(i)
                                                     .arg(double(got[i]), 0, 'g', 9)
                                                     .arg(double(expected[i]), 0, 'g', 9)));
  }

  // Hand-made Jungfrau words: the three gain stages, the invalid stage 10, a masked pixel.
  // pedestal[m] = 2000 + 1000 m, gains 0.5, 2, 8.
  void jungfrau_words_give_hand_computed_values() {
    const DetectorDescription d = small_detector(RawEncoding::Jungfrau, 1, 64, 64);
    CalibrationConstants c = constant_planes(d, 2000.0f, 1000.0f, {0.5f, 2.0f, 8.0f});
    std::vector<std::uint16_t> raw(d.pixels(), 2000);
    std::vector<float> expected(d.pixels(), 0.0f);
    raw[0] = 2100;
    expected[0] = 50.0f;  // g0: (2100 - 2000) * 0.5
    raw[1] = 0x4000 | 3500;
    expected[1] = 1000.0f;  // g1: (3500 - 3000) * 2
    raw[2] = 0xC000 | 4010;
    expected[2] = 80.0f;  // g2: (4010 - 4000) * 8
    raw[3] = 0x8000 | 2100;
    expected[3] = 0.0f;  // stage 10: bad
    raw[4] = 2100;
    expected[4] = 0.0f;  // masked
    c.pixel_status[4] = calib::kStatusMasked;
    raw[5] = 0x4000 | 2990;
    expected[5] = -20.0f;  // g1 below its pedestal: (2990 - 3000) * 2
    calib::CalibrationParams params;
    params.common_mode = false;
    const std::vector<float> got = calibrate_on_backend(d, c, params, raw.data());
    for (std::size_t i = 0; i < expected.size(); ++i)
      QVERIFY2(got[i] == expected[i], qPrintable(QString("pixel %1: got %2, expected %3")
                                                     .arg(i)
                                                     .arg(double(got[i]), 0, 'g', 9)
                                                     .arg(double(expected[i]), 0, 'g', 9)));
  }

  // Two Jungfrau bank rows by hand, pedestal 2000, gain 0.5, threshold 40, min 8:
  //   row 0: 60 quiet offsets (i % 20) - 5 for i = 0..59, i.e. -5..14 three times each: sorted,
  //          ranks 29 and 30 hold 4 and 5, so the common mode is 4.5; two photons (+500), one
  //          stage-10 word and one masked pixel are left out of the median.
  //   row 1: 7 quiet pixels (fewer than 8): no correction.
  void common_mode_gives_hand_computed_values() {
    const DetectorDescription d = small_detector(RawEncoding::Jungfrau, 2, 64, 64);
    CalibrationConstants c = constant_planes(d, 2000.0f, 1000.0f, {0.5f, 2.0f, 8.0f});
    std::vector<std::uint16_t> raw(d.pixels());
    std::vector<float> expected(d.pixels());
    for (int i = 0; i < 60; ++i) {
      const int offset = i % 20 - 5;
      raw[std::size_t(i)] = std::uint16_t(2000 + offset);
      expected[std::size_t(i)] = (float(offset) - 4.5f) * 0.5f;
    }
    raw[60] = 2500;
    expected[60] = 247.75f;  // photon: (500 - 4.5) * 0.5
    raw[61] = 2500;
    expected[61] = 247.75f;
    raw[62] = 0x8000 | 2000;
    expected[62] = 0.0f;  // stage 10
    raw[63] = 2000;
    expected[63] = 0.0f;  // masked
    c.pixel_status[63] = calib::kStatusMasked;
    for (int i = 0; i < 64; ++i) {
      const std::size_t p = 64 + std::size_t(i);
      const int offset = i < 7 ? i - 3 : 300;  // 7 quiet pixels, the rest photons
      raw[p] = std::uint16_t(2000 + offset);
      expected[p] = float(offset) * 0.5f;
    }
    calib::CalibrationParams params;  // common mode on, threshold 40, min 8
    const std::vector<float> got = calibrate_on_backend(d, c, params, raw.data());
    const std::vector<float> cpu = calibrate_on_cpu(d, c, params, raw.data());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      QVERIFY2(got[i] == expected[i], qPrintable(QString("pixel %1: got %2, expected %3")
                                                     .arg(i)
                                                     .arg(double(got[i]), 0, 'g', 9)
                                                     .arg(double(expected[i]), 0, 'g', 9)));
      QCOMPARE(cpu[i], expected[i]);
    }
  }

  // Hand-made words of the three integer encodings: counts, the values a float rounds (ties to
  // even above 2^24), negative int32 values and every marker, with a masked pixel and constants
  // that are not the identity on a few pixels. Both kernel variants equal the CPU bit for bit on
  // an event of 3 x 40 pixels (the vector loads) and one of 5 x 36 (not a multiple of 8: the
  // per-pixel loads), and the backend gives the values worked out by hand.
  void integer_words_equal_cpu_and_hand_computed_values() {
    struct Word {
      std::int64_t word;
      float expected;  // with pedestal 0, gain 1 (pixels 0..11); 0 where bad
    };
    const std::int64_t int32_min = std::numeric_limits<std::int32_t>::min();
    const std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();
    struct Case {
      RawEncoding encoding;
      std::vector<Word> words;  // pixels 0..; the rest cycle through `fill`
      std::vector<std::int64_t> fill;
    };
    const Case cases[] = {
        {RawEncoding::Uint16,
         {{0, 0.0f}, {1, 1.0f}, {65534, 65534.0f}, {65535, 0.0f}, {0xC123, 49443.0f}},
         {0, 1, 2, 7, 65535, 300, 12, 40000, 3}},
        {RawEncoding::Uint32,
         {{0, 0.0f},
          {16777217, 16777216.0f},
          {16777219, 16777220.0f},
          {4294967294LL, 4294967296.0f},
          {4294967295LL, 0.0f},
          {65535, 65535.0f}},
         {0, 1, 4294967295LL, 5, 16777217, 9, 2, 100000}},
        {RawEncoding::Int32,
         {{0, 0.0f},
          {-1, -1.0f},
          {-5, -5.0f},
          {int32_min, 0.0f},
          {int32_max, 0.0f},
          {2147483646, 2147483648.0f},
          {int32_min + 1, -2147483648.0f}},
         {0, -3, 4, int32_min, 17, -100, int32_max, 9}},
    };
    for (const Case& c : cases) {
      for (const auto& [rows, cols] : {std::pair{3, 40}, std::pair{5, 36}}) {
        const DetectorDescription d = small_detector(c.encoding, rows, cols, 0);
        std::vector<std::int64_t> words(d.pixels());
        std::vector<float> expected(d.pixels(), kNaN);  // NaN: not worked out by hand
        for (std::size_t p = 0; p < words.size(); ++p) {
          if (p < c.words.size()) {
            words[p] = c.words[p].word;
            expected[p] = c.words[p].expected;
          } else {
            words[p] = c.fill[p % c.fill.size()];
          }
        }
        std::vector<std::uint8_t> raw(d.raw_event_bytes());
        for (std::size_t p = 0; p < words.size(); ++p) {
          if (c.encoding == RawEncoding::Uint16) {
            const auto w = std::uint16_t(words[p]);
            std::memcpy(raw.data() + 2 * p, &w, 2);
          } else if (c.encoding == RawEncoding::Uint32) {
            const auto w = std::uint32_t(words[p]);
            std::memcpy(raw.data() + 4 * p, &w, 4);
          } else {
            const auto w = std::int32_t(words[p]);
            std::memcpy(raw.data() + 4 * p, &w, 4);
          }
        }
        CalibrationConstants constants = identity_constants(d);
        constants.pixel_status[13] = calib::kStatusMasked;
        constants.pedestal_gain[14] = {0.5f, 2.0f};    // flat-field-like constants
        constants.pedestal_gain[15] = {-1.0f, 0.25f};  // (w + 1) / 4
        expected[13] = 0.0f;
        const QString what = QString("%1, %2 x %3")
                                 .arg(QString::fromStdString(std::string(to_string(c.encoding))))
                                 .arg(rows)
                                 .arg(cols);
        check_kernels_against_cpu(d, constants, raw.data(), {calib::CalibrationParams{}}, what);
        const std::vector<float> got =
            calibrate_on_backend(d, constants, calib::CalibrationParams{}, raw.data());
        for (std::size_t p = 0; p < expected.size(); ++p)
          if (!std::isnan(expected[p]))
            QVERIFY2(got[p] == expected[p], qPrintable(QString("%1 pixel %2: got %3, expected %4")
                                                           .arg(what)
                                                           .arg(p)
                                                           .arg(double(got[p]), 0, 'g', 12)
                                                           .arg(double(expected[p]), 0, 'g', 12)));
      }
    }
  }

  // A raw event in ordinary (pageable) memory is staged through pinned memory, same result.
  void pageable_input_gives_the_same_result() {
    const DetectorDescription d = find_detector("epix10ka2m");
    DetectorSimulator simulator(d, SimulatorConfig{});
    std::vector<std::uint8_t> raw(d.raw_event_bytes());
    simulator.generate(1, raw.data());
    calib::CalibrationParams params;
    auto backend = make_cuda_backend(d, simulator.constants(), params);
    BackendEvent event;
    event.raw = raw.data();
    backend->submit(event);
    const auto done = backend->next_completed(true);
    QVERIFY(done.has_value());
    std::vector<float> got(d.pixels(), kNaN);
    backend->read_output(*done, got.data());
    const std::vector<float> want = calibrate_on_cpu(d, simulator.constants(), params, raw.data());
    const Difference diff = compare_bits(got.data(), want.data(), got.size());
    QVERIFY2(diff.differing == 0, describe(diff, "pageable input").constData());
  }

  void backend_names_the_device() {
    const DetectorDescription d = find_detector("generic_f32");
    const CalibrationConstants c = identity_constants(d);
    auto backend = make_cuda_backend(d, c, calib::CalibrationParams{});
    QVERIFY(!backend->device_name().empty());
    qInfo("device: %s", backend->device_name().c_str());
  }
};

QTEST_GUILESS_MAIN(TestGpuCalibration)
#include "test_gpu_calibration.moc"
