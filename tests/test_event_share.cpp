// One engine's share of the events when many engines run one run (exec/event_share.hpp, issue
// 37), without MPI: which events a share takes (by event index, by pulse id, an own input) and
// the sequences they carry, the `mpi` configuration that chooses them (share_by, inputs), the
// file names a rank's writers use, and the sources that cannot be shared.
#include <QTemporaryDir>
#include <QtTest>

#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.hpp"
#include "exec/engine.hpp"
#include "exec/produced_share.hpp"
#include "io/segment_names.hpp"

using namespace livedrp;

namespace {

// A small simulated run (generic_f32: one 1024x1024 float32 segment, quick to make) that
// publishes nothing and never drops.
EngineConfig small_run(std::uint64_t events) {
  EngineConfig c;
  c.source = "sim:generic_f32";
  c.backend = "cpu";
  c.cpu_threads = 1;
  c.simulator_pool = 2;
  c.events = events;
  c.full_ring = "wait";
  c.publish = "";
  return c;
}

// The headers of every event the engine processed under `share`, in order.
std::vector<EventHeader> processed_headers(const EngineConfig& config, EventShare share) {
  Engine engine(config);
  engine.set_event_share(share);
  std::mutex mutex;
  std::vector<EventHeader> headers;
  engine.set_event_observer([&](const EventHeader& header, const auto&, const auto&) {
    std::lock_guard lock(mutex);
    headers.push_back(header);
  });
  engine.start();
  engine.wait();
  const RunSummary summary = engine.summary();
  if (!summary.error.empty()) qWarning("run failed: %s", summary.error.c_str());
  return headers;
}

// The simulator's pulse id of run event i (sim/simulator.hpp: first_pulse_id + 3 i).
std::uint64_t sim_pulse(std::uint64_t i) {
  return 1'000'000 + 3 * i;
}

EngineConfig parse(const nlohmann::json& json) {
  return EngineConfig::from_json(json, "'t.json'");
}

QString refusal(const nlohmann::json& json) {
  try {
    parse(json);
  } catch (const InputError& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

}  // namespace

class TestEventShare : public QObject {
  Q_OBJECT

 private slots:
  void a_share_by_event_index_takes_every_count_th_event_of_the_run() {
    const EventShare share{1, 3, EventShare::By::EventIndex};
    std::vector<std::uint64_t> taken;
    for (std::uint64_t i = 0; i < 10; ++i)
      if (share.takes(i, 1000 + i)) taken.push_back(share.sequence(i, 99));
    QCOMPARE(taken, (std::vector<std::uint64_t>{1, 4, 7}));
    QVERIFY(share.splits_a_common_source());
  }

  void a_share_by_pulse_id_takes_the_pulse_ids_of_its_residue() {
    const EventShare share{0, 2, EventShare::By::PulseId};
    // Pulse ids with gaps: the share follows them, not the event's place in the run.
    const std::vector<std::uint64_t> pulses{10, 11, 13, 14, 17, 20};
    std::vector<std::uint64_t> sequences;
    for (std::uint64_t i = 0; i < pulses.size(); ++i)
      if (share.takes(i, pulses[i])) sequences.push_back(share.sequence(i, 99));
    QCOMPARE(sequences, (std::vector<std::uint64_t>{0, 3, 5}));  // the run's indices
  }

  void an_own_input_takes_every_event_with_interleaved_sequences() {
    const EventShare share{2, 3, EventShare::By::OwnInput};
    QVERIFY(!share.splits_a_common_source());
    std::vector<std::uint64_t> sequences;
    for (std::uint64_t local = 0; local < 4; ++local) {
      QVERIFY(share.takes(local, 7));
      sequences.push_back(share.sequence(local, local));
    }
    // local * count + index: unique over the shares, rising, and sequence % 3 names the share.
    QCOMPARE(sequences, (std::vector<std::uint64_t>{2, 5, 8, 11}));
  }

  // The simulator's engine under each kind of share: the events it hands on, their sequences
  // and their pulse ids.
  void the_simulator_hands_on_its_share_with_the_runs_identities() {
    const std::uint64_t events = 7;
    const std::vector<EventHeader> by_index =
        processed_headers(small_run(events), {1, 2, EventShare::By::EventIndex});
    QCOMPARE(by_index.size(), std::size_t(3));
    for (std::size_t k = 0; k < by_index.size(); ++k) {
      QCOMPARE(by_index[k].sequence, std::uint64_t(2 * k + 1));
      QCOMPARE(by_index[k].pulse_id, sim_pulse(2 * k + 1));
    }
    // Pulse ids 1000000 + 3 i modulo 4: 0, 3, 2, 1, 0, 3, 2 -> share 2 takes events 2 and 6.
    const std::vector<EventHeader> by_pulse =
        processed_headers(small_run(events), {2, 4, EventShare::By::PulseId});
    QCOMPARE(by_pulse.size(), std::size_t(2));
    QCOMPARE(by_pulse[0].sequence, std::uint64_t(2));
    QCOMPARE(by_pulse[1].sequence, std::uint64_t(6));
    for (const EventHeader& h : by_pulse) QCOMPARE(h.pulse_id % 4, std::uint64_t(2));
    // An own input: all `events` of it, each sequence local * count + index.
    const std::vector<EventHeader> own =
        processed_headers(small_run(events), {1, 3, EventShare::By::OwnInput});
    QCOMPARE(own.size(), std::size_t(events));
    for (std::size_t k = 0; k < own.size(); ++k) {
      QCOMPARE(own[k].sequence, std::uint64_t(3 * k + 1));
      QCOMPARE(own[k].pulse_id, sim_pulse(k));
    }
  }

  // Pulse ids that step by a multiple of the shares all fall to one share: the simulator's step
  // by 3 over 3 shares gives every event to the share of 1000000 % 3 = 1 (docs/mpi.md).
  void pulse_ids_stepping_by_the_share_count_fall_to_one_share() {
    QCOMPARE(processed_headers(small_run(4), {0, 3, EventShare::By::PulseId}).size(),
             std::size_t(0));
    QCOMPARE(processed_headers(small_run(4), {1, 3, EventShare::By::PulseId}).size(),
             std::size_t(4));
    // A run without end: the share that can never take an event ends at once, empty.
    QCOMPARE(processed_headers(small_run(0), {2, 3, EventShare::By::PulseId}).size(),
             std::size_t(0));
  }

  void a_live_stream_is_shared_only_as_an_own_input() {
    EngineConfig c = small_run(1);
    c.source = "dectris:tcp://127.0.0.1:45998";
    c.stream.detector = "eiger2x4m";
    c.stream.wait_for_start_s = 0.2;
    Engine engine(c);
    for (const auto by : {EventShare::By::EventIndex, EventShare::By::PulseId}) {
      try {
        engine.set_event_share({0, 2, by});
        QFAIL("a live stream was split as a common source");
      } catch (const InputError& e) {
        const std::string text = e.what();
        QVERIFY2(text.find("cannot be shared among engines by") != std::string::npos &&
                     text.find("mpi.inputs") != std::string::npos,
                 text.c_str());
      }
    }
    engine.set_event_share({1, 2, EventShare::By::OwnInput});  // its own endpoint: taken
  }

  // The device-resident source's producer makes its share itself (exec/produced_share.hpp):
  // for every share of a simulated run, its j-th event is the run's event that the host
  // source's share hands on j-th, with that event's sequence, pulse id and pool data.
  void a_producer_makes_exactly_the_events_its_share_takes() {
    const std::uint64_t first = 1'000'000, step = 3, events = 23;
    const std::size_t pool = 4;
    for (const auto by :
         {EventShare::By::EventIndex, EventShare::By::PulseId, EventShare::By::OwnInput})
      for (std::uint64_t count = 1; count <= 6; ++count)
        for (std::uint64_t index = 0; index < count; ++index) {
          const EventShare share{index, count, by};
          const ProducedShare p = produced_share(share, events, 60.0, first, step, pool);
          std::vector<std::uint64_t> want;  // run indices the host source's share hands on
          for (std::uint64_t i = 0; i < events; ++i)
            if (share.takes(i, first + step * i)) want.push_back(i);
          const QByteArray row =
              QString("by %1, share %2 of %3").arg(int(by)).arg(index).arg(count).toUtf8();
          QVERIFY2(p.none == want.empty(), row.constData());
          if (want.empty()) continue;
          QVERIFY2(p.events == want.size(), row.constData());
          for (std::uint64_t j = 0; j < want.size(); ++j) {
            const std::uint64_t i = want[j];
            QVERIFY2(p.sequence(j) == share.sequence(i, j), row.constData());
            QVERIFY2(p.first_pulse_id + p.pulses_per_event * j == first + step * i,
                     row.constData());
            QVERIFY2(p.pool_order[j % pool] == i % pool, row.constData());
          }
          // The share's events come at its part of the source's rate.
          QCOMPARE(p.rate_hz, 60.0 / double(p.stride));
        }
    // A run without end: the share's events without end too.
    const ProducedShare endless =
        produced_share({1, 2, EventShare::By::EventIndex}, 0, 0, first, step, pool);
    QVERIFY(!endless.none);
    QCOMPARE(endless.events, std::uint64_t(0));
    QCOMPARE(endless.first_pulse_id, first + step);
  }

  void mpi_inputs_and_share_by_are_read_and_echoed() {
    nlohmann::json json = small_run(3).to_json();
    json["mpi"] = {{"inputs", {"sim:generic_f32", "replay:/data/b.h5"}}};
    const EngineConfig c = parse(json);
    QCOMPARE(c.mpi.inputs, (std::vector<std::string>{"sim:generic_f32", "replay:/data/b.h5"}));
    QCOMPARE(c.mpi.rank, -1);  // set by the MPI run only
    QCOMPARE(parse(c.to_json()).mpi.inputs, c.mpi.inputs);
    json["mpi"] = {{"share_by", "pulse_id"}};
    QCOMPARE(parse(json).mpi.share_by, std::string("pulse_id"));
    QCOMPARE(parse(parse(json).to_json()).mpi.share_by, std::string("pulse_id"));
    // Nothing of mpi set: nothing echoed (a single engine's configuration reads as before).
    QVERIFY(!small_run(3).to_json().contains("mpi"));
  }

  void bad_mpi_inputs_are_refused_naming_the_entry() {
    nlohmann::json json = small_run(3).to_json();
    json["mpi"] = {{"inputs", {"sim:generic_f32", "file.h5"}}};
    QString text = refusal(json);
    QVERIFY2(
        text.contains("field 'mpi.inputs[1]' must be sim:DETECTOR") && text.contains("\"file.h5\""),
        qPrintable(text));
    json["mpi"] = {{"inputs", nlohmann::json::array()}};
    QVERIFY2(refusal(json).contains("field 'mpi.inputs' must be a list of sources"),
             qPrintable(refusal(json)));
    json["mpi"] = {{"inputs", "replay:/data/a.h5"}};
    QVERIFY2(refusal(json).contains("field 'mpi.inputs' must be a list of sources"),
             qPrintable(refusal(json)));
    json["mpi"] = {{"inputs", {"replay:/a.h5", 3}}};
    QVERIFY2(refusal(json).contains("field 'mpi.inputs[1]'"), qPrintable(refusal(json)));
    json["mpi"] = {{"inputs", {"replay:/a.h5", "replay:/b.h5"}}, {"share_by", "pulse_id"}};
    text = refusal(json);
    QVERIFY2(text.contains("field 'mpi.share_by'") && text.contains("its own input"),
             qPrintable(text));
    json["mpi"] = {{"share_by", "rank"}};
    QVERIFY2(refusal(json).contains("mpi.share_by"), qPrintable(refusal(json)));
    json["mpi"] = {{"rank", 2}};  // not a setting: the MPI run sets it
    QVERIFY2(refusal(json).contains("rank"), qPrintable(refusal(json)));
  }

  void a_ranks_files_carry_its_rank_before_the_segment() {
    QCOMPARE(io::rank_file_path("/out/profiles.h5", 1), std::string("/out/profiles.rank001.h5"));
    QCOMPARE(io::rank_file_path("/out/profiles.h5", io::kNoRank), std::string("/out/profiles.h5"));
    QCOMPARE(io::rank_file_path("/out/average", 12), std::string("/out/average.rank012"));
    QCOMPARE(io::writer_file_path("/out/profiles.h5", 2, 3),
             std::string("/out/profiles.rank002.seg003.h5"));
    QCOMPARE(io::writer_file_path("/out/profiles.h5", io::kNoRank, 1),
             std::string("/out/profiles.h5"));
    QCOMPARE(io::cxi_hit_file_name(7, 1, 4, 2), std::string("run0007-rank002-hits-004.cxi"));
    QCOMPARE(io::cxi_hit_file_name(7, 2, 0, 1000),
             std::string("run0007-rank1000-seg002-hits-000.cxi"));
    QCOMPARE(io::cxi_hit_file_name(7, 1, 0), std::string("run0007-hits-000.cxi"));
  }

  // An engine with mpi.rank set (as the MPI run sets it) writes its rank's names: its profile
  // file and its recording, never the configured names another rank would write too.
  void an_engine_of_a_rank_writes_its_ranks_files() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    EngineConfig c = small_run(2);
    c.mpi.rank = 3;
    c.record.directory = dir.filePath("recorded").toStdString();
    c.write.average = dir.filePath("average.h5").toStdString();
    {
      Engine engine(c);
      engine.start();
      engine.wait();
      QVERIFY2(engine.summary().error.empty(), engine.summary().error.c_str());
      QCOMPARE(
          engine.record_status().files,
          std::vector<std::string>{dir.filePath("recorded/run0001-rank003-000.h5").toStdString()});
      QCOMPARE(engine.write_status().average.files,
               std::vector<std::string>{dir.filePath("average.rank003.h5").toStdString()});
    }
    QVERIFY(QFile::exists(dir.filePath("recorded/run0001-rank003-000.h5")));
    QVERIFY(QFile::exists(dir.filePath("average.rank003.h5")));
    QVERIFY(!QFile::exists(dir.filePath("average.h5")));
  }
};

QTEST_GUILESS_MAIN(TestEventShare)
#include "test_event_share.moc"
