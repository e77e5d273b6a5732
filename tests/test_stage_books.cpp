// The books of the built-in stages behind the stage contract (stages/integrate/integration_book,
// stages/compress/compression_book) and the engine's list of books (exec/stage_books): running
// averages against a float64 mean of the window computed here, compression blocks against sums
// and ratio bins computed here, per-stage timing against the times given, the compress stage's
// CPU part against the codec run directly, and an event without a stage's result refused.
#include <QtTest/QtTest>

#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "codec/codec.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "exec/backend.hpp"
#include "exec/stage_books.hpp"
#include "protocol/profile_topic.hpp"
#include "stages/compress/compress_stage.hpp"
#include "stages/compress/compression_book.hpp"
#include "stages/integrate/integration_book.hpp"

using namespace livedrp;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

stages::IntegrationBookSettings profile_settings(std::size_t bins, std::uint64_t window) {
  stages::IntegrationBookSettings settings;
  settings.unit = protocol::RadialUnit::QInverseNm;
  for (std::size_t b = 0; b < bins; ++b) settings.centres.push_back(0.5 + double(b));
  settings.average_events = window;
  settings.publish_hz = 4;
  return settings;
}

protocol::RadialProfile published_profile(stages::StageBook& book) {
  const std::vector<protocol::Message> messages = book.publish(false);
  if (messages.size() != 1) throw std::runtime_error("expected one profile message");
  return protocol::profile_from_message(messages.front());
}

// A stage of this test only: its book counts how often it is asked to publish, and reads the
// result of the stage named `other` of each event it is given.
struct AskedCounts {
  int asked = 0;
  std::optional<int> other_result;
  bool absent_found = false;
};
class AskedBook : public stages::StageBook {
 public:
  AskedBook(double hz, std::string other, AskedCounts* counts)
      : hz_(hz), other_(std::move(other)), counts_(counts) {}
  void add(const EventHeader&, const std::any&) override {}
  void add_event(const EventHeader&, const std::any&, double,
                 const stages::EventResults& event) override {
    if (const std::any* other = event.find(other_))
      counts_->other_result = std::any_cast<int>(*other);
    counts_->absent_found = event.find("absent") != nullptr;
  }
  std::vector<protocol::Message> publish(bool) override {
    ++counts_->asked;
    return {};
  }
  nlohmann::json stats_block(bool) override { return nullptr; }
  double publish_hz() const override { return hz_; }

 private:
  double hz_;
  std::string other_;
  AskedCounts* counts_;
};
class AskedStage : public stages::Stage {
 public:
  AskedStage(std::string name, double hz, std::string other, AskedCounts* counts)
      : name_(std::move(name)), hz_(hz), other_(std::move(other)), counts_(counts) {}
  std::string name() const override { return name_; }
  std::uint64_t input_bytes() const override { return 0; }
  std::any run_cpu(const stages::CpuEvent&) override { return {}; }
  std::unique_ptr<stages::StageBook> make_book() const override {
    return std::make_unique<AskedBook>(hz_, other_, counts_);
  }

 private:
  std::string name_;
  double hz_;
  std::string other_;
  AskedCounts* counts_;
};

}  // namespace

class TestStageBooks : public QObject {
  Q_OBJECT
 private slots:
  // Over 1,000 events (the window turns over ten times, so the sums are rebuilt from the window
  // ten times) the published average is the float64 mean of the last 100 events' finite values
  // per bin, NaN where none was finite; the latest profile and its event are the newest.
  void integrationAverageIsTheWindowMean() {
    constexpr std::size_t kBins = 16;
    constexpr std::uint64_t kWindow = 100;
    stages::IntegrationBook book(profile_settings(kBins, kWindow));
    std::mt19937_64 random(11);
    std::normal_distribution<double> intensity(1000.0, 300.0);
    std::deque<std::vector<double>> window;
    for (std::uint64_t event = 0; event < 1000; ++event) {
      std::vector<double> profile(kBins);
      for (std::size_t b = 0; b < kBins; ++b)
        // Bin 3 has pixels in every fifth event only; bin 7 never.
        profile[b] = (b == 3 && event % 5 != 0) || b == 7 ? kNaN : intensity(random);
      window.push_back(profile);
      if (window.size() > kWindow) window.pop_front();
      book.add(EventHeader{event, 5000 + event, 0}, stages::ProfileResult(profile));
    }
    const protocol::RadialProfile published = published_profile(book);
    QCOMPARE(published.sequence, 999ull);
    QCOMPARE(published.pulse_id, 5999ull);
    QCOMPARE(published.average_window, kWindow);
    QCOMPARE(published.average_events, kWindow);
    for (std::size_t b = 0; b < kBins; ++b) {
      double sum = 0;
      int finite = 0;
      for (const auto& p : window)
        if (std::isfinite(p[b])) {
          sum += p[b];
          ++finite;
        }
      if (finite == 0) {
        QVERIFY2(std::isnan(published.average[b]), qPrintable(QString("bin %1").arg(b)));
        continue;
      }
      QVERIFY2(
          std::abs(published.average[b] - sum / finite) <= 1e-9 * std::abs(sum / finite),
          qPrintable(
              QString("bin %1: %2 against %3").arg(b).arg(published.average[b]).arg(sum / finite)));
      if (std::isfinite(window.back()[b])) QCOMPARE(published.latest[b], window.back()[b]);
    }
    QCOMPARE(finite_count(published.average), kBins - 1);
  }

  // A profile goes out once per new event: asked again with nothing new, the book says nothing.
  void integrationPublishesOnlyWhatIsNew() {
    stages::IntegrationBook book(profile_settings(4, 10));
    QVERIFY(book.publish(false).empty());
    book.add(EventHeader{0, 1, 0}, stages::ProfileResult{1, 2, 3, 4});
    QCOMPARE(published_profile(book).average_events, 1ull);
    QVERIFY(book.publish(true).empty());
    QCOMPARE(book.publish_hz(), 4.0);
  }

  void integrationRefusesAProfileOfOtherBins() {
    stages::IntegrationBook book(profile_settings(4, 10));
    QVERIFY_THROWS_EXCEPTION(RuntimeFault,
                             book.add(EventHeader{0, 1, 0}, stages::ProfileResult{1, 2, 3}));
  }

  // Interval and run blocks: byte sums, ratio = in / out, GB/s = in / codec time, and each
  // event's ratio in the histogram bin the protocol gives it; the next interval starts empty.
  void compressionBlocksAreTheSums() {
    stages::CompressionBook book({"lossy", 0.5});
    const std::vector<stages::CompressedSize> events = {
        {8'000'000, 1'000'000}, {8'000'000, 2'000'000}, {8'000'000, 500'000}};
    const std::vector<double> us = {100.0, 150.0, 50.0};
    std::array<std::uint64_t, protocol::kRatioHistogramBins> histogram{};
    for (std::size_t k = 0; k < events.size(); ++k) {
      book.add_timed(EventHeader{k, k, 0}, events[k], us[k]);
      ++histogram[protocol::ratio_histogram_bin(double(events[k].bytes_in) /
                                                double(events[k].bytes_out))];
    }
    protocol::StatsPayload stats;
    book.fill_stats(stats, false);
    QVERIFY(stats.compression.has_value());
    const protocol::CompressionStats& interval = *stats.compression;
    QCOMPARE(interval.codec, std::string("lossy"));
    QCOMPARE(interval.error_bound, 0.5);
    QCOMPARE(interval.interval_bytes_in, 24'000'000ull);
    QCOMPARE(interval.interval_bytes_out, 3'500'000ull);
    QCOMPARE(interval.interval_ratio, 24.0 / 3.5);
    QCOMPARE(interval.gbps, 24e6 / 300e-6 / 1e9);
    QVERIFY(interval.ratio_histogram == histogram);

    book.add_timed(EventHeader{3, 3, 0}, stages::CompressedSize{8'000'000, 4'000'000}, 100.0);
    protocol::StatsPayload next;
    book.fill_stats(next, false);
    QCOMPARE(next.compression->interval_bytes_in, 8'000'000ull);
    QCOMPARE(next.compression->total_bytes_in, 32'000'000ull);
    QCOMPARE(next.compression->interval_ratio, 2.0);

    protocol::StatsPayload run;
    book.fill_stats(run, true);
    QCOMPARE(run.compression->interval_bytes_in, 32'000'000ull);
    QCOMPARE(run.compression->interval_bytes_out, 7'500'000ull);
    QCOMPARE(run.compression->gbps, 32e6 / 400e-6 / 1e9);
    QCOMPARE(run.compression->ratio_histogram,
             (std::array<std::uint64_t, protocol::kRatioHistogramBins>{}));
  }

  // A lossless codec has no error bound in its block, whatever the configuration said.
  void losslessHasNoBound() {
    stages::CompressionBook book({"lossless", 0.5});
    book.add_timed(EventHeader{0, 0, 0}, stages::CompressedSize{100, 50}, 1.0);
    protocol::StatsPayload stats;
    book.fill_stats(stats, false);
    QCOMPARE(stats.compression->error_bound, 0.0);
  }

  // The compress stage's CPU part writes what the codec writes for the same input (the raw
  // words for lossless, in the detector's [segments, rows, cols] shape), and its book, in the
  // engine's list, is timed by the times given: mean, maximum, GB/s over its input bytes, and
  // stats.compression's GB/s over the same times.
  void compressStageAndItsBookInTheList() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    const auto stage = stages::make_compress_stage({"lossless", 0.5, 16384}, detector);
    QVERIFY(stage);
    QCOMPARE(stage->input_bytes(), std::uint64_t(detector.pixels()) * 2);
    std::vector<std::uint16_t> raw(detector.pixels());
    std::mt19937 random(3);
    for (auto& word : raw) word = std::uint16_t(1000 + random() % 64);
    const std::vector<float> calibrated(detector.pixels(), 0.0f);
    const EventHeader header{0, 1, 0};
    const auto size = std::any_cast<stages::CompressedSize>(
        stage->run_cpu({header, raw.data(), calibrated, nullptr}));
    codec::CodecParams params;
    params.codec = codec::Codec::Lossless;
    const std::vector<std::uint8_t> expected =
        codec::compress_cpu(raw.data(), codec::DType::UInt16,
                            {std::uint64_t(detector.segments), std::uint64_t(detector.rows),
                             std::uint64_t(detector.cols)},
                            params);
    QCOMPARE(size.bytes_in, stage->input_bytes());
    QCOMPARE(size.bytes_out, std::uint64_t(expected.size()));

    StageBooks books(stages::StageList{stage});
    for (std::uint64_t k = 0; k < 3; ++k) {
      CompletedEvent done;
      done.header = EventHeader{k, k, 0};
      done.stage_outputs.push_back({size, 10.0 * double(k + 1)});
      books.add(done);
    }
    protocol::StatsPayload stats;
    books.take_interval(stats);
    QCOMPARE(stats.stages.size(), std::size_t(1));
    QCOMPARE(stats.stages[0].name, std::string("compress"));
    QCOMPARE(stats.stages[0].mean_us, 20.0);  // (10 + 20 + 30) / 3
    QCOMPARE(stats.stages[0].max_us, 30.0);
    QCOMPARE(stats.stages[0].gbps, double(stage->input_bytes()) / 20e-6 / 1e9);
    QCOMPARE(stats.compression->interval_bytes_in, 3 * stage->input_bytes());
    QCOMPARE(stats.compression->gbps, 3.0 * double(stage->input_bytes()) / 60e-6 / 1e9);
    QVERIFY(stats.stage_stats.empty());

    protocol::StatsPayload next;
    books.take_interval(next);
    QCOMPARE(next.stages[0].mean_us, 0.0);  // nothing since the last interval
    protocol::StatsPayload run;
    books.add_totals(run);
    QCOMPARE(run.stages[0].mean_us, 20.0);
    QCOMPARE(run.stages[0].max_us, 0.0);  // not kept over a run
    QCOMPARE(run.compression->total_bytes_out, 3 * size.bytes_out);

    // An event that came back without the stage's result is a backend fault, named.
    CompletedEvent empty;
    QVERIFY_THROWS_EXCEPTION(RuntimeFault, books.add(empty));
  }

  // A book with kEveryStep is asked at every step of the reporter, one with a rate once a period
  // (4 Hz: 250 ms), neither at the report ticks, both at the end; each book reads the other
  // stage's result of the same event by its name, and none for a name the run does not have.
  void booksAreAskedAtTheirRateAndReadTheOtherStagesResults() {
    AskedCounts every, rated;
    StageBooks books(stages::StageList{
        std::make_shared<AskedStage>("every", stages::StageBook::kEveryStep, "rated", &every),
        std::make_shared<AskedStage>("rated", 4.0, "every", &rated)});
    const StageMessageSink sink = [](const protocol::Message&) {};
    const auto t0 = std::chrono::steady_clock::now();
    books.publish_due(sink, 1, t0);
    books.publish_due(sink, 1, t0);
    books.publish_due(sink, 1, t0 + std::chrono::milliseconds(100));
    books.publish_due(sink, 1, t0 + std::chrono::milliseconds(260));
    QCOMPARE(every.asked, 4);
    QCOMPARE(rated.asked, 2);
    books.publish(sink, 1, false);
    QCOMPARE(every.asked, 4);
    QCOMPARE(rated.asked, 2);
    books.publish(sink, 1, true);
    QCOMPARE(every.asked, 5);
    QCOMPARE(rated.asked, 3);

    CompletedEvent done;
    done.header = EventHeader{0, 1, 0};
    done.stage_outputs.push_back({std::any(7), 0.0});
    done.stage_outputs.push_back({std::any(11), 0.0});
    books.add(done);
    QCOMPARE(every.other_result, std::optional<int>(11));
    QCOMPARE(rated.other_result, std::optional<int>(7));
    QVERIFY(!every.absent_found && !rated.absent_found);
  }

 private:
  static std::size_t finite_count(const std::vector<double>& values) {
    std::size_t n = 0;
    for (double v : values) n += std::isfinite(v) ? 1 : 0;
    return n;
  }
};

QTEST_APPLESS_MAIN(TestStageBooks)
#include "test_stage_books.moc"
