// Peak finding as a stage of the contract (stages/peaks/peak_stage), driven here the way a
// backend and the engine drive it, on synthetic frames with known truth: a 1024x1024 float32
// detector with Gaussian noise of sigma 1 and Gaussian spots of two brightnesses at known places.
// Checked against a PeakFinder8 built here and against the spots themselves: the CPU part's
// lists, the book's counts and its `peaks` message (the newest hit), a parameter change (version
// 2 from the next event on, the lists those of the new parameters, bad parameters refused with
// their name and nothing changed), and a re-run of the kept frames with the parameters in force.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/image_assembly.hpp"
#include "core/thread_pool.hpp"
#include "peaks/peakfinder8.hpp"
#include "protocol/peaks_topic.hpp"
#include "stages/peaks/peak_stage.hpp"

using namespace livedrp;

namespace {

constexpr int kSide = 1024;

struct Spot {
  double x, y, amplitude;
};

// Noise of sigma 1 around 0 and each spot a Gaussian of sigma 1 px: a spot of amplitude 400
// keeps its four nearest neighbours at 243 (above a threshold of 150), one of 100 at 61 (below).
std::vector<float> synthetic_frame(const std::vector<Spot>& spots, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> frame(std::size_t(kSide) * kSide);
  for (float& v : frame) v = noise(random);
  for (const Spot& s : spots)
    for (int y = int(s.y) - 5; y <= int(s.y) + 5; ++y)
      for (int x = int(s.x) - 5; x <= int(s.x) + 5; ++x) {
        const double r2 = (x - s.x) * (x - s.x) + (y - s.y) * (y - s.y);
        frame[std::size_t(y) * kSide + std::size_t(x)] += float(s.amplitude * std::exp(-0.5 * r2));
      }
  return frame;
}

// Spots on a grid away from the beam (the centre) and the edges, alternately bright and faint.
std::vector<Spot> spots_of(int count, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> jitter(-0.3, 0.3);
  std::vector<Spot> spots;
  for (int k = 0; k < count; ++k) {
    const double x = 100 + 160 * (k % 5) + jitter(random), y = 100 + 200 * (k / 5) + jitter(random);
    spots.push_back({x, y, k % 2 == 0 ? 400.0 : 100.0});
  }
  return spots;
}

bool same_list(const peaks::PeakList& a, const peaks::PeakList& b) {
  return a.found == b.found && a.hit == b.hit && a.peaks.size() == b.peaks.size() &&
         (a.peaks.empty() ||
          std::memcmp(a.peaks.data(), b.peaks.data(), a.peaks.size() * sizeof(peaks::Peak)) == 0);
}

// How many spots a list found within one pixel, and how many of its peaks match no spot.
std::pair<int, int> matched(const peaks::PeakList& list, const std::vector<Spot>& spots,
                            double min_amplitude) {
  int found = 0, extra = 0;
  for (const Spot& s : spots) {
    if (s.amplitude < min_amplitude) continue;
    for (const peaks::Peak& p : list.peaks)
      if (std::hypot(p.fs - s.x, p.ss - s.y) < 1.0) {
        ++found;
        break;
      }
  }
  for (const peaks::Peak& p : list.peaks) {
    bool near = false;
    for (const Spot& s : spots) near = near || std::hypot(p.fs - s.x, p.ss - s.y) < 1.0;
    extra += near ? 0 : 1;
  }
  return {found, extra};
}

EventHeader header_of(std::uint64_t sequence) {
  EventHeader h{};
  h.sequence = sequence;
  h.pulse_id = 1000 + sequence;
  return h;
}

}  // namespace

class TestPeakStage : public QObject {
  Q_OBJECT

  DetectorDescription detector_ = find_detector("generic_f32");
  CalibrationConstants constants_ = identity_constants(detector_);
  ThreadPool pool_{2};

  LivePeakFindingConfig config() const {
    LivePeakFindingConfig c;
    c.enabled = true;
    c.params.min_peaks_for_hit = 10;
    c.peaks_hz = 1000;
    c.recent_frames = 3;
    return c;
  }
  // peakfinder8 built here: the slab, the beam at the centre of the assembled bounds, no mask.
  peaks::PeakFinder8 independent(const peaks::PeakFinderParams& params) const {
    const AssembledPoint beam = assembled_bounds(detector_).centre();
    return peaks::PeakFinder8(peaks::slab_layout(detector_),
                              peaks::radius_map(detector_, beam.x, beam.y), {}, params);
  }
  stages::PeakResult run(stages::PeakStage& stage, std::uint64_t sequence,
                         const std::vector<float>& frame) {
    const EventHeader header = header_of(sequence);
    return std::any_cast<stages::PeakResult>(
        stage.run_cpu({header, nullptr, std::span<const float>(frame), &pool_}));
  }

 private slots:
  void the_cpu_part_finds_the_spots_as_peakfinder8_does_and_the_book_counts_them() {
    auto assembly = std::make_shared<const ImageAssembly>(detector_);
    auto stage = stages::make_peak_stage(config(), detector_, constants_, assembly);
    QVERIFY(stage);
    QCOMPARE(stage->name(), std::string("peak"));
    QCOMPARE(stage->input_bytes(), std::uint64_t(kSide) * kSide * 4);
    peaks::PeakFinder8 reference = independent(config().params);
    auto book = stage->make_book();
    // Events 0 and 2 hits (20 spots), event 1 not (6 spots: under min_peaks_for_hit 10).
    const int counts[] = {20, 6, 20};
    std::uint64_t total_found = 0;
    stages::PeakResult last_hit;
    for (int i = 0; i < 3; ++i) {
      const std::vector<Spot> spots = spots_of(counts[i], 10 + i);
      const std::vector<float> frame = synthetic_frame(spots, 20 + i);
      const stages::PeakResult result = run(*stage, i, frame);
      QCOMPARE(result.params_version, std::uint64_t(1));
      QVERIFY(result.search_us > 0);
      QVERIFY2(same_list(result.peaks, reference.find(frame.data())), "list differs");
      const auto [found, extra] = matched(result.peaks, spots, 0);
      QCOMPARE(found, counts[i]);  // every spot, bright and faint
      QCOMPARE(extra, 0);
      QCOMPARE(result.peaks.hit, counts[i] >= 10);
      total_found += std::uint64_t(result.peaks.found);
      if (result.peaks.hit) last_hit = result;
      book->add_timed(header_of(i), result, result.search_us);
    }
    // The newest hit is the message; the older one, never sent, is counted.
    const std::vector<protocol::Message> messages = book->publish(true);
    QCOMPARE(messages.size(), std::size_t(1));
    QCOMPARE(messages[0].topic, std::string(protocol::kTopicPeaks));
    const protocol::EventPeaks sent = protocol::peaks_from_message(messages[0]);
    QCOMPARE(sent.sequence, std::uint64_t(2));
    QCOMPARE(sent.pulse_id, std::uint64_t(1002));
    QCOMPARE(sent.found, std::uint64_t(last_hit.peaks.found));
    QCOMPARE(sent.peaks.size(), last_hit.peaks.peaks.size());
    QCOMPARE(sent.peaks[0].fs, last_hit.peaks.peaks[0].fs);
    QCOMPARE(sent.params_version, std::uint64_t(1));
    QVERIFY(!sent.rerun);
    protocol::StatsPayload stats;
    book->fill_stats(stats, true);
    QCOMPARE(stats.peak_finding->total_events, std::uint64_t(3));
    QCOMPARE(stats.peak_finding->total_hits, std::uint64_t(2));
    QCOMPARE(stats.peak_finding->total_peaks, total_found);
    QCOMPARE(stats.peak_finding->hits_not_sent, std::uint64_t(1));
  }

  void a_parameter_change_holds_from_the_next_event_and_a_rerun_uses_it() {
    auto stage = stages::make_peak_stage(config(), detector_, constants_, nullptr);
    std::vector<std::vector<Spot>> spots;
    std::vector<std::vector<float>> frames;
    for (int i = 0; i < 4; ++i) {
      spots.push_back(spots_of(20, 30 + i));
      frames.push_back(synthetic_frame(spots.back(), 40 + i));
    }
    for (int i = 0; i < 2; ++i)
      QCOMPARE(run(*stage, i, frames[i]).params_version, std::uint64_t(1));

    // A bad change names the parameter and changes nothing.
    peaks::PeakFinderParams bad = config().params;
    bad.local_bg_radius = 0;
    try {
      stage->prepare_change(bad, false);
      QFAIL("a bad parameter was accepted");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("local_bg_radius"), e.what());
    }
    QCOMPARE(stage->params().version(), std::uint64_t(1));

    // Threshold 150: the faint spots' neighbours (61) are below it, so only bright spots count.
    peaks::PeakFinderParams strict = config().params;
    strict.adc_threshold = 150;
    auto prepared = stage->prepare_change(strict, false);
    QCOMPARE(prepared->version, std::uint64_t(2));
    QCOMPARE(stage->params().version(), std::uint64_t(1));  // not before it is applied
    stage->apply_change(prepared);
    QCOMPARE(stage->params().version(), std::uint64_t(2));
    QCOMPARE(stage->params().current().adc_threshold, 150.0f);
    QCOMPARE(stage->params().of(1).adc_threshold, config().params.adc_threshold);
    // The same preparation cannot be applied twice (its version is taken).
    QVERIFY_THROWS_EXCEPTION(RuntimeFault, stage->apply_change(prepared));

    peaks::PeakFinder8 reference = independent(strict);
    for (int i = 2; i < 4; ++i) {
      const stages::PeakResult result = run(*stage, i, frames[i]);
      QCOMPARE(result.params_version, std::uint64_t(2));
      QVERIFY2(same_list(result.peaks, reference.find(frames[i].data())), "list differs");
      const auto [found, extra] = matched(result.peaks, spots[i], 200);
      QCOMPARE(found, 10);  // the ten bright spots
      QCOMPARE(extra, 0);
    }

    // Three frames kept (recent_frames 3): the newest two asked for, oldest first, searched
    // with version 2, the first of them searched live with version 1.
    const std::vector<stages::PeakRerunFrame> rerun = stage->rerun(2, false);
    QCOMPARE(rerun.size(), std::size_t(2));
    QCOMPARE(rerun[0].header.sequence, std::uint64_t(2));
    QCOMPARE(rerun[1].header.sequence, std::uint64_t(3));
    for (std::size_t k = 0; k < 2; ++k)
      QVERIFY2(same_list(rerun[k].peaks, reference.find(frames[2 + k].data())), "rerun differs");
    const std::vector<stages::PeakRerunFrame> all = stage->rerun(10, false);
    QCOMPARE(all.size(), std::size_t(3));  // no more than are kept
    QCOMPARE(all[0].header.sequence, std::uint64_t(1));
    QCOMPARE(all[0].peaks.found, 10);  // frame 1 again, now with the strict threshold
  }

  void the_section_off_makes_no_stage_and_bad_parameters_are_named() {
    LivePeakFindingConfig off = config();
    off.enabled = false;
    QVERIFY(!stages::make_peak_stage(off, detector_, constants_, nullptr));
    LivePeakFindingConfig bad = config();
    bad.params.min_pixel_count = 0;
    try {
      stages::make_peak_stage(bad, detector_, constants_, nullptr);
      QFAIL("a bad parameter was accepted");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).startsWith("peak_finding.params: ") &&
                   QString(e.what()).contains("min_pixel_count"),
               e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestPeakStage)
#include "test_peak_stage.moc"
