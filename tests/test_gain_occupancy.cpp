// Gain-mode occupancy (calib/gain_occupancy.hpp): the fraction of each segment's pixels per gain
// mode, decoded as the calibration decodes them. Hand-built raw words give exact fractions; on
// simulated events the counts agree with the simulator's own truth (pixels it switched, pixels it
// wrote with invalid gain bits, pixels its constants mask).
#include <QtTest/QtTest>

#include <cstdint>
#include <string>
#include <vector>

#include "calib/calibration_math.hpp"
#include "calib/constants.hpp"
#include "calib/gain_occupancy.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "sim/simulator.hpp"

using namespace livedrp;
using livedrp::calib::gain_occupancy;
using livedrp::calib::GainOccupancy;

namespace {

DetectorDescription small_detector(RawEncoding encoding, std::vector<std::string> mode_names,
                                   int rows, int cols) {
  DetectorDescription detector;
  detector.name = "small";
  detector.encoding = encoding;
  detector.segments = 2;
  detector.rows = rows;
  detector.cols = cols;
  detector.asic_rows = rows;
  detector.asic_cols = cols;
  detector.pixel_size_um = 100;
  for (const std::string& name : mode_names) detector.gain_modes.push_back({name, 1.0});
  detector.placement = {{0, 0, 0}, {double(cols) + 2, 0, 0}};
  return detector;
}

float fraction(const GainOccupancy& occupancy, int segment, std::size_t mode) {
  return occupancy.fraction[std::size_t(segment) * occupancy.modes.size() + mode];
}

// Per mode column, the count of pixels of one segment (fraction * pixels per segment, which is
// exact: the fractions are counts over a power of two or small integers here).
std::vector<std::size_t> counts(const GainOccupancy& occupancy, int segment,
                                std::size_t per_segment) {
  std::vector<std::size_t> result;
  for (std::size_t mode = 0; mode < occupancy.modes.size(); ++mode)
    result.push_back(std::size_t(
        std::llround(double(fraction(occupancy, segment, mode)) * double(per_segment))));
  return result;
}

}  // namespace

class GainOccupancyTest : public QObject {
  Q_OBJECT

 private slots:
  void jungfrauGainBitsAreCountedPerSegment() {
    const DetectorDescription detector =
        small_detector(RawEncoding::Jungfrau, {"g0", "g1", "g2"}, 2, 4);
    CalibrationConstants constants = identity_constants(detector);
    // Segment 0: three g0, two g1, one g2, one with the invalid bits 10, one masked g0.
    // Segment 1: all g2 except one masked pixel that also carries the invalid bits (bad once).
    const std::vector<std::uint16_t> raw = {0x0123, 0x0001, 0x3FFF, 0x4005, 0x7FFF, 0xC100,
                                            0x8123, 0x0042, 0xC000, 0xC001, 0xFFFF, 0xC123,
                                            0xC000, 0x8000, 0xC002, 0xC003};
    constants.pixel_status[7] |= calib::kStatusMasked;
    constants.pixel_status[13] |= calib::kStatusMasked;
    const GainOccupancy occupancy = gain_occupancy(detector, constants, raw.data());
    QCOMPARE(occupancy.modes, (std::vector<std::string>{"g0", "g1", "g2", "bad"}));
    QCOMPARE(occupancy.segments, 2);
    QCOMPARE(occupancy.fraction.size(), std::size_t(8));
    QCOMPARE(fraction(occupancy, 0, 0), 3.0f / 8);
    QCOMPARE(fraction(occupancy, 0, 1), 2.0f / 8);
    QCOMPARE(fraction(occupancy, 0, 2), 1.0f / 8);
    QCOMPARE(fraction(occupancy, 0, 3), 2.0f / 8);
    QCOMPARE(fraction(occupancy, 1, 0), 0.0f);
    QCOMPARE(fraction(occupancy, 1, 1), 0.0f);
    QCOMPARE(fraction(occupancy, 1, 2), 7.0f / 8);
    QCOMPARE(fraction(occupancy, 1, 3), 1.0f / 8);
  }

  void epix10kaModesFollowThePixelConfigurationAndTheGainBit() {
    const std::vector<std::string> names = {"FH", "FM", "FL", "AHL-H", "AML-M", "AHL-L", "AML-L"};
    const DetectorDescription detector = small_detector(RawEncoding::Epix10ka, names, 2, 5);
    CalibrationConstants constants = identity_constants(detector);
    // Segment 0, per pixel: configuration and raw word. The gain bit (14) only matters for the
    // auto-ranging configurations; a fixed-gain pixel with it set stays in its mode.
    const std::vector<std::pair<std::uint8_t, std::uint16_t>> segment0 = {
        {calib::kConfigFH, 0x0100},
        {calib::kConfigFH, 0x4100},  // FH, FH
        {calib::kConfigFM, 0x0100},
        {calib::kConfigFL, 0x0100},  // FM, FL
        {calib::kConfigAHL, 0x0100},
        {calib::kConfigAHL, 0x4100},  // AHL-H, AHL-L
        {calib::kConfigAML, 0x0100},
        {calib::kConfigAML, 0x4100},                         // AML-M, AML-L
        {5, 0x0100},                                         // no such configuration: bad
        {calib::kConfigAML | calib::kStatusMasked, 0x4100},  // masked: bad, not AML-L
    };
    std::vector<std::uint16_t> raw(20, 0);
    for (std::size_t pixel = 0; pixel < segment0.size(); ++pixel) {
      constants.pixel_status[pixel] = segment0[pixel].first;
      raw[pixel] = segment0[pixel].second;
    }
    // Segment 1: every pixel AHL, four of ten switched to low gain.
    for (std::size_t pixel = 10; pixel < 20; ++pixel) {
      constants.pixel_status[pixel] = calib::kConfigAHL;
      raw[pixel] = pixel % 5 == 0 || pixel == 13 || pixel == 17 ? 0x4200 : 0x0200;
    }
    const GainOccupancy occupancy = gain_occupancy(detector, constants, raw.data());
    std::vector<std::string> expected_names = names;
    expected_names.push_back("bad");
    QCOMPARE(occupancy.modes, expected_names);
    QCOMPARE(counts(occupancy, 0, 10), (std::vector<std::size_t>{2, 1, 1, 1, 1, 1, 1, 2}));
    QCOMPARE(counts(occupancy, 1, 10), (std::vector<std::size_t>{0, 0, 0, 6, 0, 4, 0, 0}));
    QCOMPARE(fraction(occupancy, 0, 0), 0.2f);
    QCOMPARE(fraction(occupancy, 1, 5), 0.4f);
  }

  void float32DetectorsHaveOneModeAndTheMask() {
    const DetectorDescription detector = find_detector("generic_f32");
    CalibrationConstants constants = identity_constants(detector);
    for (std::size_t pixel = 0; pixel < 1024 * 1024; pixel += 1024)
      constants.pixel_status[pixel] |= calib::kStatusMasked;  // the first column: 1024 pixels
    const std::vector<float> raw(detector.pixels(), 3.5f);
    const GainOccupancy occupancy = gain_occupancy(detector, constants, raw.data());
    QCOMPARE(occupancy.modes, (std::vector<std::string>{"calibrated", "bad"}));
    QCOMPARE(occupancy.segments, 1);
    QCOMPARE(occupancy.fraction[0], float(1023.0 / 1024.0));
    QCOMPARE(occupancy.fraction[1], float(1.0 / 1024.0));
  }

  void simulatedEpix10kaEventMatchesTheSimulatorsTruth() {
    DetectorSimulator simulator(find_detector("epix10ka2m"), SimulatorConfig{});
    const DetectorDescription& detector = simulator.detector();
    const CalibrationConstants& constants = simulator.constants();
    std::vector<std::uint16_t> raw(detector.pixels());
    EventTruth truth;
    simulator.generate(0, raw.data(), &truth);
    const GainOccupancy occupancy = gain_occupancy(detector, constants, raw.data());
    QCOMPARE(occupancy.modes.size(), std::size_t(8));
    QCOMPARE(occupancy.segments, 16);

    // Independent counts: fixed modes from the configuration, switched pixels from the truth,
    // bad ones from the mask.
    const std::size_t per_segment = detector.pixels_per_segment();
    std::size_t switched = 0, masked = 0;
    for (int segment = 0; segment < 16; ++segment) {
      std::vector<std::size_t> config_count(5, 0);
      std::size_t segment_masked = 0;
      for (std::size_t pixel = segment * per_segment; pixel < (segment + 1) * per_segment;
           ++pixel) {
        if (constants.masked(pixel))
          ++segment_masked;
        else
          ++config_count[constants.pixel_status[pixel] & calib::kStatusConfigBits];
      }
      masked += segment_masked;
      const std::vector<std::size_t> got = counts(occupancy, segment, per_segment);
      QCOMPARE(got[calib::kFH], config_count[calib::kConfigFH]);
      QCOMPARE(got[calib::kFM], config_count[calib::kConfigFM]);
      QCOMPARE(got[calib::kFL], config_count[calib::kConfigFL]);
      QCOMPARE(got[calib::kAHL_H] + got[calib::kAHL_L], config_count[calib::kConfigAHL]);
      QCOMPARE(got[calib::kAML_M] + got[calib::kAML_L], config_count[calib::kConfigAML]);
      QCOMPARE(got[7], segment_masked);
      switched += got[calib::kAHL_L] + got[calib::kAML_L];
      double sum = 0;
      for (std::size_t mode = 0; mode < 8; ++mode) sum += fraction(occupancy, segment, mode);
      QVERIFY2(std::fabs(sum - 1.0) < 1e-5, qPrintable(QString::number(sum, 'g', 10)));
    }
    QVERIFY(truth.gain_switched_pixels > 0);  // bright spots switch gain on every event
    QCOMPARE(switched, truth.gain_switched_pixels);
    QVERIFY(masked > 0);
  }

  void simulatedJungfrauEventMatchesTheSimulatorsTruth() {
    DetectorSimulator simulator(find_detector("jungfrau4m"), SimulatorConfig{});
    const DetectorDescription& detector = simulator.detector();
    const CalibrationConstants& constants = simulator.constants();
    std::vector<std::uint16_t> raw(detector.pixels());
    EventTruth truth;
    simulator.generate(3, raw.data(), &truth);
    const GainOccupancy occupancy = gain_occupancy(detector, constants, raw.data());
    QCOMPARE(occupancy.modes, (std::vector<std::string>{"G0", "G1", "G2", "bad"}));
    const std::size_t per_segment = detector.pixels_per_segment();
    std::size_t g0 = 0, switched = 0, bad = 0, masked = 0;
    for (int segment = 0; segment < detector.segments; ++segment) {
      const std::vector<std::size_t> got = counts(occupancy, segment, per_segment);
      g0 += got[0], switched += got[1] + got[2], bad += got[3];
      double sum = 0;
      for (std::size_t mode = 0; mode < 4; ++mode) sum += fraction(occupancy, segment, mode);
      QVERIFY2(std::fabs(sum - 1.0) < 1e-5, qPrintable(QString::number(sum, 'g', 10)));
    }
    for (std::size_t pixel = 0; pixel < detector.pixels(); ++pixel)
      masked += constants.masked(pixel);
    QVERIFY(truth.bad_gain_pixels > 0);
    QCOMPARE(switched, truth.gain_switched_pixels);
    QCOMPARE(bad, masked + truth.bad_gain_pixels);
    QCOMPARE(g0 + switched + bad, detector.pixels());
  }

  void mismatchedInputIsRefused() {
    const DetectorDescription detector =
        small_detector(RawEncoding::Jungfrau, {"g0", "g1", "g2"}, 2, 4);
    const std::vector<std::uint16_t> raw(16, 0);
    CalibrationConstants constants = identity_constants(detector);
    constants.pixel_status.pop_back();
    try {
      gain_occupancy(detector, constants, raw.data());
      QFAIL("accepted constants of another size");
    } catch (const InputError& error) {
      QVERIFY2(QString::fromUtf8(error.what())
                   .contains(QStringLiteral("15 pixel status values for 16 pixels")),
               error.what());
    }
    QVERIFY_THROWS_EXCEPTION(InputError,
                             gain_occupancy(detector, identity_constants(detector), nullptr));
    DetectorDescription two_modes = detector;
    two_modes.gain_modes.pop_back();
    try {
      gain_occupancy(two_modes, identity_constants(detector), raw.data());
      QFAIL("accepted a Jungfrau description with two gain modes");
    } catch (const InputError& error) {
      QVERIFY2(QString::fromUtf8(error.what()).contains(QStringLiteral("names 2 gain modes")),
               error.what());
    }
  }
};

QTEST_MAIN(GainOccupancyTest)
#include "test_gain_occupancy.moc"
