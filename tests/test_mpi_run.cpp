// One run over three engines under MPI (`mpirun -n 3 livedrp-engine run`, issue 37), CPU backend:
// the collector's merged totals are the sums of the ranks' and the events asked for, each rank
// takes its share by event index, and on a replayed recording the merged profile equals the
// profile of all events (calibrated and integrated here, float64 mean) within 1e-12 relative, and
// the hit and peak counts equal those of peakfinder8 run here on every event and of one engine's
// run of the same file, and every published peak list is that event's list here.
// Skipped (QSKIP) when the build has no MPI.
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <csignal>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "calib/gain_occupancy.hpp"
#include "protocol/fidelity_topic.hpp"

#include "cli_process.hpp"
#include "live_integration_support.hpp"
#include "live_peaks_support.hpp"
#include "mpi_run_process.hpp"
#include "mpi_run_support.hpp"
#include "protocol/subscriber.hpp"
#include "publish/publisher.hpp"

using namespace livedrp;
using namespace std::chrono_literals;

// Everything below runs mpirun: only in a build with MPI (the launcher CMake found beside it).
#ifdef LIVEDRP_TEST_MPIEXEC
namespace {

using namespace mpi_run_test;

// The merged summary's totals are the sums of its ranks' and the events asked for; each rank
// took its share of event indices. Returns the failure text, empty when all holds.
QString check_totals(const nlohmann::json& summary, std::uint64_t events,
                     const std::vector<std::uint64_t>& processing_ranks) {
  const auto& ranks = summary.at("ranks");
  if (ranks.at("size").get<int>() != kRanks) return "size is not 3: " + QString::number(kRanks);
  const auto& processing = ranks.at("processing");
  if (processing.size() != processing_ranks.size())
    return QString("%1 processing ranks, expected %2")
        .arg(processing.size())
        .arg(processing_ranks.size());
  std::uint64_t in = 0, processed = 0, dropped = 0;
  for (std::size_t k = 0; k < processing.size(); ++k) {
    const auto& r = processing[k];
    if (r.at("rank").get<std::uint64_t>() != processing_ranks[k]) return "ranks out of order";
    if (r.at("state").get<std::string>() != "finished")
      return QString("rank %1 is %2").arg(k).arg(r.at("state").get<std::string>().c_str());
    const std::uint64_t share = share_size(events, k, processing.size());
    if (r.at("events_in").get<std::uint64_t>() != share)
      return QString("rank %1 took %2 events, its share is %3")
          .arg(processing_ranks[k])
          .arg(r.at("events_in").get<std::uint64_t>())
          .arg(share);
    in += r.at("events_in").get<std::uint64_t>();
    processed += r.at("events_processed").get<std::uint64_t>();
    dropped += r.at("events_dropped").get<std::uint64_t>();
  }
  if (summary.at("events_in").get<std::uint64_t>() != in) return "events_in is not the ranks' sum";
  if (summary.at("events_processed").get<std::uint64_t>() != processed)
    return "events_processed is not the ranks' sum";
  if (summary.at("events_dropped").get<std::uint64_t>() != dropped)
    return "events_dropped is not the ranks' sum";
  if (in != events) return QString("%1 events in, %2 asked for").arg(in).arg(events);
  if (processed + dropped != in) return "processed + dropped is not events in";
  if (dropped != 0) return QString("%1 dropped with full_ring wait").arg(dropped);
  return {};
}

}  // namespace
#endif

class TestMpiRun : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
#ifndef LIVEDRP_TEST_MPIEXEC
    QSKIP(
        "this build has no MPI run or no launcher: CMake found no MPI library or no mpiexec "
        "(install libopenmpi-dev and openmpi-bin, or MPICH, and configure again)");
#endif
    QVERIFY(dir_.isValid());
  }

#ifdef LIVEDRP_TEST_MPIEXEC
  // Rank 2 is killed while its run goes (the launcher told to let the others live on): the
  // collector reports it lost, with its last counts, in `stats` and in the summary, and the run
  // ends when rank 1 has finished its share.
  void a_killed_rank_is_reported_lost_and_the_run_ends() {
    const std::uint64_t events = 60;
    EngineConfig c = sim_config(events);
    c.rate_hz = 10;  // six seconds: rank 2 is killed well before its share is done
    c.simulator_pool = 2;
    c.mpi.silent_after_s = 2;
    const std::string endpoint = free_endpoint();
    c.publish = endpoint;
    const QString config = dir_.filePath("killed.json"),
                  summary = dir_.filePath("killed_summary.json");
    write_json(config, c.to_json());
    std::uint64_t killed_pid = 0;
    const MpiRun run =
        run_mpi({"--config", config, "--summary-json", summary}, endpoint, true,
                [&](const protocol::StatsPayload& stats) {
                  if (killed_pid != 0 || !stats.ranks || stats.ranks->processing.size() != 2)
                    return;
                  const protocol::RankStats& rank2 = stats.ranks->processing[1];
                  if (rank2.rank == 2 && rank2.events_processed >= 2 && rank2.pid > 0) {
                    killed_pid = rank2.pid;
                    ::kill(pid_t(killed_pid), SIGKILL);
                  }
                });
    QVERIFY2(killed_pid != 0, qPrintable("rank 2 was never seen processing: " + run.result.err));
    const nlohmann::json merged = read_json(summary);
    const auto& ranks = merged.at("ranks").at("processing");
    QCOMPARE(ranks.size(), std::size_t(2));
    QCOMPARE(ranks[0].at("state").get<std::string>(), std::string("finished"));
    QCOMPARE(ranks[0].at("events_in").get<std::uint64_t>(), share_size(events, 0, 2));
    QCOMPARE(ranks[1].at("state").get<std::string>(), std::string("lost"));
    QCOMPARE(ranks[1].at("pid").get<std::uint64_t>(), killed_pid);
    const std::uint64_t lost_in = ranks[1].at("events_in").get<std::uint64_t>();
    QVERIFY(lost_in >= 2 && lost_in < share_size(events, 1, 2));
    QCOMPARE(merged.at("events_in").get<std::uint64_t>(), share_size(events, 0, 2) + lost_in);
    const std::string error = merged.at("error").get<std::string>();
    QVERIFY2(error.find("rank 2: lost: no report for") != std::string::npos, error.c_str());
    QVERIFY2(run.result.out.contains("rank 2: lost, in " + QString::number(lost_in)),
             qPrintable(run.result.out));
    QVERIFY(!run.stats.empty() && run.stats.back().ranks);
    QCOMPARE(run.stats.back().ranks->processing[1].state, std::string(protocol::kRankLost));
  }

  // Input the run cannot take is refused before any event: exit status 2 and the problem named
  // (start-up failures once, by rank 0, for every rank that failed).
  void bad_input_is_refused_naming_the_ranks_and_the_problem() {
    EXPECT_BAD_INPUT(
        run_mpi({"--source", "replay:" + dir_.filePath("missing.h5"), "--backend", "cpu",
                 "--publish", ""},
                "")
            .result,
        "rank 1: HDF5 file " + dir_.filePath("missing.h5") + " does not exist; rank 2:");
    EXPECT_BAD_INPUT(run_mpi({"--source", "dectris:tcp://127.0.0.1:45999", "--stream-detector",
                              "eiger2x4m", "--publish", ""},
                             "")
                         .result,
                     "cannot be shared among engines by event index");
    EXPECT_BAD_INPUT(
        run_mpi({"--source", "sim:epix10ka2m", "--control", "no-such-transport"}, "").result,
        "rank 0: cannot bind control socket to 'no-such-transport'");
    const QString config = dir_.filePath("bad_mpi.json");
    nlohmann::json json = sim_config(3).to_json();
    json["mpi"] = {{"collector", "everyone"}};
    write_json(config, json);
    EXPECT_BAD_INPUT(run_mpi({"--config", config}, "").result, "mpi.collector");
    json["mpi"] = {{"devices", {0, -1}}};
    write_json(config, json);
    EXPECT_BAD_INPUT(run_mpi({"--config", config}, "").result, "mpi.devices");
  }

  // mpi.devices: the processing ranks of a node take the listed devices in turn, each seeing
  // only its own (here all on this machine: ranks 1 and 2 are its first and second).
  void processing_ranks_take_the_listed_devices_in_turn() {
    const QString config = dir_.filePath("devices.json");
    nlohmann::json json = sim_config(2).to_json();
    json["mpi"] = {{"devices", {3, 5}}};
    write_json(config, json);
    const MpiRun run = run_mpi({"--config", config, "--verbose"}, "");
    QVERIFY2(run.result.exit_code == 0, qPrintable(run.result.err));
    const QString log = run.result.out + run.result.err;  // spdlog's default sink is stdout
    QVERIFY2(log.contains("rank 1: CUDA_VISIBLE_DEVICES=3 ") &&
                 log.contains("rank 2: CUDA_VISIBLE_DEVICES=5 "),
             qPrintable(log));
    QVERIFY(!log.contains("rank 0: CUDA_VISIBLE_DEVICES"));  // the collector: none
  }

  void simulator_totals_are_the_sums_of_the_ranks_and_the_events_asked_for() {
    const std::uint64_t events = 11;
    const QString config = dir_.filePath("sim.json"), summary = dir_.filePath("sim_summary.json");
    write_json(config, sim_config(events).to_json());
    const MpiRun run = run_mpi({"--config", config, "--summary-json", summary}, "");
    QVERIFY2(run.result.exit_code == 0, qPrintable(run.result.err + run.result.out));
    const nlohmann::json merged = read_json(summary);
    // Rank 0 collects; ranks 1 and 2 take events 0, 2, 4, ... and 1, 3, 5, ...
    const QString problem = check_totals(merged, events, {1, 2});
    QVERIFY2(problem.isEmpty(), qPrintable(problem + "\n" + QString::fromStdString(merged.dump())));
    // Latencies merge as histograms: the run's percentiles are there and ordered.
    QVERIFY(merged.at("latency_p50_us").is_number() && merged.at("latency_max_us").is_number());
    QVERIFY(merged.at("latency_p50_us").get<double>() <= merged.at("latency_p99_us").get<double>());
    QVERIFY(merged.at("latency_p99_us").get<double>() <= merged.at("latency_max_us").get<double>());
    QVERIFY2(run.result.out.contains("events in: 11, processed: 11, dropped: 0"),
             qPrintable(run.result.out));
    QVERIFY2(run.result.out.contains("rank 1: finished, in 6") &&
                 run.result.out.contains("rank 2: finished, in 5"),
             qPrintable(run.result.out));
  }

  void a_processing_collector_takes_a_share_too() {
    const std::uint64_t events = 10;
    const QString config = dir_.filePath("sim_all.json"),
                  summary = dir_.filePath("sim_all_summary.json");
    nlohmann::json json = sim_config(events).to_json();
    json["mpi"] = {{"collector", "processing"}};
    write_json(config, json);
    const MpiRun run = run_mpi({"--config", config, "--summary-json", summary}, "");
    QVERIFY2(run.result.exit_code == 0, qPrintable(run.result.err + run.result.out));
    const nlohmann::json merged = read_json(summary);
    QVERIFY(merged.at("ranks").at("collector_processes").get<bool>());
    const QString problem = check_totals(merged, events, {0, 1, 2});
    QVERIFY2(problem.isEmpty(), qPrintable(problem + "\n" + QString::fromStdString(merged.dump())));
  }

  // A stage's own topic (here compression fidelity) reaches the run's subscribers through the
  // collector: each rank forwards its books' newest messages with its reports. Lossless, so every
  // sample's decoded image and profile equal the original's.
  void a_stage_topic_reaches_the_collectors_subscribers() {
    namespace li = live_integration_test;
    const std::uint64_t events = 6;
    const DetectorDescription detector = find_detector("epix10ka2m");
    ThreadPool pool(2);
    EngineConfig c = sim_config(events);
    const DetectorSimulator simulator = live_peaks_test::engine_simulator(c, pool);
    c.integration = li::live_config(li::write_poni(dir_, detector, simulator.powder_geometry()),
                                    li::write_mask(dir_, detector))
                        .integration;
    c.compression.codec = "lossless";
    c.fidelity.enabled = true;
    c.fidelity.samples_hz = 50;
    const std::string endpoint = free_endpoint();
    c.publish = endpoint;
    const QString config = dir_.filePath("fidelity.json");
    write_json(config, c.to_json());
    const MpiRun run = run_mpi({"--config", config}, endpoint);
    QVERIFY2(run.result.exit_code == 0, qPrintable(run.result.err + run.result.out));
    QVERIFY2(!run.fidelity.empty(), qPrintable(run.result.err));
    for (const protocol::FidelityReport& f : run.fidelity) {
      QVERIFY(f.sequence < events);
      QCOMPARE(f.codec, std::string("lossless"));
      QVERIFY(f.samples >= 1);
      QCOMPARE(f.failed, std::uint64_t(0));
      QVERIFY(f.stream_bytes > 0);
      QCOMPARE(f.uncompressed_bytes, std::uint64_t(detector.raw_event_bytes()));
      QCOMPARE(f.max_pixel_error, 0.0);
      QVERIFY(f.has_profile);
      QVERIFY(f.compared_bins > 0);
      QCOMPARE(f.max_abs_relative, 0.0);
      for (double relative : f.relative) QVERIFY(std::isnan(relative) || relative == 0.0);
    }
  }

  void replayed_profile_and_hits_equal_one_engines_of_the_same_events() {
    namespace li = live_integration_test;
    namespace lp = live_peaks_test;
    const std::uint64_t events = 9;
    const DetectorDescription detector = find_detector("epix10ka2m");
    ThreadPool pool(2);
    // Every simulated event a hit candidate, so that hits come from every rank.
    EngineConfig base = sim_config(events);
    base.hit_fraction = 1.0;
    const DetectorSimulator simulator = lp::engine_simulator(base, pool);
    const QString record_dir = dir_.filePath("recording");
    {
      const QString config = dir_.filePath("record.json");
      write_json(config, base.to_json());
      const CliResult r =
          run_cli("LIVEDRP_ENGINE_EXE", {"run", "--config", config, "--record", record_dir}, -1);
      QVERIFY2(r.exit_code == 0 && r.out.contains("recorded: 9 events"), qPrintable(r.err + r.out));
    }

    // The replay: integration with a window that holds every event, and peak finding.
    EngineConfig replay = base;
    replay.source = "replay:" + record_dir.toStdString();
    replay.replay.pace = "flat_out";
    const EngineConfig integration =
        li::live_config(li::write_poni(dir_, detector, simulator.powder_geometry()),
                        li::write_mask(dir_, detector));
    replay.integration = integration.integration;
    replay.integration.average_events = 64;
    replay.integration.publish_hz = 100;
    replay.peak_finding = lp::live_config().peak_finding;
    const std::string endpoint = free_endpoint();
    replay.publish = endpoint;
    const QString config = dir_.filePath("replay.json"),
                  summary = dir_.filePath("replay_summary.json");
    write_json(config, replay.to_json());
    const MpiRun run = run_mpi({"--config", config, "--summary-json", summary}, endpoint);
    QVERIFY2(run.result.exit_code == 0, qPrintable(run.result.err + run.result.out));
    const nlohmann::json merged = read_json(summary);
    const QString problem = check_totals(merged, events, {1, 2});
    QVERIFY2(problem.isEmpty(), qPrintable(problem + "\n" + QString::fromStdString(merged.dump())));

    // The profile of all events, calibrated and integrated here: the replay's event i is the
    // simulator's event i % pool (as recorded).
    EngineConfig offline_config = replay;
    offline_config.events = events;
    const li::OfflineProfiles offline = li::offline_profiles(offline_config, simulator, pool);
    const std::vector<double> all_events = li::window_mean(offline, events - 1, events);
    QVERIFY2(!run.profiles.empty(), qPrintable(run.result.err));
    const protocol::RadialProfile& last = run.profiles.back();
    QCOMPARE(last.average_events, events);
    QCOMPARE(last.centres, offline.centres);
    QCOMPARE(last.sequence, offline.sequences.back());  // the newest event's own profile
    const long diff = li::first_difference(last.average, all_events, 1e-12);
    QVERIFY2(diff < 0,
             qPrintable(QString("bin %1: merged %2, all events %3")
                            .arg(diff)
                            .arg(diff < 0 ? 0.0 : last.average[std::size_t(diff)], 0, 'g', 17)
                            .arg(diff < 0 ? 0.0 : all_events[std::size_t(diff)], 0, 'g', 17)));
    QCOMPARE(li::first_difference(last.latest, offline.profiles.back(), 1e-12), -1L);

    // Hits and peaks: peakfinder8 on every event here, then one engine on the same file.
    const lp::OfflineEvents calibrated = lp::offline_events(base, simulator, pool);
    peaks::PeakFinder8 finder =
        lp::independent_finder(detector, simulator.constants(), replay.peak_finding.params);
    std::uint64_t hits = 0, found = 0, newest_hit_pulse = 0;
    std::vector<peaks::PeakList> lists;
    for (std::size_t i = 0; i < calibrated.calibrated.size(); ++i) {
      const peaks::PeakList list = finder.find(calibrated.calibrated[i].data());
      lists.push_back(list);
      found += std::uint64_t(list.found);
      if (list.hit) {
        ++hits;
        newest_hit_pulse = calibrated.pulse_ids[i];
      }
    }
    QVERIFY2(hits > 1, "the simulated run must have hits on more than one rank");
    const auto& peak_block = merged.at("peak_finding");
    QCOMPARE(peak_block.at("events").get<std::uint64_t>(), events);
    QCOMPARE(peak_block.at("hits").get<std::uint64_t>(), hits);
    QCOMPARE(peak_block.at("peaks").get<std::uint64_t>(), found);
    QVERIFY(!run.peaks.empty());
    QCOMPARE(run.peaks.back().pulse_id, newest_hit_pulse);  // the newest hit over the ranks
    // Every list the collector published, whichever rank found it, is that event's list here
    // value for value (its sequence is its index over the run).
    const ImageAssembly assembly(detector);
    for (const protocol::EventPeaks& published : run.peaks) {
      QVERIFY(published.sequence < lists.size());
      QCOMPARE(published.pulse_id, calibrated.pulse_ids[published.sequence]);
      const QString difference = lp::compare_list(published, lists[published.sequence], assembly);
      QVERIFY2(difference.isEmpty(),
               qPrintable(QString("event %1: %2").arg(published.sequence).arg(difference)));
    }

    // Images: the ranks keep theirs and the collector publishes the newest; each is its event's
    // calibrated pixels assembled here, with that event's gain occupancy and peak list.
    QVERIFY(!run.images.empty());
    for (const protocol::ImageFrame& image : run.images) {
      QVERIFY(image.sequence < lists.size());
      QCOMPARE(image.pulse_id, calibrated.pulse_ids[image.sequence]);
      QCOMPARE(image.height, std::uint64_t(assembly.height()));
      QCOMPARE(image.width, std::uint64_t(assembly.width()));
      std::vector<float> expected(assembly.height() * assembly.width());
      assembly.assemble(calibrated.calibrated[image.sequence].data(), expected.data());
      QCOMPARE(image.pixels.size(), expected.size());
      std::size_t differing = 0;
      for (std::size_t k = 0; k < expected.size(); ++k)
        if (std::isnan(expected[k]) ? !std::isnan(image.pixels[k]) : image.pixels[k] != expected[k])
          ++differing;
      QCOMPARE(differing, std::size_t(0));
      const calib::GainOccupancy occupancy = calib::gain_occupancy(
          detector, simulator.constants(), calibrated.raw[image.sequence].data());
      QCOMPARE(image.gain_occupancy, occupancy.fraction);
      QVERIFY(image.has_peaks);
      const QString difference = lp::compare_list(image.peaks, lists[image.sequence], assembly);
      QVERIFY2(difference.isEmpty(),
               qPrintable(QString("image of event %1: %2").arg(image.sequence).arg(difference)));
    }

    EngineConfig single = replay;
    single.publish = "";
    const QString single_config = dir_.filePath("single.json"),
                  single_summary = dir_.filePath("single_summary.json");
    write_json(single_config, single.to_json());
    const CliResult one =
        run_cli("LIVEDRP_ENGINE_EXE",
                {"run", "--config", single_config, "--summary-json", single_summary}, -1);
    QVERIFY2(one.exit_code == 0, qPrintable(one.err + one.out));
    const nlohmann::json one_engine = read_json(single_summary);
    QCOMPARE(one_engine.at("peak_finding").at("hits").get<std::uint64_t>(), hits);
    QCOMPARE(one_engine.at("peak_finding").at("peaks").get<std::uint64_t>(), found);
    QCOMPARE(one_engine.at("events_processed").get<std::uint64_t>(),
             merged.at("events_processed").get<std::uint64_t>());

    // The published stats carry the same totals and the per-rank block.
    QVERIFY(!run.stats.empty());
    const protocol::StatsPayload& final_stats = run.stats.back();
    QCOMPARE(final_stats.events_processed, events);
    QVERIFY(final_stats.ranks.has_value());
    QCOMPARE(final_stats.ranks->processing.size(), std::size_t(2));
    QCOMPARE(final_stats.ranks->processing[0].events_processed +
                 final_stats.ranks->processing[1].events_processed,
             events);
  }
#endif

 private:
  QTemporaryDir dir_;
};

QTEST_GUILESS_MAIN(TestMpiRun)
#include "test_mpi_run.moc"
