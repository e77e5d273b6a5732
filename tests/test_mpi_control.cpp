// The control socket of a run over three MPI ranks (`mpirun -n 3 livedrp-engine run --control`,
// issue 37), CPU backend: the collector binds the endpoint and applies each request to every
// processing rank. A re-run over all ranks' kept frames equals peakfinder8 run here on every
// event of the run (hits, peaks, each frame's count, the newest hit, published with rerun true);
// a parameter change reaches every rank (each rank's re-run says so, and finds what the new
// parameters find here); an invalid change is refused once and reaches no rank; a stop ends every
// rank's run with the books balanced; a lost rank is named missing instead of holding a request;
// an apply is a new run on every rank, or on none when a rank cannot build it; a collector that
// takes a share answers for it in the same replies.
// Skipped (QSKIP) when the build has no MPI.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_process.hpp"
#include "live_peaks_support.hpp"
#include "mpi_run_support.hpp"
#include "peaks/peak_params.hpp"
#include "protocol/control.hpp"
#include "protocol/control_client.hpp"
#include "protocol/subscriber.hpp"

using namespace livedrp;
using namespace std::chrono_literals;
using json = nlohmann::json;

#ifdef LIVEDRP_TEST_MPIEXEC
namespace {

using namespace mpi_run_test;
namespace lp = live_peaks_test;

// An MPI job under control: mpirun started, a client on the collector's control endpoint.
class ControlledJob {
 public:
  ControlledJob(const QStringList& engine_arguments, const std::string& control,
                bool survive_a_rank)
      : client_(control) {
    const QString mpirun = QStringLiteral(LIVEDRP_TEST_MPIEXEC);
    process_.setProcessEnvironment(mpirun_environment());
    process_.start(mpirun, mpirun_arguments(mpirun, survive_a_rank)
                               << cli_executable("LIVEDRP_ENGINE_EXE") << "run" << engine_arguments
                               << "--control" << QString::fromStdString(control));
  }
  ~ControlledJob() {
    if (process_.state() != QProcess::NotRunning) {
      process_.terminate();
      if (!process_.waitForFinished(30'000)) process_.kill();
      process_.waitForFinished();
    }
  }

  // The reply to `name` with `fields` (ok or not). A job that has not bound its socket yet
  // leaves the request unanswered: it is sent again until an answer comes or the job ends.
  json request(const std::string& name, const json& fields = json::object()) {
    for (;;) {
      try {
        return client_.request(protocol::make_control_request(name, fields));
      } catch (const protocol::ProtocolError& e) {
        if (!running()) return {{"ok", false}, {"error", std::string("job ended: ") + e.what()}};
      }
    }
  }
  // The result of a request that must succeed; empty (and the failure noted) otherwise.
  json result(const std::string& name, const json& fields = json::object()) {
    const json reply = request(name, fields);
    if (!reply.value("ok", false)) {
      failure_ = QString::fromStdString(name + " refused: " + reply.dump()) + "\n" + output();
      return json::object();
    }
    return reply.at("result");
  }
  // Polls status until `condition` holds of it; false when the job ended first.
  bool wait_for_status(const std::function<bool(const json&)>& condition) {
    while (running()) {
      const json reply = request("status");
      if (reply.value("ok", false) && condition(reply.at("result"))) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  bool running() const { return process_.state() != QProcess::NotRunning; }
  // Asks the job to shut down and waits for it to end (a hang is Qt Test's to report).
  CliResult shut_down() {
    request("shutdown");
    process_.waitForFinished(-1);
    CliResult r;
    r.exit_code = process_.exitStatus() == QProcess::NormalExit ? process_.exitCode() : -1;
    r.out = QString::fromUtf8(process_.readAllStandardOutput());
    r.err = QString::fromUtf8(process_.readAllStandardError());
    return r;
  }
  // Asks the job to shut down; true when it ended within `guard_ms` (its output is then read).
  bool shut_down_within(int guard_ms) {
    request("shutdown");
    return process_.waitForFinished(guard_ms);
  }
  QString output() {
    return QString::fromUtf8(process_.readAllStandardOutput() + process_.readAllStandardError());
  }
  const QString& failure() const { return failure_; }

 private:
  protocol::ControlClient client_;
  QProcess process_;
  QString failure_;
};

// peakfinder8 here over every event of the run, with `params`.
struct OfflineSearch {
  std::vector<std::uint64_t> found;  // per event, in event order
  std::uint64_t hits = 0, peaks = 0, newest_hit_pulse = 0;
};

OfflineSearch search_offline(const lp::OfflineEvents& events, const DetectorDescription& detector,
                             const CalibrationConstants& constants,
                             const peaks::PeakFinderParams& params) {
  peaks::PeakFinder8 finder = lp::independent_finder(detector, constants, params);
  OfflineSearch s;
  for (std::size_t i = 0; i < events.calibrated.size(); ++i) {
    const peaks::PeakList list = finder.find(events.calibrated[i].data());
    s.found.push_back(std::uint64_t(list.found));
    s.peaks += std::uint64_t(list.found);
    if (list.hit) {
      ++s.hits;
      s.newest_hit_pulse = std::max(s.newest_hit_pulse, events.pulse_ids[i]);
    }
  }
  return s;
}

// Empty when the merged re-run is the offline search over all `events` (every frame kept) and
// every rank says it searched with `version`; else what differs.
QString compare_rerun(const json& rerun, const OfflineSearch& expected,
                      const lp::OfflineEvents& events, std::uint64_t version) {
  const auto sequences = rerun.at("sequences").get<std::vector<std::uint64_t>>();
  if (sequences != events.sequences) return "sequences: " + QString::fromStdString(rerun.dump());
  if (rerun.at("pulse_ids").get<std::vector<std::uint64_t>>() != events.pulse_ids)
    return "pulse ids differ";
  if (rerun.at("peaks_per_frame").get<std::vector<std::uint64_t>>() != expected.found)
    return "peaks per frame differ: " + QString::fromStdString(rerun.at("peaks_per_frame").dump());
  if (rerun.at("frames").get<std::uint64_t>() != events.sequences.size()) return "frames";
  if (rerun.at("hits").get<std::uint64_t>() != expected.hits)
    return QString("hits %1, expected %2")
        .arg(rerun.at("hits").get<std::uint64_t>())
        .arg(expected.hits);
  if (rerun.at("peaks").get<std::uint64_t>() != expected.peaks) return "peaks summed differ";
  if (expected.hits > 0 &&
      rerun.at("newest_hit").at("pulse_id").get<std::uint64_t>() != expected.newest_hit_pulse)
    return "newest hit differs";
  if (!rerun.at("missing_ranks").empty()) return "ranks missing";
  const json& ranks = rerun.at("ranks");
  if (ranks.size() != 2) return "not two ranks";
  const std::uint64_t n = events.sequences.size();
  for (std::size_t k = 0; k < 2; ++k) {
    if (ranks[k].at("rank").get<std::size_t>() != k + 1) return "ranks out of order";
    if (ranks[k].at("frames").get<std::uint64_t>() != share_size(n, k, 2))
      return QString("rank %1 searched %2 frames")
          .arg(k + 1)
          .arg(ranks[k].at("frames").dump().c_str());
    if (ranks[k].at("params_version").get<std::uint64_t>() != version)
      return QString("rank %1 searched with version %2, expected %3")
          .arg(k + 1)
          .arg(ranks[k].at("params_version").dump().c_str())
          .arg(version);
  }
  if (rerun.at("params_version").get<std::uint64_t>() != version) return "params_version";
  return {};
}

}  // namespace
#endif

class TestMpiControl : public QObject {
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
  void reruns_over_every_ranks_frames_equal_a_search_of_every_event_before_and_after_a_change() {
    const std::uint64_t events = 9;
    const DetectorDescription detector = find_detector("epix10ka2m");
    ThreadPool pool(2);
    EngineConfig base = sim_config(events);
    base.hit_fraction = 1.0;  // hits on every rank
    const DetectorSimulator simulator = lp::engine_simulator(base, pool);
    const QString record_dir = dir_.filePath("recording");
    {
      const QString config = dir_.filePath("record.json");
      write_json(config, base.to_json());
      const CliResult r =
          run_cli("LIVEDRP_ENGINE_EXE", {"run", "--config", config, "--record", record_dir}, -1);
      QVERIFY2(r.exit_code == 0, qPrintable(r.err + r.out));
    }
    EngineConfig replay = base;
    replay.source = "replay:" + record_dir.toStdString();
    replay.replay.pace = "flat_out";
    replay.peak_finding = lp::live_config().peak_finding;
    replay.peak_finding.recent_frames = 16;  // every frame of a rank kept
    const std::string publish = free_endpoint(), control = free_endpoint();
    replay.publish = publish;
    const QString config = dir_.filePath("replay.json");
    write_json(config, replay.to_json());

    const lp::OfflineEvents offline = lp::offline_events(base, simulator, pool);
    const OfflineSearch before =
        search_offline(offline, detector, simulator.constants(), replay.peak_finding.params);
    QVERIFY2(before.hits > 1, "the run must have hits on more than one rank");
    // The change: the first of these that changes what is found here (the simulated peaks are
    // strong, so a mild one may change nothing, which would prove nothing).
    json change;
    OfflineSearch after;
    for (const json& candidate : {json{{"minimum_snr", 8.0}, {"min_peaks_for_hit", 1}},
                                  json{{"min_pixel_count", 6}, {"min_peaks_for_hit", 1}},
                                  json{{"adc_threshold", 300.0}, {"min_peaks_for_hit", 1}},
                                  json{{"minimum_snr", 40.0}, {"min_peaks_for_hit", 1}}}) {
      json params = peaks::to_json(replay.peak_finding.params);
      params.update(candidate);
      after = search_offline(offline, detector, simulator.constants(),
                             peaks::parse_peak_params(params, "test"));
      if (after.found != before.found) {
        change = candidate;
        break;
      }
    }
    QVERIFY2(!change.is_null(), "no candidate change changes what is found");
    qInfo("the change: %s (%llu hits, %llu peaks before; %llu, %llu after)", change.dump().c_str(),
          (unsigned long long)before.hits, (unsigned long long)before.peaks,
          (unsigned long long)after.hits, (unsigned long long)after.peaks);

    protocol::Subscriber subscriber(publish, {std::string(protocol::kTopicPeaks)});
    ControlledJob job({"--config", config}, control, false);
    QVERIFY2(job.wait_for_status([](const json& s) { return s.at("state") == "finished"; }),
             qPrintable(job.output()));
    const json status = job.result("status");
    QCOMPARE(status.at("stats").at("events_processed").get<std::uint64_t>(), events);
    QCOMPARE(status.at("ranks").at("processing").size(), std::size_t(2));
    for (const json& rank : status.at("ranks").at("processing"))
      QCOMPARE(rank.at("state").get<std::string>(), std::string("finished"));

    // Refused once, on the collector, naming the parameter: no rank's finder changed (the
    // re-run below finds with version 1 on both).
    const json refused = job.request(
        "set_peak_params", {{"params", {{"min_pixel_count", 5}, {"max_pixel_count", 3}}}});
    QVERIFY(!refused.at("ok").get<bool>());
    const std::string error = refused.at("error").get<std::string>();
    QVERIFY2(error.find("request 'set_peak_params' refused") != std::string::npos &&
                 error.find("max_pixel_count") != std::string::npos,
             error.c_str());
    const json too_many = job.request("rerun_peaks", {{"frames", 17}});
    QVERIFY(!too_many.at("ok").get<bool>());
    QVERIFY2(
        too_many.at("error").get<std::string>().find("frames must be 1..16") != std::string::npos,
        too_many.dump().c_str());

    const json rerun = job.result("rerun_peaks");
    QVERIFY2(job.failure().isEmpty(), qPrintable(job.failure()));
    const QString first = compare_rerun(rerun, before, offline, 1);
    QVERIFY2(first.isEmpty(), qPrintable(first + "\n" + QString::fromStdString(rerun.dump())));
    // The newest hit of the re-run is published with rerun true.
    bool published = false;
    while (!published)
      if (auto message = subscriber.receive(1000ms)) {
        const protocol::EventPeaks peaks = protocol::peaks_from_message(*message);
        published = peaks.rerun && peaks.pulse_id == before.newest_hit_pulse;
      }

    const json changed = job.result("set_peak_params", {{"params", change}});
    QVERIFY2(job.failure().isEmpty(), qPrintable(job.failure()));
    QCOMPARE(changed.at("params_version").get<int>(), 2);
    for (const auto& [name, value] : change.items()) QCOMPARE(changed.at("params").at(name), value);
    QCOMPARE(changed.at("ranks").size(), std::size_t(2));
    for (const json& rank : changed.at("ranks")) QCOMPARE(rank.at("params_version").get<int>(), 2);
    QVERIFY(changed.at("missing_ranks").empty());
    const json in_force = job.result("get_config").at("config").at("peak_finding").at("params");
    for (const auto& [name, value] : change.items()) QCOMPARE(in_force.at(name), value);

    const json second_rerun = job.result("rerun_peaks");
    const QString second = compare_rerun(second_rerun, after, offline, 2);
    QVERIFY2(second.isEmpty(),
             qPrintable(second + "\n" + QString::fromStdString(second_rerun.dump())));

    // An apply that a rank cannot build changes no rank: refused naming each rank's reason, the
    // run number and the parameters in force unchanged.
    const std::int64_t run = status.at("run").get<std::int64_t>();
    const std::string missing = dir_.filePath("missing.h5").toStdString();
    const json unbuildable = job.request("apply", {{"config", {{"source", "replay:" + missing}}}});
    QVERIFY(!unbuildable.at("ok").get<bool>());
    const std::string why = unbuildable.at("error").get<std::string>();
    QVERIFY2(why.find("rank 1: ") != std::string::npos &&
                 why.find("rank 2: ") != std::string::npos &&
                 why.find(missing) != std::string::npos &&
                 why.find("no rank changed its run") != std::string::npos,
             why.c_str());
    QCOMPARE(job.result("status").at("run").get<std::int64_t>(), run);
    QCOMPARE(job.result("rerun_peaks").at("ranks")[1].at("params_version").get<int>(), 2);

    // An apply of the first parameters: a new run on every rank (the next run number), whose
    // merged totals are the offline search's with those parameters.
    const json applied = job.result(
        "apply",
        {{"config", {{"peak_finding", {{"params", peaks::to_json(replay.peak_finding.params)}}}}}});
    QVERIFY2(job.failure().isEmpty(), qPrintable(job.failure()));
    QCOMPARE(applied.at("run").get<std::int64_t>(), run + 1);
    QVERIFY2(applied.at("ranks") == json::array({1, 2}),
             (applied.at("ranks").dump() + applied.at("missing_ranks").dump()).c_str());
    QVERIFY(job.wait_for_status([&](const json& s) {
      return s.at("run") == run + 1 && s.at("state") == "finished" &&
             s.at("stats").at("events_processed") == events;
    }));
    const json second_run = job.result("status").at("stats");
    QCOMPARE(second_run.at("peak_finding").at("total_hits").get<std::uint64_t>(), before.hits);
    QCOMPARE(second_run.at("peak_finding").at("total_peaks").get<std::uint64_t>(), before.peaks);
    for (std::size_t k = 0; k < 2; ++k)
      QCOMPARE(second_run.at("ranks").at("processing")[k].at("events_in").get<std::uint64_t>(),
               share_size(events, k, 2));
    const json third_rerun = job.result("rerun_peaks");
    const QString third = compare_rerun(third_rerun, before, offline, 1);
    QVERIFY2(third.isEmpty(),
             qPrintable(third + "\n" + QString::fromStdString(third_rerun.dump())));

    const CliResult ended = job.shut_down();
    QVERIFY2(ended.exit_code == 0, qPrintable(ended.err + ended.out));
    QVERIFY2(ended.out.contains("events in: 9, processed: 9, dropped: 0"), qPrintable(ended.out));
  }

  // mpi.collector "processing": rank 0 answers for its own share as well, in the same replies.
  void a_processing_collector_answers_for_its_own_share_too() {
    const std::uint64_t events = 6;
    EngineConfig c = sim_config(events);
    c.hit_fraction = 1.0;
    c.mpi.collector = "processing";
    c.peak_finding = lp::live_config().peak_finding;
    c.peak_finding.recent_frames = 16;
    const std::string control = free_endpoint();
    const QString config = dir_.filePath("processing.json");
    write_json(config, c.to_json());
    ControlledJob job({"--config", config}, control, false);
    QVERIFY2(job.wait_for_status([](const json& s) { return s.at("state") == "finished"; }),
             qPrintable(job.output()));
    const std::int64_t run = job.result("status").at("run").get<std::int64_t>();
    const json rerun = job.result("rerun_peaks");
    QVERIFY2(job.failure().isEmpty(), qPrintable(job.failure()));
    QCOMPARE(rerun.at("frames").get<std::uint64_t>(), events);
    QCOMPARE(rerun.at("sequences"), json::array({0, 1, 2, 3, 4, 5}));
    QCOMPARE(rerun.at("ranks").size(), std::size_t(3));
    for (std::size_t k = 0; k < 3; ++k) {
      QCOMPARE(rerun.at("ranks")[k].at("rank").get<std::size_t>(), k);
      QCOMPARE(rerun.at("ranks")[k].at("frames").get<std::uint64_t>(), share_size(events, k, 3));
    }
    const json changed = job.result("set_peak_params", {{"params", {{"minimum_snr", 6.0}}}});
    QCOMPARE(changed.at("ranks").size(), std::size_t(3));
    for (const json& rank : changed.at("ranks")) QCOMPARE(rank.at("params_version").get<int>(), 2);
    // After the run: start is a new run, the same events on every rank again.
    const json started = job.result("start");
    QVERIFY2(job.failure().isEmpty(), qPrintable(job.failure()));
    QCOMPARE(started.at("started").get<bool>(), true);
    QCOMPARE(started.at("run").get<std::int64_t>(), run + 1);
    QVERIFY(job.wait_for_status([&](const json& s) {
      return s.at("run") == run + 1 && s.at("state") == "finished" &&
             s.at("stats").at("events_processed") == events;
    }));
    const CliResult ended = job.shut_down();
    QVERIFY2(ended.exit_code == 0, qPrintable(ended.err + ended.out));
  }

  // A rank killed while the run goes (the launcher told to let the others live on): requests
  // are answered by the rank still there, naming the lost one missing; an apply restarts the
  // rank still there on the next run without the lost one; stop ends it, its books balanced.
  void a_lost_rank_is_named_missing_and_stop_ends_every_other_rank() {
    EngineConfig c = sim_config(0);  // until stopped
    c.rate_hz = 20;
    c.simulator_pool = 2;
    c.hit_fraction = 1.0;
    c.peak_finding = lp::live_config().peak_finding;
    c.mpi.silent_after_s = 2;
    const std::string control = free_endpoint();
    const QString config = dir_.filePath("unbounded.json");
    write_json(config, c.to_json());
    ControlledJob job({"--config", config}, control, true);
    std::uint64_t pid = 0;
    QVERIFY2(job.wait_for_status([&](const json& s) {
      const json& ranks = s.at("ranks");
      if (ranks.is_null()) return false;
      const json& p = ranks.at("processing");
      if (p.size() != 2 || p[0].value("events_processed", 0) < 2 ||
          p[1].value("events_processed", 0) < 2)
        return false;
      pid = p[1].at("pid").get<std::uint64_t>();
      return true;
    }),
             qPrintable(job.output()));
    QVERIFY(pid > 0);
    ::kill(pid_t(pid), SIGKILL);
    QVERIFY2(job.wait_for_status([](const json& s) {
      return s.at("ranks").at("processing")[1].at("state") == "lost";
    }),
             qPrintable(job.output()));

    const json changed = job.result("set_peak_params", {{"params", {{"minimum_snr", 7.0}}}});
    QVERIFY2(job.failure().isEmpty(), qPrintable(job.failure()));
    QCOMPARE(changed.at("missing_ranks"), json::array({2}));
    QCOMPARE(changed.at("ranks").size(), std::size_t(1));
    QCOMPARE(changed.at("ranks")[0].at("rank").get<int>(), 1);
    QCOMPARE(changed.at("ranks")[0].at("params_version").get<int>(), 2);
    const json rerun = job.result("rerun_peaks");
    QCOMPARE(rerun.at("missing_ranks"), json::array({2}));
    QCOMPARE(rerun.at("ranks")[0].at("params_version").get<int>(), 2);

    // An apply while the run goes: the rank still there stops its run and starts the next one;
    // the lost rank takes no part and is named.
    const std::int64_t run = job.result("status").at("run").get<std::int64_t>();
    const json applied = job.result("apply", {{"config", {{"rate_hz", 30.0}}}});
    QVERIFY2(job.failure().isEmpty(), qPrintable(job.failure()));
    QCOMPARE(applied.at("ranks"), json::array({1}));
    QCOMPARE(applied.at("missing_ranks"), json::array({2}));
    QVERIFY2(job.wait_for_status([&](const json& s) {
      const json& ranks = s.at("stats").value("ranks", json());
      return s.at("run") == run + 1 && ranks.is_object() && ranks.at("processing").size() == 1 &&
             ranks.at("processing")[0].value("events_processed", 0) >= 2;
    }),
             qPrintable(job.output()));

    const json stopped = job.result("stop");
    QVERIFY2(job.failure().isEmpty(), qPrintable(job.failure()));
    const json& stats = stopped.at("stats");
    // The new run is rank 1's alone; it drained its run: the books balance.
    const json& ranks = stats.at("ranks").at("processing");
    QCOMPARE(ranks.size(), std::size_t(1));
    QCOMPARE(ranks[0].at("state").get<std::string>(), std::string("finished"));
    QCOMPARE(stats.at("events_in").get<std::uint64_t>(),
             stats.at("events_processed").get<std::uint64_t>() +
                 stats.at("events_dropped").get<std::uint64_t>());
    QVERIFY(stats.at("events_processed").get<std::uint64_t>() >= 2);
    QCOMPARE(stopped.at("state").get<std::string>(), std::string("finished"));
    QCOMPARE(stopped.at("run").get<std::int64_t>(), run + 1);
    // Everything this case checks is checked. mpirun's own teardown after a rank it lost may not
    // end (Open MPI prints "PMIX ERROR: BAD-PARAM" and waits; seen once in a full ctest -j2 run,
    // where Qt Test then aborted the suite at 300 s): a hang guard, not a speed limit, so the job
    // is left to the destructor (SIGTERM, then SIGKILL) when it has not ended after 120 s.
    if (!job.shut_down_within(120'000))
      qWarning("mpirun did not end within 120 s of shutdown after a lost rank; stopping it");
  }
#endif

 private:
  QTemporaryDir dir_;
};

QTEST_GUILESS_MAIN(TestMpiControl)
#include "test_mpi_control.moc"
