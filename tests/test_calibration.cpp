// Calibration on the CPU backend against an independent float64 reference.
//
// The reference below decodes raw words with its own bit logic (not calib/calibration_math.hpp),
// computes (adc - pedestal - common_mode) * gain in double precision and the common mode as a
// float64 median. The engine works in float32, so the two agree to float rounding: the pedestal
// offset of a 14-bit ADC value carries at most half an ulp of 16384 (~0.001 ADU) and the common
// mode as much again, so |engine - reference| <= kAbsToleranceAdu * gain + 1e-6 * |reference|.
// Quiet-pixel decisions are taken on the float32 offset in both, as the engine documents.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "calib/calibrate_cpu.hpp"
#include "calib/calibration_math.hpp"
#include "calib/constants.hpp"
#include "calib/gain_occupancy.hpp"
#include "calib/middle_order_statistics.hpp"
#include "core/detector.hpp"
#include "core/thread_pool.hpp"
#include "sim/simulator.hpp"

using namespace livedrp;

namespace {

constexpr double kAbsToleranceAdu = 4e-3;
constexpr double kRelTolerance = 1e-6;

struct ReferencePixel {
  int mode = 0;
  bool bad = false;
  double adc = 0;
};

// Independent decoding, straight from the detector documentation.
ReferencePixel reference_decode(const DetectorDescription& d, const void* raw, std::size_t p,
                                std::uint8_t status) {
  ReferencePixel r;
  r.bad = (status & 0x80) != 0;
  if (d.encoding == RawEncoding::Float32) {
    r.adc = static_cast<const float*>(raw)[p];
    return r;
  }
  // Integer images: the value; Eiger's all-ones words and Jungfraujoch's int32 extremes are bad.
  if (d.encoding == RawEncoding::Uint16) {
    const std::uint16_t word = static_cast<const std::uint16_t*>(raw)[p];
    r.adc = double(word);
    r.bad = r.bad || word == 65535;
    return r;
  }
  if (d.encoding == RawEncoding::Uint32) {
    const std::uint32_t word = static_cast<const std::uint32_t*>(raw)[p];
    r.adc = double(word);
    r.bad = r.bad || word == 4294967295u;
    return r;
  }
  if (d.encoding == RawEncoding::Int32) {
    const std::int32_t word = static_cast<const std::int32_t*>(raw)[p];
    r.adc = double(word);
    r.bad = r.bad || word == std::numeric_limits<std::int32_t>::min() ||
            word == std::numeric_limits<std::int32_t>::max();
    return r;
  }
  const std::uint16_t word = static_cast<const std::uint16_t*>(raw)[p];
  r.adc = double(word % 16384);  // 14 ADC bits
  if (d.encoding == RawEncoding::Jungfrau) {
    const int stage = word / 16384;  // bits 15:14
    static const int kModeOfStage[4] = {0, 1, -1, 2};
    r.mode = kModeOfStage[stage] < 0 ? 0 : kModeOfStage[stage];
    if (stage == 2) r.bad = true;
  } else {
    const bool switched = (word / 16384) % 2 == 1;  // bit 14
    switch (status & 7) {
      case 0:
        r.mode = 0;
        break;  // FH
      case 1:
        r.mode = 1;
        break;  // FM
      case 2:
        r.mode = 2;
        break;  // FL
      case 3:
        r.mode = switched ? 5 : 3;
        break;  // AHL: high, or low after switching
      case 4:
        r.mode = switched ? 6 : 4;
        break;  // AML: medium, or low after switching
      default:
        r.bad = true;
    }
  }
  return r;
}

double reference_median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

struct ReferenceResult {
  std::vector<double> values;
  std::set<int> modes_seen;
  std::size_t bad_pixels = 0;
  std::size_t corrected_bank_rows = 0;
};

ReferenceResult reference_calibrate(const DetectorDescription& d, const CalibrationConstants& c,
                                    const calib::CalibrationParams& params, const void* raw) {
  ReferenceResult result;
  result.values.resize(d.pixels());
  const bool common_mode = params.common_mode && d.bank_columns > 0;
  const std::size_t width = common_mode ? std::size_t(d.bank_columns) : d.pixels();
  for (std::size_t first = 0; first < d.pixels(); first += width) {
    std::vector<ReferencePixel> pixels(width);
    std::vector<double> offsets(width), quiet;
    for (std::size_t i = 0; i < width; ++i) {
      const std::size_t p = first + i;
      pixels[i] = reference_decode(d, raw, p, c.pixel_status[p]);
      const auto pg = c.pedestal_gain[std::size_t(pixels[i].mode) * c.pixels + p];
      offsets[i] = pixels[i].adc - double(pg.pedestal);
      const float offset32 = float(pixels[i].adc) - pg.pedestal;
      if (common_mode && !pixels[i].bad && std::fabs(offset32) < params.common_mode_threshold_adu)
        quiet.push_back(offsets[i]);
    }
    double cm = 0;
    if (common_mode && int(quiet.size()) >= params.common_mode_min_pixels) {
      cm = reference_median(quiet);
      ++result.corrected_bank_rows;
    }
    for (std::size_t i = 0; i < width; ++i) {
      const std::size_t p = first + i;
      const auto pg = c.pedestal_gain[std::size_t(pixels[i].mode) * c.pixels + p];
      result.values[p] = pixels[i].bad ? 0.0 : (offsets[i] - cm) * double(pg.gain);
      if (pixels[i].bad)
        ++result.bad_pixels;
      else
        result.modes_seen.insert(pixels[i].mode);
    }
  }
  return result;
}

// Largest deviation in units of the allowed tolerance (<= 1 passes), and where.
std::pair<double, std::size_t> worst_deviation(const std::vector<float>& engine,
                                               const ReferenceResult& ref,
                                               const CalibrationConstants& c) {
  double worst = 0;
  std::size_t where = 0;
  for (std::size_t p = 0; p < engine.size(); ++p) {
    double max_gain = 0;
    for (int m = 0; m < c.modes; ++m)
      max_gain = std::max(max_gain,
                          std::fabs(double(c.pedestal_gain[std::size_t(m) * c.pixels + p].gain)));
    const double allowed = kAbsToleranceAdu * max_gain + kRelTolerance * std::fabs(ref.values[p]);
    const double deviation = std::fabs(double(engine[p]) - ref.values[p]) / allowed;
    if (!(deviation <= worst)) {
      worst = std::isnan(deviation) ? 1e300 : deviation;
      where = p;
    }
  }
  return {worst, where};
}

}  // namespace

class TestCalibration : public QObject {
  Q_OBJECT

 private:
  void compare_with_reference(const QString& detector_name, bool common_mode) {
    const DetectorDescription detector = find_detector(detector_name.toStdString());
    SimulatorConfig config;
    config.hit_fraction = 1.0;  // every event has Bragg peaks: bright pixels switch gain
    // ePix10ka: all five gain configurations dealt to the ASICs, so every mode is calibrated
    // (out of the box every ASIC is AHL).
    config.epix10ka_asic_configs = every_epix10ka_config();
    DetectorSimulator simulator(detector, config);
    const CalibrationConstants& constants = simulator.constants();
    calib::CalibrationParams params;
    params.common_mode = common_mode;
    ThreadPool pool(2);
    std::vector<std::byte> raw(detector.raw_event_bytes());
    std::vector<float> out(detector.pixels());
    std::set<int> modes_seen;
    for (std::uint64_t event = 0; event < 2; ++event) {
      simulator.generate(event, raw.data(), nullptr, &pool);
      std::fill(out.begin(), out.end(), std::nanf(""));  // every pixel must be written
      calibrate_event_cpu(detector, constants, params, raw.data(), out.data(), &pool);
      const ReferenceResult ref = reference_calibrate(detector, constants, params, raw.data());
      const auto [worst, where] = worst_deviation(out, ref, constants);
      QVERIFY2(worst <= 1.0, qPrintable(QString("%1 event %2 pixel %3: engine %4, reference %5")
                                            .arg(detector_name)
                                            .arg(event)
                                            .arg(where)
                                            .arg(double(out[where]), 0, 'g', 9)
                                            .arg(ref.values[where], 0, 'g', 12)));
      QVERIFY(ref.bad_pixels > 0);
      for (std::size_t p = 0; p < out.size(); ++p)
        if (ref.values[p] == 0.0 && constants.masked(p)) QCOMPARE(out[p], 0.0f);
      if (common_mode) QVERIFY(ref.corrected_bank_rows > detector.bank_rows() / 2);
      modes_seen.insert(ref.modes_seen.begin(), ref.modes_seen.end());
    }
    // Every gain mode of the detector occurs in the data and was checked.
    QCOMPARE(int(modes_seen.size()), detector.modes());
  }

 private slots:
  void epix10ka_matches_float64_reference_with_common_mode() {
    compare_with_reference("epix10ka2m", true);
  }
  void epix10ka_matches_float64_reference_without_common_mode() {
    compare_with_reference("epix10ka2m", false);
  }
  void jungfrau_matches_float64_reference_with_common_mode() {
    compare_with_reference("jungfrau4m", true);
  }
  void jungfrau_matches_float64_reference_without_common_mode() {
    compare_with_reference("jungfrau4m", false);
  }

  // The simulated Eiger2 X 4M (uint32 counts, module gaps and dead pixels all ones).
  void eiger2_counts_match_float64_reference() { compare_with_reference("eiger2x4m", false); }

  // Every word of the three integer encodings that matters, against values written out here:
  // float64 literals of the nearest float (ties to even above 2^24), and the markers bad.
  void integer_words_decode_to_their_values_and_markers_to_bad() {
    using namespace calib;
    struct Case {
      RawEncoding encoding;
      std::int64_t word;  // the stored value (uint16, uint32 or int32)
      double value;       // the float it reads as, exactly
      bool bad;
    };
    const Case cases[] = {
        {RawEncoding::Uint16, 0, 0.0, false},
        {RawEncoding::Uint16, 1, 1.0, false},
        {RawEncoding::Uint16, 16383, 16383.0, false},   // no ADC field: every bit is the count
        {RawEncoding::Uint16, 0xC123, 49443.0, false},  // nor gain bits
        {RawEncoding::Uint16, 65534, 65534.0, false},   // the largest count
        {RawEncoding::Uint16, 65535, 65535.0, true},    // all ones: gap, defective, saturated
        {RawEncoding::Uint32, 0, 0.0, false},
        {RawEncoding::Uint32, 65535, 65535.0, false},  // all ones of 16 bits is a count here
        {RawEncoding::Uint32, 16777216, 16777216.0, false},
        {RawEncoding::Uint32, 16777217, 16777216.0, false},  // 2^24 + 1: tie, to even
        {RawEncoding::Uint32, 16777219, 16777220.0, false},  // tie, to even (up)
        {RawEncoding::Uint32, 4294967294, 4294967296.0, false},
        {RawEncoding::Uint32, 4294967295, 4294967296.0, true},  // all ones
        {RawEncoding::Int32, 0, 0.0, false},
        {RawEncoding::Int32, -1, -1.0, false},  // all ones of an int32 is a value
        {RawEncoding::Int32, -5, -5.0, false},  // converted Jungfrau data may be negative
        {RawEncoding::Int32, 123456, 123456.0, false},
        {RawEncoding::Int32, -2147483647, -2147483648.0, false},
        {RawEncoding::Int32, -2147483647 - 1, -2147483648.0, true},  // INT32_MIN: masked, error
        {RawEncoding::Int32, 2147483646, 2147483648.0, false},
        {RawEncoding::Int32, 2147483647, 2147483648.0, true},  // INT32_MAX: saturated
    };
    for (const Case& c : cases) {
      std::uint16_t u16 = std::uint16_t(c.word);
      std::uint32_t u32 = std::uint32_t(c.word);
      std::int32_t i32 = std::int32_t(c.word);
      const void* raw = c.encoding == RawEncoding::Uint16   ? static_cast<const void*>(&u16)
                        : c.encoding == RawEncoding::Uint32 ? static_cast<const void*>(&u32)
                                                            : static_cast<const void*>(&i32);
      const QString what = QString("%1 word %2").arg(to_string(c.encoding).data()).arg(c.word);
      for (const std::uint8_t status : {std::uint8_t(0), kStatusMasked}) {
        const DecodedPixel pixel = decode_raw(c.encoding, raw, 0, status);
        QVERIFY2(double(pixel.adc) == c.value,
                 qPrintable(what + QString(": reads %1").arg(double(pixel.adc), 0, 'f', 1)));
        QCOMPARE(pixel.mode, 0);
        QVERIFY2(pixel.bad == (c.bad || status == kStatusMasked), qPrintable(what));
      }
    }
    // The float32 encoding's all-ones word is a NaN, not a marker: only the mask makes it bad.
    const std::uint32_t nan_bits = 0xFFFFFFFFu;
    QVERIFY(!decode_raw(RawEncoding::Float32, &nan_bits, 0, 0).bad);
  }

  // A 4 x 8 event of each integer encoding through calibrate_event_cpu: pedestal and gain apply
  // as to every encoding (here non-trivial on some pixels, as a flat field would), masked and
  // marker pixels give 0, and the gain occupancy counts exactly those as bad.
  void integer_images_calibrate_to_their_values_with_bad_pixels_zero() {
    const std::int64_t int32_min = std::numeric_limits<std::int32_t>::min();
    const std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();
    struct Encoding {
      const char* name;
      std::vector<std::int64_t> words;  // 32 pixels; the rest of the row 7
      std::vector<std::size_t> markers;
    };
    const Encoding encodings[] = {
        {"uint16", {0, 1, 2, 65534, 65535, 100, 9, 40000}, {4}},
        {"uint32", {0, 3, 65535, 4294967295LL, 1000000, 16777216, 5, 4294967294LL}, {3}},
        {"int32", {0, -3, int32_min, 250, int32_max, -1, 16777216, 77}, {2, 4}},
    };
    for (const Encoding& e : encodings) {
      const nlohmann::json description = {
          {"schema_version", 1},
          {"name", std::string("small_") + e.name},
          {"raw_encoding", e.name},
          {"segments", 1},
          {"segment_shape", {4, 8}},
          {"pixel_size_um", 75.0},
          {"asic_shape", {4, 8}},
          {"bank_columns", 0},
          {"gain_modes", {{{"name", "counting"}, {"nominal_adu_per_kev", 1.0}}}},
          {"placement", {{{"x_px", 0}, {"y_px", 0}, {"rotation_deg", 0}}}}};
      const DetectorDescription d = parse_detector_description(description, "test");
      QCOMPARE(d.raw_bytes_per_pixel(), std::size_t(std::string(e.name) == "uint16" ? 2 : 4));
      std::vector<std::int64_t> words(d.pixels(), 7);
      std::copy(e.words.begin(), e.words.end(), words.begin());
      std::vector<std::uint8_t> raw(d.raw_event_bytes());
      for (std::size_t p = 0; p < words.size(); ++p) {
        if (d.encoding == RawEncoding::Uint16) {
          const auto w = std::uint16_t(words[p]);
          std::memcpy(raw.data() + 2 * p, &w, 2);
        } else if (d.encoding == RawEncoding::Uint32) {
          const auto w = std::uint32_t(words[p]);
          std::memcpy(raw.data() + 4 * p, &w, 4);
        } else {
          const auto w = std::int32_t(words[p]);
          std::memcpy(raw.data() + 4 * p, &w, 4);
        }
      }
      CalibrationConstants c = identity_constants(d);
      // A flat-field-like gain and an offset on pixels 9 (7 -> (7 - 0.5) * 2 = 13) and 10.
      c.pedestal_gain[9] = {0.5f, 2.0f};
      c.pedestal_gain[10] = {-1.0f, 0.25f};  // (7 + 1) * 0.25 = 2
      c.pixel_status[12] |= calib::kStatusMasked;
      std::vector<float> out(d.pixels(), std::nanf(""));
      calibrate_event_cpu(d, c, calib::CalibrationParams{}, raw.data(), out.data());
      std::size_t bad = 0;
      for (std::size_t p = 0; p < d.pixels(); ++p) {
        const bool marker = std::find(e.markers.begin(), e.markers.end(), p) != e.markers.end();
        const bool is_bad = marker || p == 12;
        bad += is_bad ? 1 : 0;
        // Counts up to 2^24 are exact in float; 4294967294 reads as 2^32, the nearest float.
        double expected = is_bad ? 0.0 : double(words[p]);
        if (words[p] == 4294967294LL) expected = 4294967296.0;
        if (p == 9) expected = 13.0;
        if (p == 10) expected = 2.0;
        QVERIFY2(double(out[p]) == expected, qPrintable(QString("%1 pixel %2: %3, expected %4")
                                                            .arg(e.name)
                                                            .arg(p)
                                                            .arg(double(out[p]), 0, 'f', 3)
                                                            .arg(expected, 0, 'f', 3)));
      }
      const calib::GainOccupancy occupancy = calib::gain_occupancy(d, c, raw.data());
      QCOMPARE(occupancy.modes, (std::vector<std::string>{"counting", "bad"}));
      QCOMPARE(double(occupancy.fraction[1]), double(float(double(bad) / 32.0)));
      QCOMPARE(double(occupancy.fraction[0]), double(float(double(32 - bad) / 32.0)));
    }
  }

  void epix10ka_words_decode_to_documented_modes() {
    using namespace calib;
    // Fixed configurations ignore the gain bit; auto configurations switch on it.
    const std::uint16_t low = 1234, switched = std::uint16_t((1u << 14) | 1234u);
    QCOMPARE(decode_epix10ka(low, kConfigFH).mode, int(kFH));
    QCOMPARE(decode_epix10ka(switched, kConfigFH).mode, int(kFH));
    QCOMPARE(decode_epix10ka(low, kConfigFM).mode, int(kFM));
    QCOMPARE(decode_epix10ka(low, kConfigFL).mode, int(kFL));
    QCOMPARE(decode_epix10ka(low, kConfigAHL).mode, int(kAHL_H));
    QCOMPARE(decode_epix10ka(switched, kConfigAHL).mode, int(kAHL_L));
    QCOMPARE(decode_epix10ka(low, kConfigAML).mode, int(kAML_M));
    QCOMPARE(decode_epix10ka(switched, kConfigAML).mode, int(kAML_L));
    QCOMPARE(decode_epix10ka(switched, kConfigAML).adc, 1234.0f);
    QVERIFY(decode_epix10ka(low, 5).bad);  // no such configuration
    QVERIFY(decode_epix10ka(low, kConfigFH | kStatusMasked).bad);
    QVERIFY(!decode_epix10ka(0xBFFF, kConfigFH).bad);  // bit 15 is not part of the word's meaning
    QCOMPARE(decode_epix10ka(0xBFFF, kConfigFH).adc, 16383.0f);
    // Every status byte and both gain bits, against the documented table written out here.
    const int fixed[3] = {kFH, kFM, kFL};
    for (int status = 0; status < 256; ++status)
      for (int bit = 0; bit < 2; ++bit) {
        const auto word = std::uint16_t((bit << 14) | 777);
        const DecodedPixel pixel = decode_epix10ka(word, std::uint8_t(status));
        const int config = status & kStatusConfigBits;
        const bool exists = config <= kConfigAML;
        int mode = 0;
        if (config <= kConfigFL) mode = fixed[config];
        if (config == kConfigAHL) mode = bit ? kAHL_L : kAHL_H;
        if (config == kConfigAML) mode = bit ? kAML_L : kAML_M;
        QCOMPARE(pixel.bad, (status & kStatusMasked) != 0 || !exists);
        QCOMPARE(pixel.mode, mode);
        QCOMPARE(pixel.adc, 777.0f);
      }
  }

  void jungfrau_words_decode_to_documented_stages() {
    using namespace calib;
    QCOMPARE(decode_jungfrau(0x0000 | 100, 0).mode, 0);
    QCOMPARE(decode_jungfrau(0x4000 | 100, 0).mode, 1);
    QCOMPARE(decode_jungfrau(0xC000 | 100, 0).mode, 2);
    QVERIFY(decode_jungfrau(0x8000 | 100, 0).bad);  // bits 10: not a gain stage
    QVERIFY(!decode_jungfrau(0xC000 | 100, 0).bad);
    QCOMPARE(decode_jungfrau(0xC000 | 100, 0).adc, 100.0f);
  }

  // A hand-made single bank row with known offsets: the output is checked against numbers worked
  // out by hand.
  void bank_row_common_mode_is_the_median_of_quiet_pixels() {
    DetectorDescription d = find_detector("jungfrau4m");
    CalibrationConstants c = identity_constants(d);
    // Pixels 0..63 of the first bank row: pedestal 1000 ADU, gain 0.5 keV/ADU in g0.
    for (std::size_t p = 0; p < 64; ++p) c.pedestal_gain[p] = {1000.0f, 0.5f};
    std::vector<std::uint16_t> raw(d.pixels(), 0);
    // 60 quiet pixels with offsets 1..60 ADU scattered; 4 bright ones (offset 3000) not quiet.
    for (std::size_t p = 0; p < 60; ++p) raw[p] = std::uint16_t(1000 + ((p * 37) % 60) + 1);
    for (std::size_t p = 60; p < 64; ++p) raw[p] = 4000;
    c.pixel_status[5] |= calib::kStatusMasked;  // its offset ((5*37)%60)+1 = 6 leaves the median
    calib::CalibrationParams params;
    params.common_mode_threshold_adu = 100.0f;
    std::vector<float> out(d.pixels());
    calibrate_bank_row_cpu(d.encoding, c, params, raw.data(), 0, 64, out.data());
    // Quiet offsets: 1..60 without 6 -> 59 values, median is the 30th smallest = 31.
    const float cm = 31.0f;
    QCOMPARE(out[5], 0.0f);
    for (std::size_t p = 0; p < 64; ++p) {
      if (p == 5) continue;
      const float offset = float(raw[p]) - 1000.0f;
      QCOMPARE(out[p], (offset - cm) * 0.5f);
    }
    // Even count: median is the mean of the two middle values. Unmask pixel 5 -> 1..60 -> 30.5.
    c.pixel_status[5] = 0;
    calibrate_bank_row_cpu(d.encoding, c, params, raw.data(), 0, 64, out.data());
    QCOMPARE(out[60], (3000.0f - 30.5f) * 0.5f);
    // Too few quiet pixels: no correction.
    params.common_mode_min_pixels = 61;
    calibrate_bank_row_cpu(d.encoding, c, params, raw.data(), 0, 64, out.data());
    QCOMPARE(out[60], 3000.0f * 0.5f);
  }

  void middle_order_statistics_equal_a_full_sort() {
    // Every row length the bank rows can have, rows of distinct values, of few values (long runs
    // of ties), constant, sorted either way and with both zeros; against std::sort's ranks.
    std::mt19937 rng(20261204);
    std::uniform_real_distribution<float> wide(-40.0f, 40.0f);
    std::uniform_int_distribution<int> few(-3, 3);
    for (int n = 1; n <= calib::kMaxBankColumns; ++n) {
      for (int trial = 0; trial < 300; ++trial) {
        std::vector<float> row(std::size_t(n), 0.0f);
        const int kind = trial % 6;
        for (int i = 0; i < n; ++i) {
          float& v = row[std::size_t(i)];
          switch (kind) {
            case 0:
              v = wide(rng);
              break;
            case 1:
              v = float(few(rng));
              break;
            case 2:
              v = 7.25f;
              break;
            case 3:
              v = float(i) * 0.5f;
              break;
            case 4:
              v = float(n - i);
              break;
            default:
              v = (i % 3 == 0) ? -0.0f : (i % 3 == 1 ? 0.0f : float(few(rng)));
              break;
          }
        }
        std::vector<float> sorted = row;
        std::sort(sorted.begin(), sorted.end());
        const calib::MiddleOrderStatistics m = calib::middle_order_statistics(row.data(), n);
        if (m.lower != sorted[std::size_t((n - 1) / 2)] || m.upper != sorted[std::size_t(n / 2)])
          QFAIL(qPrintable(QString("n %1, kind %2: got %3, %4; sorted gives %5, %6")
                               .arg(n)
                               .arg(kind)
                               .arg(m.lower)
                               .arg(m.upper)
                               .arg(sorted[std::size_t((n - 1) / 2)])
                               .arg(sorted[std::size_t(n / 2)])));
      }
    }
  }

  void float32_detector_passes_values_through_and_masks() {
    const DetectorDescription d = find_detector("generic_f32");
    CalibrationConstants c = identity_constants(d);
    std::vector<float> raw(d.pixels());
    for (std::size_t p = 0; p < raw.size(); ++p) raw[p] = float(p % 1000) * 0.37f - 11.0f;
    c.pixel_status[17] |= calib::kStatusMasked;
    std::vector<float> out(d.pixels(), std::nanf(""));
    calib::CalibrationParams params;
    calibrate_event_cpu(d, c, params, raw.data(), out.data());
    for (std::size_t p = 0; p < raw.size(); ++p) QCOMPARE(out[p], p == 17 ? 0.0f : raw[p]);
  }

  void thread_pool_gives_the_same_result_as_one_thread() {
    const DetectorDescription d = find_detector("epix10ka2m");
    DetectorSimulator simulator(d, SimulatorConfig{});
    std::vector<std::byte> raw(d.raw_event_bytes());
    simulator.generate(3, raw.data());
    std::vector<float> serial(d.pixels()), parallel(d.pixels());
    calib::CalibrationParams params;
    calibrate_event_cpu(d, simulator.constants(), params, raw.data(), serial.data(), nullptr);
    ThreadPool pool(3);
    calibrate_event_cpu(d, simulator.constants(), params, raw.data(), parallel.data(), &pool);
    QVERIFY(std::memcmp(serial.data(), parallel.data(), serial.size() * sizeof(float)) == 0);
  }
};

QTEST_GUILESS_MAIN(TestCalibration)
#include "test_calibration.moc"
