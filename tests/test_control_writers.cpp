// The live writers of a controlled run (issue 36; docs/formats.md, "Segments of a controlled run"):
// `livedrp-engine run --control` with hit files, a profile series and an average image, started,
// restarted by an `apply` that changes a peakfinder8 parameter (same writer paths), and shut down.
// The first run keeps the configured names, the restarted one writes segment 2's
// (profiles.seg002.h5, run0002-seg002-hits-000.cxi, ...); each file holds exactly the events its
// run processed (rows, hit frames, averaged events against the run's processed and hit counts),
// in order, and carries its own run's configuration; the control `status` reply and the summary
// printed after the session (stdout and --summary-json) list every segment's writers. A file that
// exists for any other reason than an earlier segment of this engine is still refused, naming it,
// and a refused restart removes the files it had created.
#include <hdf5.h>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"
#include "core/error.hpp"
#include "exec/engine_controller.hpp"
#include "hit_file_support.hpp"
#include "live_integration_support.hpp"
#include "protocol/control_client.hpp"
#include "sim/simulator_settings.hpp"

using namespace livedrp;
using namespace livedrp::hit_file_test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kHitsPerFile = 2;
constexpr int kMinPeaksFirst = 2, kMinPeaksChanged = 3;  // the parameter the restart changes
constexpr std::uint64_t kEventsPerRun = 4;               // at least, before the next request
// A control reply waits for an engine to be built (and the old run drained): generous on a
// 2-core machine that also builds; a reply that does not come is a failure, not a wait.
constexpr auto kReplyTimeout = std::chrono::milliseconds(600000);

struct Fixture {
  QTemporaryDir dir;
  EngineConfig config;  // hits, profiles and average on; peak finding and integration on
  std::string hits_dir, profiles_file, average_file;
};

Fixture* fixture = nullptr;

// Waits until `condition` holds (polled every 20 ms); no time limit: the test function's watchdog
// is the limit.
void wait_until(const std::function<bool()>& condition) {
  while (!condition()) std::this_thread::sleep_for(20ms);
}

std::uint64_t processed(const json& status) {
  return status.at("stats").at("events_processed").get<std::uint64_t>();
}

std::string in_dir(const std::string& name) {
  return (std::filesystem::path(fixture->hits_dir) / name).string();
}

// The pipeline configuration a file carries.
json stored_config(const std::string& path) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) return json();
  const std::string text = read_string_attribute(file, "/", "pipeline_config");
  H5Fclose(file);
  return json::parse(text, nullptr, false);
}

// Empty when `values` strictly increase.
QString strictly_increasing(const std::vector<std::uint64_t>& values, const std::string& what) {
  for (std::size_t i = 1; i < values.size(); ++i)
    if (values[i] <= values[i - 1])
      return QString::fromStdString(what + ": row " + std::to_string(i) + " is " +
                                    std::to_string(values[i]) + " after " +
                                    std::to_string(values[i - 1]));
  return {};
}

}  // namespace

class TestControlWriters : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    fixture = new Fixture;
    Fixture& f = *fixture;
    QVERIFY(f.dir.isValid());
    const DetectorDescription detector = find_detector("epix10ka2m");
    EngineConfig& c = f.config;
    c.source = "sim:epix10ka2m";
    c.backend = "cpu";
    c.publish = "";
    c.cpu_threads = 2;
    c.events = 0;  // until stopped
    c.rate_hz = 10;
    c.full_ring = "wait";
    c.stats_interval_s = 0.1;
    c.simulator_pool = 4;  // generating events is slow on a 2-core machine
    c.simulator_pool_selection = "hit_fraction";
    c.hit_fraction = 0.5;
    c.peak_finding.enabled = true;
    c.peak_finding.params.min_peaks_for_hit = kMinPeaksFirst;
    c.image.publish_hz = 0;
    ThreadPool pool(2);
    const DetectorSimulator simulator = live_integration_test::engine_simulator(detector, pool);
    c.integration.enabled = true;
    c.integration.poni =
        live_integration_test::write_poni(f.dir, detector, simulator.powder_geometry());
    c.integration.npt = 100;
    f.hits_dir = f.dir.filePath("hits").toStdString();
    f.profiles_file = f.dir.filePath("profiles.h5").toStdString();
    f.average_file = f.dir.filePath("average.h5").toStdString();
    // Every event reaches the writers (the run is paced, so "auto" would drop when they lag).
    c.write.when_full = "wait";
  }

  void cleanupTestCase() {
    delete fixture;
    fixture = nullptr;
  }

  // start -> apply (min_peaks_for_hit changed; same run paths) -> shutdown, through the control
  // socket of `livedrp-engine run --control`.
  void a_restart_writes_the_next_segment_and_the_summary_lists_both() {
    Fixture& f = *fixture;
    const std::string config_file = f.dir.filePath("restart.json").toStdString();
    std::ofstream(config_file) << f.config.to_json().dump(2);
    const QString summary_file = f.dir.filePath("restart-summary.json");
    QProcess process;
    process.start(cli_executable("LIVEDRP_ENGINE_EXE"),
                  {"run", "--config", QString::fromStdString(config_file), "--control",
                   "tcp://127.0.0.1:*", "--write-hits", QString::fromStdString(f.hits_dir),
                   "--hits-per-file", QString::number(kHitsPerFile), "--write-profiles",
                   QString::fromStdString(f.profiles_file), "--write-average",
                   QString::fromStdString(f.average_file), "--summary-json", summary_file});
    QVERIFY(process.waitForStarted());
    process.setReadChannel(QProcess::StandardError);
    QString err;
    const QString endpoint = await_control_endpoint(process, err);
    QVERIFY2(!endpoint.isEmpty(), qPrintable(err));
    protocol::ControlClient client(endpoint.toStdString());

    // Run 1 (segment 1): the configured names.
    json status;
    wait_until([&] {
      status = client.status(kReplyTimeout);
      return processed(status) >= kEventsPerRun;
    });
    QCOMPARE(status.at("run").get<int>(), 1);
    QCOMPARE(status.at("write").at("profiles").at("files"), json::array({f.profiles_file}));
    QCOMPARE(status.at("write").at("hits").at("files").at(0).get<std::string>(),
             in_dir("run0001-hits-000.cxi"));
    QCOMPARE(status.at("config").at("write").at("segment").get<int>(), 1);

    // The restart: a peak parameter changes, the write paths do not.
    const json applied = client.apply(
        {{"peak_finding", {{"params", {{"min_peaks_for_hit", kMinPeaksChanged}}}}}}, kReplyTimeout);
    QVERIFY2(applied.at("restarted").get<bool>(),
             qPrintable(QString::fromStdString(applied.dump())));
    QCOMPARE(applied.at("run").get<int>(), 2);
    QCOMPARE(applied.at("config").at("write").at("segment").get<int>(), 2);
    QCOMPARE(applied.at("config").at("write").at("profiles").get<std::string>(), f.profiles_file);

    // Run 2 (segment 2): the derived names, reported by status.
    const std::string profiles2 = f.dir.filePath("profiles.seg002.h5").toStdString();
    const std::string average2 = f.dir.filePath("average.seg002.h5").toStdString();
    wait_until([&] {
      status = client.status(kReplyTimeout);
      return status.at("run").get<int>() == 2 && processed(status) >= kEventsPerRun;
    });
    QCOMPARE(status.at("write").at("profiles").at("files"), json::array({profiles2}));
    QCOMPARE(status.at("write").at("average").at("files"), json::array({average2}));
    QCOMPARE(status.at("write").at("hits").at("files").at(0).get<std::string>(),
             in_dir("run0002-seg002-hits-000.cxi"));
    const json& listed = status.at("write_segments");
    QCOMPARE(listed.size(), std::size_t(2));
    QCOMPARE(listed[0].at("segment").get<int>(), 1);
    QCOMPARE(listed[0].at("write").at("profiles").at("files"), json::array({f.profiles_file}));
    QCOMPARE(listed[1].at("segment").get<int>(), 2);
    QCOMPARE(listed[1].at("run").get<int>(), 2);

    client.shutdown(kReplyTimeout);
    QVERIFY(process.waitForFinished(-1));
    err += QString::fromUtf8(process.readAllStandardError());
    const QString out = QString::fromUtf8(process.readAllStandardOutput());
    QVERIFY2(process.exitStatus() == QProcess::NormalExit && process.exitCode() == 0,
             qPrintable(err + out));

    // The summary: every segment's writers, with the run's processed and hit counts.
    std::ifstream in(summary_file.toStdString());
    const json summary = json::parse(in);
    const json& segments = summary.at("write_segments");
    QCOMPARE(segments.size(), std::size_t(2));
    QVERIFY2(out.contains("writers of run 1 (segment 1") &&
                 out.contains("writers of run 2 (segment 2") &&
                 out.contains(QString::fromStdString(profiles2)),
             qPrintable(out));
    // "write" is the last segment's writers, as a plain run's summary has them.
    QVERIFY2(summary.at("write") == segments[1].at("write"),
             qPrintable(QString::fromStdString(summary.at("write").dump() + " against " +
                                               segments[1].dump())));

    const struct {
      int run, segment, min_peaks;
      std::string profiles, average, first_hit_file;
    } expected[2] = {
        {1, 1, kMinPeaksFirst, f.profiles_file, f.average_file, in_dir("run0001-hits-000.cxi")},
        {2, 2, kMinPeaksChanged, profiles2, average2, in_dir("run0002-seg002-hits-000.cxi")}};
    const peaks::SlabLayout slab = peaks::slab_layout(find_detector("epix10ka2m"));
    for (int k = 0; k < 2; ++k) {
      const auto& e = expected[k];
      const json& s = segments[std::size_t(k)];
      const json& w = s.at("write");
      QCOMPARE(s.at("run").get<int>(), e.run);
      QCOMPARE(s.at("segment").get<int>(), e.segment);
      const std::uint64_t events = s.at("events_processed").get<std::uint64_t>();
      const std::uint64_t hits = s.at("hits").get<std::uint64_t>();
      QVERIFY(events >= kEventsPerRun);
      for (const char* writer : {"hits", "profiles", "average"}) {
        QCOMPARE(w.at(writer).at("dropped").get<std::uint64_t>(), std::uint64_t(0));
        QCOMPARE(w.at(writer).at("failed").get<std::uint64_t>(), std::uint64_t(0));
      }
      QCOMPARE(w.at("profiles").at("written").get<std::uint64_t>(), events);
      QCOMPARE(w.at("hits").at("written").get<std::uint64_t>(), hits);
      QCOMPARE(w.at("profiles").at("files"), json::array({e.profiles}));
      QCOMPARE(w.at("average").at("files"), json::array({e.average}));
      QCOMPARE(w.at("hits").at("files").at(0).get<std::string>(), e.first_hit_file);

      // The profile series: one row per processed event, in order.
      const hid_t file = H5Fopen(e.profiles.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      QVERIFY2(file >= 0, e.profiles.c_str());
      const auto intensity =
          read_dataset<double>(file, "/entry/profiles/intensity", H5T_NATIVE_DOUBLE);
      const auto pulse =
          read_dataset<std::uint64_t>(file, "/entry/profiles/pulse_id", H5T_NATIVE_UINT64);
      const auto sequence =
          read_dataset<std::uint64_t>(file, "/entry/profiles/event_sequence", H5T_NATIVE_UINT64);
      H5Fclose(file);
      QVERIFY(intensity.ok && pulse.ok && sequence.ok);
      QCOMPARE(intensity.shape,
               (std::vector<hsize_t>{events, hsize_t(fixture->config.integration.npt)}));
      QCOMPARE(pulse.values.size(), std::size_t(events));
      const QString order = strictly_increasing(pulse.values, e.profiles + " pulse_id");
      QVERIFY2(order.isEmpty(), qPrintable(order));
      for (std::uint64_t i = 0; i < events; ++i) QCOMPARE(sequence.values[i], i);

      // The hit files: exactly the run's hits, kHitsPerFile a file, in order.
      std::vector<std::uint64_t> hit_pulses;
      for (const json& name : w.at("hits").at("files")) {
        QString problem;
        const std::vector<HitFrame> frames =
            read_hit_frames(name.get<std::string>(), hsize_t(slab.height), hsize_t(slab.width),
                            hsize_t(fixture->config.peak_finding.params.max_num_peaks), problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QVERIFY(frames.size() <= kHitsPerFile);
        for (const HitFrame& frame : frames) {
          QVERIFY(frame.n_peaks >= e.min_peaks);  // a hit under this run's parameter
          hit_pulses.push_back(frame.pulse_id);
        }
        QCOMPARE(stored_config(name.get<std::string>())
                     .at("peak_finding")
                     .at("params")
                     .at("min_peaks_for_hit")
                     .get<int>(),
                 e.min_peaks);
      }
      QCOMPARE(hit_pulses.size(), std::size_t(hits));
      const QString hit_order = strictly_increasing(hit_pulses, e.first_hit_file + " pulse_id");
      QVERIFY2(hit_order.isEmpty(), qPrintable(hit_order));

      // The average: every processed event.
      const hid_t average = H5Fopen(e.average.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      QVERIFY2(average >= 0, e.average.c_str());
      const auto averaged =
          read_dataset<std::uint64_t>(average, "/entry/average/events", H5T_NATIVE_UINT64);
      H5Fclose(average);
      QVERIFY(averaged.ok);
      QCOMPARE(averaged.values.at(0), events);

      // Each file carries its own run's configuration: the parameter as that run had it, the
      // configured paths, and the segment.
      for (const std::string& path : {e.profiles, e.average, e.first_hit_file}) {
        const json stored = stored_config(path);
        QVERIFY2(stored.is_object(), path.c_str());
        QCOMPARE(stored.at("run").get<int>(), e.run);
        QCOMPARE(stored.at("peak_finding").at("params").at("min_peaks_for_hit").get<int>(),
                 e.min_peaks);
        QCOMPARE(stored.at("write").at("segment").get<int>(), e.segment);
        QCOMPARE(stored.at("write").at("profiles").get<std::string>(), f.profiles_file);
      }
    }
    // The first run had hits, so its hit files were rolled and named as a plain run's.
    QVERIFY(segments[0].at("write").at("hits").at("written").get<std::uint64_t>() > 0);
  }

  // A file at a configured or derived name that this engine did not write is refused, naming it:
  // when the engine is set up, and on a restart, which then leaves the running run as it was and
  // removes what the refused set-up had created. An engine replaced before it started leaves no
  // files behind.
  void a_file_from_elsewhere_is_still_refused_naming_it() {
    Fixture& f = *fixture;
    EngineConfig c = f.config;
    c.write.hits_directory = f.dir.filePath("refused-hits").toStdString();
    c.write.profiles = f.dir.filePath("foreign.h5").toStdString();
    std::ofstream(c.write.profiles) << "an earlier engine's file";
    try {
      EngineController refused(c);
      QFAIL("a configured profile file that exists was accepted");
    } catch (const InputError& e) {
      const QString message = e.what();
      QVERIFY2(message.contains(QString::fromStdString(c.write.profiles)) &&
                   message.contains("it exists"),
               e.what());
    }
    // The refused set-up created the run's first hit file before the profile file: removed.
    QVERIFY(!std::filesystem::exists(std::filesystem::path(c.write.hits_directory) /
                                     "run0001-hits-000.cxi"));

    // A derived name that exists: segment 1 runs, the restart is refused naming segment 2's file.
    c.write.profiles = f.dir.filePath("series.h5").toStdString();
    const std::string foreign2 = f.dir.filePath("series.seg002.h5").toStdString();
    std::ofstream(foreign2) << "an earlier engine's file";
    EngineController controller(c);
    QVERIFY(controller.start());
    wait_until([&] { return controller.summary().stats.events_processed >= 1; });
    try {
      controller.apply_json({{"peak_finding", {{"params", {{"min_peaks_for_hit", 4}}}}}});
      QFAIL("a restart onto an existing segment file was accepted");
    } catch (const InputError& e) {
      const QString message = e.what();
      QVERIFY2(message.contains(QString::fromStdString(foreign2)) && message.contains("it exists"),
               e.what());
    }
    QCOMPARE(controller.run(), std::int64_t(1));
    QCOMPARE(controller.state(), std::string("running"));
    QVERIFY(!std::filesystem::exists(std::filesystem::path(c.write.hits_directory) /
                                     "run0002-seg002-hits-000.cxi"));
    controller.stop();

    // The operator moves the foreign file away. Stopped, an apply builds run 2 (segment 2) and
    // does not start it; a second apply replaces it before it ran (segment 3): run 2's empty
    // files go, and its segment number is not used again.
    std::filesystem::remove(foreign2);
    QVERIFY(!controller.apply_json({{"peak_finding", {{"params", {{"min_peaks_for_hit", 4}}}}}}));
    QCOMPARE(controller.config().write.segment, 2);
    QVERIFY(std::filesystem::exists(foreign2));  // created by run 2's writers
    QVERIFY(!controller.apply_json({{"peak_finding", {{"params", {{"min_peaks_for_hit", 5}}}}}}));
    QCOMPARE(controller.config().write.segment, 3);
    QVERIFY(!std::filesystem::exists(foreign2));
    QVERIFY(std::filesystem::exists(f.dir.filePath("series.seg003.h5").toStdString()));
    const std::vector<WriteSegment> segments = controller.write_segments();
    QCOMPARE(segments.size(), std::size_t(1));  // only run 1 ran
    QCOMPARE(segments[0].status.profiles.files, std::vector<std::string>{c.write.profiles});
  }
};

QTEST_GUILESS_MAIN(TestControlWriters)
#include "test_control_writers.moc"
