// The MPI collector's merge without processes (engine/mpi/collector, rank_report): reports of
// ranks made up here, merged, against sums and means computed here in float64. Counts, drops by
// reason, compression and peak totals are sums; the merged profile is the mean of every event's
// profile; the newest hit is the highest pulse id; a silent rank is lost with its last counts;
// reports survive their encoding bit for bit and a damaged one is refused naming the rank.
// test_mpi_run runs the same merge over real ranks. Skipped (QSKIP) when the build has no MPI.
#include <QtTest>

#include <cmath>
#include <limits>
#include <random>

#ifdef LIVEDRP_TEST_HAVE_MPI
#include "core/error.hpp"
#include "mpi/collector.hpp"
#include "mpi/rank_report.hpp"
#endif

#ifdef LIVEDRP_TEST_HAVE_MPI
using namespace livedrp;
using namespace livedrp::mpi;
using Clock = Collector::Clock;
using namespace std::chrono_literals;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();

RankReport report(int rank, std::uint64_t in, std::uint64_t processed, bool final) {
  RankReport r;
  r.rank = rank;
  r.final = final;
  r.host = "node";
  r.pid = 1000 + std::uint64_t(rank);
  r.stats.events_in = in;
  r.stats.events_processed = processed;
  r.stats.drops_by_reason["ring_full"] = in - processed;
  r.stats.events_dropped = in - processed;
  r.stats.elapsed_s = 2.0 + rank;
  r.stats.backend = "cpu";
  r.stats.device = "CPU (1 threads)";
  r.stats.latency_p50_us = r.stats.latency_p99_us = r.stats.latency_max_us = kNaN;
  return r;
}

// Event e's profile: a value per bin, NaN in a few bins that depend on the event (no pixel).
std::vector<double> event_profile(std::size_t e, std::size_t bins, std::mt19937_64& random) {
  std::uniform_real_distribution<double> value(0.1, 1000.0);
  std::vector<double> p(bins);
  for (std::size_t b = 0; b < bins; ++b) p[b] = (b + e) % 7 == 0 ? kNaN : value(random);
  return p;
}

}  // namespace
#endif

class TestMpiCollector : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
#ifndef LIVEDRP_TEST_HAVE_MPI
    QSKIP(
        "this build has no MPI run: CMake found no MPI library (install libopenmpi-dev, or "
        "MPICH, and configure again)");
#endif
  }

#ifdef LIVEDRP_TEST_HAVE_MPI
  void counts_drops_and_totals_are_the_sums_of_the_ranks() {
    const auto start = Clock::now();
    Collector merge(3, 0, false, {1, 2}, start);
    RankReport a = report(1, 10, 8, false), b = report(2, 7, 7, false);
    a.stats.compression = protocol::CompressionStats{};
    a.stats.compression->codec = "lossless";
    a.stats.compression->total_bytes_in = 1000;
    a.stats.compression->total_bytes_out = 250;
    b.stats.compression = a.stats.compression;
    b.stats.compression->total_bytes_in = 600;
    b.stats.compression->total_bytes_out = 100;
    a.stats.peak_finding = protocol::PeakFindingStats{};
    a.stats.peak_finding->total_events = 8;
    a.stats.peak_finding->total_hits = 3;
    a.stats.peak_finding->total_peaks = 40;
    b.stats.peak_finding = a.stats.peak_finding;
    b.stats.peak_finding->total_events = 7;
    b.stats.peak_finding->total_hits = 1;
    b.stats.peak_finding->total_peaks = 9;
    merge.take(a, start + 100ms);
    merge.take(b, start + 100ms);
    QVERIFY(!merge.all_final());
    const protocol::StatsPayload first = merge.take_stats(start + 150ms);
    QCOMPARE(first.events_in, std::uint64_t(17));
    QCOMPARE(first.events_processed, std::uint64_t(15));
    QCOMPARE(first.events_dropped, std::uint64_t(2));
    QCOMPARE(first.drops_by_reason.at("ring_full"), std::uint64_t(2));
    QCOMPARE(first.compression->total_bytes_in, std::uint64_t(1600));
    QCOMPARE(first.compression->total_bytes_out, std::uint64_t(350));
    QCOMPARE(first.compression->interval_bytes_in, std::uint64_t(1600));
    QCOMPARE(first.peak_finding->total_hits, std::uint64_t(4));
    QCOMPARE(first.peak_finding->total_peaks, std::uint64_t(49));
    QCOMPARE(first.backend, std::string("cpu"));
    QCOMPARE(first.ranks->processing.size(), std::size_t(2));
    QCOMPARE(first.ranks->processing[0].state, std::string(protocol::kRankRunning));

    // The next interval: only what came since.
    RankReport a2 = a;
    a2.stats.events_in = a2.stats.events_processed = 12;
    a2.stats.drops_by_reason["ring_full"] = a2.stats.events_dropped = 0;
    a2.stats.elapsed_s += 1.0;
    a2.stats.compression->total_bytes_in = 1300;
    a2.stats.compression->total_bytes_out = 300;
    a2.stats.peak_finding->total_events = 12;
    a2.stats.peak_finding->total_hits = 5;
    a2.final = true;
    merge.take(a2, start + 300ms);
    const protocol::StatsPayload second = merge.take_stats(start + 350ms);
    QCOMPARE(second.compression->interval_bytes_in, std::uint64_t(300));
    QCOMPARE(second.compression->interval_bytes_out, std::uint64_t(50));
    QCOMPARE(second.peak_finding->interval_events, std::uint64_t(4));
    QCOMPARE(second.peak_finding->interval_hits, std::uint64_t(2));
    // Rank 1's rate: 4 more events in its one more second.
    QCOMPARE(second.ranks->processing[0].event_rate_hz, 4.0);
    QCOMPARE(second.ranks->processing[0].state, std::string(protocol::kRankFinished));
    QVERIFY(!merge.all_final());
    RankReport b2 = b;
    b2.final = true;
    merge.take(b2, start + 400ms);
    QVERIFY(merge.all_final());
    const RunSummary summary = merge.summary(start + 500ms);
    QCOMPARE(summary.stats.events_in, std::uint64_t(19));
    QCOMPARE(summary.stats.events_in,
             summary.stats.events_processed + summary.stats.events_dropped);
    QCOMPARE(summary.stats.elapsed_s, 4.0);  // the longest rank's
    QVERIFY(summary.error.empty());
    QVERIFY_THROWS_EXCEPTION(RuntimeFault, merge.take(b2, start + 600ms));  // after its final
    QVERIFY_THROWS_EXCEPTION(RuntimeFault, merge.take(report(0, 1, 1, false), start));
  }

  void the_merged_profile_is_the_mean_of_every_events_profile() {
    const std::size_t bins = 50, events = 11;
    std::mt19937_64 random(37);
    std::vector<std::vector<double>> profiles;
    for (std::size_t e = 0; e < events; ++e) profiles.push_back(event_profile(e, bins, random));
    // Ranks 1 and 2 (of a dedicated collector) take events e % 2 == 0 and 1; each sends the
    // sums of its window (as large as its share), as RankSums keeps them.
    const auto start = Clock::now();
    Collector merge(3, 0, false, {1, 2}, start);
    for (int rank : {1, 2}) {
      RankReport r = report(rank, 6, 6, true);
      ProfileSums p;
      p.centres.resize(bins);
      for (std::size_t b = 0; b < bins; ++b) p.centres[b] = 0.1 * double(b + 1);
      p.window = 100;
      p.sum.assign(bins, 0.0);
      p.finite.assign(bins, 0);
      for (std::size_t e = std::size_t(rank - 1); e < events; e += 2) {
        for (std::size_t b = 0; b < bins; ++b)
          if (std::isfinite(profiles[e][b])) {
            p.sum[b] += profiles[e][b];
            ++p.finite[b];
          }
        ++p.events;
        p.latest = profiles[e];
        p.latest_sequence = e;
        p.latest_pulse_id = 500 + e;
      }
      r.profile = p;
      merge.take(r, start);
    }
    const std::optional<protocol::RadialProfile> merged = merge.take_profile();
    QVERIFY(merged.has_value());
    QCOMPARE(merged->average_events, std::uint64_t(events));
    QCOMPARE(merged->average_window, std::uint64_t(200));
    QCOMPARE(merged->sequence, std::uint64_t(events - 1));  // the newest event, from rank 1
    QCOMPARE(merged->pulse_id, std::uint64_t(500 + events - 1));
    for (std::size_t b = 0; b < bins; ++b) {
      double sum = 0;
      std::size_t count = 0;
      for (std::size_t e = 0; e < events; ++e)
        if (std::isfinite(profiles[e][b])) {
          sum += profiles[e][b];
          ++count;
        }
      const double mean = sum / double(count);
      QVERIFY2(std::fabs(merged->average[b] - mean) <= 1e-12 * std::fabs(mean),
               qPrintable(
                   QString("bin %1: merged %2, mean %3").arg(b).arg(merged->average[b]).arg(mean)));
      const double latest = profiles[events - 1][b];
      QVERIFY(std::isnan(latest) ? std::isnan(merged->latest[b]) : merged->latest[b] == latest);
    }
    QVERIFY(!merge.take_profile().has_value());  // nothing new since
  }

  void the_newest_hit_is_the_highest_pulse_id_of_all_ranks() {
    const auto start = Clock::now();
    Collector merge(3, 0, true, {0, 1, 2}, start);
    for (auto [rank, pulse] : {std::pair{0, 70ull}, {1, 95ull}, {2, 81ull}}) {
      RankReport r = report(rank, 3, 3, false);
      protocol::EventPeaks hit;
      hit.sequence = pulse - 10;
      hit.pulse_id = pulse;
      hit.found = 2;
      hit.hit = true;
      hit.min_peaks_for_hit = 2;
      hit.params_version = 1;
      r.hit = hit;
      merge.take(r, start);
    }
    const auto newest = merge.take_newest_hit();
    QVERIFY(newest.has_value());
    QCOMPARE(newest->pulse_id, std::uint64_t(95));
    QVERIFY(!merge.take_newest_hit().has_value());  // published once
  }

  // A rank's image stays the collector's until the rank sends a newer one (its reports carry one
  // only when it kept a new one); the newest over the ranks by pulse id is published once, and an
  // image survives the report's encoding pixel for pixel.
  void the_newest_image_is_the_highest_pulse_id_and_outlives_reports_without_one() {
    const auto start = Clock::now();
    Collector merge(3, 0, false, {1, 2}, start);
    const auto image_of = [](std::uint64_t pulse, float value) {
      protocol::ImageFrame image;
      image.sequence = pulse - 100;
      image.pulse_id = pulse;
      image.height = 2;
      image.width = 3;
      image.pixels = {value, 1.5f, kNaNf, -2.0f, 0.0f, value * 2};
      image.unit = "keV";
      image.segments = 1;
      image.gain_modes = {"G0", "bad"};
      image.gain_occupancy = {0.75f, 0.25f};
      return image;
    };
    RankReport one = report(1, 4, 4, false);
    one.image = image_of(140, 7.25f);
    merge.take(decode_report(encode_report(one), 1), start);
    RankReport two = report(2, 4, 4, false);
    two.image = image_of(131, 3.0f);
    merge.take(decode_report(encode_report(two), 2), start);
    auto newest = merge.take_newest_image();
    QVERIFY(newest.has_value());
    QCOMPARE(newest->pulse_id, std::uint64_t(140));
    QCOMPARE(newest->sequence, std::uint64_t(40));
    QCOMPARE(newest->pixels[0], 7.25f);
    QVERIFY(std::isnan(newest->pixels[2]));
    QCOMPARE(newest->pixels[5], 14.5f);
    QVERIFY(!merge.take_newest_image().has_value());  // published once
    // Rank 1 reports again without an image: its last one stays; rank 2's newer one wins.
    merge.take(report(1, 6, 6, false), start + 1s);
    two = report(2, 6, 6, false);
    two.image = image_of(150, 1.0f);
    merge.take(two, start + 1s);
    newest = merge.take_newest_image();
    QVERIFY(newest.has_value());
    QCOMPARE(newest->pulse_id, std::uint64_t(150));
    merge.take(report(2, 8, 8, false), start + 2s);
    QVERIFY(!merge.take_newest_image().has_value());
  }

  void a_silent_rank_is_lost_with_its_last_counts() {
    const auto start = Clock::now();
    Collector merge(3, 0, false, {1, 2}, start);
    merge.take(report(1, 20, 20, false), start + 1s);
    merge.take(report(2, 9, 8, false), start + 1s);
    QVERIFY(merge.mark_silent(start + 2s, 3s).empty());
    merge.take(report(1, 30, 30, true), start + 3s);
    QCOMPARE(merge.mark_silent(start + 5s, 3s), std::vector<int>{2});  // 4 s since its last
    QVERIFY(merge.lost(2));
    QVERIFY(merge.all_final());
    const RunSummary summary = merge.summary(start + 5s);
    QCOMPARE(summary.stats.events_in, std::uint64_t(39));
    QCOMPARE(summary.stats.ranks->processing[1].state, std::string(protocol::kRankLost));
    QVERIFY2(summary.error.find("rank 2: lost: no report for 4.0 s") != std::string::npos &&
                 summary.error.find("(9 events in, 8 processed)") != std::string::npos,
             summary.error.c_str());
    // A rank never heard from is lost from the start.
    Collector silent(2, 0, false, {1}, start);
    QCOMPARE(silent.mark_silent(start + 11s, 10s), std::vector<int>{1});
    QVERIFY(silent.failures().find("it never reported") != std::string::npos);
  }

  void a_report_survives_its_encoding_and_a_damaged_one_is_refused() {
    RankReport r = report(2, 5, 4, true);
    r.error = "backend cpu: out of memory";
    r.latency.add_to_bin(300, 4);
    r.latency.raise_max(21.5);
    ProfileSums p;
    p.centres = {0.5, 1.5, 2.5};
    p.window = 4;
    p.events = 2;
    p.sum = {1.0 / 3.0, 2e-300, 7.25};
    p.finite = {2, 1, 2};
    p.latest = {0.1, kNaN, 3.0};
    p.latest_sequence = 9;
    p.latest_pulse_id = 19;
    r.profile = p;
    const RankReport back = decode_report(encode_report(r), 2);
    QCOMPARE(back.rank, 2);
    QVERIFY(back.final);
    QCOMPARE(back.error, r.error);
    QCOMPARE(back.pid, r.pid);
    QCOMPARE(back.stats.events_in, std::uint64_t(5));
    QCOMPARE(back.stats.drops_by_reason.at("ring_full"), std::uint64_t(1));
    QCOMPARE(back.latency.count(), std::uint64_t(4));
    QCOMPARE(back.latency.bins()[300], std::uint64_t(4));
    QCOMPARE(back.latency.max_us(), 21.5);
    QCOMPARE(back.profile->sum, p.sum);  // bit for bit
    QCOMPARE(back.profile->finite, p.finite);
    QVERIFY(std::isnan(back.profile->latest[1]));
    QCOMPARE(back.profile->latest_pulse_id, std::uint64_t(19));

    std::vector<std::uint8_t> bytes = encode_report(r);
    try {
      decode_report(bytes, 1);  // says it is rank 2
      QFAIL("a report under another rank's name was taken");
    } catch (const RuntimeFault& e) {
      QVERIFY2(QString(e.what()).contains("report of rank 1 cannot be read"), e.what());
    }
    bytes.resize(bytes.size() / 2);
    QVERIFY_THROWS_EXCEPTION(RuntimeFault, decode_report(bytes, 2));
  }
#endif
};

QTEST_GUILESS_MAIN(TestMpiCollector)
#include "test_mpi_collector.moc"
