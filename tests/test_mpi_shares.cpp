// How the ranks of `mpirun -n 3 livedrp-engine run` take their events (issue 37, docs/mpi.md,
// "Sharing"), CPU backend: each rank its own input (mpi.inputs: its own replayed file, its own
// detector stream endpoint), processed in full; a common replay shared by pulse id; and the
// files each rank writes under names of its own. Merged profiles equal the mean over every event
// (calibrated and integrated here) within 1e-12 relative, and every published peak list is its
// event's list here. Skipped (QSKIP) when the build has no MPI.
#include <hdf5.h>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli_process.hpp"
#include "dectris_publisher_process.hpp"
#include "hit_file_support.hpp"
#include "live_integration_support.hpp"
#include "live_peaks_support.hpp"
#include "mpi_run_process.hpp"
#include "mpi_run_support.hpp"
#include "peaks/peak_params.hpp"
#include "protocol/control.hpp"
#include "protocol/control_client.hpp"
#include "replay/hdf5_event_file.hpp"

using namespace livedrp;

#ifdef LIVEDRP_TEST_MPIEXEC
namespace {

using namespace mpi_run_test;
using namespace hit_file_test;
namespace li = live_integration_test;
namespace lp = live_peaks_test;

// The simulator's distinct events the replayed files are made of.
constexpr std::uint64_t kPool = 3;

// What the suite computes once: the simulated events (calibrated here), their profiles and peak
// lists, and the engine configuration with integration and peak finding.
struct Reference {
  DetectorDescription detector = find_detector("epix10ka2m");
  ThreadPool pool{2};
  EngineConfig base;  // the simulator's run; every event a hit candidate
  std::unique_ptr<DetectorSimulator> simulator;
  lp::OfflineEvents events;  // simulator events 0 .. kPool - 1
  li::OfflineProfiles profiles;
  std::vector<peaks::PeakList> lists;
  EngineConfig replay;  // integration over every event, peak finding, flat out
};

// A replay file of the simulator's events `indices` with the pulse ids `pulses`, carrying the
// simulator's configuration (whose seed makes the calibration constants the replay uses).
void write_events(const std::string& path, const Reference& ref,
                  const std::vector<std::size_t>& indices,
                  const std::vector<std::uint64_t>& pulses) {
  replay::Hdf5EventWriter writer(path, ref.detector, replay::WriteLayout{},
                                 ref.base.to_json().dump());
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const EventHeader header{k, pulses[k],
                             1'767'225'600'000'000'000LL + std::int64_t(k) * 1'000'000};
    writer.append(header, ref.events.raw[indices[k]].data());
  }
  writer.close();
}

// Per bin, the mean of the finite values of the profiles of simulator events `indices`.
std::vector<double> mean_profile(const Reference& ref, const std::vector<std::size_t>& indices) {
  std::vector<double> mean(ref.profiles.centres.size());
  for (std::size_t b = 0; b < mean.size(); ++b) {
    double sum = 0;
    std::size_t count = 0;
    for (std::size_t index : indices)
      if (std::isfinite(ref.profiles.profiles[index][b])) {
        sum += ref.profiles.profiles[index][b];
        ++count;
      }
    mean[b] = count > 0 ? sum / double(count) : std::numeric_limits<double>::quiet_NaN();
  }
  return mean;
}

// Empty when the run's last merged profile averages `indices` (in any order) within 1e-12.
QString check_merged_profile(const MpiRun& run, const Reference& ref,
                             const std::vector<std::size_t>& indices) {
  if (run.profiles.empty()) return "no profile was published";
  const protocol::RadialProfile& last = run.profiles.back();
  if (last.average_events != indices.size())
    return QString("the merged profile averages %1 events, not %2")
        .arg(last.average_events)
        .arg(indices.size());
  if (last.centres != ref.profiles.centres) return "the merged profile's bins differ";
  const std::vector<double> expected = mean_profile(ref, indices);
  const long diff = li::first_difference(last.average, expected, 1e-12);
  if (diff < 0) return {};
  return QString("bin %1: merged %2, all events %3")
      .arg(diff)
      .arg(last.average[std::size_t(diff)], 0, 'g', 17)
      .arg(expected[std::size_t(diff)], 0, 'g', 17);
}

// The summary's processing rank `k` (0-based among the processing ranks).
const nlohmann::json& rank_summary(const nlohmann::json& summary, std::size_t k) {
  return summary.at("ranks").at("processing").at(k);
}

std::uint64_t hits_of(const Reference& ref, const std::vector<std::size_t>& indices) {
  std::uint64_t hits = 0;
  for (std::size_t index : indices) hits += ref.lists[index].hit ? 1 : 0;
  return hits;
}

// A profile series file (docs/formats.md, "Live profile series"): its rows' sequences, pulse
// ids and intensities.
struct ProfileFile {
  std::vector<std::uint64_t> sequences, pulses;
  std::vector<double> intensity;  // rows of npt
  bool ok = false;
};

ProfileFile read_profile_file(const QString& path) {
  ProfileFile out;
  const hid_t file = H5Fopen(path.toUtf8().constData(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) return out;
  const auto sequences =
      read_dataset<std::uint64_t>(file, "/entry/profiles/event_sequence", H5T_NATIVE_UINT64);
  const auto pulses =
      read_dataset<std::uint64_t>(file, "/entry/profiles/pulse_id", H5T_NATIVE_UINT64);
  const auto intensity = read_dataset<double>(file, "/entry/profiles/intensity", H5T_NATIVE_DOUBLE);
  H5Fclose(file);
  out.ok = sequences.ok && pulses.ok && intensity.ok;
  out.sequences = sequences.values;
  out.pulses = pulses.values;
  out.intensity = intensity.values;
  return out;
}

// The hit count of a CXI hit file (its nPeaks rows), -1 when it cannot be read.
long hit_rows(const QString& path) {
  const hid_t file = H5Fopen(path.toUtf8().constData(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) return -1;
  const auto n_peaks =
      read_dataset<std::int32_t>(file, "/entry_1/result_1/nPeaks", H5T_NATIVE_INT32);
  H5Fclose(file);
  return n_peaks.ok ? long(n_peaks.values.size()) : -1;
}

// The reply to control request `name` from a job's collector; sent again until its socket is
// bound and answers, or the job has ended.
nlohmann::json control_request(protocol::ControlClient& client, const QProcess& job,
                               const std::string& name,
                               const nlohmann::json& fields = nlohmann::json::object()) {
  for (;;) {
    try {
      return client.request(protocol::make_control_request(name, fields));
    } catch (const protocol::ProtocolError& e) {
      if (job.state() == QProcess::NotRunning)
        return {{"ok", false}, {"error", std::string("job ended: ") + e.what()}};
    }
  }
}

}  // namespace
#endif

class TestMpiShares : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
#ifndef LIVEDRP_TEST_MPIEXEC
    QSKIP(
        "this build has no MPI run or no launcher: CMake found no MPI library or no mpiexec "
        "(install libopenmpi-dev and openmpi-bin, or MPICH, and configure again)");
#else
    QVERIFY(dir_.isValid());
    ref_ = std::make_unique<Reference>();
    Reference& ref = *ref_;
    ref.base = sim_config(kPool);
    ref.base.hit_fraction = 1.0;
    ref.base.simulator_pool = int(kPool);
    ref.simulator = std::make_unique<DetectorSimulator>(lp::engine_simulator(ref.base, ref.pool));
    ref.events = lp::offline_events(ref.base, *ref.simulator, ref.pool);
    const EngineConfig integration =
        li::live_config(li::write_poni(dir_, ref.detector, ref.simulator->powder_geometry()),
                        li::write_mask(dir_, ref.detector));
    ref.replay = ref.base;
    ref.replay.events = 0;  // every event of the files
    ref.replay.replay.pace = "flat_out";
    ref.replay.integration = integration.integration;
    ref.replay.integration.average_events = 64;
    ref.replay.integration.publish_hz = 100;
    ref.replay.peak_finding = lp::live_config().peak_finding;
    EngineConfig offline = ref.replay;
    offline.events = kPool;  // simulator events 0 .. kPool - 1, one each
    ref.profiles = li::offline_profiles(offline, *ref.simulator, ref.pool);
    peaks::PeakFinder8 finder = lp::independent_finder(ref.detector, ref.simulator->constants(),
                                                       ref.replay.peak_finding.params);
    for (const std::vector<float>& calibrated : ref.events.calibrated)
      ref.lists.push_back(finder.find(calibrated.data()));
    QVERIFY2(hits_of(ref, {0, 1, 2}) > 1, "the simulated events must have more than one hit");
#endif
  }

#ifdef LIVEDRP_TEST_MPIEXEC
  // mpi.inputs: rank 1 replays one file, rank 2 another, each in full; the merged totals are the
  // sums, the merged profile the mean over both files' events, and each published peak list is
  // its event's, found by its sequence: local index * 2 + share (rank 1's share is 0).
  void each_rank_replays_its_own_input_in_full() {
    const Reference& ref = *ref_;
    const std::vector<std::size_t> a{0, 1, 2, 0, 1}, b{2, 2, 1, 0};
    const std::vector<std::uint64_t> a_pulses{100, 101, 102, 103, 104},
        b_pulses{200, 201, 202, 203};
    const QString file_a = dir_.filePath("own_a.h5"), file_b = dir_.filePath("own_b.h5");
    write_events(file_a.toStdString(), ref, a, a_pulses);
    write_events(file_b.toStdString(), ref, b, b_pulses);
    EngineConfig c = ref.replay;
    c.mpi.inputs = {"replay:" + file_a.toStdString(), "replay:" + file_b.toStdString()};
    const std::string endpoint = free_endpoint();
    c.publish = endpoint;
    const QString config = dir_.filePath("own.json"), summary = dir_.filePath("own_summary.json");
    write_json(config, c.to_json());
    const MpiRun run = run_mpi({"--config", config, "--summary-json", summary}, endpoint);
    QVERIFY2(run.result.exit_code == 0, qPrintable(run.result.err + run.result.out));
    QVERIFY2(run.result.err.contains("2 take their own inputs (mpi.inputs)"),
             qPrintable(run.result.err));

    const nlohmann::json merged = read_json(summary);
    for (std::size_t k = 0; k < 2; ++k) {
      const nlohmann::json& r = rank_summary(merged, k);
      QCOMPARE(r.at("rank").get<std::uint64_t>(), std::uint64_t(k + 1));
      QCOMPARE(r.at("state").get<std::string>(), std::string("finished"));
      const std::size_t expected = k == 0 ? a.size() : b.size();
      QCOMPARE(r.at("events_in").get<std::size_t>(), expected);
      QCOMPARE(r.at("events_processed").get<std::size_t>(), expected);
    }
    QCOMPARE(merged.at("events_in").get<std::size_t>(), a.size() + b.size());
    QCOMPARE(merged.at("events_processed").get<std::size_t>(), a.size() + b.size());
    QCOMPARE(merged.at("events_dropped").get<std::size_t>(), std::size_t(0));

    std::vector<std::size_t> all = a;
    all.insert(all.end(), b.begin(), b.end());
    const QString profile = check_merged_profile(run, ref, all);
    QVERIFY2(profile.isEmpty(), qPrintable(profile));
    QCOMPARE(merged.at("peak_finding").at("hits").get<std::uint64_t>(), hits_of(ref, all));

    QVERIFY(!run.peaks.empty());
    const ImageAssembly assembly(ref.detector);
    bool from_rank[2] = {false, false};
    for (const protocol::EventPeaks& published : run.peaks) {
      const std::size_t share = published.sequence % 2, local = published.sequence / 2;
      const std::vector<std::size_t>& indices = share == 0 ? a : b;
      const std::vector<std::uint64_t>& pulses = share == 0 ? a_pulses : b_pulses;
      QVERIFY2(local < indices.size(), qPrintable(QString::number(published.sequence)));
      QCOMPARE(published.pulse_id, pulses[local]);
      const QString difference = lp::compare_list(published, ref.lists[indices[local]], assembly);
      QVERIFY2(difference.isEmpty(),
               qPrintable(QString("event %1: %2").arg(published.sequence).arg(difference)));
      from_rank[share] = true;
    }
    // The newest hit over the ranks is by pulse id: file b's pulses are the higher.
    QVERIFY(from_rank[1]);
    QCOMPARE(run.peaks.back().pulse_id / 100, std::uint64_t(2));
  }

  // mpi.share_by "pulse_id": a common replay whose pulse ids have gaps is shared by pulse id
  // modulo the 2 processing ranks, not by the events' places in the file (which would give 3
  // and 3).
  void a_common_replay_is_shared_by_pulse_id() {
    const Reference& ref = *ref_;
    const std::vector<std::size_t> indices{0, 1, 2, 0, 1, 2};
    const std::vector<std::uint64_t> pulses{10, 12, 15, 16, 18, 20};
    const QString file = dir_.filePath("pulses.h5");
    write_events(file.toStdString(), ref, indices, pulses);
    EngineConfig c = ref.replay;
    c.source = "replay:" + file.toStdString();
    c.mpi.share_by = "pulse_id";
    const std::string endpoint = free_endpoint();
    c.publish = endpoint;
    const QString config = dir_.filePath("pulses.json"),
                  summary = dir_.filePath("pulses_summary.json");
    write_json(config, c.to_json());
    const MpiRun run = run_mpi({"--config", config, "--summary-json", summary}, endpoint);
    QVERIFY2(run.result.exit_code == 0, qPrintable(run.result.err + run.result.out));
    QVERIFY2(run.result.err.contains("by pulse_id"), qPrintable(run.result.err));
    const nlohmann::json merged = read_json(summary);
    // Even pulse ids (10, 12, 16, 18, 20) to rank 1, odd (15) to rank 2.
    QCOMPARE(rank_summary(merged, 0).at("events_processed").get<std::uint64_t>(), std::uint64_t(5));
    QCOMPARE(rank_summary(merged, 1).at("events_processed").get<std::uint64_t>(), std::uint64_t(1));
    QCOMPARE(merged.at("events_processed").get<std::size_t>(), indices.size());
    const QString profile = check_merged_profile(run, ref, indices);
    QVERIFY2(profile.isEmpty(), qPrintable(profile));
    QCOMPARE(merged.at("peak_finding").at("hits").get<std::uint64_t>(), hits_of(ref, indices));
    // Sequences are the events' places in the file, as one engine gives them.
    const ImageAssembly assembly(ref.detector);
    QVERIFY(!run.peaks.empty());
    for (const protocol::EventPeaks& published : run.peaks) {
      QVERIFY(published.sequence < indices.size());
      QCOMPARE(published.pulse_id, pulses[published.sequence]);
      const QString difference =
          lp::compare_list(published, ref.lists[indices[published.sequence]], assembly);
      QVERIFY2(difference.isEmpty(), qPrintable(difference));
    }
  }

  // write.* and --record under MPI: every processing rank writes its own files, named for its
  // rank (profiles.rank001.h5, run0001-rank001-hits-000.cxi, run0001-rank001-000.h5); the
  // configured names are written by no one. Each rank's profile file holds its share's events
  // (event index: rank 1 takes 0, 2, 4) with their profiles.
  void each_rank_writes_files_of_its_own() {
    const Reference& ref = *ref_;
    const std::vector<std::size_t> indices{0, 1, 2, 1, 0};
    const std::vector<std::uint64_t> pulses{50, 51, 52, 53, 54};
    const QString file = dir_.filePath("written.h5");
    write_events(file.toStdString(), ref, indices, pulses);
    QDir(dir_.path()).mkdir("out");
    const QString out = dir_.filePath("out");
    EngineConfig c = ref.replay;
    c.source = "replay:" + file.toStdString();
    c.write.profiles = (out + "/profiles.h5").toStdString();
    c.write.hits_directory = (out + "/hits").toStdString();
    c.record.directory = (out + "/recorded").toStdString();
    const QString config = dir_.filePath("written.json");
    write_json(config, c.to_json());
    const MpiRun run = run_mpi({"--config", config}, "");
    QVERIFY2(run.result.exit_code == 0, qPrintable(run.result.err + run.result.out));

    QVERIFY(!QFile::exists(out + "/profiles.h5"));
    QVERIFY(!QFile::exists(out + "/hits/run0001-hits-000.cxi"));
    QVERIFY(!QFile::exists(out + "/recorded/run0001-000.h5"));
    const std::size_t bins = ref.profiles.centres.size();
    for (int rank = 1; rank <= 2; ++rank) {
      const QString tag = QString("rank%1").arg(rank, 3, 10, QChar('0'));
      const ProfileFile profiles = read_profile_file(out + "/profiles." + tag + ".h5");
      QVERIFY2(profiles.ok, qPrintable(tag));
      std::vector<std::uint64_t> sequences;
      std::vector<std::size_t> share;
      for (std::uint64_t s = std::uint64_t(rank - 1); s < indices.size(); s += 2) {
        sequences.push_back(s);
        share.push_back(indices[s]);
      }
      QCOMPARE(profiles.sequences, sequences);
      for (std::size_t k = 0; k < sequences.size(); ++k) {
        QCOMPARE(profiles.pulses[k], pulses[sequences[k]]);
        const std::vector<double> row(profiles.intensity.begin() + long(k * bins),
                                      profiles.intensity.begin() + long((k + 1) * bins));
        QCOMPARE(li::first_difference(row, ref.profiles.profiles[share[k]], 1e-12), -1L);
      }
      QCOMPARE(hit_rows(out + "/hits/run0001-" + tag + "-hits-000.cxi"), long(hits_of(ref, share)));
      const QString recorded = out + "/recorded/run0001-" + tag + "-000.h5";
      QVERIFY2(QFile::exists(recorded), qPrintable(recorded));
      const replay::EventFileInfo info =
          replay::Hdf5EventReader::inspect(recorded.toStdString(), replay::kDefaultDataset);
      QCOMPARE(info.events, std::uint64_t(share.size()));
    }
  }

  // A new run started by an apply (--control on the collector) writes the next segment of each
  // rank's names (profiles.rank001.seg002.h5), with its share's events again, instead of being
  // refused for the names the first run wrote.
  void an_applied_run_writes_the_next_segment_of_each_ranks_files() {
    const Reference& ref = *ref_;
    const std::vector<std::size_t> indices{2, 0, 1};
    const std::vector<std::uint64_t> pulses{70, 71, 72};
    const QString file = dir_.filePath("segments.h5");
    write_events(file.toStdString(), ref, indices, pulses);
    QDir(dir_.path()).mkdir("segments");
    const QString out = dir_.filePath("segments");
    EngineConfig c = ref.replay;
    c.source = "replay:" + file.toStdString();
    c.write.profiles = (out + "/profiles.h5").toStdString();
    const QString config = dir_.filePath("segments.json");
    write_json(config, c.to_json());
    const std::string control = free_endpoint();
    const QString mpirun = QStringLiteral(LIVEDRP_TEST_MPIEXEC);
    QProcess job;
    job.setProcessEnvironment(mpirun_environment());
    job.start(mpirun, mpirun_arguments(mpirun, false)
                          << cli_executable("LIVEDRP_ENGINE_EXE") << "run"
                          << "--config" << config << "--control"
                          << QString::fromStdString(control));
    protocol::ControlClient client(control);
    const auto finished_run = [&](std::int64_t run) {
      while (job.state() != QProcess::NotRunning) {
        const nlohmann::json reply = control_request(client, job, "status");
        if (reply.value("ok", false) && reply.at("result").at("run") == run &&
            reply.at("result").at("state") == "finished")
          return true;
      }
      return false;
    };
    QVERIFY2(finished_run(1), qPrintable(QString::fromUtf8(job.readAllStandardError())));
    const nlohmann::json applied = control_request(client, job, "apply",
                                                   {{ "config",
                                                      {
                                                        { "peak_finding",
                                                          { {
                                                            "params",
                                                            peaks::to_json(c.peak_finding.params)
                                                          } } }
                                                      } }});
    QVERIFY2(applied.value("ok", false), applied.dump().c_str());
    QCOMPARE(applied.at("result").at("run").get<std::int64_t>(), std::int64_t(2));
    QVERIFY(finished_run(2));
    control_request(client, job, "shutdown");
    QVERIFY(job.waitForFinished(120'000));
    QVERIFY2(job.exitCode() == 0, qPrintable(QString::fromUtf8(job.readAllStandardError())));

    QVERIFY(!QFile::exists(out + "/profiles.h5"));
    for (int rank = 1; rank <= 2; ++rank) {
      const QString tag = QString("rank%1").arg(rank, 3, 10, QChar('0'));
      std::vector<std::uint64_t> sequences;
      for (std::uint64_t s = std::uint64_t(rank - 1); s < indices.size(); s += 2)
        sequences.push_back(s);
      for (const QString& name :
           {out + "/profiles." + tag + ".h5", out + "/profiles." + tag + ".seg002.h5"}) {
        const ProfileFile profiles = read_profile_file(name);
        QVERIFY2(profiles.ok, qPrintable(name));
        QCOMPARE(profiles.sequences, sequences);
      }
    }
  }

  // mpi.inputs with a live stream each: two stand-in Dectris detectors, one per processing rank,
  // each rank taking every image of its own (events counts each rank's).
  void each_rank_takes_its_own_stream_endpoint() {
    const std::uint64_t images = 6;
    QProcess detector_a, detector_b;
    QStringList arguments{"--source", "poisson:64x48",         "--dtype", "uint32",
                          "--images", QString::number(images), "--rate",  "0"};
    const std::string a = livedrp::testing::start_dectris_publisher(detector_a, arguments);
    const std::string b = livedrp::testing::start_dectris_publisher(detector_b, arguments);
    QVERIFY2(!a.empty() && !b.empty(),
             qPrintable(detector_a.readAllStandardError() + detector_b.readAllStandardError()));
    EngineConfig c = sim_config(images);
    c.mpi.inputs = {"dectris:" + a, "dectris:" + b};
    const QString config = dir_.filePath("streams.json"),
                  summary = dir_.filePath("streams_summary.json");
    write_json(config, c.to_json());
    const MpiRun run = run_mpi({"--config", config, "--summary-json", summary}, "");
    QVERIFY2(run.result.exit_code == 0, qPrintable(run.result.err + run.result.out));
    const nlohmann::json merged = read_json(summary);
    for (std::size_t k = 0; k < 2; ++k) {
      QCOMPARE(rank_summary(merged, k).at("events_in").get<std::uint64_t>(), images);
      QCOMPARE(rank_summary(merged, k).at("events_processed").get<std::uint64_t>(), images);
    }
    QCOMPARE(merged.at("events_processed").get<std::uint64_t>(), 2 * images);
    QVERIFY(detector_a.waitForFinished(60000) && detector_b.waitForFinished(60000));
    QCOMPARE(detector_a.exitCode(), 0);
    QCOMPARE(detector_b.exitCode(), 0);
  }

  // mpi.inputs is checked once at start-up: its length against the processing ranks (said by
  // rank 0 alone), each entry's file by the rank that opens it, naming the entry.
  void per_rank_inputs_are_checked_at_start_up_naming_what_is_wrong() {
    const QString config = dir_.filePath("bad_inputs.json");
    nlohmann::json json = sim_config(2).to_json();
    json["mpi"] = {{ "inputs", { "sim:epix10ka2m", "sim:epix10ka2m", "sim:epix10ka2m" } }};
    write_json(config, json);
    CliResult r = run_mpi({"--config", config}, "").result;
    EXPECT_BAD_INPUT(r,
                     "rank 0: mpi.inputs lists 3 sources but the run has 2 processing ranks "
                     "(ranks 1 to 2) with mpi.collector \"dedicated\"");
    QVERIFY2(!r.err.contains("rank 1:") && !r.err.contains("rank 2:"), qPrintable(r.err));
    json["mpi"]["collector"] = "processing";
    json["mpi"]["inputs"] = {"sim:epix10ka2m", "sim:epix10ka2m"};
    write_json(config, json);
    EXPECT_BAD_INPUT(run_mpi({"--config", config}, "").result,
                     "mpi.inputs lists 2 sources but the run has 3 processing ranks (ranks 0 "
                     "to 2)");

    const std::string missing = dir_.filePath("missing.h5").toStdString();
    json["mpi"] = {{ "inputs", { "sim:epix10ka2m", "replay:" + missing } }};
    write_json(config, json);
    r = run_mpi({"--config", config}, "").result;
    EXPECT_BAD_INPUT(r, QString::fromStdString("rank 2: mpi.inputs[1] 'replay:" + missing +
                                               "': HDF5 file " + missing + " does not exist"));
    QVERIFY2(!r.err.contains("rank 1:"), qPrintable(r.err));

    json["mpi"] = {{ "inputs", { "sim:epix10ka2m", "sim:epix10ka2m" } }};
    write_json(config, json);
    EXPECT_BAD_INPUT(run_mpi({"--config", config, "--source", "sim:jungfrau4m"}, "").result,
                     "--source 'sim:jungfrau4m' and mpi.inputs both name the run's input");
    // A live stream as the common source: each rank needs its own endpoint.
    EXPECT_BAD_INPUT(run_mpi({"--source", "dectris:tcp://127.0.0.1:45997", "--stream-detector",
                              "eiger2x4m", "--publish", ""},
                             "")
                         .result,
                     "give each processing rank its own stream endpoint with mpi.inputs");
  }
#endif

 private:
  QTemporaryDir dir_;
#ifdef LIVEDRP_TEST_MPIEXEC
  std::unique_ptr<Reference> ref_;
#endif
};

QTEST_GUILESS_MAIN(TestMpiShares)
#include "test_mpi_shares.moc"
