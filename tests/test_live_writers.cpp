// `livedrp-engine run --write-hits DIR --hits-per-file N --write-profiles FILE.h5` (issue 36): one
// run of the simulator (a pool holding the hit fraction, CPU backend, peak finding and
// integration on), its files read back through the HDF5 C API and compared with what is computed
// here, independently of the engine: every simulated event calibrated (calibrate_event_cpu),
// searched by a PeakFinder8 built here and integrated by an Integrator built here. The hit files
// hold exactly the hits, N per file, each frame the event's calibrated slab and its peaks
// peakfinder8's list (zero-padded); the profile file every event's profile with its pulse id, in
// order; both carry the run's configuration. Bad input is refused naming the option.
#include <hdf5.h>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"
#include "live_integration_support.hpp"
#include "live_peaks_support.hpp"
#include "sim/simulator_settings.hpp"

using namespace livedrp;

namespace {

constexpr std::uint64_t kEvents = 8;
constexpr std::uint64_t kHitsPerFile = 2;
constexpr int kMaxPeaks = 64;  // columns of the peak arrays

// A dataset read whole: its shape and its values converted to T by HDF5.
template <typename T>
struct H5Read {
  std::vector<hsize_t> shape;
  std::vector<T> values;
  bool ok = false;
};

template <typename T>
H5Read<T> read_dataset(hid_t file, const char* path, hid_t memory_type) {
  H5Read<T> out;
  const hid_t dataset = H5Dopen2(file, path, H5P_DEFAULT);
  if (dataset < 0) return out;
  const hid_t space = H5Dget_space(dataset);
  out.shape.resize(std::size_t(H5Sget_simple_extent_ndims(space)));
  H5Sget_simple_extent_dims(space, out.shape.data(), nullptr);
  std::size_t n = 1;
  for (hsize_t d : out.shape) n *= std::size_t(d);
  out.values.resize(n);
  out.ok = n == 0 ||
           H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.values.data()) >= 0;
  H5Sclose(space);
  H5Dclose(dataset);
  return out;
}

// A variable-length string attribute of `object_path`, "" when absent.
std::string read_string_attribute(hid_t file, const char* object_path, const char* name) {
  if (H5Aexists_by_name(file, object_path, name, H5P_DEFAULT) <= 0) return "";
  const hid_t attribute = H5Aopen_by_name(file, object_path, name, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t type = H5Aget_type(attribute);
  std::string value;
  if (H5Tis_variable_str(type) > 0) {
    char* text = nullptr;
    const hid_t memory = H5Tget_native_type(type, H5T_DIR_ASCEND);
    if (H5Aread(attribute, memory, &text) >= 0 && text) value = text;
    if (text) H5free_memory(text);
    H5Tclose(memory);
  }
  H5Tclose(type);
  H5Aclose(attribute);
  return value;
}

// What the run should have produced, computed here.
struct Expected {
  std::vector<std::uint64_t> sequences, pulse_ids;
  std::vector<std::vector<float>> calibrated;
  std::vector<peaks::PeakList> lists;
  std::vector<std::vector<double>> profiles;
  std::vector<double> centres;
};

struct Fixture {
  QTemporaryDir dir;
  EngineConfig config;
  std::string hits_dir, profiles_file, config_file;
  CliResult run;
  nlohmann::json summary;
  Expected expected;
};

Fixture* fixture = nullptr;

std::string hit_file(std::size_t index) {
  char name[64];
  std::snprintf(name, sizeof name, "run%04lld-hits-%03zu.cxi",
                static_cast<long long>(fixture->config.run), index);
  return (std::filesystem::path(fixture->hits_dir) / name).string();
}

std::vector<std::size_t> hit_indices() {
  std::vector<std::size_t> hits;
  for (std::size_t i = 0; i < fixture->expected.lists.size(); ++i)
    if (fixture->expected.lists[i].hit) hits.push_back(i);
  return hits;
}

}  // namespace

class TestLiveWriters : public QObject {
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
    c.events = kEvents;
    c.full_ring = "wait";
    c.simulator_pool = 4;  // generating events is slow on a 2-core machine
    c.simulator_pool_selection = "hit_fraction";
    c.hit_fraction = 0.5;
    c.peak_finding.enabled = true;
    c.peak_finding.params.min_peaks_for_hit = 2;
    c.peak_finding.params.max_num_peaks = kMaxPeaks;
    c.image.publish_hz = 0;
    ThreadPool pool(2);
    const DetectorSimulator simulator = live_peaks_test::engine_simulator(c, pool);
    c.integration.enabled = true;
    c.integration.poni =
        live_integration_test::write_poni(f.dir, detector, simulator.powder_geometry());
    c.integration.mask = live_integration_test::write_mask(f.dir, detector);
    c.integration.npt = 200;
    c.integration.unit = "q_nm^-1";
    c.integration.polarization = 0.95;
    f.config_file = f.dir.filePath("config.json").toStdString();
    std::ofstream(f.config_file) << c.to_json().dump(2);
    f.hits_dir = f.dir.filePath("hits").toStdString();
    f.profiles_file = f.dir.filePath("profiles.h5").toStdString();
    const QString summary_file = f.dir.filePath("summary.json");

    f.run = run_cli("LIVEDRP_ENGINE_EXE",
                    {"run", "--config", QString::fromStdString(f.config_file), "--write-hits",
                     QString::fromStdString(f.hits_dir), "--hits-per-file",
                     QString::number(kHitsPerFile), "--write-profiles",
                     QString::fromStdString(f.profiles_file), "--summary-json", summary_file},
                    600000);
    QVERIFY2(f.run.exit_code == 0, qPrintable(f.run.err + f.run.out));
    std::ifstream summary(summary_file.toStdString());
    f.summary = nlohmann::json::parse(summary);

    // Every event of the run here: event i is simulator event indices[i % pool].
    const std::vector<std::uint64_t> indices = simulator_pool_indices(
        simulator, std::size_t(c.simulator_pool), c.simulator_pool_selection);
    peaks::PeakFinder8 finder =
        live_peaks_test::independent_finder(detector, simulator.constants(), c.peak_finding.params);
    integrate::Integrator integrator =
        live_integration_test::independent_integrator(c, detector, simulator.constants());
    integrator.set_thread_pool(&pool);
    Expected& e = f.expected;
    e.centres = integrator.integrate(std::vector<float>(detector.pixels(), 0.0f)).radial;
    std::vector<std::uint8_t> raw(detector.raw_event_bytes());
    for (std::uint64_t i = 0; i < kEvents; ++i) {
      simulator.generate(indices[i % indices.size()], raw.data(), nullptr, &pool);
      std::vector<float> calibrated(detector.pixels());
      calibrate_event_cpu(detector, simulator.constants(), c.calibration, raw.data(),
                          calibrated.data(), &pool);
      e.lists.push_back(finder.find(calibrated.data(), &pool));
      e.profiles.push_back(profile_intensities(integrator.integrate(calibrated)));
      e.calibrated.push_back(std::move(calibrated));
      const EventHeader header = simulator.header_for(i);
      e.sequences.push_back(header.sequence);
      e.pulse_ids.push_back(header.pulse_id);
    }
  }

  void cleanupTestCase() {
    delete fixture;
    fixture = nullptr;
  }

  // The run has hits and non-hits, and the hit files hold exactly the hits, kHitsPerFile a file.
  void hit_files_hold_every_hit_and_roll_over_at_n() {
    const std::vector<std::size_t> hits = hit_indices();
    QVERIFY2(!hits.empty() && hits.size() < kEvents,
             qPrintable(QString("%1 hits of %2 events").arg(hits.size()).arg(kEvents)));
    QCOMPARE(fixture->summary["peak_finding"]["hits"].get<std::uint64_t>(), hits.size());
    const nlohmann::json& w = fixture->summary["write"]["hits"];
    QCOMPARE(w["written"].get<std::uint64_t>(), hits.size());
    QCOMPARE(w["dropped"].get<std::uint64_t>(), std::uint64_t(0));
    const std::size_t files = (hits.size() + kHitsPerFile - 1) / kHitsPerFile;
    QCOMPARE(w["files"].size(), files);
    QVERIFY(!std::filesystem::exists(hit_file(files)));
    std::size_t frames = 0;
    for (std::size_t k = 0; k < files; ++k) {
      QCOMPARE(w["files"][k].get<std::string>(), hit_file(k));
      const hid_t file = H5Fopen(hit_file(k).c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      QVERIFY2(file >= 0, hit_file(k).c_str());
      const auto n_peaks =
          read_dataset<std::int32_t>(file, "/entry_1/result_1/nPeaks", H5T_NATIVE_INT32);
      H5Fclose(file);
      QVERIFY(n_peaks.ok);
      const std::size_t expected = std::min<std::size_t>(kHitsPerFile, hits.size() - frames);
      QCOMPARE(std::size_t(n_peaks.shape.at(0)), expected);
      frames += expected;
    }
    QCOMPARE(frames, hits.size());
  }

  // Frame j of the files is hit j of the run: its calibrated slab, its peaks, its ids.
  void hit_frames_are_the_calibrated_events_and_peakfinder8_lists() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    const peaks::SlabLayout slab = peaks::slab_layout(detector);
    const std::vector<std::size_t> hits = hit_indices();
    std::size_t hit = 0;
    for (std::size_t k = 0; hit < hits.size(); ++k) {
      const hid_t file = H5Fopen(hit_file(k).c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      QVERIFY2(file >= 0, hit_file(k).c_str());
      const auto data = read_dataset<float>(file, "/entry_1/data_1/data", H5T_NATIVE_FLOAT);
      const auto n_peaks =
          read_dataset<std::int32_t>(file, "/entry_1/result_1/nPeaks", H5T_NATIVE_INT32);
      const char* names[] = {"peakXPosRaw",      "peakYPosRaw", "peakTotalIntensity",
                             "peakMaximumValue", "peakSNR",     "peakNPixels"};
      std::vector<H5Read<float>> fields;
      for (const char* name : names)
        fields.push_back(read_dataset<float>(
            file, ("/entry_1/result_1/" + std::string(name)).c_str(), H5T_NATIVE_FLOAT));
      const auto pulse = read_dataset<std::uint64_t>(file, "/entry_1/pulse_id", H5T_NATIVE_UINT64);
      const auto sequence =
          read_dataset<std::uint64_t>(file, "/entry_1/event_sequence", H5T_NATIVE_UINT64);
      const std::string signal = read_string_attribute(file, "/entry_1/data_1", "signal");
      H5Fclose(file);
      QVERIFY(data.ok && n_peaks.ok && pulse.ok && sequence.ok);
      QCOMPARE(signal, std::string("data"));
      const std::size_t frames = n_peaks.shape.at(0);
      QCOMPARE(data.shape,
               (std::vector<hsize_t>{frames, hsize_t(slab.height), hsize_t(slab.width)}));
      for (const auto& field : fields) {
        QVERIFY(field.ok);
        QCOMPARE(field.shape, (std::vector<hsize_t>{frames, hsize_t(kMaxPeaks)}));
      }
      for (std::size_t j = 0; j < frames; ++j, ++hit) {
        const std::size_t event = hits.at(hit);
        QCOMPARE(sequence.values[j], fixture->expected.sequences[event]);
        QCOMPARE(pulse.values[j], fixture->expected.pulse_ids[event]);
        const std::vector<float>& calibrated = fixture->expected.calibrated[event];
        QVERIFY2(std::memcmp(data.values.data() + j * calibrated.size(), calibrated.data(),
                             calibrated.size() * sizeof(float)) == 0,
                 qPrintable(QString("frame %1 of %2 is not event %3's calibration")
                                .arg(j)
                                .arg(QString::fromStdString(hit_file(k)))
                                .arg(event)));
        const peaks::PeakList& list = fixture->expected.lists[event];
        QCOMPARE(std::size_t(n_peaks.values[j]), list.peaks.size());
        for (std::size_t p = 0; p < std::size_t(kMaxPeaks); ++p) {
          const bool listed = p < list.peaks.size();
          const peaks::Peak none{};
          const peaks::Peak& e = listed ? list.peaks[p] : none;
          const float want[] = {
              listed ? e.fs : 0.0f, listed ? e.ss : 0.0f, e.intensity, e.max_value, e.snr,
              float(e.num_pixels)};
          for (std::size_t q = 0; q < fields.size(); ++q)
            QVERIFY2(fields[q].values[j * kMaxPeaks + p] == want[q],
                     qPrintable(QString("%1[%2][%3] = %4, expected %5")
                                    .arg(names[q])
                                    .arg(j)
                                    .arg(p)
                                    .arg(fields[q].values[j * kMaxPeaks + p])
                                    .arg(want[q])));
        }
      }
    }
    QCOMPARE(hit, hits.size());
  }

  // Every output carries the configuration that produced it.
  void outputs_carry_the_pipeline_configuration() {
    for (const std::string& path : {hit_file(0), fixture->profiles_file}) {
      const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      QVERIFY2(file >= 0, path.c_str());
      const std::string text = read_string_attribute(file, "/", "pipeline_config");
      H5Fclose(file);
      const nlohmann::json stored = nlohmann::json::parse(text, nullptr, false);
      QVERIFY2(stored.is_object(), path.c_str());
      QCOMPARE(stored["source"].get<std::string>(), fixture->config.source);
      QCOMPARE(stored["simulator"]["seed"].get<std::uint64_t>(), fixture->config.seed);
      QCOMPARE(stored["peak_finding"]["params"]["min_peaks_for_hit"].get<int>(),
               fixture->config.peak_finding.params.min_peaks_for_hit);
      QCOMPARE(stored["write"]["hits_per_file"].get<std::uint64_t>(), kHitsPerFile);
      QCOMPARE(stored["write"]["hits_directory"].get<std::string>(), fixture->hits_dir);
      QCOMPARE(stored["write"]["profiles"].get<std::string>(), fixture->profiles_file);
    }
  }

  // Every event's profile, in order, with its pulse id; the axis and its unit as NeXus wants.
  void profile_file_holds_every_events_profile_in_order() {
    const Expected& e = fixture->expected;
    const nlohmann::json& w = fixture->summary["write"]["profiles"];
    QCOMPARE(w["written"].get<std::uint64_t>(), kEvents);
    QCOMPARE(w["dropped"].get<std::uint64_t>(), std::uint64_t(0));
    const hid_t file = H5Fopen(fixture->profiles_file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    QVERIFY(file >= 0);
    const auto intensity =
        read_dataset<double>(file, "/entry/profiles/intensity", H5T_NATIVE_DOUBLE);
    const auto q = read_dataset<double>(file, "/entry/profiles/q", H5T_NATIVE_DOUBLE);
    const auto pulse =
        read_dataset<std::uint64_t>(file, "/entry/profiles/pulse_id", H5T_NATIVE_UINT64);
    const std::string nx_class = read_string_attribute(file, "/entry/profiles", "NX_class");
    const std::string signal = read_string_attribute(file, "/entry/profiles", "signal");
    const std::string units = read_string_attribute(file, "/entry/profiles/q", "units");
    const std::string entry_default = read_string_attribute(file, "/entry", "default");
    H5Fclose(file);
    QVERIFY(intensity.ok && q.ok && pulse.ok);
    QCOMPARE(nx_class, std::string("NXdata"));
    QCOMPARE(signal, std::string("intensity"));
    QCOMPARE(units, std::string("1/nm"));
    QCOMPARE(entry_default, std::string("profiles"));
    const std::size_t bins = std::size_t(fixture->config.integration.npt);
    QCOMPARE(intensity.shape, (std::vector<hsize_t>{kEvents, bins}));
    QCOMPARE(q.values, e.centres);
    QCOMPARE(pulse.values, e.pulse_ids);
    for (std::size_t i = 0; i < kEvents; ++i) {
      const std::vector<double> row(intensity.values.begin() + long(i * bins),
                                    intensity.values.begin() + long((i + 1) * bins));
      const long diff = live_integration_test::first_difference(row, e.profiles[i], 1e-12);
      QVERIFY2(diff < 0, qPrintable(QString("event %1 bin %2").arg(i).arg(diff)));
    }
  }

  // SIGTERM (as SIGINT) mid-run: the engine drains the events in flight, and every hit file,
  // the last one included, is closed complete: the frames on disk are the hits the summary counts.
  void an_interrupted_run_leaves_complete_files() {
    const QString hits = fixture->dir.filePath("interrupted");
    const QString summary_file = fixture->dir.filePath("interrupted.json");
    QProcess process;
    process.start(
        cli_executable("LIVEDRP_ENGINE_EXE"),
        {"run", "--config", QString::fromStdString(fixture->config_file), "--events", "0", "--rate",
         "40", "--write-hits", hits, "--hits-per-file", "3", "--summary-json", summary_file});
    QVERIFY(process.waitForStarted());
    // Until the first file has rolled over (the second exists), or the process ended.
    const std::filesystem::path second =
        std::filesystem::path(hits.toStdString()) / "run0001-hits-001.cxi";
    while (!std::filesystem::exists(second) && process.state() != QProcess::NotRunning)
      process.waitForFinished(100);
    QVERIFY2(process.state() != QProcess::NotRunning,
             qPrintable(QString::fromUtf8(process.readAllStandardError())));
    process.terminate();
    QVERIFY(process.waitForFinished(-1));
    QCOMPARE(process.exitCode(), 0);
    std::ifstream in(summary_file.toStdString());
    const nlohmann::json summary = nlohmann::json::parse(in);
    const nlohmann::json& w = summary["write"]["hits"];
    const std::uint64_t written = w["written"].get<std::uint64_t>();
    QCOMPARE(written + w["dropped"].get<std::uint64_t>(),
             summary["peak_finding"]["hits"].get<std::uint64_t>());
    QCOMPARE(w["failed"].get<std::uint64_t>(), std::uint64_t(0));
    QVERIFY(w["files"].size() >= 2);
    std::uint64_t frames = 0;
    for (std::size_t k = 0; k < w["files"].size(); ++k) {
      const std::string path = w["files"][k].get<std::string>();
      const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      QVERIFY2(file >= 0, path.c_str());
      const auto n_peaks =
          read_dataset<std::int32_t>(file, "/entry_1/result_1/nPeaks", H5T_NATIVE_INT32);
      const auto data = read_dataset<float>(file, "/entry_1/data_1/data", H5T_NATIVE_FLOAT);
      H5Fclose(file);
      QVERIFY(n_peaks.ok && data.ok);
      QCOMPARE(data.shape.at(0), n_peaks.shape.at(0));
      if (k + 1 < w["files"].size()) QCOMPARE(n_peaks.shape.at(0), hsize_t(3));
      frames += n_peaks.shape.at(0);
    }
    QCOMPARE(frames, written);
  }

  void bad_input_names_the_option() {
    const QString config = QString::fromStdString(fixture->config_file);
    const QString dir = fixture->dir.path();
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE", {"run", "--config", config, "--write-hits",
                                                    dir + "/w", "--hits-per-file", "0"}),
                     "--hits-per-file must be at least 1, got 0");
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE", {"run", "--config", config, "--write-hits",
                                                    dir + "/w", "--hits-per-file", "-5"}),
                     "--hits-per-file must be at least 1, got -5");
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE",
                             {"run", "--config", config, "--write-hits", "/proc/livedrp-hits"}),
                     "--write-hits: cannot create folder '/proc/livedrp-hits'");
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE", {"run", "--config", config, "--write-profiles",
                                                    dir + "/no/such/folder/p.h5"}),
                     "--write-profiles: cannot create '" + dir + "/no/such/folder/p.h5': folder");
    // An existing profile file is not overwritten.
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE", {"run", "--config", config, "--write-profiles",
                                       QString::fromStdString(fixture->profiles_file)}),
        "it exists");
    // Hit files are not overwritten either: the run's first file exists.
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE", {"run", "--config", config, "--write-hits",
                                                    QString::fromStdString(fixture->hits_dir)}),
                     "run0001-hits-000.cxi' (it exists");
    // The device-resident source returns no calibrated image to the host: refused, saying so.
    nlohmann::json device = fixture->config.to_json();
    device["runtime"]["source"] = "device";
    const QString device_config = dir + "/device.json";
    std::ofstream(device_config.toStdString()) << device.dump();
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE",
                             {"run", "--config", device_config, "--write-hits", dir + "/w3"}),
                     "not available with runtime.source 'device' yet");
    // Hits are peakfinder8's: without peak finding there are none to write.
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE", {"run", "--source", "sim:generic_f32", "--events", "1",
                                       "--publish", "", "--write-hits", dir + "/w2"}),
        "--write-hits (write.hits_directory) needs live peak finding");
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE", {"run", "--source", "sim:generic_f32", "--events", "1",
                                       "--publish", "", "--write-profiles", dir + "/p2.h5"}),
        "--write-profiles (write.profiles) needs live integration");
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE",
                             {"run", "--source", "sim:generic_f32", "--hits-per-file", "3"}),
                     "--hits-per-file needs --write-hits DIR");
  }
};

QTEST_GUILESS_MAIN(TestLiveWriters)
#include "test_live_writers.moc"
