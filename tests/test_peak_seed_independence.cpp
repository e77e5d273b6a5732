// The GPU search (engine/cuda/peaks/device_peakfinder8.cu) takes an ASIC's seeds in any order, on
// many warps at once, and still returns the CPU reference's peaks. It rests on two facts: the CPU
// grows one peak per 8-connected set of candidate pixels, from the set's first seed in raster
// order, and a peak's background ring never contains a candidate, so no other growth changes a
// peak. This suite runs the GPU's rules on the host (an owner map of atomic minima, a growth
// stopped by an earlier seed of its set, by an owner that is an earlier seed, or past
// max_pixel_count) with the seeds in reverse and in shuffled order, the owner map shared by every
// seed as the warps share it, and compares the list put back in seed order with the reference
// finder's, value for value (bitwise).
#include <QtTest>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "calib/calibrate_cpu.hpp"
#include "core/thread_pool.hpp"
#include "peaks/peak_search.hpp"
#include "peaks/peakfinder8.hpp"
#include "sim/simulator.hpp"

using namespace livedrp;
using namespace livedrp::peaks;

namespace {

constexpr std::uint32_t kNoOwner = 0xFFFFFFFFu;

// One seed searched by the GPU's rules, written here plainly on the host. `owner` covers the
// slab and holds, per pixel, the smallest ASIC raster index of a seed that grew over it.
bool search_independently(const SearchView& v, const Asic& asic, int row, int column,
                          std::vector<std::uint32_t>& owner, Peak& peak) {
  const std::size_t width = std::size_t(v.width);
  auto slab = [&](int r, int c) {
    return std::size_t(asic.first_ss + r) * width + std::size_t(asic.first_fs + c);
  };
  auto may_seed = [&](int r, int c) {
    return r >= 1 && r < asic.height - 1 && c >= 1 && c < asic.width - 1;
  };
  const std::uint32_t me = std::uint32_t(row * asic.width + column);
  std::uint32_t& seed_owner = owner[slab(row, column)];
  if (seed_owner < me) return false;
  seed_owner = me;
  std::vector<std::int32_t> members{std::int32_t(slab(row, column))};
  for (std::size_t next = 0; next < members.size(); ++next) {
    const int r = int((std::size_t(members[next]) / width)) - asic.first_ss;
    const int c = int((std::size_t(members[next]) % width)) - asic.first_fs;
    for (int dr = -1; dr <= 1; ++dr)
      for (int dc = -1; dc <= 1; ++dc) {
        const int nr = r + dr, nc = c + dc;
        if (nr < 0 || nr >= asic.height || nc < 0 || nc >= asic.width) continue;
        const std::size_t n = slab(nr, nc);
        if (!above_its_threshold(v, n)) continue;
        if (may_seed(nr, nc) && std::uint32_t(nr * asic.width + nc) < me) return false;
        if (owner[n] == me) continue;
        const std::uint32_t previous = owner[n];
        owner[n] = std::min(previous, me);
        if (previous < me) return false;
        members.push_back(std::int32_t(n));
      }
    if (int(members.size()) > v.max_pixel_count) return false;
  }
  if (int(members.size()) < v.min_pixel_count) return false;
  CentroidSums centroid;
  for (const std::int32_t p : members)
    add_to_centroid(centroid, v.data[p], v.stats[v.bin[p]].mean, int(std::size_t(p) % width),
                    int(std::size_t(p) / width));
  const GrownPeak grown = finish_growth(v, int(members.size()), centroid);
  if (!grown.usable) return false;
  SearchView own = v;
  own.members = members.data();
  RingSums ring_lanes[kRingLanes];
  for (int l = 0; l < kRingLanes; ++l) ring_lanes[l] = ring_lane(own, asic, grown, l);
  const RingSums ring = combine_ring_lanes(ring_lanes);
  const LocalBackground bg = local_background(own, asic, grown, ring);
  MemberSums member_lanes[kRingLanes];
  for (int l = 0; l < kRingLanes; ++l) member_lanes[l] = member_lane(own, grown, bg.mean, l);
  return finish_peak(own, asic, grown, ring, bg, combine_member_lanes(member_lanes), peak);
}

enum class Order { Reverse, Shuffled };

// Every ASIC's seeds in `order`, sharing one owner map per event, the peaks put back in seed
// order and the ASICs' lists joined in ASIC order, cut at max_num_peaks.
PeakList find_independently(const PeakFinder8& finder, const float* data, Order order,
                            std::mt19937& random) {
  SearchView v = finder.search_settings();
  v.data = data;
  v.bin = finder.pixel_bins().data();
  v.good = finder.good_pixels().data();
  v.stats = finder.radial_stats().data();
  // Nothing is ever claimed for the ring's sake: a ring takes background pixels only.
  std::vector<std::uint8_t> never_claimed(finder.layout().pixels(), 0);
  v.in_peak = never_claimed.data();
  std::vector<std::uint32_t> owner(finder.layout().pixels(), kNoOwner);
  PeakList out;
  const int limit = finder.params().max_num_peaks;
  for (const Asic& asic : finder.layout().asics) {
    std::vector<std::pair<int, int>> seeds;
    for (int r = 1; r < asic.height - 1; ++r)
      for (int c = 1; c < asic.width - 1; ++c) {
        const std::size_t p =
            std::size_t(asic.first_ss + r) * std::size_t(v.width) + std::size_t(asic.first_fs + c);
        if (above_its_threshold(v, p)) seeds.emplace_back(r, c);
      }
    if (order == Order::Reverse)
      std::reverse(seeds.begin(), seeds.end());
    else
      std::shuffle(seeds.begin(), seeds.end(), random);
    std::vector<std::pair<std::uint32_t, Peak>> found;
    for (const auto& [r, c] : seeds) {
      Peak peak;
      if (search_independently(v, asic, r, c, owner, peak))
        found.emplace_back(std::uint32_t(r * asic.width + c), peak);
    }
    std::sort(found.begin(), found.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    out.found += int(found.size());
    for (const auto& entry : found)
      if (int(out.peaks.size()) < limit) out.peaks.push_back(entry.second);
  }
  out.hit = out.found >= finder.params().min_peaks_for_hit;
  return out;
}

bool same_bits(const Peak& a, const Peak& b) {
  return std::memcmp(&a, &b, sizeof(Peak)) == 0;
}

}  // namespace

class TestPeakSeedIndependence : public QObject {
  Q_OBJECT

 private slots:
  void a_set_reached_from_its_last_seed_is_still_grown_from_its_first() {
    // A U: two arms joined at the bottom. Raster order reaches the left arm's top first; the
    // right arm's top, searched first here, must find that out by growing down and round.
    SlabLayout layout;
    layout.height = layout.width = 24;
    layout.segment_rows = 24;
    layout.asics.push_back({0, 0, 24, 24, 0});
    std::vector<float> data(layout.pixels());
    for (std::size_t p = 0; p < data.size(); ++p) data[p] = (p % 2 == 0) ? 9.0f : 11.0f;
    auto at = [&](int r, int c) -> float& { return data[std::size_t(r) * 24 + std::size_t(c)]; };
    for (int r = 5; r <= 12; ++r) at(r, 6) = at(r, 9) = 60.0f;
    for (int c = 6; c <= 9; ++c) at(12, c) = 60.0f;
    at(8, 15) = at(8, 16) = 80.0f;  // and a second, separate peak
    PeakFinderParams params;
    params.min_pixel_count = 2;
    params.max_pixel_count = 50;
    params.min_peaks_for_hit = 1;
    PeakFinder8 finder(layout, std::vector<float>(layout.pixels(), 10.0f), {}, params);
    const PeakList expected = finder.find(data.data());
    QCOMPARE(expected.found, 2);
    std::mt19937 random(1);
    const PeakList got = find_independently(finder, data.data(), Order::Reverse, random);
    QCOMPARE(got.found, expected.found);
    QCOMPARE(got.peaks.size(), expected.peaks.size());
    for (std::size_t i = 0; i < got.peaks.size(); ++i)
      QVERIFY(same_bits(got.peaks[i], expected.peaks[i]));
    QCOMPARE(expected.peaks[0].num_pixels, 8 + 8 + 2);
  }

  void simulated_events_give_the_reference_list_in_any_seed_order_data() {
    QTest::addColumn<QString>("detector_name");
    QTest::addColumn<int>("max_pixel_count");
    QTest::addColumn<int>("max_num_peaks");
    // Every ePix10ka ASIC searched, switched ones included: their noise gives hundreds of
    // candidate sets an event, large ones among them.
    QTest::newRow("epix10ka2m, every ASIC") << "epix10ka2m" << 200 << 2048;
    QTest::newRow("epix10ka2m, sets past 4 pixels stopped") << "epix10ka2m" << 4 << 2048;
    QTest::newRow("epix10ka2m, list cut at 25") << "epix10ka2m" << 200 << 25;
    QTest::newRow("jungfrau4m") << "jungfrau4m" << 200 << 2048;
  }

  void simulated_events_give_the_reference_list_in_any_seed_order() {
    QFETCH(QString, detector_name);
    QFETCH(int, max_pixel_count);
    QFETCH(int, max_num_peaks);
    ThreadPool pool(2);
    const DetectorDescription detector = find_detector(detector_name.toStdString());
    SimulatorConfig config;
    config.hit_fraction = 1.0;
    const DetectorSimulator simulator(detector, config, &pool);
    const std::vector<float> radius = radius_map(detector, simulator.powder_geometry().beam_x_px,
                                                 simulator.powder_geometry().beam_y_px);
    std::vector<std::uint8_t> bad(detector.pixels());
    for (std::size_t p = 0; p < bad.size(); ++p) bad[p] = simulator.constants().masked(p) ? 1 : 0;
    PeakFinderParams params;
    params.adc_threshold = 0;
    params.minimum_snr = 5;
    params.min_pixel_count = 2;
    params.max_pixel_count = max_pixel_count;
    params.max_num_peaks = max_num_peaks;
    PeakFinder8 finder(slab_layout(detector), radius, bad, params);
    std::vector<std::uint8_t> raw(detector.raw_event_bytes());
    std::vector<float> image(detector.pixels());
    std::mt19937 random(7);
    int peaks_compared = 0;
    for (std::uint64_t index = 0; index < 2; ++index) {
      simulator.generate(index, raw.data(), nullptr, &pool);
      calibrate_event_cpu(detector, simulator.constants(), {}, raw.data(), image.data(), &pool);
      const PeakList expected = finder.find(image.data());
      for (const Order order : {Order::Reverse, Order::Shuffled}) {
        const PeakList got = find_independently(finder, image.data(), order, random);
        QCOMPARE(got.found, expected.found);
        QCOMPARE(got.hit, expected.hit);
        QCOMPARE(got.peaks.size(), expected.peaks.size());
        for (std::size_t i = 0; i < got.peaks.size(); ++i)
          if (!same_bits(got.peaks[i], expected.peaks[i]))
            QFAIL(qPrintable(QStringLiteral("peak %1 of event %2 differs").arg(i).arg(index)));
        peaks_compared += int(got.peaks.size());
      }
    }
    QVERIFY(peaks_compared > 20);  // the comparison saw real lists
    if (max_num_peaks == 25) QVERIFY(finder.find(image.data()).found > 25);  // the cut was used
  }
};

QTEST_GUILESS_MAIN(TestPeakSeedIndependence)
#include "test_peak_seed_independence.moc"
