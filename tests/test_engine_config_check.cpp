// check_engine_config (exec/config_check.hpp): a whole configuration checked against its detector
// without a run refuses what building the engine refuses, naming the field in the engine's words
// (a mask or radius map of another shape than the ePix10ka2M's, gain configurations no pixel of it
// has), accepts the defaults and every stage on, creates no file, and takes well under a second
// of a quiet machine for the built-in detectors.
#include <QtTest>

#include <chrono>
#include <filesystem>
#include <functional>

#include "core/error.hpp"
#include "exec/config_check.hpp"
#include "exec/engine.hpp"
#include "integrate/shipped_geometry.hpp"
#include "io/array_file.hpp"
#include "sim/simulator.hpp"

using namespace livedrp;

namespace {

// The simulated ePix10ka2M on the CPU backend, as the GUI's default window runs it.
EngineConfig epix_config() {
  EngineConfig c;
  c.source = "sim:epix10ka2m";
  c.backend = "cpu";
  c.cpu_threads = 2;
  c.simulator_pool = 2;
  return c;
}

// An array of `shape` float32 values `value` (a mask that masks nothing at 0; radii at 1).
std::string write_npy(const std::filesystem::path& path, std::vector<std::uint64_t> shape,
                      float value = 0) {
  io::Array array;
  array.type = io::ElementType::Float32;
  array.shape = std::move(shape);
  array.bytes.assign(array.elements() * sizeof(float), 0);
  float* values = array.as<float>();
  for (std::uint64_t i = 0; i < array.elements(); ++i) values[i] = value;
  io::write_array({path.string(), ""}, io::ArrayFormat::Npy, array);
  return path.string();
}

// The text of the InputError `action` throws; empty when it throws none.
QString refusal(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

const std::vector<std::uint64_t> kEpixShape = {16, 352, 384};
const std::vector<std::uint64_t> kWrongShape = {4, 352, 384};

}  // namespace

class TestEngineConfigCheck : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::filesystem::path path(const char* name) const {
    return std::filesystem::path(dir_.path().toStdString()) / name;
  }

 private slots:
  void a_peak_finding_mask_of_another_shape_is_refused_naming_the_field() {
    EngineConfig c = epix_config();
    c.peak_finding.enabled = true;
    c.peak_finding.mask = write_npy(path("peak_mask.npy"), kWrongShape);
    const QString error = refusal([&] { check_engine_config(c); });
    QVERIFY2(error.startsWith("peak_finding.mask: ") && error.contains("[4, 352, 384]") &&
                 error.contains("2162688 pixels"),
             qPrintable(error));
    // The engine's own words.
    QCOMPARE(refusal([&] { Engine engine(c); }), error);
  }

  void an_integration_mask_of_another_shape_is_refused_naming_the_field() {
    EngineConfig c = epix_config();
    c.integration.enabled = true;
    c.integration.poni = "builtin:epix10ka2m";
    c.integration.mask = write_npy(path("integration_mask.npy"), kWrongShape);
    const QString error = refusal([&] { check_engine_config(c); });
    QVERIFY2(error.startsWith("integration.mask: ") && error.contains("[4, 352, 384]"),
             qPrintable(error));
  }

  void gain_configurations_the_detector_lacks_are_refused_naming_the_field() {
    EngineConfig c = epix_config();  // out of the box every ASIC is AHL
    c.peak_finding.enabled = true;
    c.peak_finding.search_gain_configs = {"FH"};
    const QString error = refusal([&] { check_engine_config(c); });
    QVERIFY2(error.startsWith("peak_finding.search_gain_configs") && error.contains("FH") &&
                 error.contains("no pixel"),
             qPrintable(error));
    // A detector without a per-pixel configuration.
    c.source = "sim:generic_f32";
    const QString other = refusal([&] { check_engine_config(c); });
    QVERIFY2(other.startsWith("peak_finding.search_gain_configs"), qPrintable(other));
  }

  void a_radius_map_of_another_shape_is_refused_naming_the_field() {
    EngineConfig c = epix_config();
    c.peak_finding.enabled = true;
    c.peak_finding.radius_map = write_npy(path("radius.npy"), {16, 384, 352 - 1}, 1);
    const QString error = refusal([&] { check_engine_config(c); });
    QVERIFY2(error.startsWith("peak_finding.radius_map: ") && error.contains("[16, 384, 351]"),
             qPrintable(error));
  }

  void a_write_section_without_its_stage_is_refused() {
    EngineConfig c = epix_config();
    c.write.profiles = path("profiles.h5").string();
    const QString error = refusal([&] { check_engine_config(c); });
    QVERIFY2(error.contains("write.profiles") && error.contains("integration"), qPrintable(error));
  }

  // Accepted; the time is reported, not bounded (performance is measured by benchmarks).
  void the_defaults_and_every_stage_on_are_accepted() {
    const EngineConfig defaults = epix_config();
    auto start = std::chrono::steady_clock::now();
    check_engine_config(defaults);
    const double defaults_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    EngineConfig c = epix_config();
    c.compression.codec = "lossy";
    c.compression.error_bound = 0.25;
    c.integration.enabled = true;
    c.integration.poni = "builtin:epix10ka2m";
    c.integration.mask = write_npy(path("good_integration_mask.npy"), kEpixShape);
    c.peak_finding.enabled = true;
    c.peak_finding.mask = write_npy(path("good_peak_mask.npy"), kEpixShape);
    c.peak_finding.radius_map = write_npy(path("good_radius.npy"), kEpixShape, 1);
    c.peak_finding.search_gain_configs = {"FH", "AHL"};
    c.fidelity.enabled = true;
    start = std::chrono::steady_clock::now();
    check_engine_config(c);
    const double all_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    qInfo(
        "check_engine_config on the ePix10ka2M: %.3f s with the defaults, %.3f s with every "
        "stage on",
        defaults_s, all_s);
  }

  // The check makes only the status words of the simulator's constants: the same words.
  void the_checks_status_words_are_the_simulators() {
    SimulatorConfig config;
    config.epix10ka_asic_configs = {calib::kConfigFH, calib::kConfigFM, calib::kConfigAHL};
    const DetectorDescription detector = find_detector("epix10ka2m");
    const DetectorSimulator simulator(detector, config);
    QVERIFY(simulated_pixel_status(detector, config) == simulator.constants().pixel_status);
  }

  void it_creates_no_file() {
    EngineConfig c = epix_config();
    c.integration.enabled = true;
    c.integration.poni = "builtin:epix10ka2m";
    c.write.profiles = path("written/profiles.h5").string();
    c.write.average = path("average.h5").string();
    check_engine_config(c);
    QVERIFY(!std::filesystem::exists(c.write.profiles));
    QVERIFY(!std::filesystem::exists(path("written")));
    QVERIFY(!std::filesystem::exists(c.write.average));
    c.record.directory = path("recorded").string();
    check_engine_config(c);
    QVERIFY(!std::filesystem::exists(c.record.directory));
  }

  void an_unknown_source_or_detector_is_refused_as_the_engine_refuses_it() {
    EngineConfig c = epix_config();
    c.source = "sim:pilatus6m";
    const QString error = refusal([&] { check_engine_config(c); });
    QVERIFY2(error.contains("pilatus6m"), qPrintable(error));
    c.source = "nowhere";
    QVERIFY(refusal([&] { check_engine_config(c); }).startsWith("unknown source 'nowhere'"));
  }
};

QTEST_GUILESS_MAIN(TestEngineConfigCheck)
#include "test_engine_config_check.moc"
