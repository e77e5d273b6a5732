// The `image` topic as a stage of the contract (engine/stages/image; issue 32, item 1): its
// sampler takes one event a period whichever thread asks, its CPU part copies the raw words and
// calibrated pixels of that event only, its book publishes the sample assembled, with the peaks
// the peak stage found in the same event (looked up by the stage's name among the event's
// results), and nothing while an MPI rank keeps the images for its reports. The engine's runs
// with the topic on (the image last in the list, every published image the event's own pixels)
// are test_engine_peaks and, on the GPU, test_gpu_engine_peaks and test_gpu_resident_stages.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "calib/constants.hpp"
#include "calib/gain_occupancy.hpp"
#include "core/detector.hpp"
#include "core/image_assembly.hpp"
#include "exec/engine.hpp"
#include "protocol/peaks_topic.hpp"
#include "stages/image/image_stage.hpp"
#include "stages/peaks/peak_stage.hpp"

using namespace livedrp;
using Clock = stages::ImageSampler::Clock;

namespace {

// An event with every raw word and every pixel distinct, so that a copy of another event, or of
// part of this one, cannot pass for it.
struct SyntheticEvent {
  EventHeader header;
  std::vector<std::byte> raw;
  std::vector<float> calibrated;
};

SyntheticEvent synthetic_event(const DetectorDescription& detector, std::uint64_t sequence) {
  SyntheticEvent e;
  e.header.sequence = sequence;
  e.header.pulse_id = 1000 + 3 * sequence;
  e.header.timestamp_ns = 5'000'000'000 + std::int64_t(sequence);
  e.raw.resize(detector.raw_event_bytes());
  for (std::size_t i = 0; i < e.raw.size(); ++i)
    e.raw[i] = std::byte((i * 7 + sequence * 13) & 0xFF);
  e.calibrated.resize(detector.pixels());
  for (std::size_t i = 0; i < e.calibrated.size(); ++i)
    e.calibrated[i] = float(double(i % 4099) * 0.25 + double(sequence));
  return e;
}

std::any run_cpu(stages::ImageStage& stage, const SyntheticEvent& e) {
  return stage.run_cpu({e.header, e.raw.data(), e.calibrated, nullptr});
}

}  // namespace

class TestImageStage : public QObject {
  Q_OBJECT
 private slots:
  void the_sampler_takes_one_event_a_period() {
    stages::ImageSampler sampler(4.0);  // a period of 250 ms
    const Clock::time_point t0 = Clock::now();
    QVERIFY(sampler.due(t0));
    QVERIFY(sampler.take_due(t0));
    QVERIFY(!sampler.take_due(t0));  // taken: the second asker of the same moment gets none
    QVERIFY(!sampler.due(t0 + std::chrono::milliseconds(249)));
    QVERIFY(!sampler.take_due(t0 + std::chrono::milliseconds(249)));
    QVERIFY(sampler.due(t0 + std::chrono::milliseconds(250)));
    QVERIFY(sampler.take_due(t0 + std::chrono::milliseconds(260)));
    // The next period counts from the taking, not from the due time.
    QVERIFY(!sampler.due(t0 + std::chrono::milliseconds(509)));
    QVERIFY(sampler.due(t0 + std::chrono::milliseconds(510)));
    // A sample taken out of turn (the device-resident snapshot) moves the next due time too.
    sampler.taken(t0 + std::chrono::milliseconds(600));
    QVERIFY(!sampler.due(t0 + std::chrono::milliseconds(849)));
    QVERIFY(sampler.due(t0 + std::chrono::milliseconds(850)));
    QVERIFY_THROWS_EXCEPTION(InputError, stages::ImageSampler(0.0));
  }

  void the_cpu_part_copies_the_event_due_and_no_other() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    const CalibrationConstants constants = identity_constants(detector);
    auto assembly = std::make_shared<ImageAssembly>(detector);
    // One event a thousand seconds: only the first event of this test is due.
    stages::ImageStage stage(detector, constants, assembly, nullptr, 0.001);
    QCOMPARE(stage.name(), std::string("image"));
    const SyntheticEvent first = synthetic_event(detector, 7),
                         second = synthetic_event(detector, 8);
    const std::any a = run_cpu(stage, first), b = run_cpu(stage, second);
    const auto* sample = std::any_cast<stages::ImageResult>(&a);
    QVERIFY(sample && *sample);
    QCOMPARE((*sample)->header.sequence, std::uint64_t(7));
    QCOMPARE((*sample)->header.pulse_id, first.header.pulse_id);
    QVERIFY((*sample)->raw == first.raw);
    QVERIFY((*sample)->calibrated == first.calibrated);
    // Not due: a result of the same type that holds nothing.
    const auto* none = std::any_cast<stages::ImageResult>(&b);
    QVERIFY(none && !*none);
  }

  void the_book_publishes_the_sample_with_the_peaks_of_the_same_event() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    const CalibrationConstants constants = identity_constants(detector);
    auto assembly = std::make_shared<ImageAssembly>(detector);
    LivePeakFindingConfig peak_config;
    peak_config.enabled = true;
    const auto peak_stage = stages::make_peak_stage(peak_config, detector, constants, assembly);
    stages::ImageStage stage(detector, constants, assembly, peak_stage, 0.001);
    const std::unique_ptr<stages::StageBook> book = stage.make_book();

    const SyntheticEvent e = synthetic_event(detector, 11);
    const std::any result = run_cpu(stage, e);
    // The event's results as the engine hands them to every book: the peak stage's among them.
    stages::PeakResult peaks;
    peaks.peaks.found = 2;
    peaks.peaks.hit = false;
    peaks.params_version = 3;
    peaks.peaks.peaks.resize(2);
    peaks.peaks.peaks[0].fs = 10.5f;
    peaks.peaks.peaks[0].ss = 20.25f;
    peaks.peaks.peaks[0].intensity = 400.0f;
    peaks.peaks.peaks[0].num_pixels = 3;
    peaks.peaks.peaks[1].fs = 100.0f;
    peaks.peaks.peaks[1].ss = 300.5f;
    peaks.peaks.peaks[1].segment = 5;
    peaks.peaks.peaks[1].ss_in_segment = 300.5f - 5.0f * float(detector.rows);
    peaks.peaks.peaks[1].intensity = 90.0f;
    peaks.peaks.peaks[1].num_pixels = 2;
    const std::vector<std::string> names{"peak", "image"};
    const std::vector<stages::StageOutput> outputs{{peaks, 1.0}, {result, 0.0}};
    book->add_event(e.header, result, 0.0, stages::EventResults(names, outputs));

    std::vector<protocol::Message> messages = book->publish(false);
    QCOMPARE(messages.size(), std::size_t(1));
    QCOMPARE(messages[0].topic, std::string(protocol::kTopicImage));
    const protocol::ImageFrame image = protocol::image_from_message(messages[0]);
    QCOMPARE(image.sequence, std::uint64_t(11));
    QCOMPARE(image.pulse_id, e.header.pulse_id);
    // The pixels: this event's, assembled as the assembly places them.
    std::vector<float> expected(assembly->height() * assembly->width());
    assembly->assemble(e.calibrated.data(), expected.data());
    QCOMPARE(image.pixels.size(), expected.size());
    for (std::size_t k = 0; k < expected.size(); ++k)
      if (!(std::isnan(expected[k]) ? std::isnan(image.pixels[k]) : image.pixels[k] == expected[k]))
        QFAIL(qPrintable(
            QString("pixel %1: %2, expected %3").arg(k).arg(image.pixels[k]).arg(expected[k])));
    const calib::GainOccupancy occupancy = calib::gain_occupancy(detector, constants, e.raw.data());
    QCOMPARE(image.gain_occupancy, occupancy.fraction);
    // The peaks: the peak stage's message of that list, placed in the image.
    QVERIFY(image.has_peaks);
    const protocol::EventPeaks message = peak_stage->message(e.header, peaks.peaks, 3, false);
    QCOMPARE(image.peaks.found, std::uint64_t(2));
    QCOMPARE(image.peaks.params_version, std::uint64_t(3));
    QCOMPARE(image.peaks.peaks.size(), std::size_t(2));
    for (std::size_t p = 0; p < 2; ++p) {
      QCOMPARE(image.peaks.peaks[p].fs, message.peaks[p].fs);
      QCOMPARE(image.peaks.peaks[p].ss, message.peaks[p].ss);
      QCOMPARE(image.peaks.peaks[p].x, message.peaks[p].x);
      QCOMPARE(image.peaks.peaks[p].y, message.peaks[p].y);
      QCOMPARE(image.peaks.peaks[p].intensity, message.peaks[p].intensity);
    }
    // Taken once: nothing new, nothing published.
    QVERIFY(book->publish(false).empty());
    // An event not sampled adds nothing.
    const SyntheticEvent later = synthetic_event(detector, 12);
    const std::any not_due = run_cpu(stage, later);
    const std::vector<stages::StageOutput> later_outputs{{peaks, 1.0}, {not_due, 0.0}};
    book->add_event(later.header, not_due, 0.0, stages::EventResults(names, later_outputs));
    QVERIFY(book->publish(true).empty());
  }

  void without_a_peak_stage_the_image_has_no_peaks() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    const CalibrationConstants constants = identity_constants(detector);
    auto assembly = std::make_shared<ImageAssembly>(detector);
    stages::ImageStage stage(detector, constants, assembly, nullptr, 0.001);
    const auto book = stage.make_book();
    const SyntheticEvent e = synthetic_event(detector, 3);
    book->add(e.header, run_cpu(stage, e));
    const std::vector<protocol::Message> messages = book->publish(false);
    QCOMPARE(messages.size(), std::size_t(1));
    const protocol::ImageFrame image = protocol::image_from_message(messages[0]);
    QCOMPARE(image.sequence, std::uint64_t(3));
    QVERIFY(!image.has_peaks);
  }

  void kept_for_taking_the_book_publishes_nothing_and_take_has_the_newest() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    const CalibrationConstants constants = identity_constants(detector);
    auto assembly = std::make_shared<ImageAssembly>(detector);
    stages::ImageStage stage(detector, constants, assembly, nullptr, 0.001);
    stage.keep_for_taking();
    const auto book = stage.make_book();
    const SyntheticEvent e = synthetic_event(detector, 21);
    book->add(e.header, run_cpu(stage, e));
    QVERIFY(book->publish(false).empty());
    const std::optional<protocol::ImageFrame> taken = stage.take();
    QVERIFY(taken.has_value());
    QCOMPARE(taken->sequence, std::uint64_t(21));
    QVERIFY(!stage.take().has_value());
  }

  void a_sample_of_the_wrong_size_is_refused() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    const CalibrationConstants constants = identity_constants(detector);
    auto assembly = std::make_shared<ImageAssembly>(detector);
    LiveImage mailbox(detector, constants, *assembly);
    auto sample = std::make_shared<ImageSample>();
    sample->header.sequence = 4;
    sample->raw.resize(16);
    sample->calibrated.resize(detector.pixels());
    QVERIFY_THROWS_EXCEPTION(RuntimeFault, mailbox.offer(sample, std::nullopt));
    QVERIFY(!mailbox.take().has_value());
  }

  void an_image_stage_needs_an_assembly() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    const CalibrationConstants constants = identity_constants(detector);
    QVERIFY_THROWS_EXCEPTION(InputError,
                             stages::ImageStage(detector, constants, nullptr, nullptr, 2.0));
  }
};

QTEST_GUILESS_MAIN(TestImageStage)
#include "test_image_stage.moc"
