// peakfinder8 on simulated Jungfrau 4M and ePix10ka2M hits against the simulator's ground truth:
// every Bragg peak whose signal-to-noise ratio is at least 10 is found (recall), found peaks are
// Bragg peaks (precision), both >= 99%, and centroids land within 0.3 pixel (rms) of the truth.
//
// SNR of a true peak: its photons over the noise of their sum, the photons' own shot noise and
// the background's variance over the pixels within 2 sigma of the centre; the background's
// standard deviation is that of the pixel's radius bin after clipping (the finder's radial
// statistics, which see only background once the peaks are clipped away).
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "calib/calibrate_cpu.hpp"
#include "core/thread_pool.hpp"
#include "peaks/peakfinder8.hpp"
#include "sim/simulator.hpp"

using namespace livedrp;
using namespace livedrp::peaks;

class TestPeakFinder8Simulated : public QObject {
  Q_OBJECT

 private slots:
  void radial_statistics_follow_the_documented_order_with_or_without_a_pool() {
    // The statistics summed here as radial_threshold.hpp defines them, with plain branches:
    // each bin's good pixels in ascending order, entry k to lane k % kRadialLanes in double,
    // lanes added pairwise, five iterations. The finder's must be the same floats, bit for bit,
    // on one thread and on a pool, and the pool (which also searches ASICs side by side) must not
    // change the peak list.
    ThreadPool pool(3);
    const DetectorDescription detector = find_detector("epix10ka2m");
    // All five gain configurations dealt to the ASICs: the fixed medium- and low-gain ones give
    // noise peaks by the hundred, enough for the max_num_peaks cut below.
    SimulatorConfig mixed;
    mixed.epix10ka_asic_configs = every_epix10ka_config();
    const DetectorSimulator simulator(detector, mixed, &pool);
    const std::vector<float> radius = radius_map(detector, simulator.powder_geometry().beam_x_px,
                                                 simulator.powder_geometry().beam_y_px);
    std::vector<std::uint8_t> bad(detector.pixels());
    for (std::size_t p = 0; p < bad.size(); ++p) bad[p] = simulator.constants().masked(p) ? 1 : 0;
    PeakFinderParams params;
    params.min_res = 40.0f;  // a resolution limit, so that some good pixels are left out
    PeakFinder8 finder(slab_layout(detector), radius, bad, params);
    std::vector<std::uint8_t> raw(detector.raw_event_bytes());
    std::vector<float> image(detector.pixels());
    simulator.generate(1, raw.data(), nullptr, &pool);
    calibrate_event_cpu(detector, simulator.constants(), {}, raw.data(), image.data(), &pool);

    std::vector<std::vector<float>> bins;
    for (std::size_t p = 0; p < image.size(); ++p) {
      if (bad[p] || !(radius[p] > params.min_res && radius[p] < params.max_res)) continue;
      const auto b = std::size_t(radius_bin(radius[p]));
      if (bins.size() <= b) bins.resize(b + 1);
      bins[b].push_back(image[p]);
    }
    std::vector<RadialBinStats> expected(bins.size());
    for (std::size_t b = 0; b < bins.size(); ++b) {
      RadialBinStats bin;
      for (int iteration = 0; iteration < params.iterations; ++iteration) {
        std::vector<double> sum(kRadialLanes, 0.0), squares(kRadialLanes, 0.0);
        std::uint32_t count = 0;
        for (std::size_t k = 0; k < bins[b].size(); ++k) {
          const float v = bins[b][k];
          if (!(v < bin.upper && v > bin.lower)) continue;
          sum[k % kRadialLanes] += double(v);
          squares[k % kRadialLanes] += double(v) * double(v);
          ++count;
        }
        for (int stride = kRadialLanes / 2; stride > 0; stride /= 2)
          for (int lane = 0; lane < stride; ++lane) {
            sum[std::size_t(lane)] += sum[std::size_t(lane + stride)];
            squares[std::size_t(lane)] += squares[std::size_t(lane + stride)];
          }
        bin =
            finish_radial_bin(sum[0], squares[0], count, params.minimum_snr, params.adc_threshold);
      }
      expected[b] = bin;
    }
    const auto same_floats = [](const RadialBinStats& a, const RadialBinStats& b) {
      return std::memcmp(&a, &b, sizeof a) == 0;
    };
    const PeakList serial = finder.find(image.data());
    const std::vector<RadialBinStats> serial_stats = finder.radial_stats();
    QVERIFY(serial_stats.size() >= expected.size());
    int nonempty = 0;
    for (std::size_t b = 0; b < serial_stats.size(); ++b) {
      const RadialBinStats want =
          b < expected.size()
              ? expected[b]
              : finish_radial_bin(0, 0, 0, params.minimum_snr, params.adc_threshold);
      if (!same_floats(serial_stats[b], want))
        QFAIL(qPrintable(QString("bin %1: mean %2 sigma %3, expected %4 and %5")
                             .arg(b)
                             .arg(double(serial_stats[b].mean), 0, 'g', 9)
                             .arg(double(serial_stats[b].sigma), 0, 'g', 9)
                             .arg(double(want.mean), 0, 'g', 9)
                             .arg(double(want.sigma), 0, 'g', 9)));
      nonempty += b < bins.size() && !bins[b].empty() ? 1 : 0;
    }
    QVERIFY(nonempty > 500);  // the ePix10ka2M spans hundreds of 1-pixel radius bins

    const PeakList pooled = finder.find(image.data(), &pool);
    for (std::size_t b = 0; b < serial_stats.size(); ++b)
      QVERIFY(same_floats(finder.radial_stats()[b], serial_stats[b]));
    QCOMPARE(pooled.found, serial.found);
    QCOMPARE(pooled.peaks.size(), serial.peaks.size());
    QVERIFY(std::memcmp(pooled.peaks.data(), serial.peaks.data(),
                        serial.peaks.size() * sizeof(Peak)) == 0);
    QVERIFY(serial.found > 50);  // every ASIC searched: medium and low gain give many

    // A list cut at max_num_peaks: the pool's per-ASIC lists joined in ASIC order keep the same
    // first peaks and count all of them.
    params.max_num_peaks = 50;
    PeakFinder8 capped(slab_layout(detector), radius, bad, params);
    const PeakList capped_serial = capped.find(image.data());
    const PeakList capped_pooled = capped.find(image.data(), &pool);
    QCOMPARE(capped_serial.found, serial.found);
    QCOMPARE(int(capped_serial.peaks.size()), 50);
    QCOMPARE(capped_pooled.found, serial.found);
    QCOMPARE(int(capped_pooled.peaks.size()), 50);
    QVERIFY(std::memcmp(capped_pooled.peaks.data(), serial.peaks.data(), 50 * sizeof(Peak)) == 0);
  }

  void simulated_hits_match_the_ground_truth_data() {
    QTest::addColumn<QString>("detector_name");
    QTest::newRow("jungfrau4m") << "jungfrau4m";
    QTest::newRow("epix10ka2m") << "epix10ka2m";
  }

  void simulated_hits_match_the_ground_truth() {
    QFETCH(QString, detector_name);
    ThreadPool pool(2);
    const DetectorDescription detector = find_detector(detector_name.toStdString());
    SimulatorConfig config;
    const DetectorSimulator simulator(detector, config, &pool);
    const SlabLayout layout = slab_layout(detector);
    const std::vector<float> radius = radius_map(detector, simulator.powder_geometry().beam_x_px,
                                                 simulator.powder_geometry().beam_y_px);
    std::vector<std::uint8_t> bad(detector.pixels());
    // The simulator configures every ePix10ka ASIC AHL by default. A layout mixing in fixed
    // medium or low gain, or auto medium-to-low, reads a 9.5 keV photon as a few ADU above
    // several keV of noise there: one radius bin mixing them with high-gain ASICs has no single
    // threshold that fits both, so, as a user running such a mix would, the finder would look
    // only at the ASICs that start in high gain (FH, AHL).
    const bool epix = detector.encoding == RawEncoding::Epix10ka;
    auto findable = [&](std::size_t p) {
      const int config = simulator.constants().pixel_status[p] & calib::kStatusConfigBits;
      return !epix || config == 0 || config == 3;
    };
    for (std::size_t p = 0; p < bad.size(); ++p)
      bad[p] = simulator.constants().masked(p) || !findable(p) ? 1 : 0;

    PeakFinderParams params;
    // keV: above two 9.5 keV photons in one pixel, so that two background photons side by side
    // on a powder ring do not make a peak.
    params.adc_threshold = 20.0f;
    params.minimum_snr = 5;
    params.min_pixel_count = 3;  // three photons side by side in the background are rare
    params.max_pixel_count = 200;
    params.local_bg_radius = 3;
    params.max_num_peaks = 2048;
    PeakFinder8 finder(layout, radius, bad, params);

    std::vector<std::uint8_t> raw(detector.raw_event_bytes());
    std::vector<float> image(detector.pixels());
    int truth_strong = 0, recalled = 0, found_strong = 0, precise = 0, events = 0;
    double worst_centroid_error = 0, squared_error = 0;
    for (std::uint64_t index = 0; events < 6 && index < 400; ++index) {
      if (!simulator.is_hit(index)) continue;
      ++events;
      EventTruth truth;
      simulator.generate(index, raw.data(), &truth, &pool);
      calibrate_event_cpu(detector, simulator.constants(), {}, raw.data(), image.data(), &pool);
      const PeakList list = finder.find(image.data());
      QCOMPARE(int(list.peaks.size()), list.found);

      auto distance = [&](const TruePeak& t, const Peak& p) {
        if (t.segment != p.segment) return 1e9;
        return std::hypot(t.row - double(p.ss_in_segment), t.col - double(p.fs));
      };
      for (const TruePeak& t : truth.peaks) {
        const std::size_t pixel = std::size_t(t.segment) * detector.pixels_per_segment() +
                                  std::size_t(std::lround(t.row)) * std::size_t(detector.cols) +
                                  std::size_t(std::lround(t.col));
        const float sigma = finder.radial_stats().at(std::size_t(radius_bin(radius[pixel]))).sigma;
        // Poisson-aware SNR of the true peak: its photons over the noise of their sum (their own
        // shot noise and the background's variance over the pixels within 2 sigma).
        const double background_photons = double(sigma) / config.photon_energy_kev;
        const double support = std::max(1.0, M_PI * 4 * t.sigma_px * t.sigma_px);
        const double snr =
            t.photons / std::sqrt(t.photons + support * background_photons * background_photons);
        if (!findable(pixel) || snr < 10) continue;
        ++truth_strong;
        const auto best = std::min_element(
            list.peaks.begin(), list.peaks.end(),
            [&](const Peak& a, const Peak& b) { return distance(t, a) < distance(t, b); });
        if (best != list.peaks.end() && distance(t, *best) < 1.5) {
          ++recalled;
          squared_error += distance(t, *best) * distance(t, *best);
          worst_centroid_error = std::max(worst_centroid_error, distance(t, *best));
        }
      }
      for (const Peak& p : list.peaks) {
        if (p.snr < 10) continue;
        ++found_strong;
        const bool bragg = std::any_of(truth.peaks.begin(), truth.peaks.end(),
                                       [&](const TruePeak& t) { return distance(t, p) < 1.5; });
        precise += bragg ? 1 : 0;
      }
    }
    const double rms_centroid_error = std::sqrt(squared_error / std::max(recalled, 1));
    qInfo(
        "%d hit events: %d true peaks with SNR >= 10, %d found; %d found with SNR >= 10, %d of "
        "them true; centroid error rms %.3f px, worst %.3f px",
        events, truth_strong, recalled, found_strong, precise, rms_centroid_error,
        worst_centroid_error);
    QCOMPARE(events, 6);
    QVERIFY(truth_strong >= 30);  // enough peaks for a percentage to mean something
    QVERIFY2(recalled >= 0.99 * truth_strong, "recall below 99%");
    QVERIFY2(precise >= 0.99 * found_strong, "precision below 99%");
    // The centroid of the pixels above threshold carries the shot noise of a peak's photons
    // (sigma / sqrt(photons): up to 0.15 px per axis at 100 photons and sigma 1.5 px), so single
    // weak peaks can land farther than 0.3 px; the typical error is what the 0.3 px bounds.
    QVERIFY2(rms_centroid_error <= 0.3, "centroids more than 0.3 pixel (rms) from the truth");
    QVERIFY2(worst_centroid_error <= 0.6, "a centroid more than 0.6 pixel from the truth");
  }
};

QTEST_APPLESS_MAIN(TestPeakFinder8Simulated)
#include "test_peakfinder8_simulated.moc"
