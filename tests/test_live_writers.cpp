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
#include "hit_file_support.hpp"
#include "live_integration_support.hpp"
#include "live_peaks_support.hpp"
#include "sim/simulator_settings.hpp"

using namespace livedrp;
using namespace livedrp::hit_file_test;

namespace {

constexpr std::uint64_t kEvents = 8;
constexpr std::uint64_t kHitsPerFile = 2;
constexpr int kMaxPeaks = 64;  // columns of the peak arrays

// What the run should have produced, computed here.
struct Expected {
  std::vector<std::uint64_t> sequences, pulse_ids;
  std::vector<std::vector<float>> calibrated;
  std::vector<std::vector<std::uint8_t>> raw;
  std::vector<std::uint8_t> bad;  // the constants' bad pixels
  std::vector<peaks::PeakList> lists;
  std::vector<std::vector<double>> profiles;
  std::vector<double> centres;
};

struct Fixture {
  QTemporaryDir dir;
  EngineConfig config;
  std::string hits_dir, profiles_file, average_file, config_file;
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
    f.average_file = f.dir.filePath("average.h5").toStdString();
    const QString summary_file = f.dir.filePath("summary.json");

    f.run = run_cli(
        "LIVEDRP_ENGINE_EXE",
        {"run", "--config", QString::fromStdString(f.config_file), "--write-hits",
         QString::fromStdString(f.hits_dir), "--hits-per-file", QString::number(kHitsPerFile),
         "--write-profiles", QString::fromStdString(f.profiles_file), "--write-average",
         QString::fromStdString(f.average_file), "--summary-json", summary_file},
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
    for (std::size_t p = 0; p < detector.pixels(); ++p)
      e.bad.push_back(simulator.constants().masked(p) ? 1 : 0);
    std::vector<std::uint8_t> raw(detector.raw_event_bytes());
    for (std::uint64_t i = 0; i < kEvents; ++i) {
      simulator.generate(indices[i % indices.size()], raw.data(), nullptr, &pool);
      std::vector<float> calibrated(detector.pixels());
      calibrate_event_cpu(detector, simulator.constants(), c.calibration, raw.data(),
                          calibrated.data(), &pool);
      e.lists.push_back(finder.find(calibrated.data(), &pool));
      e.profiles.push_back(profile_intensities(integrator.integrate(calibrated)));
      e.calibrated.push_back(std::move(calibrated));
      e.raw.push_back(raw);
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
    const peaks::SlabLayout slab = peaks::slab_layout(find_detector("epix10ka2m"));
    const std::vector<std::size_t> hits = hit_indices();
    std::vector<HitFrame> frames;
    for (std::size_t k = 0; frames.size() < hits.size() && std::filesystem::exists(hit_file(k));
         ++k) {
      QString problem;
      for (HitFrame& frame : read_hit_frames(hit_file(k), hsize_t(slab.height), hsize_t(slab.width),
                                             kMaxPeaks, problem))
        frames.push_back(std::move(frame));
      QVERIFY2(problem.isEmpty(), qPrintable(problem));
    }
    QCOMPARE(frames.size(), hits.size());
    for (std::size_t j = 0; j < frames.size(); ++j) {
      const std::size_t event = hits[j];
      QCOMPARE(frames[j].sequence, fixture->expected.sequences[event]);
      QCOMPARE(frames[j].pulse_id, fixture->expected.pulse_ids[event]);
      const QString difference = compare_hit_frame(frames[j], fixture->expected.calibrated[event],
                                                   fixture->expected.lists[event]);
      QVERIFY2(difference.isEmpty(), qPrintable(difference));
    }
    const hid_t file = H5Fopen(hit_file(0).c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    QVERIFY(file >= 0);
    const std::string signal = read_string_attribute(file, "/entry_1/data_1", "signal");
    const std::string nx_class = read_string_attribute(file, "/entry_1/data_1", "NX_class");
    H5Fclose(file);
    QCOMPARE(signal, std::string("data"));
    QCOMPARE(nx_class, std::string("NXdata"));
  }

  // What CrystFEL's CXI reader (indexamajig with `data = /entry_1/data_1/data`, `dim0 = %`,
  // `peak_list = /entry_1/result_1`, `peak_list_type = cxi`) reads, with the types it reads them
  // as: the frames float32 [N, ss, fs], nPeaks int32 [N], and peakXPosRaw, peakYPosRaw,
  // peakTotalIntensity float32 [N, max_num_peaks] (and the other peak arrays alike). The file's
  // own types are checked here, not values converted on reading.
  void hit_files_have_the_fields_and_types_crystfels_reader_takes() {
    const peaks::SlabLayout slab = peaks::slab_layout(find_detector("epix10ka2m"));
    const hid_t file = H5Fopen(hit_file(0).c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    QVERIFY2(file >= 0, hit_file(0).c_str());
    struct Stored {
      H5T_class_t type_class = H5T_NO_CLASS;
      std::size_t bytes = 0;
      H5T_sign_t sign = H5T_SGN_ERROR;
      std::vector<hsize_t> shape;
    };
    auto stored = [file](const std::string& path) {
      Stored out;
      const hid_t dataset = H5Dopen2(file, path.c_str(), H5P_DEFAULT);
      if (dataset < 0) return out;
      const hid_t type = H5Dget_type(dataset);
      out.type_class = H5Tget_class(type);
      out.bytes = H5Tget_size(type);
      if (out.type_class == H5T_INTEGER) out.sign = H5Tget_sign(type);
      const hid_t space = H5Dget_space(dataset);
      out.shape.resize(std::size_t(H5Sget_simple_extent_ndims(space)));
      H5Sget_simple_extent_dims(space, out.shape.data(), nullptr);
      H5Sclose(space);
      H5Tclose(type);
      H5Dclose(dataset);
      return out;
    };
    const Stored data = stored("/entry_1/data_1/data");
    const Stored n_peaks = stored("/entry_1/result_1/nPeaks");
    QCOMPARE(data.type_class, H5T_FLOAT);
    QCOMPARE(data.bytes, sizeof(float));
    QCOMPARE(data.shape.size(), std::size_t(3));
    const hsize_t frames = data.shape[0];
    QCOMPARE(frames, hsize_t(std::min<std::size_t>(kHitsPerFile, hit_indices().size())));
    QCOMPARE(data.shape, (std::vector<hsize_t>{frames, hsize_t(slab.height), hsize_t(slab.width)}));
    QCOMPARE(n_peaks.type_class, H5T_INTEGER);
    QCOMPARE(n_peaks.bytes, sizeof(std::int32_t));
    QCOMPARE(n_peaks.sign, H5T_SGN_2);
    QCOMPARE(n_peaks.shape, (std::vector<hsize_t>{frames}));
    for (const char* name : kPeakFields) {
      const Stored field = stored("/entry_1/result_1/" + std::string(name));
      QVERIFY2(field.type_class == H5T_FLOAT && field.bytes == sizeof(float), name);
      QVERIFY2(field.shape == (std::vector<hsize_t>{frames, hsize_t(kMaxPeaks)}), name);
    }
    H5Fclose(file);
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

  // The average image: per assembled pixel the mean of the events' finite calibrated values,
  // placed here from the detector's placement (segments not turned: pixel (r, c) of a segment at
  // (y_px + r, x_px + c)); and in the frame its PONI places: integrated as a plain image with the
  // PONI, it gives the profile of the mean stack integrated with the detector's layout.
  void average_image_is_the_mean_in_the_ponis_frame() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    const Expected& e = fixture->expected;
    const nlohmann::json& w = fixture->summary["write"]["average"];
    QCOMPARE(w["written"].get<std::uint64_t>(), kEvents);
    for (const SegmentPlacement& s : detector.placement) QCOMPARE(s.rotation_deg, 0);
    const ExpectedAverage average = expected_average(detector, e.calibrated);
    const std::vector<float>& mean = average.mean;
    const std::size_t height = average.height, width = average.width;

    const hid_t file = H5Fopen(fixture->average_file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    QVERIFY(file >= 0);
    const auto data = read_dataset<float>(file, "/entry/average/data", H5T_NATIVE_FLOAT);
    const auto events =
        read_dataset<std::uint64_t>(file, "/entry/average/events", H5T_NATIVE_UINT64);
    const std::string signal = read_string_attribute(file, "/entry/average", "signal");
    const std::string units = read_string_attribute(file, "/entry/average/data", "units");
    const std::string config = read_string_attribute(file, "/", "pipeline_config");
    H5Fclose(file);
    QVERIFY(data.ok && events.ok);
    QCOMPARE(signal, std::string("data"));
    QCOMPARE(units, std::string("keV"));
    QCOMPARE(events.values.at(0), kEvents);
    QVERIFY(nlohmann::json::parse(config)["write"]["average"] == fixture->average_file);
    QCOMPARE(data.shape, (std::vector<hsize_t>{height, width}));
    QVERIFY(std::memcmp(data.values.data(), average.image.data(),
                        average.image.size() * sizeof(float)) == 0);

    // The PONI's frame: the image as a plain detector against the stack with its placement.
    const integrate::PoniGeometry poni = integrate::read_poni(fixture->config.integration.poni);
    std::vector<std::uint8_t> stack_mask(detector.pixels());
    for (std::size_t p = 0; p < stack_mask.size(); ++p)
      stack_mask[p] = !std::isfinite(mean[p]) || e.bad[p];
    std::vector<std::uint8_t> image_mask(height * width, 1);
    for (std::size_t p = 0; p < stack_mask.size(); ++p)
      image_mask[average.image_pixel[p]] = stack_mask[p];
    integrate::IntegrationConfig ic;
    ic.bins = 300;
    ic.radial_range = std::pair{1.0, 40.0};
    integrate::Integrator as_stack(poni, integrate::layout_from_detector(detector), ic);
    as_stack.set_mask(stack_mask);
    integrate::Integrator as_image(poni, integrate::plain_layout(int(height), int(width)), ic);
    as_image.set_mask(image_mask);
    const std::vector<double> a = profile_intensities(as_stack.integrate(mean));
    const std::vector<double> b = profile_intensities(as_image.integrate(data.values));
    std::size_t finite = 0;
    for (double v : a) finite += std::isfinite(v) ? 1 : 0;
    QVERIFY(finite > 200);
    const long diff = live_integration_test::first_difference(a, b, 1e-6);
    QVERIFY2(diff < 0, qPrintable(QString("bin %1: %2 / %3")
                                      .arg(diff)
                                      .arg(a[std::size_t(std::max(0L, diff))])
                                      .arg(b[std::size_t(std::max(0L, diff))])));
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

  // --record DIR --record-hits-only: the recording holds the hit events' raw words, as the
  // simulator made them, with their pulse ids, and nothing else; it is NeXus (NXentry, NXdata).
  void a_hit_only_recording_holds_the_hits_raw_words() {
    const QString recording = fixture->dir.filePath("recording");
    const QString summary_file = fixture->dir.filePath("recording.json");
    const CliResult run =
        run_cli("LIVEDRP_ENGINE_EXE",
                {"run", "--config", QString::fromStdString(fixture->config_file), "--record",
                 recording, "--record-hits-only", "--summary-json", summary_file},
                600000);
    QVERIFY2(run.exit_code == 0, qPrintable(run.err + run.out));
    std::ifstream in(summary_file.toStdString());
    const nlohmann::json summary = nlohmann::json::parse(in);
    const std::vector<std::size_t> hits = hit_indices();
    QCOMPARE(summary["record"]["events"].get<std::uint64_t>(), std::uint64_t(hits.size()));
    QCOMPARE(summary["record"]["dropped"].get<std::uint64_t>(), std::uint64_t(0));
    const std::string path = (recording + "/run0001-000.h5").toStdString();
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    QVERIFY2(file >= 0, path.c_str());
    const auto data = read_dataset<std::uint16_t>(file, "/entry/data/data", H5T_NATIVE_UINT16);
    const auto pulse = read_dataset<std::uint64_t>(file, "/entry/data/pulse_id", H5T_NATIVE_UINT64);
    // NeXus, for silx, DAWN and h5web: / default -> entry (NXentry) default -> data (NXdata),
    // whose signal is the events.
    const std::string root_default = read_string_attribute(file, "/", "default");
    const std::string entry_class = read_string_attribute(file, "/entry", "NX_class");
    const std::string entry_default = read_string_attribute(file, "/entry", "default");
    const std::string data_class = read_string_attribute(file, "/entry/data", "NX_class");
    const std::string signal = read_string_attribute(file, "/entry/data", "signal");
    const std::string interpretation =
        read_string_attribute(file, "/entry/data/data", "interpretation");
    H5Fclose(file);
    QCOMPARE(root_default, std::string("entry"));
    QCOMPARE(entry_class, std::string("NXentry"));
    QCOMPARE(entry_default, std::string("data"));
    QCOMPARE(data_class, std::string("NXdata"));
    QCOMPARE(signal, std::string("data"));
    QCOMPARE(interpretation, std::string("image"));
    QVERIFY(data.ok && pulse.ok);
    QCOMPARE(std::size_t(data.shape.at(0)), hits.size());
    const std::size_t bytes = fixture->expected.raw.at(0).size();
    for (std::size_t j = 0; j < hits.size(); ++j) {
      QCOMPARE(pulse.values[j], fixture->expected.pulse_ids[hits[j]]);
      QVERIFY2(
          std::memcmp(data.values.data() + j * bytes / 2, fixture->expected.raw[hits[j]].data(),
                      bytes) == 0,
          qPrintable(QString("recorded event %1 is not hit %2's raw words").arg(j).arg(hits[j])));
    }
    // Replayed through the same pipeline, every recorded event is a hit again.
    const QString replay_summary = fixture->dir.filePath("replay.json");
    const CliResult replay = run_cli(
        "LIVEDRP_ENGINE_EXE",
        {"run", "--config", QString::fromStdString(fixture->config_file), "--source",
         "replay:" + recording, "--flat-out", "--events", "0", "--summary-json", replay_summary},
        600000);
    QVERIFY2(replay.exit_code == 0, qPrintable(replay.err + replay.out));
    std::ifstream replay_in(replay_summary.toStdString());
    const nlohmann::json replayed = nlohmann::json::parse(replay_in);
    QCOMPARE(replayed["events_processed"].get<std::uint64_t>(), std::uint64_t(hits.size()));
    QCOMPARE(replayed["peak_finding"]["hits"].get<std::uint64_t>(), std::uint64_t(hits.size()));
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
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE", {"run", "--source", "sim:generic_f32", "--record-hits-only"}),
        "--record-hits-only needs --record DIR");
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE",
                             {"run", "--source", "sim:generic_f32", "--events", "1", "--publish",
                              "", "--record", dir + "/r2", "--record-hits-only"}),
                     "record.hits_only (--record-hits-only) needs live peak finding");
  }
};

QTEST_GUILESS_MAIN(TestLiveWriters)
#include "test_live_writers.moc"
