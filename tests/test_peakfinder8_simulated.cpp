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
  void simulated_hits_match_the_ground_truth_data() {
    QTest::addColumn<QString>("detector_name");
    QTest::newRow("jungfrau4m") << "jungfrau4m";
    QTest::newRow("epix10ka2m high-gain ASICs") << "epix10ka2m";
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
    // The simulator cycles the ePix10ka's ASICs through its five gain configurations (FH FM FL
    // AHL AML). Fixed medium and low gain, and auto medium-to-low, read a 9.5 keV photon as a few
    // ADU above several keV of noise: one radius bin mixing them with high-gain ASICs has no
    // single threshold that fits both, so, as a user running such a mix would, the peak finder
    // masks them and looks at the ASICs that start in high gain (FH, AHL).
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
