// peakfinder8 on the GPU against the CPU reference: radial statistics and peak lists equal, peak
// for peak and value for value, on simulated hits of two detectors and on a frame built to have
// more peaks than max_num_peaks; and on a synthetic slab whose ASIC and radius bins are too large
// for shared memory (the threshold flags in global memory, the spill statistics kernel).
#include <QtTest>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "calib/calibrate_cpu.hpp"
#include "core/thread_pool.hpp"
#include "gpu_test_support.hpp"
#include "peaks/peakfinder8.hpp"
#include "sim/simulator.hpp"
#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/device.hpp"
#include "cuda/peaks/device_peakfinder8.hpp"
#endif

using namespace livedrp;
using namespace livedrp::peaks;

namespace {

// Both backends follow one summation order and one search order, so the values are identical;
// the comparison allows 1e-5 relative, the bound, and counts exact matches apart.
bool close(float a, float b) {
  return a == b || std::fabs(a - b) <= 1e-5f * std::max(std::fabs(a), std::fabs(b));
}

#ifdef LIVEDRP_HAVE_CUDA
// One frame searched by both finders: the CPU's list, the GPU's list and the GPU's statistics.
struct BothSearches {
  PeakList expected, actual;
  std::vector<RadialBinStats> gpu_stats;
};
BothSearches search_both(PeakFinder8& cpu, gpu::DevicePeakFinder8& device,
                         const gpu::Stream& stream, gpu::DeviceBuffer& device_image,
                         const std::vector<float>& image) {
  BothSearches both;
  both.expected = cpu.find(image.data());
  gpu::copy_async(device_image.get(), image.data(), image.size() * sizeof(float), stream,
                  "test image to the device");
  device.enqueue(device_image.as<const float>(), stream);
  both.actual = device.collect(stream);
  both.gpu_stats = device.radial_stats(stream);
  return both;
}
#endif

}  // namespace

class TestGpuPeakFinder8 : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { LIVEDRP_SKIP_WITHOUT_GPU(); }

  // One 1024 x 1024 ASIC (its candidate and background bitmaps, 256 KiB, do not fit the search
  // block's shared memory) and radius bins of 20 whole rows (20,480 values: more than a
  // statistics block holds), so that the global-memory paths run; three different frames through
  // one finder, so that flags left over from one event would show in the next.
  void large_asic_and_bins_equal_cpu_data() {
    QTest::addColumn<int>("max_num_peaks");
    QTest::newRow("every peak listed") << 2048;
    QTest::newRow("list cut at 5") << 5;
  }

  void large_asic_and_bins_equal_cpu() {
#ifdef LIVEDRP_HAVE_CUDA
    QFETCH(int, max_num_peaks);
    constexpr int kSide = 1024, kRowsPerBin = 20;
    SlabLayout layout;
    layout.height = layout.width = layout.segment_rows = kSide;
    layout.asics.push_back({0, 0, kSide, kSide, 0});
    std::vector<float> radius(layout.pixels());
    std::vector<std::uint8_t> bad(layout.pixels(), 0);
    for (std::size_t p = 0; p < radius.size(); ++p) {
      radius[p] = float(int(p / kSide) / kRowsPerBin);
      if (p % 997 == 0) bad[p] = 1;
    }
    PeakFinderParams params;
    params.max_num_peaks = max_num_peaks;
    PeakFinder8 cpu(layout, radius, bad, params);
    gpu::DevicePeakFinder8 device(cpu);
    gpu::Stream stream;
    gpu::DeviceBuffer device_image(layout.pixels() * sizeof(float));
    std::mt19937 random(20261207);
    std::normal_distribution<float> noise(1.0f, 0.5f);
    std::uniform_real_distribution<float> where(8.0f, float(kSide) - 8.0f);
    std::vector<float> image(layout.pixels());
    int compared_peaks = 0;
    for (int frame = 0; frame < 3; ++frame) {
      for (float& value : image) value = noise(random);
      // 40 Gaussian spots of sigma 1 px and peak value 200 (the threshold floor is 30).
      for (int spot = 0; spot < 40; ++spot) {
        const float x = where(random), y = where(random);
        for (int dy = -4; dy <= 4; ++dy)
          for (int dx = -4; dx <= 4; ++dx) {
            const int row = int(y) + dy, column = int(x) + dx;
            const float fx = float(column) - x, fy = float(row) - y;
            image[std::size_t(row) * kSide + std::size_t(column)] +=
                200.0f * std::exp(-0.5f * (fx * fx + fy * fy));
          }
      }
      // Pixels neither above nor below any threshold: never a candidate, never in a ring.
      image[std::size_t(300 + frame) * kSide + 500] = std::numeric_limits<float>::quiet_NaN();
      const auto [expected, actual, gpu_stats] =
          search_both(cpu, device, stream, device_image, image);
      QCOMPARE(gpu_stats.size(), cpu.radial_stats().size());
      for (std::size_t b = 0; b < gpu_stats.size(); ++b)
        QVERIFY2(close(gpu_stats[b].upper, cpu.radial_stats()[b].upper) &&
                     close(gpu_stats[b].mean, cpu.radial_stats()[b].mean),
                 qPrintable(QString("frame %1, radius bin %2").arg(frame).arg(b)));
      QVERIFY2(expected.found >= 30, qPrintable(QString::number(expected.found)));
      QCOMPARE(actual.found, expected.found);
      QCOMPARE(actual.peaks.size(), expected.peaks.size());
      for (std::size_t k = 0; k < expected.peaks.size(); ++k) {
        const Peak& e = expected.peaks[k];
        const Peak& a = actual.peaks[k];
        QVERIFY2(a.num_pixels == e.num_pixels && close(a.fs, e.fs) && close(a.ss, e.ss) &&
                     close(a.intensity, e.intensity) && close(a.local_sigma, e.local_sigma),
                 qPrintable(QString("frame %1, peak %2: (%3, %4) vs (%5, %6)")
                                .arg(frame)
                                .arg(k)
                                .arg(a.fs)
                                .arg(a.ss)
                                .arg(e.fs)
                                .arg(e.ss)));
        ++compared_peaks;
      }
    }
    QVERIFY(compared_peaks >= 15);
#else
    QSKIP("built without CUDA");
#endif
  }

  void gpu_peaks_equal_cpu_peaks_data() {
    QTest::addColumn<QString>("detector_name");
    QTest::addColumn<int>("max_num_peaks");
    QTest::newRow("jungfrau4m") << "jungfrau4m" << 2048;
    QTest::newRow("epix10ka2m, every ASIC") << "epix10ka2m" << 2048;
    QTest::newRow("epix10ka2m, list cut at 20") << "epix10ka2m" << 20;
  }

  void gpu_peaks_equal_cpu_peaks() {
#ifdef LIVEDRP_HAVE_CUDA
    QFETCH(QString, detector_name);
    QFETCH(int, max_num_peaks);
    ThreadPool pool(2);
    const DetectorDescription detector = find_detector(detector_name.toStdString());
    // Every ePix10ka gain configuration dealt to the ASICs (the simulator's default is AHL alone):
    // the low-gain ASICs' noise is what gives the hundreds of peaks an event the thresholds below
    // are chosen for.
    SimulatorConfig config;
    config.epix10ka_asic_configs = every_epix10ka_config();
    const DetectorSimulator simulator(detector, config, &pool);
    std::vector<std::uint8_t> bad(detector.pixels());
    for (std::size_t p = 0; p < bad.size(); ++p) bad[p] = simulator.constants().masked(p) ? 1 : 0;
    PeakFinderParams params;
    // Low thresholds on purpose: ePix10ka's low-gain ASICs then give hundreds of noise peaks per
    // event, many more searches (and list cuts) to compare than the Bragg peaks alone.
    params.adc_threshold = 20.0f;
    params.min_pixel_count = 2;
    params.max_num_peaks = max_num_peaks;
    PeakFinder8 cpu(slab_layout(detector),
                    radius_map(detector, simulator.powder_geometry().beam_x_px,
                               simulator.powder_geometry().beam_y_px),
                    bad, params);
    gpu::DevicePeakFinder8 device(cpu);
    gpu::Stream stream;
    gpu::DeviceBuffer device_image(detector.pixels() * sizeof(float));

    std::vector<std::uint8_t> raw(detector.raw_event_bytes());
    std::vector<float> image(detector.pixels());
    int events = 0, compared_peaks = 0, exact_values = 0, all_values = 0;
    for (std::uint64_t index = 0; events < 3 && index < 400; ++index) {
      if (!simulator.is_hit(index)) continue;
      ++events;
      simulator.generate(index, raw.data(), nullptr, &pool);
      calibrate_event_cpu(detector, simulator.constants(), {}, raw.data(), image.data(), &pool);
      const auto [expected, actual, gpu_stats] =
          search_both(cpu, device, stream, device_image, image);
      QCOMPARE(gpu_stats.size(), cpu.radial_stats().size());
      for (std::size_t b = 0; b < gpu_stats.size(); ++b) {
        QVERIFY2(close(gpu_stats[b].mean, cpu.radial_stats()[b].mean) &&
                     close(gpu_stats[b].sigma, cpu.radial_stats()[b].sigma) &&
                     close(gpu_stats[b].upper, cpu.radial_stats()[b].upper),
                 qPrintable(QString("radius bin %1").arg(b)));
      }
      QCOMPARE(actual.found, expected.found);
      QCOMPARE(actual.hit, expected.hit);
      QCOMPARE(actual.peaks.size(), expected.peaks.size());
      for (std::size_t k = 0; k < expected.peaks.size(); ++k) {
        const Peak& e = expected.peaks[k];
        const Peak& a = actual.peaks[k];
        QCOMPARE(a.segment, e.segment);
        QCOMPARE(a.num_pixels, e.num_pixels);
        const float pairs[][2] = {{a.fs, e.fs},
                                  {a.ss, e.ss},
                                  {a.ss_in_segment, e.ss_in_segment},
                                  {a.intensity, e.intensity},
                                  {a.max_value, e.max_value},
                                  {a.local_sigma, e.local_sigma},
                                  { a.snr,
                                    e.snr }};
        for (const auto& pair : pairs) {
          QVERIFY2(close(pair[0], pair[1]),
                   qPrintable(QString("peak %1: %2 vs %3").arg(k).arg(pair[0]).arg(pair[1])));
          exact_values += pair[0] == pair[1] ? 1 : 0;
          ++all_values;
        }
        ++compared_peaks;
      }
      if (max_num_peaks == 20) QVERIFY(expected.found > 20);  // the cut was exercised
    }
    qInfo("%d events, %d peaks compared, %d of %d values bit-identical", events, compared_peaks,
          exact_values, all_values);
    QCOMPARE(events, 3);
    QVERIFY(compared_peaks >= 30);
#else
    QSKIP("built without CUDA");
#endif
  }
};

QTEST_GUILESS_MAIN(TestGpuPeakFinder8)
#include "test_gpu_peakfinder8.moc"
