// peakfinder8 on the CPU (engine/peaks): hand-made frames whose statistics are known exactly,
// every rejection rule of the reference exercised on its own, and parameter validation.
#include <QtTest>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/detector.hpp"
#include "core/error.hpp"
#include "peaks/peakfinder8.hpp"

using namespace livedrp;
using namespace livedrp::peaks;

namespace {

constexpr int kSize = 32;

// One 32x32 ASIC; every pixel at radius 10 (one radius bin), background a checkerboard of 9 and
// 11: mean 10 and standard deviation 1 exactly once the peak pixels are clipped.
struct Frame {
  SlabLayout layout;
  std::vector<float> data, radius;
  std::vector<std::uint8_t> mask;

  explicit Frame(int asics_across = 1) {
    layout.height = kSize;
    layout.width = kSize * asics_across;
    for (int a = 0; a < asics_across; ++a) layout.asics.push_back({0, a * kSize, kSize, kSize, a});
    data.resize(layout.pixels());
    radius.assign(layout.pixels(), 10.0f);
    for (int ss = 0; ss < layout.height; ++ss)
      for (int fs = 0; fs < layout.width; ++fs) at(ss, fs) = (ss + fs) % 2 == 0 ? 9.0f : 11.0f;
  }
  float& at(int ss, int fs) { return data[std::size_t(ss) * std::size_t(layout.width) + fs]; }
};

PeakFinderParams test_params() {
  PeakFinderParams p;
  p.adc_threshold = 0;
  p.minimum_snr = 5;
  p.min_pixel_count = 2;
  p.max_pixel_count = 20;
  p.local_bg_radius = 3;
  p.min_peaks_for_hit = 1;
  return p;
}

// The local background as the definition states it, enumerated directly: ring offsets in
// [-2R, 2R) with d^2 <= (2R)^2, around (ss, fs), leaving out `excluded` pixels.
struct Ring {
  double mean = 0, sigma = 0, max = 0;
};
Ring expected_ring(Frame& f, int ss, int fs, int radius,
                   const std::function<bool(int, int)>& excluded) {
  double sum = 0, squares = 0, max = 0;
  int count = 0;
  for (int dss = -2 * radius; dss < 2 * radius; ++dss)
    for (int dfs = -2 * radius; dfs < 2 * radius; ++dfs) {
      if (dss * dss + dfs * dfs > 4 * radius * radius) continue;
      const int s = ss + dss, c = fs + dfs;
      if (s < 0 || s >= kSize || c < 0 || c >= kSize || excluded(s, c)) continue;
      const double v = f.at(s, c);
      sum += v, squares += v * v, max = std::max(max, v), ++count;
    }
  Ring r;
  r.mean = sum / count;
  r.sigma = std::sqrt(squares / count - r.mean * r.mean);
  r.max = max;
  return r;
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestPeakFinder8 : public QObject {
  Q_OBJECT

 private slots:
  // The radius map from the Jungfrau 4M's placement, beam on module 3's corner (x 1039, y 550):
  // the quadruple pixel (255, 256) of that module is centred 256 rows and 258 columns from it
  // (core/detector.hpp), a normal pixel (257, 257) at 259.5 and 259.5, not at its raw index.
  void radius_map_places_large_pixels_at_their_centres() {
    const DetectorDescription detector = find_detector("jungfrau4m");
    const std::vector<float> radius = radius_map(detector, 1039.0, 550.0);
    const auto at = [&](int row, int col) {
      return radius[std::size_t(3) * 512 * 1024 + std::size_t(row) * 1024 + std::size_t(col)];
    };
    QCOMPARE(at(255, 256), float(std::sqrt(256.0 * 256.0 + 258.0 * 258.0)));
    QCOMPARE(at(257, 257), float(259.5 * std::sqrt(2.0)));
    QCOMPARE(at(0, 0), float(0.5 * std::sqrt(2.0)));
  }

  void radial_statistics_clip_the_peak_away() {
    Frame f;
    f.at(10, 12) = 60, f.at(10, 13) = 50, f.at(11, 12) = 40, f.at(11, 13) = 30;
    PeakFinder8 finder(f.layout, f.radius, {}, test_params());
    finder.find(f.data.data());
    const RadialBinStats& bin = finder.radial_stats().at(10);
    // The 2x2 peak replaces two 9s and two 11s: the rest has mean 10, sigma 1 exactly.
    QCOMPARE(bin.mean, 10.0f);
    QCOMPARE(bin.sigma, 1.0f);
    QCOMPARE(bin.upper, 15.0f);
    QCOMPARE(bin.lower, 5.0f);
    // Bins nobody falls into keep the reference's empty-bin thresholds.
    QCOMPARE(finder.radial_stats().at(3).upper, FLT_MAX);
  }

  void one_peak_with_exact_values() {
    Frame f;
    f.at(10, 12) = 60, f.at(10, 13) = 50, f.at(11, 12) = 40, f.at(11, 13) = 30;
    PeakFinder8 finder(f.layout, f.radius, {}, test_params());
    const PeakList list = finder.find(f.data.data());
    QCOMPARE(list.found, 1);
    QVERIFY(list.hit);
    QCOMPARE(list.peaks.size(), std::size_t(1));
    const Peak& peak = list.peaks[0];
    QCOMPARE(peak.num_pixels, 4);
    // Centroid: weights above the bin mean (50, 40, 30, 20) round to (ss 10, fs 12); the ring is
    // centred there. Final centroid: weighted by the raw values.
    const Ring ring = expected_ring(f, 10, 12, 3, [](int ss, int fs) {
      return (ss == 10 || ss == 11) && (fs == 12 || fs == 13);
    });
    QVERIFY(std::fabs(peak.fs - 2240.0 / 180.0) < 1e-5);
    QVERIFY(std::fabs(peak.ss - 1870.0 / 180.0) < 1e-5);
    QVERIFY(std::fabs(peak.intensity - (180.0 - 4 * ring.mean)) < 1e-4);
    QVERIFY(std::fabs(peak.max_value - (60.0 - ring.mean)) < 1e-5);
    QVERIFY(std::fabs(peak.local_sigma - ring.sigma) < 1e-6);
    QVERIFY(std::fabs(peak.snr - (180.0 - 4 * ring.mean) / ring.sigma) < 1e-3);
    QCOMPARE(peak.segment, 0);
  }

  void too_small_and_too_large_peaks_are_dropped() {
    Frame f;
    f.at(5, 5) = 80;  // one pixel: below min_pixel_count 2
    for (int ss = 15; ss < 21; ++ss)
      for (int fs = 15; fs < 21; ++fs) f.at(ss, fs) = 70;  // 36 pixels: above max 20
    PeakFinder8 finder(f.layout, f.radius, {}, test_params());
    QCOMPARE(finder.find(f.data.data()).found, 0);
    PeakFinderParams wide = test_params();
    wide.min_pixel_count = 1;
    wide.max_pixel_count = 36;
    PeakFinder8 accepting(f.layout, f.radius, {}, wide);
    const PeakList list = accepting.find(f.data.data());
    QCOMPARE(list.found, 2);
    QCOMPARE(list.peaks[0].num_pixels, 1);
    QCOMPARE(list.peaks[1].num_pixels, 36);
    QVERIFY(std::fabs(list.peaks[1].fs - 17.5f) < 1e-5 &&
            std::fabs(list.peaks[1].ss - 17.5f) < 1e-5);
  }

  void seeds_skip_the_asic_border_but_peaks_grow_onto_it() {
    Frame f;
    f.at(0, 10) = 90, f.at(0, 11) = 90;    // on the first row only: never a seed
    f.at(31, 20) = 90, f.at(30, 20) = 50;  // seeded at row 30, grows onto row 31
    PeakFinder8 finder(f.layout, f.radius, {}, test_params());
    const PeakList list = finder.find(f.data.data());
    QCOMPARE(list.found, 1);
    QCOMPARE(list.peaks[0].num_pixels, 2);
    QVERIFY(std::fabs(list.peaks[0].ss - (30 * 50.0 + 31 * 90.0) / 140.0) < 1e-5);
  }

  void peaks_do_not_cross_asic_edges() {
    Frame f(2);
    // A 2x4 block across the edge between ASIC 0 (fs < 32) and ASIC 1.
    for (int ss = 12; ss < 14; ++ss)
      for (int fs = 30; fs < 34; ++fs) f.at(ss, fs) = 60;
    PeakFinder8 finder(f.layout, f.radius, {}, test_params());
    const PeakList list = finder.find(f.data.data());
    QCOMPARE(list.found, 2);
    QCOMPARE(list.peaks[0].segment, 0);
    QCOMPARE(list.peaks[1].segment, 1);
    QCOMPARE(list.peaks[0].num_pixels, 4);
    QCOMPARE(list.peaks[1].num_pixels, 4);
    QVERIFY(std::fabs(list.peaks[0].fs - 30.5f) < 1e-5);
    QVERIFY(std::fabs(list.peaks[1].fs - 32.5f) < 1e-5);
  }

  void masked_and_out_of_resolution_pixels_are_ignored() {
    Frame f;
    f.at(10, 12) = 60, f.at(10, 13) = 60;
    std::vector<std::uint8_t> mask(f.layout.pixels(), 0);
    mask[10 * kSize + 13] = 1;  // non-zero masks (livedrp's convention)
    PeakFinder8 masked(f.layout, f.radius, mask, test_params());
    QCOMPARE(masked.find(f.data.data()).found, 0);  // one pixel left: too small
    PeakFinderParams limits = test_params();
    limits.min_res = 10.5f;  // every pixel is at radius 10
    PeakFinder8 out_of_range(f.layout, f.radius, {}, limits);
    QCOMPARE(out_of_range.find(f.data.data()).found, 0);
    QCOMPARE(out_of_range.radial_stats().at(10).upper, FLT_MAX);
  }

  void weak_peaks_fail_the_snr_test() {
    Frame f;
    f.at(10, 12) = 16, f.at(10, 13) = 16;  // above the threshold 15, intensity ~12: SNR ~12
    PeakFinderParams strict = test_params();
    strict.minimum_snr = 5;
    PeakFinder8 finder(f.layout, f.radius, {}, strict);
    QCOMPARE(finder.find(f.data.data()).found, 1);
    // Raising adc_threshold above the peak removes it at the threshold already.
    strict.adc_threshold = 20;
    PeakFinder8 thresholded(f.layout, f.radius, {}, strict);
    QCOMPARE(thresholded.find(f.data.data()).found, 0);
  }

  void a_brighter_background_pixel_vetoes_the_peak() {
    // Two pixels in a radius bin of their own (r = 20) with values 40 and 42: their bin's upper
    // threshold is 41 + 5 * 1 = 46, so both count as background. Placed in the ring of a 2-pixel
    // peak of 30s, the ring's maximum (42) beats the peak's (30): the reference drops the peak.
    for (const bool in_ring : {false, true}) {
      Frame f;
      f.at(10, 12) = 30, f.at(10, 13) = 30;
      const int ss = in_ring ? 14 : 28;
      f.at(ss, 12) = 40, f.at(ss, 13) = 42;
      f.radius[std::size_t(ss) * kSize + 12] = 20, f.radius[std::size_t(ss) * kSize + 13] = 20;
      PeakFinder8 finder(f.layout, f.radius, {}, test_params());
      const PeakList list = finder.find(f.data.data());
      QCOMPARE(finder.radial_stats().at(20).upper, 46.0f);
      QCOMPARE(list.found, in_ring ? 0 : 1);
      if (!in_ring) {
        QCOMPARE(list.peaks[0].num_pixels, 2);
        QVERIFY(std::fabs(list.peaks[0].fs - 12.5f) < 1e-5);
      }
    }
  }

  void max_num_peaks_limits_the_list_not_the_count() {
    Frame f;
    for (int k = 0; k < 3; ++k) f.at(5 + 8 * k, 8) = 60, f.at(5 + 8 * k, 9) = 60;
    PeakFinderParams p = test_params();
    p.max_num_peaks = 2;
    p.min_peaks_for_hit = 3;
    PeakFinder8 finder(f.layout, f.radius, {}, p);
    const PeakList list = finder.find(f.data.data());
    QCOMPARE(list.found, 3);
    QCOMPARE(list.peaks.size(), std::size_t(2));
    QVERIFY(list.hit);
  }

  void bad_parameters_and_inputs_are_named() {
    Frame f;
    PeakFinderParams p = test_params();
    p.max_pixel_count = 1;
    QVERIFY(error_of([&] { PeakFinder8(f.layout, f.radius, {}, p); }).find("max_pixel_count") !=
            std::string::npos);
    QVERIFY(error_of([&] {
              PeakFinder8(f.layout, std::vector<float>(5), {}, test_params());
            }).find("radius map has 5 values") != std::string::npos);
    std::vector<float> nan_radius = f.radius;
    nan_radius[7] = NAN;
    QVERIFY(error_of([&] {
              PeakFinder8(f.layout, nan_radius, {}, test_params());
            }).find("pixel 7") != std::string::npos);
    QVERIFY(error_of([] {
              parse_peak_params(nlohmann::json{{"minimum_snr", 4}, {"min_pixel_cnt", 2}}, "p.json");
            }).find("unknown peak-finder parameter 'min_pixel_cnt'") != std::string::npos);
    QVERIFY(error_of([] {
              parse_peak_params(nlohmann::json{{"local_bg_radius", 2.5}}, "p.json");
            }).find("local_bg_radius must be a whole number") != std::string::npos);
    QVERIFY(error_of([] {
              parse_peak_params(nlohmann::json{{"minimum_snr", "high"}}, "p.json");
            }).find("minimum_snr must be a number") != std::string::npos);
    const PeakFinderParams round_trip = parse_peak_params(to_json(test_params()), "round trip");
    QCOMPARE(round_trip.local_bg_radius, 3);
    QCOMPARE(round_trip.max_pixel_count, 20);
  }
};

QTEST_APPLESS_MAIN(TestPeakFinder8)
#include "test_peakfinder8.moc"
