// Live azimuthal integration on the CPU backend: the engine, run on the simulator with integration
// on, must publish `profile` messages whose axis (bins, unit, centres) is an independent
// Integrator's on the same configuration, whose latest profile is the offline integration of the
// same calibrated event (calibrate_event_cpu + Integrator here), and whose running average is the
// mean of the last average_events of those profiles. Also the configuration's "integration"
// section: validation messages naming the field, the JSON round trip, and what the engine refuses.
// The CUDA backend against the CPU backend is test_gpu_engine_integration.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "engine_error_text.hpp"
#include "live_integration_support.hpp"

using namespace livedrp;
using namespace livedrp::live_integration_test;

namespace {}  // namespace

class TestEngineIntegration : public QObject {
  Q_OBJECT
 private slots:
  void profiles_equal_integrating_the_calibrated_events_here() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const DetectorDescription detector = find_detector("epix10ka2m");
    ThreadPool pool(2);
    const DetectorSimulator simulator = engine_simulator(detector, pool);
    const EngineConfig config = live_config(write_poni(dir, detector, simulator.powder_geometry()),
                                            write_mask(dir, detector));

    const LiveRun run = run_live(config);
    QVERIFY2(run.summary.error.empty(), run.summary.error.c_str());
    QCOMPARE(run.summary.stats.events_processed, config.events);
    QVERIFY(!run.profiles.empty());
    qInfo("%zu profile messages for %llu events", run.profiles.size(),
          (unsigned long long)config.events);

    // The axis: an independent integrator's, bin for bin.
    const OfflineProfiles offline = offline_profiles(config, simulator, pool);
    for (std::size_t m = 0; m < run.profiles.size(); ++m) {
      const protocol::RadialProfile& p = run.profiles[m];
      QCOMPARE(run.runs[m], config.run);
      QCOMPARE(p.unit, protocol::RadialUnit::QInverseNm);
      QCOMPARE(p.centres.size(), std::size_t(config.integration.npt));
      QCOMPARE(p.centres, offline.centres);
      QCOMPARE(p.average_window, std::uint64_t(config.integration.average_events));
      if (m > 0) QVERIFY(p.sequence > run.profiles[m - 1].sequence);
    }
    // Masked bins stay NaN, and the profile is not all NaN.
    std::size_t finite = 0;
    for (double v : offline.profiles.back()) finite += std::isfinite(v) ? 1 : 0;
    QVERIFY(finite > std::size_t(config.integration.npt) / 2);

    // The run ends with the last event's profile; each message's latest is its event's profile
    // (calibrated and integrated here) and its average the mean of the last average_events.
    QCOMPARE(run.profiles.back().sequence, offline.sequences.back());
    QCOMPARE(run.profiles.back().average_events, std::uint64_t(config.integration.average_events));
    for (const protocol::RadialProfile& p : run.profiles) {
      const std::size_t index = offline.index_of(p.sequence);
      QVERIFY(index < offline.sequences.size());
      const long latest_diff = first_difference(p.latest, offline.profiles[index], 1e-12);
      QVERIFY2(
          latest_diff < 0,
          qPrintable(QString("latest differs at bin %1 (event %2)").arg(latest_diff).arg(index)));
      const std::size_t window =
          std::min<std::size_t>(index + 1, std::size_t(config.integration.average_events));
      QCOMPARE(p.average_events, std::uint64_t(window));
      const long average_diff =
          first_difference(p.average, window_mean(offline, index, window), 1e-12);
      QVERIFY2(
          average_diff < 0,
          qPrintable(QString("average differs at bin %1 (event %2)").arg(average_diff).arg(index)));
    }

    // The integration time per event is a stage of the stats.
    bool has_stage = false;
    for (const auto& stage : run.summary.stats.stages)
      if (stage.name == "integrate") {
        has_stage = true;
        QVERIFY(stage.mean_us > 0);
      }
    QVERIFY(has_stage);
  }

  void no_profile_and_no_stage_when_integration_is_off() {
    EngineConfig c;
    c.source = "sim:epix10ka2m";
    c.backend = "cpu";
    c.publish = "";
    c.simulator_pool = 1;
    c.cpu_threads = 2;
    c.events = 2;
    c.full_ring = "wait";
    Engine engine(c);
    engine.start();
    engine.wait();
    const RunSummary summary = engine.summary();
    QVERIFY2(summary.error.empty(), summary.error.c_str());
    for (const auto& stage : summary.stats.stages) QVERIFY(stage.name != "integrate");
  }

  void bad_integration_configuration_names_the_field() {
    const nlohmann::json good = {{"enabled", true}, {"poni", "x.poni"}};
    QVERIFY(config_error({{"integration", good}}).isEmpty());
    struct Case {
      nlohmann::json change;
      const char* field;
    };
    const std::vector<Case> cases = {
        {{{"npt", 0}}, "integration.npt"},
        {{{"npt", 100000}}, "integration.npt"},
        {{{"npt", 10.5}}, "integration.npt"},
        {{{"unit", "q"}}, "integration.unit"},
        {{{"method", "full"}}, "integration.method"},
        {{{"radial_range", {2.0, 1.0}}}, "integration.radial_range"},
        {{{"radial_range", {1.0}}}, "integration.radial_range"},
        {{{"radial_range", "0..1"}}, "integration.radial_range"},
        {{{"azimuth_range", {10.0, 10.0}}}, "integration.azimuth_range"},
        {{{"polarization", 1.5}}, "integration.polarization"},
        {{{"polarization", "yes"}}, "integration.polarization"},
        {{{"solid_angle", 1}}, "integration.solid_angle"},
        {{{"mask", 3}}, "integration.mask"},
        {{{"error_model", "gauss"}}, "integration.error_model"},
        {{{"average_events", 0}}, "integration.average_events"},
        {{{"publish_hz", 0}}, "integration.publish_hz"},
        {{{"poni", ""}}, "integration.poni"},
        {{{"bins", 100}}, "integration.bins"},  // unknown field
    };
    for (const Case& c : cases) {
      nlohmann::json section = good;
      section.update(c.change);
      const QString error = config_error({{"integration", section}});
      QVERIFY2(error.contains(c.field),
               qPrintable(QString::fromStdString(c.change.dump()) + " -> '" + error + "'"));
    }
    QVERIFY(config_error({{"integration", {{"enabled", false}}}}).isEmpty());  // off needs no PONI
    QVERIFY(config_error({{"integration", nlohmann::json::array()}}).contains("integration"));
    // A wrapping azimuth range (end below start) is pyFAI's and allowed.
    nlohmann::json wrapping = good;
    wrapping["azimuth_range"] = {170.0, -170.0};
    QVERIFY(config_error({{"integration", wrapping}}).isEmpty());
  }

  void integration_section_round_trips() {
    EngineConfig c;
    c.integration.enabled = true;
    c.integration.poni = "a.poni";
    c.integration.npt = 512;
    c.integration.unit = "2th_deg";
    c.integration.method = "bbox";
    c.integration.radial_range = std::make_pair(1.0, 30.0);
    c.integration.azimuth_range = std::make_pair(170.0, -170.0);
    c.integration.polarization = 0.99;
    c.integration.solid_angle = false;
    c.integration.mask = "m.h5:/mask";
    c.integration.error_model = "azimuthal";
    c.integration.average_events = 10;
    c.integration.publish_hz = 2;
    const EngineConfig again = EngineConfig::from_json(c.to_json(), "round trip");
    QCOMPARE(again.to_json(), c.to_json());
    QCOMPARE(again.integration.radial_range, c.integration.radial_range);
    QCOMPARE(again.integration.polarization, c.integration.polarization);
    const EngineConfig defaults = EngineConfig::from_json(EngineConfig().to_json(), "defaults");
    QVERIFY(!defaults.integration.enabled);
    QVERIFY(!defaults.integration.radial_range.has_value());
    QVERIFY(!defaults.integration.polarization.has_value());
  }

  void engine_refuses_unusable_integration_files_naming_the_field() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const DetectorDescription detector = find_detector("epix10ka2m");
    const std::string poni = write_poni(dir, detector, PowderGeometry{400, 400, {}});
    EngineConfig c = live_config(poni, "");
    c.publish = "";

    EngineConfig missing = c;
    missing.integration.poni = dir.filePath("nowhere.poni").toStdString();
    QVERIFY2(construction_error(missing).contains("integration.poni"),
             qPrintable(construction_error(missing)));

    io::Array small;
    small.type = io::ElementType::UInt8;
    small.shape = {10, 10};
    small.bytes.assign(100, 0);
    const std::string small_path = dir.filePath("small.npy").toStdString();
    io::write_npy(small_path, small);
    EngineConfig wrong_mask = c;
    wrong_mask.integration.mask = small_path;
    QVERIFY2(construction_error(wrong_mask).contains("integration.mask"),
             qPrintable(construction_error(wrong_mask)));

    // r_mm needs no wavelength, q does: a PONI without one cannot give q.
    const std::string dry = dir.filePath("dry.poni").toStdString();
    {
      std::ifstream in(poni);
      std::ofstream out(dry);
      for (std::string line; std::getline(in, line);)
        if (line.rfind("Wavelength", 0) != 0) out << line << "\n";
    }
    EngineConfig no_wavelength = c;
    no_wavelength.integration.poni = dry;
    QVERIFY2(construction_error(no_wavelength).contains("integration"),
             qPrintable(construction_error(no_wavelength)));

    EngineConfig device = c;
    device.runtime.source = SourcePlacement::Device;
    device.runtime.launch = LaunchMode::Persistent;  // the launched consumers carry the stage
    device.backend = "cuda";
    QVERIFY2(construction_error(device).contains("calibrates only") &&
                 construction_error(device).contains("integration"),
             qPrintable(construction_error(device)));
  }
};

QTEST_GUILESS_MAIN(TestEngineIntegration)
#include "test_engine_integration.moc"
