// The recorder's writer thread and its bounded queue: a disk slower than the source costs
// recorded events under "drop" (each one counted, never a stalled pipeline) and costs the
// source's time under "wait" (every event recorded); a write failure is named and counted.
// The slow disk is a writer hook held closed by the test, so nothing depends on timing.
#include <QtTest>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "core/detector.hpp"
#include "core/error.hpp"
#include "exec/engine.hpp"
#include "replay/hdf5_event_file.hpp"
#include "replay/recorder.hpp"
#include "replay/replay_source.hpp"

using namespace livedrp;
namespace fs = std::filesystem;

namespace {

// A small float32 detector: events of 64 KiB, each filled with its own index.
DetectorDescription small_detector() {
  DetectorDescription d = find_detector("generic_f32");
  d.name = "recorder_test_f32";
  d.segments = 1;
  d.rows = 128;
  d.cols = 128;
  d.asic_rows = 128;
  d.asic_cols = 128;
  return d;
}

std::vector<float> event_of(const DetectorDescription& d, std::uint64_t index) {
  return std::vector<float>(std::size_t(d.segments) * d.rows * d.cols, float(index) + 0.5f);
}

// Holds the writer before each write until opened; says when the writer is waiting.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int waiting = 0;
  void pass() {
    std::unique_lock lock(mutex);
    ++waiting;
    changed.notify_all();
    changed.wait(lock, [this] { return open; });
    --waiting;
  }
  void wait_for_writer() {
    std::unique_lock lock(mutex);
    changed.wait(lock, [this] { return waiting > 0; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};

// Opens the gate when a test leaves early (a failed comparison), so the writer can finish.
struct OpenOnExit {
  Gate& gate;
  ~OpenOnExit() { gate.release(); }
};

// The pulse ids a directory's recording replays, in order, each event's bytes checked.
std::vector<std::uint64_t> replayed_pulse_ids(const fs::path& directory,
                                              const DetectorDescription& d) {
  const auto spec = replay::parse_replay_source("replay:" + directory.string());
  replay::ReplayOptions options;
  options.files = spec.files;
  options.readers = 2;
  replay::ReplaySource source(options);
  std::vector<std::uint64_t> ids;
  replay::ReplayEvent event;
  while (source.acquire(event)) {
    if (!event.data) throw RuntimeFault(event.error);
    const auto expected = event_of(d, event.pulse_id - 1000);
    if (std::memcmp(event.data, expected.data(), expected.size() * sizeof(float)) != 0)
      throw RuntimeFault("event " + std::to_string(event.index) +
                         " differs from what was recorded");
    ids.push_back(event.pulse_id);
    source.release();
  }
  return ids;
}

EventHeader header_of(std::uint64_t i) {
  return EventHeader{i, 1000 + i, std::int64_t(i) * 1000};
}

}  // namespace

// A short CPU run of `source` that publishes nothing: two simulated events cycled, the ring
// waited for (nothing dropped before the recorder).
EngineConfig small_engine_config(const std::string& source, std::uint64_t events) {
  EngineConfig c;
  c.source = source;
  c.backend = "cpu";
  c.publish = "";
  c.simulator_pool = 2;
  c.cpu_threads = 2;
  c.full_ring = "wait";
  c.events = events;
  return c;
}

class TestReplayRecorder : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  fs::path path(const char* name) const { return fs::path(dir_.path().toStdString()) / name; }

 private slots:
  // A second recording of the same run into the same directory is refused naming the file, and
  // the first recording stays as it was.
  void a_recording_is_never_overwritten() {
    const DetectorDescription d = small_detector();
    replay::RecordOptions options;
    options.directory = path("twice");
    options.run = 7;
    {
      replay::Recorder first(options, d, "{}");
      for (std::uint64_t i = 0; i < 3; ++i)
        QVERIFY(first.record(header_of(i), event_of(d, i).data()));
      first.close();
    }
    try {
      replay::Recorder second(options, d, "{}");
      QFAIL("a second recording of run 7 was opened over the first");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("run0007-000.h5") &&
                   QString(e.what()).contains("not overwritten"),
               e.what());
    }
    QCOMPARE(replayed_pulse_ids(options.directory, d),
             (std::vector<std::uint64_t>{1000, 1001, 1002}));
  }

  // Queue of 2, writer held at event 0: events 1 and 2 queue, 3..9 are dropped and counted;
  // what was accepted is on disk, in order, bit-identical.
  void a_full_queue_under_drop_counts_the_dropped_events() {
    const DetectorDescription d = small_detector();
    Gate gate;
    replay::RecordOptions options;
    options.directory = path("dropping");
    options.queue_events = 2;
    options.when_full = replay::RecordWhenFull::Drop;
    options.before_write = [&](std::uint64_t) { gate.pass(); };
    replay::Recorder recorder(options, d, "{}");
    OpenOnExit open_on_exit{gate};
    QVERIFY(recorder.record(header_of(0), event_of(d, 0).data()));
    gate.wait_for_writer();  // event 0 is out of the queue, held at the disk
    int accepted = 0;
    for (std::uint64_t i = 1; i < 10; ++i)
      accepted += recorder.record(header_of(i), event_of(d, i).data());
    QCOMPARE(accepted, 2);
    QCOMPARE(recorder.dropped(), std::uint64_t(7));
    QCOMPARE(recorder.queued(), std::size_t(2));
    gate.release();
    recorder.close();
    QCOMPARE(recorder.events(), std::uint64_t(3));
    QCOMPARE(recorder.events() + recorder.dropped(), std::uint64_t(10));
    QCOMPARE(replayed_pulse_ids(options.directory, d),
             (std::vector<std::uint64_t>{1000, 1001, 1002}));
  }

  // Queue of 2, writer held: the source blocks in its fourth record() (back-pressure) and
  // nothing is dropped; opened, every event is recorded in order.
  void a_full_queue_under_wait_records_every_event() {
    const DetectorDescription d = small_detector();
    Gate gate;
    replay::RecordOptions options;
    options.directory = path("waiting");
    options.queue_events = 2;
    options.when_full = replay::RecordWhenFull::Wait;
    options.before_write = [&](std::uint64_t) { gate.pass(); };
    replay::Recorder recorder(options, d, "{}");
    std::atomic<int> returned{0};
    struct JoinOnExit {
      Gate& gate;
      std::thread& thread;
      ~JoinOnExit() {
        gate.release();
        if (thread.joinable()) thread.join();
      }
    };
    std::thread source([&] {
      for (std::uint64_t i = 0; i < 10; ++i) {
        recorder.record(header_of(i), event_of(d, i).data());
        ++returned;
      }
    });
    JoinOnExit join_on_exit{gate, source};
    gate.wait_for_writer();
    QTRY_COMPARE(recorder.queued(), std::size_t(2));
    // Event 0 at the disk, 1 and 2 queued: the source is held in record(3) while the gate is
    // shut, so it cannot have returned more than three times.
    QTRY_COMPARE(returned.load(), 3);
    QCOMPARE(recorder.dropped(), std::uint64_t(0));
    gate.release();
    source.join();
    recorder.close();
    QCOMPARE(returned.load(), 10);
    QCOMPARE(recorder.events(), std::uint64_t(10));
    QCOMPARE(recorder.dropped(), std::uint64_t(0));
    std::vector<std::uint64_t> expected;
    for (std::uint64_t i = 0; i < 10; ++i) expected.push_back(1000 + i);
    QCOMPARE(replayed_pulse_ids(options.directory, d), expected);
  }

  // A write that fails (the disk full, here a hook that throws at the second event): close()
  // names the failure, the failed event is counted as failed, the first stays on disk.
  void a_write_failure_is_named_and_counted() {
    const DetectorDescription d = small_detector();
    replay::RecordOptions options;
    options.directory = path("failing");
    options.when_full = replay::RecordWhenFull::Wait;
    options.before_write = [](std::uint64_t written) {
      if (written == 1) throw RuntimeFault("no space left on device (test)");
    };
    replay::Recorder recorder(options, d, "{}");
    QVERIFY(recorder.record(header_of(0), event_of(d, 0).data()));
    QVERIFY(recorder.record(header_of(1), event_of(d, 1).data()));
    try {
      recorder.close();
      QFAIL("close() hid the write failure");
    } catch (const RuntimeFault& e) {
      QVERIFY2(QString(e.what()).contains("no space left on device (test)"), e.what());
    }
    QCOMPARE(recorder.events(), std::uint64_t(1));
    QCOMPARE(recorder.dropped(), std::uint64_t(0));  // not a full queue...
    QCOMPARE(recorder.failed(), std::uint64_t(1));   // ...a failed write
    QVERIFY(QString::fromStdString(recorder.error()).contains("no space left on device (test)"));
    QCOMPARE(replayed_pulse_ids(options.directory, d), (std::vector<std::uint64_t>{1000}));
  }

  // Through the engine: whatever the disk does, recorded + dropped = events that entered, the
  // files hold exactly the recorded ones, and the status says how many were dropped.
  void the_engine_accounts_for_every_event_it_records() {
    EngineConfig c = small_engine_config("sim:epix10ka2m", 12);
    c.record.directory = path("engine").string();
    c.record.queue_events = 1;
    c.record.when_full = "drop";
    Engine engine(c);
    engine.start();
    engine.wait();
    const RunSummary s = engine.summary();
    QVERIFY2(s.error.empty(), s.error.c_str());
    const RecordStatus status = engine.record_status();
    QVERIFY(status.active);
    QCOMPARE(status.events + status.dropped, std::uint64_t(12));
    QVERIFY(status.events >= 1);
    const auto spec = replay::parse_replay_source("replay:" + c.record.directory);
    replay::ReplayOptions options;
    options.files = spec.files;
    replay::ReplaySource source(options);
    QCOMPARE(source.total_events(), status.events);
  }

  // record.codec through the engine: the same simulated events recorded plain and with the
  // lossless codec read back word for word the same, and the codec's files are smaller.
  void the_engine_records_with_the_codec_and_every_word_comes_back() {
    const DetectorDescription d = find_detector("jungfrau4m");
    std::vector<std::vector<std::uint8_t>> recorded[2];
    std::uintmax_t bytes[2] = {0, 0};
    for (int with_codec = 0; with_codec < 2; ++with_codec) {
      EngineConfig c = small_engine_config("sim:jungfrau4m", 4);
      c.record.directory = path(with_codec ? "codec" : "plain").string();
      c.record.when_full = "wait";
      if (with_codec) c.record.codec = "lossless";
      Engine engine(c);
      engine.start();
      engine.wait();
      const RunSummary s = engine.summary();
      QVERIFY2(s.error.empty(), s.error.c_str());
      const RecordStatus status = engine.record_status();
      QCOMPARE(status.events, std::uint64_t(4));
      for (const std::string& file : status.files) {
        bytes[with_codec] += std::filesystem::file_size(file);
        replay::Hdf5EventReader reader(file, replay::kDefaultDataset, d);
        for (std::uint64_t e = 0; e < reader.events(); ++e) {
          std::vector<std::uint8_t> raw(d.raw_event_bytes());
          std::uint64_t pulse = 0;
          std::int64_t time = 0;
          reader.read(e, raw.data(), pulse, time);
          recorded[with_codec].push_back(std::move(raw));
        }
      }
    }
    QCOMPARE(recorded[1].size(), std::size_t(4));
    QVERIFY(recorded[0] == recorded[1]);
    QVERIFY2(bytes[1] < bytes[0],
             qPrintable(QString("codec %1 B, plain %2 B").arg(bytes[1]).arg(bytes[0])));
  }

  void the_record_codec_is_validated() {
    const auto refused = [](const nlohmann::json& json) -> QString {
      try {
        EngineConfig::from_json(json, "test.json");
      } catch (const InputError& e) {
        return e.what();
      }
      return {};
    };
    QString error = refused({{"record", {{"codec", "zip"}}}});
    QVERIFY2(error.contains("record.codec") && error.contains("lossless"), qPrintable(error));
    error = refused({{"record", {{"codec", "lossy"}}}});
    QVERIFY2(error.contains("record.error_bound"), qPrintable(error));
    // The bounds in JSON's spelling, not 31 digits and six decimals.
    error = refused({{"record", {{"codec", "lossy"}, {"error_bound", -1}}}});
    QVERIFY2(error.contains("record.error_bound") && error.contains("[0.0, 1e+30]"),
             qPrintable(error));
    error = refused({{"record", {{"codec", "lossless"}, {"deflate", 4}}}});
    QVERIFY2(error.contains("record.codec") && error.contains("deflate"), qPrintable(error));
    // Lossy needs float32 detector words: the engine refuses it for Jungfrau's uint16, naming it.
    EngineConfig c;
    c.source = "sim:jungfrau4m";
    c.backend = "cpu";
    c.publish = "";
    c.record.directory = path("lossy_uint16").string();
    c.record.codec = "lossy";
    c.record.error_bound = 0.5;
    try {
      Engine engine(c);
      QFAIL("lossy recording of uint16 words was accepted");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("lossy") || QString(e.what()).contains("float32"),
               e.what());
    }
    EngineConfig round;
    round.record.codec = "lossy";
    round.record.error_bound = 0.25;
    const EngineConfig back = EngineConfig::from_json(round.to_json(), "round trip");
    QCOMPARE(back.record.codec, std::string("lossy"));
    QCOMPARE(back.record.error_bound, 0.25);
  }

  void recording_and_reader_options_are_validated() {
    nlohmann::json json = {{"record", {{"directory", "/tmp/r"}, {"when_full", "sometimes"}}}};
    try {
      EngineConfig::from_json(json, "test.json");
      QFAIL("accepted when_full 'sometimes'");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("when_full"), e.what());
    }
    json = {{"record", {{"queue_events", 0}}}};
    QVERIFY_THROWS_EXCEPTION(InputError, EngineConfig::from_json(json, "test.json"));
    json = {{"source", "replay:/tmp/x.h5"}, {"replay", {{"readers", -1}}}};
    QVERIFY_THROWS_EXCEPTION(InputError, EngineConfig::from_json(json, "test.json"));
    EngineConfig c;
    c.replay.readers = 3;
    c.record.when_full = "wait";
    c.record.queue_events = 4;
    const EngineConfig back = EngineConfig::from_json(c.to_json(), "round trip");
    QCOMPARE(back.replay.readers, 3);
    QCOMPARE(back.record.when_full, std::string("wait"));
    QCOMPARE(back.record.queue_events, 4);
    QCOMPARE(EngineConfig{}.record.when_full, std::string("auto"));
  }
};

QTEST_GUILESS_MAIN(TestReplayRecorder)
#include "test_replay_recorder.moc"
