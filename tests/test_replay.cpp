// Replay and recording (docs/formats.md, "Recorded events"): simulator events written to HDF5 in
// every supported layout and element type come back bit-identical, with their pulse ids and in
// order; the engine's recording of a simulator run replays to the same processed results; seek,
// loop, step and pause land where they should; bad files are refused naming file and dataset.
#include <QtTest>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <hdf5.h>
#include <nlohmann/json.hpp>

#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "exec/engine.hpp"
#include "exec/engine_controller.hpp"
#include "io/hdf5_array.hpp"
#include "replay/hdf5_event_file.hpp"
#include "replay/recorder.hpp"
#include "replay/replay_source.hpp"
#include "sim/simulator.hpp"

using namespace livedrp;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kEvents = 3;

// Simulator events of one detector, generated once per test process.
struct SimEvents {
  DetectorDescription detector;
  std::vector<std::vector<std::byte>> raw;
  std::vector<EventHeader> headers;
};

const SimEvents& sim_events(const std::string& name) {
  static std::map<std::string, SimEvents> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  SimEvents events;
  events.detector = find_detector(name);
  ThreadPool pool(2);
  DetectorSimulator simulator(events.detector, SimulatorConfig{}, &pool);
  for (std::uint64_t i = 0; i < kEvents; ++i) {
    events.raw.emplace_back(events.detector.raw_event_bytes());
    simulator.generate(i, events.raw.back().data(), nullptr, &pool);
    events.headers.push_back(simulator.header_for(i));
  }
  return cache.emplace(name, std::move(events)).first->second;
}

void write_events(const fs::path& path, const SimEvents& events, const replay::WriteLayout& layout,
                  std::uint64_t count = kEvents) {
  replay::Hdf5EventWriter writer(path, events.detector, layout, R"({"test":true})", count);
  for (std::uint64_t i = 0; i < count; ++i)
    writer.append(events.headers[i % kEvents], events.raw[i % kEvents].data());
  writer.close();
}

replay::ReplayOptions options_for(std::vector<fs::path> files,
                                  const std::string& dataset = replay::kDefaultDataset,
                                  std::size_t readers = 1) {
  replay::ReplayOptions options;
  options.files = std::move(files);
  options.dataset = dataset;
  options.prefetch_events = 2;
  options.readers = readers;
  return options;
}

// Reader counts every ordering test runs with: one, and several racing for the same events.
void add_readers_rows(const char* prefix = "") {
  for (int readers : {1, 3})
    QTest::newRow(qPrintable(QString("%1readers=%2").arg(prefix).arg(readers))) << readers;
}

// A dataset [events, segments * rows, cols] as another program might chunk and filter it:
// `chunk` dims, optional byte shuffle + deflate and Fletcher-32 checksum, big-endian or not.
void write_foreign_layout(const fs::path& path, const SimEvents& events,
                          const std::vector<hsize_t>& chunk, bool deflate, bool fletcher32,
                          bool big_endian) {
  const DetectorDescription& d = events.detector;
  const bool f32 = d.encoding == RawEncoding::Float32;
  const hid_t file = H5Fcreate(path.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dims[3] = {kEvents, hsize_t(d.segments) * hsize_t(d.rows), hsize_t(d.cols)};
  const hid_t space = H5Screate_simple(3, dims, nullptr);
  const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(create, 3, chunk.data());
  if (fletcher32) H5Pset_fletcher32(create);
  if (deflate) {
    H5Pset_shuffle(create);
    H5Pset_deflate(create, 3);
  }
  const hid_t file_type = f32 ? (big_endian ? H5T_IEEE_F32BE : H5T_IEEE_F32LE)
                              : (big_endian ? H5T_STD_U16BE : H5T_STD_U16LE);
  const hid_t set = H5Dcreate2(file, "/data", file_type, space, H5P_DEFAULT, create, H5P_DEFAULT);
  std::vector<std::byte> all;
  for (const auto& raw : events.raw) all.insert(all.end(), raw.begin(), raw.end());
  H5Dwrite(set, f32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT,
           all.data());
  H5Dclose(set);
  H5Pclose(create);
  H5Sclose(space);
  H5Fclose(file);
}

QString replay_error(const replay::ReplayOptions& options) {
  try {
    replay::ReplaySource source(options);
  } catch (const InputError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

EngineConfig cpu_config(const std::string& source) {
  EngineConfig c;
  c.source = source;
  c.backend = "cpu";
  c.publish = "";
  c.simulator_pool = 2;
  c.stats_interval_s = 0.05;
  c.cpu_threads = 2;
  c.full_ring = "wait";
  c.replay.pace = "flat_out";
  return c;
}

RunSummary run_to_end(Engine& engine) {
  engine.start();
  engine.wait();
  return engine.summary();
}

}  // namespace

class TestReplay : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  fs::path path(const char* name) const { return fs::path(dir_.path().toStdString()) / name; }

 private slots:
  void round_trip_is_bit_identical_data() {
    QTest::addColumn<QString>("detector");
    QTest::addColumn<bool>("stacked");
    QTest::addColumn<bool>("chunked");
    QTest::addColumn<int>("deflate");
    QTest::addColumn<int>("readers");
    for (const char* detector : {"epix10ka2m", "generic_f32"})  // uint16 raw, float32 calibrated
      for (bool stacked : {false, true})
        for (int storage : {0, 1, 2})  // contiguous, chunked, chunked + deflate
          for (int readers : {1, 3})
            QTest::newRow(qPrintable(QString("%1 %2 %3 readers=%4")
                                         .arg(detector)
                                         .arg(stacked ? "[N,rows,cols]" : "[N,seg,rows,cols]")
                                         .arg(storage == 0   ? "contiguous"
                                              : storage == 1 ? "chunked"
                                                             : "chunked+deflate")
                                         .arg(readers)))
                << QString(detector) << stacked << (storage > 0) << (storage == 2 ? 4 : 0)
                << readers;
  }
  // Every layout and element type, with one reader and with several: the bytes, pulse ids,
  // timestamps and order come back, read by pread (and zlib) rather than through the library.
  void round_trip_is_bit_identical() {
    QFETCH(QString, detector);
    QFETCH(bool, stacked);
    QFETCH(bool, chunked);
    QFETCH(int, deflate);
    QFETCH(int, readers);
    const SimEvents& events = sim_events(detector.toStdString());
    replay::WriteLayout layout;
    layout.dataset = "/entry_1/data_1/data";  // any path; CXI style here
    layout.stacked = stacked;
    layout.chunked = chunked;
    layout.deflate = deflate;
    const fs::path file = path("round_trip.h5");
    write_events(file, events, layout);

    const auto info = replay::Hdf5EventReader::inspect(file, layout.dataset);
    QCOMPARE(info.shape.size(), std::size_t(stacked ? 3 : 4));
    QCOMPARE(info.element_type, replay::element_type_of(events.detector.encoding));
    QCOMPARE(info.detector_name, events.detector.name);
    QCOMPARE(info.pipeline_config, std::string(R"({"test":true})"));

    replay::ReplaySource source(options_for({file}, layout.dataset, std::size_t(readers)));
    QCOMPARE(source.detector().name, events.detector.name);
    QCOMPARE(source.total_events(), kEvents);
    QCOMPARE(source.readers(), std::size_t(readers));
    QCOMPARE(source.read_path(),
             chunked ? replay::EventReadPath::Chunks : replay::EventReadPath::Contiguous);
    QVERIFY(source.has_timestamps());
    for (std::uint64_t i = 0; i < kEvents; ++i) {
      replay::ReplayEvent event;
      QVERIFY(source.acquire(event));
      QVERIFY2(event.error.empty(), event.error.c_str());
      QCOMPARE(event.index, i);
      QCOMPARE(event.pulse_id, events.headers[i].pulse_id);
      QCOMPARE(event.timestamp_ns, events.headers[i].timestamp_ns);
      QVERIFY(std::memcmp(event.data, events.raw[i].data(), events.raw[i].size()) == 0);
      source.release();
    }
    replay::ReplayEvent end;
    QVERIFY(!source.acquire(end));  // no loop: the end
  }

  void foreign_chunk_layouts_are_bit_identical_data() {
    QTest::addColumn<QString>("detector");
    QTest::addColumn<QVector<qulonglong>>("chunk");
    QTest::addColumn<bool>("deflate");
    QTest::addColumn<bool>("fletcher32");
    QTest::addColumn<bool>("big_endian");
    QTest::addColumn<int>("path");  // replay::EventReadPath expected
    const auto chunks = static_cast<int>(replay::EventReadPath::Chunks);
    const auto library = static_cast<int>(replay::EventReadPath::Library);
    // epix10ka2m: 16 x 352 rows of 384 columns, stacked to 5632 rows.
    QTest::newRow("one panel per chunk, deflate")
        << QString("epix10ka2m") << QVector<qulonglong>{1, 352, 384} << true << false << false
        << chunks;
    QTest::newRow("1000-row chunks (a partial edge chunk), deflate")
        << QString("epix10ka2m") << QVector<qulonglong>{1, 1000, 384} << true << false << false
        << chunks;
    QTest::newRow("1000-row chunks, no filter")
        << QString("epix10ka2m") << QVector<qulonglong>{1, 1000, 384} << false << false << false
        << chunks;
    QTest::newRow("float32 shuffle+deflate, 100-row chunks")
        << QString("generic_f32") << QVector<qulonglong>{1, 100, 1024} << true << false << false
        << chunks;
    QTest::newRow("Fletcher-32: the library")
        << QString("epix10ka2m") << QVector<qulonglong>{1, 5632, 384} << false << true << false
        << library;
    QTest::newRow("two events per chunk: the library")
        << QString("epix10ka2m") << QVector<qulonglong>{2, 5632, 384} << true << false << false
        << library;
    QTest::newRow("big-endian: the library")
        << QString("generic_f32") << QVector<qulonglong>{1, 1024, 1024} << false << false << true
        << library;
  }
  // Files of other programs, chunked their way: three readers give the same bytes in order,
  // through pread and zlib where the chunks are whole rows of one event, else the library.
  void foreign_chunk_layouts_are_bit_identical() {
    QFETCH(QString, detector);
    QFETCH(QVector<qulonglong>, chunk);
    QFETCH(bool, deflate);
    QFETCH(bool, fletcher32);
    QFETCH(bool, big_endian);
    QFETCH(int, path);
    const SimEvents& events = sim_events(detector.toStdString());
    const fs::path file = this->path("foreign.h5");
    write_foreign_layout(file, events, std::vector<hsize_t>(chunk.begin(), chunk.end()), deflate,
                         fletcher32, big_endian);
    replay::ReplaySource source(options_for({file}, "/data", 3));
    QCOMPARE(static_cast<int>(source.read_path()), path);
    for (std::uint64_t i = 0; i < kEvents; ++i) {
      replay::ReplayEvent event;
      QVERIFY(source.acquire(event));
      QVERIFY2(event.error.empty(), event.error.c_str());
      QCOMPARE(event.index, i);
      QCOMPARE(event.pulse_id, i);  // no pulse_id dataset: the index
      QVERIFY(std::memcmp(event.data, events.raw[i].data(), events.raw[i].size()) == 0);
      source.release();
    }
    replay::ReplayEvent end;
    QVERIFY(!source.acquire(end));
  }

  // The engine hands a read buffer to the ring instead of copying it: the buffers come from the
  // allocator given, and an exchanged one is the caller's, the source keeping the replacement.
  void a_read_buffer_is_handed_over_without_a_copy() {
    const SimEvents& events = sim_events("generic_f32");
    const fs::path file = path("handover.h5");
    write_events(file, events, {});
    // Declared before the source: its destructor frees through the counting allocator.
    std::atomic<int> allocated{0}, freed{0};
    replay::ReplaySource source(options_for({file}, replay::kDefaultDataset, 2));
    const std::size_t bytes = events.detector.raw_event_bytes();
    source.set_buffer_allocator(
        [&](std::size_t n) {
          ++allocated;
          return ::operator new(n);
        },
        [&](void* p) {
          ++freed;
          ::operator delete(p);
        });
    std::vector<void*> taken;
    for (std::uint64_t i = 0; i < kEvents; ++i) {
      replay::ReplayEvent event;
      QVERIFY(source.acquire(event));
      void* replacement = ::operator new(bytes);
      void* buffer = source.exchange_acquired_buffer(replacement);
      QCOMPARE(buffer, static_cast<void*>(const_cast<std::byte*>(event.data)));
      QVERIFY(std::memcmp(buffer, events.raw[i].data(), bytes) == 0);  // read in place
      taken.push_back(buffer);
      source.release();
    }
    QVERIFY(allocated.load() >= 2);  // prefetch_events, at least one per reader
    QVERIFY_THROWS_EXCEPTION(RuntimeFault, source.set_buffer_allocator(nullptr, nullptr));
    for (void* p : taken) ::operator delete(p);
  }

  // A file of another program: no attributes and no pulse ids; the detector is found by shape
  // and element type, pulse ids fall back to the event index.
  void a_bare_dataset_replays_with_index_pulse_ids() {
    const SimEvents& events = sim_events("generic_f32");
    io::Array array;
    array.type = io::ElementType::Float32;
    array.shape = {2, 1024, 1024};
    for (int i = 0; i < 2; ++i)
      array.bytes.insert(
          array.bytes.end(), reinterpret_cast<const std::uint8_t*>(events.raw[i].data()),
          reinterpret_cast<const std::uint8_t*>(events.raw[i].data()) + events.raw[i].size());
    const fs::path file = path("bare.h5");
    io::write_hdf5_dataset(file, "/data", array);
    replay::ReplaySource source(options_for({file}, "/data"));
    QCOMPARE(source.detector().name, std::string("generic_f32"));
    QVERIFY(!source.has_timestamps());
    replay::ReplayEvent event;
    QVERIFY(source.acquire(event));
    source.release();
    QVERIFY(source.acquire(event));
    QCOMPARE(event.pulse_id, std::uint64_t(1));
    QVERIFY(std::memcmp(event.data, events.raw[1].data(), events.raw[1].size()) == 0);
    source.release();
  }

  void seek_and_loop_land_on_the_right_events_data() {
    QTest::addColumn<int>("readers");
    add_readers_rows();
  }
  void seek_and_loop_land_on_the_right_events() {
    QFETCH(int, readers);
    const SimEvents& events = sim_events("generic_f32");
    const fs::path a = path("part_a.h5"), b = path("part_b.h5");
    write_events(a, events, {}, 2);  // events 0, 1
    {
      replay::Hdf5EventWriter writer(b, events.detector, {}, "{}");
      writer.append(events.headers[2], events.raw[2].data());
      writer.close();
    }
    auto options = options_for({a, b}, replay::kDefaultDataset, std::size_t(readers));
    options.loop = true;
    replay::ReplaySource source(options);
    QCOMPARE(source.total_events(), std::uint64_t(3));
    const std::vector<std::uint64_t> expected{0, 1, 2, 0, 1, 2, 0};
    for (std::size_t k = 0; k < expected.size(); ++k) {
      replay::ReplayEvent event;
      QVERIFY(source.acquire(event));
      QCOMPARE(event.index, expected[k]);
      QCOMPARE(event.pulse_id, events.headers[expected[k]].pulse_id);
      QVERIFY(std::memcmp(event.data, events.raw[expected[k]].data(), events.raw[0].size()) == 0);
      source.release();
    }
    QCOMPARE(source.loops(), std::uint64_t(2));
    source.seek(2);  // across the file boundary
    replay::ReplayEvent event;
    QVERIFY(source.acquire(event));
    QCOMPARE(event.index, std::uint64_t(2));
    QCOMPARE(event.pulse_id, events.headers[2].pulse_id);
    source.release();
    source.seek(1);
    QVERIFY(source.acquire(event));
    QCOMPARE(event.index, std::uint64_t(1));
    QVERIFY(std::memcmp(event.data, events.raw[1].data(), events.raw[1].size()) == 0);
    source.release();
  }

  // The engine records a simulator run (rolling over files), the files replay bit-identically,
  // and the engine over the replay gives the same processed results as over the simulator.
  void engine_recording_replays_to_the_same_results() {
    const fs::path record_dir = path("recorded");
    EngineConfig sim = cpu_config("sim:epix10ka2m");
    sim.events = 6;
    sim.compression.codec = "lossy";  // its output size depends on every calibrated pixel
    sim.compression.error_bound = 0.5;
    sim.record.directory = record_dir.string();
    // Two 4.3 MB events per file: the third would pass 10 MB.
    sim.record.max_file_bytes = 10'000'000;  // uncompressed, so the sizes are known
    Engine recording(sim);
    const RunSummary recorded = run_to_end(recording);
    QVERIFY2(recorded.error.empty(), recorded.error.c_str());
    QCOMPARE(recorded.stats.events_processed, std::uint64_t(6));
    const RecordStatus record = recording.record_status();
    QCOMPARE(record.events, std::uint64_t(6));
    QCOMPARE(record.files.size(), std::size_t(3));
    for (const auto& file : record.files) QVERIFY(fs::file_size(file) <= 10'000'000);

    // The raw data is the simulator's pool cycled (pool_events = 2), with its pulse ids.
    const SimEvents& events = sim_events("epix10ka2m");
    const auto spec = replay::parse_replay_source("replay:" + record_dir.string());
    QCOMPARE(spec.files.size(), std::size_t(3));
    replay::ReplaySource source(options_for(spec.files));
    QCOMPARE(source.total_events(), std::uint64_t(6));
    const auto config_json = nlohmann::json::parse(source.files()[0].pipeline_config);
    QCOMPARE(config_json.at("source").get<std::string>(), std::string("sim:epix10ka2m"));
    std::int64_t previous_time = 0;
    for (std::uint64_t i = 0; i < 6; ++i) {
      replay::ReplayEvent event;
      QVERIFY(source.acquire(event));
      QCOMPARE(event.pulse_id, events.headers[i % kEvents].pulse_id + (i / kEvents) * kEvents * 3);
      QVERIFY(std::memcmp(event.data, events.raw[i % 2].data(), events.raw[0].size()) == 0);
      QVERIFY(event.timestamp_ns >= previous_time);  // admission times, in order
      previous_time = event.timestamp_ns;
      source.release();
    }

    EngineConfig replayed = cpu_config("replay:" + record_dir.string());
    replayed.compression = sim.compression;
    Engine replaying(replayed);
    const RunSummary again = run_to_end(replaying);
    QVERIFY2(again.error.empty(), again.error.c_str());
    QCOMPARE(again.stats.events_in, std::uint64_t(6));
    QCOMPARE(again.stats.events_processed, std::uint64_t(6));
    QCOMPARE(again.stats.order_errors, std::uint64_t(0));
    QVERIFY(recorded.stats.compression && again.stats.compression);
    QCOMPARE(again.stats.compression->total_bytes_in, recorded.stats.compression->total_bytes_in);
    QCOMPARE(again.stats.compression->total_bytes_out, recorded.stats.compression->total_bytes_out);
    const ReplayStatus status = replaying.replay_status();
    QCOMPARE(status.handed, std::uint64_t(6));
    QCOMPARE(status.position, std::uint64_t(5));
    QCOMPARE(status.pace, std::string("flat_out"));
    QVERIFY(status.limited_by == "disk" || status.limited_by == "pipeline");
  }

  // Real detectors' replays take their calibration constants from an HDF5 constants file: the
  // recording of a simulator run, replayed with the simulator's constants saved to a file, gives
  // the run's own results (lossy output bytes depend on every calibrated pixel); other constants
  // in the file give other results.
  void a_replay_calibrates_with_the_constants_file_given() {
    const fs::path record_dir = path("recorded_for_constants");
    EngineConfig sim = cpu_config("sim:epix10ka2m");
    sim.events = 4;
    sim.compression.codec = "lossy";
    sim.compression.error_bound = 0.5;
    sim.record.directory = record_dir.string();
    Engine recording(sim);
    const RunSummary recorded = run_to_end(recording);
    QVERIFY2(recorded.error.empty(), recorded.error.c_str());
    QVERIFY(recorded.stats.compression);

    const DetectorDescription detector = find_detector("epix10ka2m");
    ThreadPool pool(2);
    SimulatorConfig simulator_config;
    simulator_config.seed = sim.seed;
    simulator_config.hit_fraction = sim.hit_fraction;
    const DetectorSimulator simulator(detector, simulator_config, &pool);
    const fs::path same = path("simulator_constants.h5"), other = path("identity_constants.h5");
    save_constants_hdf5(same, detector, simulator.constants());
    save_constants_hdf5(other, detector, identity_constants(detector));

    auto replay_with = [&](const fs::path& constants) {
      EngineConfig c = cpu_config("replay:" + record_dir.string());
      c.compression = sim.compression;
      c.constants_file = constants.string();
      c.replay.readers = 3;
      Engine engine(c);
      const RunSummary s = run_to_end(engine);
      if (!s.error.empty()) throw RuntimeFault(s.error);
      if (s.stats.events_processed != 4 || !s.stats.compression)
        throw RuntimeFault("replay processed " + std::to_string(s.stats.events_processed));
      return s.stats.compression->total_bytes_out;
    };
    QCOMPARE(replay_with(same), recorded.stats.compression->total_bytes_out);
    QVERIFY(replay_with(other) != recorded.stats.compression->total_bytes_out);
  }

  // Paused before start, events enter one step at a time; a step back re-sends the previous
  // event; a seek then resume runs from there to the end.
  void pause_step_and_seek_drive_the_engine() {
    const SimEvents& events = sim_events("generic_f32");
    const fs::path file = path("steps.h5");
    write_events(file, events, {}, 5);
    Engine engine(cpu_config("replay:" + file.string()));
    engine.pause();
    engine.start();
    QTest::qWait(200);
    QCOMPARE(engine.summary().stats.events_in, std::uint64_t(0));  // pause stops the flow
    auto wait_for_in = [&](std::uint64_t n) {
      QTRY_COMPARE_WITH_TIMEOUT(engine.summary().stats.events_in, n, 5000);
    };
    engine.step(1);
    wait_for_in(1);
    QCOMPARE(engine.replay_status().position, std::uint64_t(0));
    engine.step(1);
    wait_for_in(2);
    QCOMPARE(engine.replay_status().position, std::uint64_t(1));
    engine.step(-1);
    wait_for_in(3);
    QCOMPARE(engine.replay_status().position, std::uint64_t(0));
    QTest::qWait(100);
    QCOMPARE(engine.summary().stats.events_in, std::uint64_t(3));  // one event per step
    QVERIFY(engine.replay_status().paused);
    QVERIFY_THROWS_EXCEPTION(InputError, engine.seek(5));
    engine.seek(3);
    engine.resume();
    engine.wait();
    const RunSummary s = engine.summary();
    QVERIFY2(s.error.empty(), s.error.c_str());
    QCOMPARE(s.stats.events_in, std::uint64_t(5));  // 3 steps, then events 3 and 4
    QCOMPARE(s.stats.events_processed, std::uint64_t(5));
    QCOMPARE(s.stats.order_errors, std::uint64_t(0));
    QCOMPARE(engine.replay_status().position, std::uint64_t(4));
  }

  void pause_holds_a_looping_replay() {
    const SimEvents& events = sim_events("generic_f32");
    const fs::path file = path("loop.h5");
    write_events(file, events, {}, 2);
    EngineConfig c = cpu_config("replay:" + file.string());
    c.replay.loop = true;
    c.ring_slots = 2;  // an event already waiting for a slot when the pause comes enters soon
    Engine engine(c);
    engine.start();
    QTRY_VERIFY_WITH_TIMEOUT(engine.summary().stats.events_processed >= 4, 10000);
    QVERIFY(engine.replay_status().loops >= 1);
    engine.pause();
    QTest::qWait(300);  // an event acquired before the pause may still enter
    const std::uint64_t held = engine.summary().stats.events_in;
    QTest::qWait(300);
    QCOMPARE(engine.summary().stats.events_in, held);
    engine.resume();
    QTRY_VERIFY_WITH_TIMEOUT(engine.summary().stats.events_in > held + 2, 10000);
    engine.request_stop();
    engine.wait();
    const auto s = engine.summary().stats;
    QCOMPARE(s.events_processed + s.events_dropped, s.events_in);
  }

  // The controller (what the GUI and the control socket drive) forwards the controls; paused at
  // the end of a file the run stays, so a step back still works.
  void the_controller_forwards_replay_controls() {
    const SimEvents& events = sim_events("generic_f32");
    const fs::path file = path("controlled.h5");
    write_events(file, events, {}, 2);
    EngineController controller(cpu_config("replay:" + file.string()));
    controller.pause();
    controller.start();
    controller.step(1);
    QTRY_COMPARE_WITH_TIMEOUT(controller.summary().stats.events_in, std::uint64_t(1), 5000);
    controller.step(1);
    QTRY_COMPARE_WITH_TIMEOUT(controller.replay_status().position, std::uint64_t(1), 5000);
    controller.step(1);  // past the end while paused: nothing more, the run stays
    QTest::qWait(200);
    QCOMPARE(controller.state(), std::string("running"));
    controller.step(-1);
    QTRY_COMPARE_WITH_TIMEOUT(controller.summary().stats.events_in, std::uint64_t(3), 5000);
    QCOMPARE(controller.replay_status().position, std::uint64_t(0));
    controller.resume();  // event 1, then the end
    QTRY_COMPARE_WITH_TIMEOUT(controller.state(), std::string("finished"), 5000);
    QCOMPARE(controller.summary().stats.events_processed, std::uint64_t(4));
  }

  // Pace "recorded": the gaps between the timestamps are kept (here 100 ms), "rate" and
  // "flat_out" ignore them.
  void recorded_pace_follows_the_timestamps() {
    const SimEvents& events = sim_events("generic_f32");
    const fs::path file = path("paced.h5");
    {
      replay::Hdf5EventWriter writer(file, events.detector, {}, "{}");
      for (std::int64_t i = 0; i < 4; ++i) {
        EventHeader header{std::uint64_t(i), std::uint64_t(100 + i),
                           1'000'000'000 + i * 100'000'000};
        writer.append(header, events.raw[0].data());
      }
    }
    EngineConfig c = cpu_config("replay:" + file.string());
    c.replay.pace = "recorded";
    Engine paced(c);
    const auto start = std::chrono::steady_clock::now();
    QVERIFY(run_to_end(paced).error.empty());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    QVERIFY2(seconds >= 0.29, qPrintable(QString::number(seconds)));
    QCOMPARE(paced.replay_status().pace, std::string("recorded"));
    QCOMPARE(paced.replay_status().limited_by, std::string("pacing"));
    c.replay.pace = "flat_out";
    Engine flat(c);
    QVERIFY(run_to_end(flat).error.empty());
    QCOMPARE(flat.summary().stats.events_processed, std::uint64_t(4));
  }

  void sim_sources_have_no_replay_controls() {
    EngineConfig c = cpu_config("sim:generic_f32");
    Engine engine(c);
    QVERIFY_THROWS_EXCEPTION(InputError, engine.pause());
    QVERIFY(!engine.replay_status().active);
  }

  // -------------------------------------------------------------- bad files

  void a_missing_or_foreign_file_is_named() {
    QString error = replay_error(options_for({path("nowhere.h5")}));
    QVERIFY2(error.contains("nowhere.h5") && error.contains("does not exist"), qPrintable(error));
    const fs::path text = path("text.h5");
    std::ofstream(text) << "not HDF5 at all\n";
    error = replay_error(options_for({text}));
    QVERIFY2(error.contains("text.h5") && error.contains("not an HDF5 file"), qPrintable(error));
  }

  void a_truncated_file_is_refused() {
    const SimEvents& events = sim_events("generic_f32");
    const fs::path whole = path("whole.h5"), cut = path("truncated.h5");
    write_events(whole, events, {});
    fs::copy_file(whole, cut, fs::copy_options::overwrite_existing);
    fs::resize_file(cut, fs::file_size(whole) / 2);
    const QString error = replay_error(options_for({cut}));
    QVERIFY2(error.contains("truncated.h5"), qPrintable(error));
    QVERIFY2(error.contains("damaged or truncated"), qPrintable(error));
  }

  // A run (a list of files) with a truncated and a missing file in it: those two are left out,
  // each named with its reason, and the others replay in full and in order; a list of which no
  // file can be read is refused, naming every file.
  void a_bad_file_in_a_list_is_left_out_and_the_rest_replays() {
    const SimEvents& events = sim_events("generic_f32");
    const fs::path first = path("run_a.h5"), cut = path("run_b.h5"), missing = path("run_c.h5"),
                   last = path("run_d.h5");
    write_events(first, events, {});
    write_events(last, events, {});
    fs::copy_file(first, cut, fs::copy_options::overwrite_existing);
    fs::resize_file(cut, fs::file_size(first) / 2);
    EngineConfig c = cpu_config("replay:" + first.string() + "," + cut.string() + "," +
                                missing.string() + "," + last.string());
    Engine engine(c);
    const RunSummary summary = run_to_end(engine);
    QVERIFY2(summary.error.empty(), summary.error.c_str());
    QCOMPARE(summary.stats.events_processed, std::uint64_t(2 * kEvents));
    QCOMPARE(summary.stats.events_dropped, std::uint64_t(0));
    QCOMPARE(summary.stats.order_errors, std::uint64_t(0));
    const ReplayStatus status = engine.replay_status();
    QCOMPARE(status.total_events, std::uint64_t(2 * kEvents));
    QCOMPARE(status.skipped_files.size(), std::size_t(2));
    const QString truncated = QString::fromStdString(status.skipped_files[0]);
    const QString absent = QString::fromStdString(status.skipped_files[1]);
    QVERIFY2(truncated.contains("run_b.h5") && truncated.contains("damaged or truncated"),
             qPrintable(truncated));
    QVERIFY2(absent.contains("run_c.h5") && absent.contains("does not exist"), qPrintable(absent));

    const QString error = replay_error(options_for({cut, missing}));
    QVERIFY2(error.contains("none of the 2 files") && error.contains("run_b.h5") &&
                 error.contains("run_c.h5"),
             qPrintable(error));
  }

  // One damaged compressed chunk costs that event only: it is counted as dropped (read_error)
  // and the rest of the run goes on.
  void a_damaged_chunk_drops_one_event_and_the_run_goes_on_data() {
    QTest::addColumn<int>("readers");
    add_readers_rows();
  }
  void a_damaged_chunk_drops_one_event_and_the_run_goes_on() {
    QFETCH(int, readers);
    const SimEvents& events = sim_events("generic_f32");
    const fs::path file = path("damaged.h5");
    replay::WriteLayout layout;
    layout.deflate = 1;
    write_events(file, events, layout);
    haddr_t address = 0;
    hsize_t size = 0;
    {
      const hid_t h = H5Fopen(file.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      const hid_t set = H5Dopen2(h, replay::kDefaultDataset, H5P_DEFAULT);
      const hid_t space = H5Dget_space(set);
      hsize_t offset[4];
      unsigned mask = 0;
      QVERIFY(H5Dget_chunk_info(set, space, 1, offset, &mask, &address, &size) >= 0);
      QCOMPARE(offset[0], hsize_t(1));
      H5Sclose(space);
      H5Dclose(set);
      H5Fclose(h);
    }
    {
      std::fstream out(file, std::ios::in | std::ios::out | std::ios::binary);
      out.seekp(std::streamoff(address + size / 2));
      const std::string garbage(64, '\x5a');
      out.write(garbage.data(), std::streamsize(garbage.size()));
    }
    {  // the error names the file, the dataset and the event; its neighbours are intact
      replay::ReplaySource source(
          options_for({file}, replay::kDefaultDataset, std::size_t(readers)));
      for (std::uint64_t i = 0; i < kEvents; ++i) {
        replay::ReplayEvent event;
        QVERIFY(source.acquire(event));
        QCOMPARE(event.index, i);
        if (i == 1) {
          const QString error = QString::fromStdString(event.error);
          QVERIFY(!event.data);
          QVERIFY2(error.contains("damaged.h5") && error.contains(replay::kDefaultDataset) &&
                       error.contains("event 1") && error.contains("deflate"),
                   qPrintable(error));
        } else {
          QVERIFY2(event.error.empty(), event.error.c_str());
          QVERIFY(std::memcmp(event.data, events.raw[i].data(), events.raw[i].size()) == 0);
        }
        source.release();
      }
    }
    EngineConfig c = cpu_config("replay:" + file.string());
    c.replay.readers = readers;
    Engine engine(c);
    const RunSummary s = run_to_end(engine);
    QVERIFY2(s.error.empty(), s.error.c_str());
    QCOMPARE(s.stats.events_in, kEvents);
    QCOMPARE(s.stats.events_processed, kEvents - 1);
    QCOMPARE(s.stats.drops_by_reason.at("read_error"), std::uint64_t(1));
    QCOMPARE(engine.replay_status().read_errors, std::uint64_t(1));
  }

  void a_missing_dataset_is_named() {
    const SimEvents& events = sim_events("generic_f32");
    const fs::path file = path("layout.h5");
    write_events(file, events, {});
    const QString error = replay_error(options_for({file}, "/entry/other/data"));
    QVERIFY2(error.contains("layout.h5") && error.contains("dataset /entry/other/data") &&
                 error.contains("/entry/other does not exist"),
             qPrintable(error));
  }

  void a_wrong_type_or_shape_is_refused() {
    io::Array ints;
    ints.type = io::ElementType::Int32;
    ints.shape = {1, 4, 4};
    ints.bytes.resize(64);
    const fs::path file = path("wrong.h5");
    io::write_hdf5_dataset(file, "/data", ints);
    QString error = replay_error(options_for({file}, "/data"));
    QVERIFY2(
        error.contains("wrong.h5") && error.contains("dataset /data") && error.contains("int32"),
        qPrintable(error));

    io::Array odd;
    odd.type = io::ElementType::UInt16;
    odd.shape = {2, 7, 9};
    odd.bytes.resize(2 * 7 * 9 * 2);
    io::write_hdf5_dataset(file, "/odd", odd);
    error = replay_error(options_for({file}, "/odd"));
    QVERIFY2(error.contains("[2, 7, 9]") && error.contains("no built-in detector"),
             qPrintable(error));
    auto options = options_for({file}, "/odd");
    options.detector = "epix10ka2m";
    error = replay_error(options);
    QVERIFY2(error.contains("does not hold events of epix10ka2m") && error.contains("/odd"),
             qPrintable(error));

    // float32 calibrated data cannot feed a raw uint16 detector.
    const fs::path floats = path("floats.h5");
    io::Array flat;
    flat.type = io::ElementType::Float32;
    flat.shape = {1, 16 * 352, 384};
    flat.bytes.resize(16 * 352 * 384 * 4);
    io::write_hdf5_dataset(floats, "/calibrated", flat);
    options = options_for({floats}, "/calibrated");
    options.detector = "epix10ka2m";
    error = replay_error(options);
    QVERIFY2(error.contains("float32") && error.contains("takes uint16"), qPrintable(error));
  }

  void a_file_of_another_detector_is_left_out_or_refused() {
    const SimEvents& events = sim_events("generic_f32");
    const fs::path ours = path("ours.h5"), theirs = path("theirs.h5");
    write_events(ours, events, {}, 1);
    DetectorDescription other = events.detector;
    other.name = "other_f32";  // same shape and type: only the name tells them apart
    {
      replay::Hdf5EventWriter writer(theirs, other, {}, "{}");
      writer.append(events.headers[0], events.raw[0].data());
    }
    // In a list, the foreign file is left out with the reason and the rest replays.
    {
      replay::ReplaySource source(options_for({ours, theirs}));
      QCOMPARE(source.total_events(), std::uint64_t(1));
      QCOMPARE(source.skipped_files().size(), std::size_t(1));
      const QString error = QString::fromStdString(source.skipped_files()[0]);
      QVERIFY2(error.contains("theirs.h5") && error.contains("recorded from detector other_f32") &&
                   error.contains("generic_f32"),
               qPrintable(error));
    }
    auto options = options_for({ours});
    options.detector = "jungfrau4m";
    const QString error = replay_error(options);
    QVERIFY2(error.contains("ours.h5") && error.contains("recorded from detector generic_f32"),
             qPrintable(error));
  }

  void replay_configuration_is_validated() {
    nlohmann::json json = {{"source", "replay:/tmp/x.h5"}, {"replay", {{"pace", "sometimes"}}}};
    try {
      EngineConfig::from_json(json, "test.json");
      QFAIL("accepted pace 'sometimes'");
    } catch (const InputError& e) {
      QVERIFY(QString(e.what()).contains("replay.pace"));
    }
    json = {{"source", "replay:/tmp/x.h5"}, {"replay", {{"pace", "rate"}}}};
    QVERIFY_THROWS_EXCEPTION(InputError, EngineConfig::from_json(json, "test.json"));
    json = {{"record", {{"layout", "diagonal"}}}};
    QVERIFY_THROWS_EXCEPTION(InputError, EngineConfig::from_json(json, "test.json"));
    EngineConfig c;
    c.source = "replay:/a.h5:/entry/data/data";
    c.replay.loop = true;
    c.record.directory = "/tmp/rec";
    c.record.deflate = 3;
    const EngineConfig back = EngineConfig::from_json(c.to_json(), "round trip");
    QCOMPARE(back.source, c.source);
    QVERIFY(back.replay.loop);
    QCOMPARE(back.record.directory, c.record.directory);
    QCOMPARE(back.record.deflate, 3);
    const auto spec = replay::parse_replay_source("replay:/a.h5,/b.h5:/entry/x");
    QCOMPARE(spec.files.size(), std::size_t(2));
    QCOMPARE(spec.files[1], fs::path("/b.h5"));
    QCOMPARE(spec.dataset, std::string("/entry/x"));
  }
};

QTEST_GUILESS_MAIN(TestReplay)
#include "test_replay.moc"
