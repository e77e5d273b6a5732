// The comparisons behind the `fidelity` topic on inputs whose answer is known: the relative
// profile difference bin by bin (NaN where a bin cannot be compared), and the one-to-one peak
// matching rule of stages/fidelity/fidelity_measures.hpp (closest pairs first, within the radius
// inclusive), with its recall, precision and centroid shifts.
#include <QtTest>

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "stages/fidelity/fidelity_measures.hpp"

using namespace livedrp;
using livedrp::stages::compare_profiles;
using livedrp::stages::match_peaks;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

peaks::Peak peak_at(float fs, float ss) {
  peaks::Peak p;
  p.fs = fs;
  p.ss = ss;
  return p;
}

}  // namespace

class TestFidelityMeasures : public QObject {
  Q_OBJECT
 private slots:
  void identical_profiles_differ_by_zero_in_every_comparable_bin() {
    const std::vector<double> profile{1.0, 2.5, kNaN, 0.0, 4.0};
    const auto d = compare_profiles(profile, profile);
    QCOMPARE(d.compared_bins, std::uint64_t(3));  // NaN and 0 bins are not compared
    QCOMPARE(d.relative[0], 0.0);
    QCOMPARE(d.relative[1], 0.0);
    QVERIFY(std::isnan(d.relative[2]));
    QVERIFY(std::isnan(d.relative[3]));
    QCOMPARE(d.relative[4], 0.0);
    QCOMPARE(d.max_abs, 0.0);
    QCOMPARE(d.mean_abs, 0.0);
    QCOMPARE(d.rms, 0.0);
  }

  void relative_difference_is_signed_and_scaled_by_the_original_magnitude() {
    const std::vector<double> original{2.0, -4.0, 1.0};
    const std::vector<double> decompressed{2.2, -4.4, kNaN};
    const auto d = compare_profiles(original, decompressed);
    QCOMPARE(d.compared_bins, std::uint64_t(2));
    QCOMPARE(d.relative[0], (2.2 - 2.0) / 2.0);
    QCOMPARE(d.relative[1], (-4.4 + 4.0) / 4.0);  // |original|: a negative bin moving down is -
    QVERIFY(std::isnan(d.relative[2]));
    QCOMPARE(d.max_abs, std::max(std::abs(d.relative[0]), std::abs(d.relative[1])));
    QCOMPARE(d.mean_abs, (std::abs(d.relative[0]) + std::abs(d.relative[1])) / 2);
    QCOMPARE(d.rms, std::sqrt((d.relative[0] * d.relative[0] + d.relative[1] * d.relative[1]) / 2));
  }

  void no_comparable_bin_gives_undefined_summaries() {
    const auto d = compare_profiles(std::vector<double>{0.0, kNaN}, std::vector<double>{1.0, 1.0});
    QCOMPARE(d.compared_bins, std::uint64_t(0));
    QVERIFY(std::isnan(d.max_abs) && std::isnan(d.mean_abs) && std::isnan(d.rms));
  }

  void profiles_of_different_lengths_are_refused() {
    QVERIFY_THROWS_EXCEPTION(
        InputError, compare_profiles(std::vector<double>{1.0}, std::vector<double>{1.0, 2.0}));
  }

  void the_same_peaks_are_all_kept_with_no_shift() {
    const std::vector<peaks::Peak> list{peak_at(10, 10), peak_at(50, 20), peak_at(90, 5)};
    const auto m = match_peaks(list, list, 2.0);
    QCOMPARE(m.kept, std::uint64_t(3));
    QCOMPARE(m.lost, std::uint64_t(0));
    QCOMPARE(m.added, std::uint64_t(0));
    QCOMPARE(m.recall, 1.0);
    QCOMPARE(m.precision, 1.0);
    QCOMPARE(m.mean_shift_px, 0.0);
    QCOMPARE(m.max_shift_px, 0.0);
  }

  void peaks_further_than_the_radius_are_lost_and_added_and_the_radius_is_inclusive() {
    const std::vector<peaks::Peak> original{peak_at(0, 0), peak_at(100, 100)};
    const std::vector<peaks::Peak> decompressed{peak_at(3, 4), peak_at(100, 102.5f)};
    const auto m = match_peaks(original, decompressed, 5.0);  // 3-4-5: exactly at the radius
    QCOMPARE(m.kept, std::uint64_t(2));
    QCOMPARE(m.max_shift_px, 5.0);
    QCOMPARE(m.mean_shift_px, (5.0 + 2.5) / 2);
    const auto tight = match_peaks(original, decompressed, 4.0);
    QCOMPARE(tight.kept, std::uint64_t(1));
    QCOMPARE(tight.lost, std::uint64_t(1));
    QCOMPARE(tight.added, std::uint64_t(1));
    QCOMPARE(tight.recall, 0.5);
    QCOMPARE(tight.precision, 0.5);
    QCOMPARE(tight.pairs.front().original, std::size_t(1));
  }

  void matching_is_one_to_one_and_takes_the_closest_pair_first() {
    // Two decompressed peaks near one original: the closer is kept, the other is added. An
    // original listed first does not take a peak that is closer to a later one.
    const std::vector<peaks::Peak> original{peak_at(0, 0), peak_at(1.5f, 0)};
    const std::vector<peaks::Peak> decompressed{peak_at(1.4f, 0)};
    const auto m = match_peaks(original, decompressed, 2.0);
    QCOMPARE(m.kept, std::uint64_t(1));
    QCOMPARE(m.pairs.front().original, std::size_t(1));
    QCOMPARE(m.lost, std::uint64_t(1));
    QCOMPARE(m.added, std::uint64_t(0));
    QCOMPARE(m.recall, 0.5);
    QCOMPARE(m.precision, 1.0);

    const std::vector<peaks::Peak> split{peak_at(10, 10.5f), peak_at(10, 9)};
    const auto s = match_peaks(std::vector<peaks::Peak>{peak_at(10, 10)}, split, 2.0);
    QCOMPARE(s.kept, std::uint64_t(1));
    QCOMPARE(s.pairs.front().decompressed, std::size_t(0));
    QCOMPARE(s.added, std::uint64_t(1));
  }

  void empty_lists_leave_recall_precision_and_shift_undefined() {
    const std::vector<peaks::Peak> none;
    const std::vector<peaks::Peak> one{peak_at(1, 1)};
    const auto lost_all = match_peaks(one, none, 2.0);
    QCOMPARE(lost_all.recall, 0.0);
    QVERIFY(std::isnan(lost_all.precision));
    QVERIFY(std::isnan(lost_all.mean_shift_px) && std::isnan(lost_all.max_shift_px));
    const auto nothing = match_peaks(none, none, 2.0);
    QVERIFY(std::isnan(nothing.recall) && std::isnan(nothing.precision));
  }

  void the_largest_pixel_error_skips_pixels_that_are_not_finite() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> original{1.0f, 2.0f, nan, 5.0f};
    const std::vector<float> decoded{1.25f, 1.5f, 100.0f, 5.0f};
    QCOMPARE(stages::max_pixel_error(original, decoded), 0.5);
  }
};

QTEST_GUILESS_MAIN(TestFidelityMeasures)
#include "test_fidelity_measures.moc"
