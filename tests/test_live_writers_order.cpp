// LiveWriters (exec/live_writers.hpp) when events complete out of order, as several CUDA lanes
// return them: an event the reorder stage holds back has its image read when it returns
// (keep_held), and that copy, not the backend's output at release time (by then another event's),
// is what the hit files and the average get, in admission order. A hit whose image can be read
// neither way is counted as dropped, never written with another event's pixels. Driven here with
// hand-made completed events (generic_f32, every event a hit), without an engine.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "calib/constants.hpp"
#include "exec/live_writers.hpp"
#include "hit_file_support.hpp"
#include "sim/simulator.hpp"
#include "stages/peaks/peak_stage.hpp"

using namespace livedrp;
using namespace livedrp::hit_file_test;

namespace {

// Event `admission` as the backend returns it: a hit with one peak at (admission, 7).
CompletedEvent completed(std::uint64_t admission) {
  CompletedEvent done;
  done.header.sequence = admission;
  done.header.pulse_id = 1000 + admission;
  done.admission = admission;
  stages::PeakResult result;
  peaks::Peak peak;
  peak.fs = float(admission);
  peak.ss = 7;
  peak.intensity = 10.0f + float(admission);
  result.peaks.peaks = {peak};
  result.peaks.found = 1;
  result.peaks.hit = true;
  done.stage_outputs.push_back({result, 0.0});
  return done;
}

// A backend's output that holds event `value`'s image: every pixel `value`.
LiveWriters::ReadImage output_of(float value) {
  return [value](const CompletedEvent&, float* out) {
    for (std::size_t p = 0; p < 1024 * 1024; ++p) out[p] = value;
  };
}

}  // namespace

class TestLiveWritersOrder : public QObject {
  Q_OBJECT
 private slots:
  void held_events_keep_the_image_read_when_they_returned() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const DetectorDescription detector = find_detector("generic_f32");
    const DetectorSimulator simulator(detector, SimulatorConfig{});
    EngineConfig c;
    c.source = "sim:generic_f32";
    c.peak_finding.enabled = true;
    c.write.hits_directory = dir.filePath("hits").toStdString();
    c.write.hits_per_file = 10;
    c.write.average = dir.filePath("average.h5").toStdString();
    const stages::StageList stages = {
        stages::make_peak_stage(c.peak_finding, detector, simulator.constants(), nullptr)};
    WriteStatus status;
    {
      LiveWriters writers(c, detector, stages, true);
      // Lane B returns event 2 first: held back (0 and 1 are not back), read now.
      writers.keep_held(completed(2), output_of(2.0f));
      // Event 0 returns and is released at once: read at release.
      writers.add(completed(0), true, output_of(0.0f));
      // Event 1 the same; then event 2 is released, its output long reused: the kept copy.
      writers.add(completed(1), true, output_of(1.0f));
      writers.add(completed(2), false, [](const CompletedEvent&, float*) {
        QFAIL("a held event's output was read at its release");
      });
      // An event neither kept nor readable: dropped and counted.
      writers.add(completed(3), false, output_of(99.0f));
      writers.close();
      status = writers.status();
    }
    QCOMPARE(status.hits.written, std::uint64_t(3));
    QCOMPARE(status.hits.dropped, std::uint64_t(1));
    QCOMPARE(status.average.written, std::uint64_t(3));
    QCOMPARE(status.average.dropped, std::uint64_t(1));
    QVERIFY2(status.hits.error.empty(), status.hits.error.c_str());

    QString problem;
    const std::vector<HitFrame> frames =
        read_hit_frames(status.hits.files.at(0), 1024, 1024, 2048, problem);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    QCOMPARE(frames.size(), std::size_t(3));
    for (std::size_t j = 0; j < frames.size(); ++j) {
      QCOMPARE(frames[j].sequence, std::uint64_t(j));
      QCOMPARE(frames[j].pulse_id, std::uint64_t(1000 + j));
      const std::vector<float> image(1024 * 1024, float(j));
      const QString difference = compare_hit_frame(frames[j], image, [&] {
        peaks::PeakList list;
        list.peaks = std::any_cast<const stages::PeakResult&>(completed(j).stage_outputs[0].result)
                         .peaks.peaks;
        return list;
      }());
      QVERIFY2(difference.isEmpty(), qPrintable(difference));
    }

    // The average of 0, 1 and 2: 1 everywhere.
    const hid_t file = H5Fopen(c.write.average.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    QVERIFY(file >= 0);
    const auto data = read_dataset<float>(file, "/entry/average/data", H5T_NATIVE_FLOAT);
    const auto events =
        read_dataset<std::uint64_t>(file, "/entry/average/events", H5T_NATIVE_UINT64);
    H5Fclose(file);
    QVERIFY(data.ok && events.ok);
    QCOMPARE(events.values.at(0), std::uint64_t(3));
    QCOMPARE(data.values.size(), std::size_t(1024 * 1024));
    for (float v : data.values) QCOMPARE(v, 1.0f);
  }
};

QTEST_GUILESS_MAIN(TestLiveWritersOrder)
#include "test_live_writers_order.moc"
