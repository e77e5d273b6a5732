// Compression fidelity, live, on the CPU backend (stages/fidelity, the `fidelity` topic): every
// sample the engine publishes equals what this test computes for the same event offline, with
// the library's functions called directly (the event calibrated here, compressed with
// codec::compress_cpu, decoded with codec::decompress_cpu, integrated with an integrator built
// here, searched with a peakfinder8 built here); a lossless stream costs exactly nothing; a
// bound changed while the run goes (control `apply`) is the bound the next samples measure; a
// peakfinder8 parameter change (set_peak_params) is used by the next samples; the "fidelity"
// section is validated with the field named; and a run that cannot sample (no codec, nothing to
// compare, the device-resident source) is refused with the reason. The CUDA backend's samples
// are test_gpu_engine_fidelity's.
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "engine_error_text.hpp"
#include "exec/engine_controller.hpp"
#include "fidelity_support.hpp"
#include "protocol/fidelity_topic.hpp"
#include "stages/fidelity/fidelity_measures.hpp"
#include "stages/fidelity/fidelity_stage.hpp"

using namespace livedrp;
using namespace std::chrono_literals;
using fidelity_test::check_against_offline;
using fidelity_test::check_lossless;
using fidelity_test::fidelity_config;
using fidelity_test::run_to_the_end;
using fidelity_test::Sampled;
using fidelity_test::take;

class TestEngineFidelity : public QObject {
  Q_OBJECT
 private slots:
  void every_sample_equals_an_offline_decompress_integrate_and_search_of_its_event() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    EngineConfig config = fidelity_config(dir, "lossy", 1.0);
    config.rate_hz = 4;  // slower than a sample takes: most events are sampled
    // Every gain configuration dealt to the ASICs: the fixed medium and low gains give noise
    // peaks near the SNR cut, which the bound moves across it (peaks lost and added, not only
    // kept), so that the matching is compared on more than identical lists.
    config.simulator_gain_configs = {"FH", "FM", "FL", "AHL", "AML"};
    RunSummary summary;
    const Sampled sampled = run_to_the_end(config, summary);
    fidelity_test::check_run_counts(summary, config, sampled);
    if (QTest::currentTestFailed()) return;

    ThreadPool pool(2);
    const DetectorSimulator simulator = live_peaks_test::engine_simulator(config, pool);
    const DetectorDescription& detector = simulator.detector();
    const live_peaks_test::OfflineEvents events =
        live_peaks_test::offline_events(config, simulator, pool);
    for (const protocol::FidelityReport& r : sampled.reports) {
      check_against_offline(r, config, detector, simulator.constants(), events);
      if (QTest::currentTestFailed()) return;
    }
  }

  void a_lossless_stream_costs_exactly_nothing() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const EngineConfig config = fidelity_config(dir, "lossless", 0.5);
    RunSummary summary;
    const Sampled sampled = run_to_the_end(config, summary);
    QVERIFY2(summary.error.empty(), summary.error.c_str());
    QVERIFY(!sampled.reports.empty());
    for (const protocol::FidelityReport& r : sampled.reports) {
      check_lossless(r);
      if (QTest::currentTestFailed()) return;
    }
  }

  void a_bound_changed_while_the_run_goes_is_the_bound_the_next_samples_measure() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    EngineConfig config = fidelity_config(dir, "lossy", 0.25);
    config.events = 60;
    config.rate_hz = 10;  // long enough that the change lands while the run goes
    config.fidelity.samples_hz = 1;
    EngineController controller(config);
    protocol::Subscriber subscriber(controller.publish_endpoint(),
                                    {std::string(protocol::kTopicFidelity)});
    const std::int64_t first_run = controller.run();
    QVERIFY(controller.start());
    Sampled sampled;
    while (sampled.reports.empty()) take(subscriber, sampled, 50ms);
    QCOMPARE(sampled.runs.front(), first_run);
    QCOMPARE(sampled.reports.front().error_bound, 0.25);
    QVERIFY(sampled.reports.front().max_pixel_error <= 0.25);

    QVERIFY(controller.apply_json({{"compression", {{"error_bound", 2.0}}}}));  // restarted
    QCOMPARE(controller.run(), first_run + 1);
    QCOMPARE(controller.config().fidelity.enabled, true);  // the section is kept
    const auto in_new_run = [&] {
      return std::find(sampled.runs.begin(), sampled.runs.end(), first_run + 1) !=
             sampled.runs.end();
    };
    while (!in_new_run()) take(subscriber, sampled, 50ms);
    controller.stop();
    take(subscriber, sampled, 200ms);
    bool larger_error_seen = false;
    for (std::size_t m = 0; m < sampled.reports.size(); ++m) {
      const protocol::FidelityReport& r = sampled.reports[m];
      const double bound = sampled.runs[m] == first_run ? 0.25 : 2.0;
      QCOMPARE(r.error_bound, bound);
      QVERIFY(r.max_pixel_error <= bound);
      if (r.max_pixel_error > 0.25) larger_error_seen = true;
    }
    QVERIFY(larger_error_seen);  // the new bound is the one the codec used
  }

  void a_peak_parameter_change_while_the_run_goes_is_used_by_the_next_samples() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    EngineConfig config = fidelity_config(dir, "lossy", 0.5);
    config.events = 60;
    config.rate_hz = 10;
    config.fidelity.samples_hz = 2;
    EngineController controller(config);
    protocol::Subscriber subscriber(controller.publish_endpoint(),
                                    {std::string(protocol::kTopicFidelity)});
    QVERIFY(controller.start());
    Sampled sampled;
    while (sampled.reports.empty()) take(subscriber, sampled, 50ms);
    QCOMPARE(sampled.reports.front().params_version, std::uint64_t(1));
    const nlohmann::json after = controller.set_peak_params({{"minimum_snr", 9.0}});
    QCOMPARE(after.at("params_version").get<int>(), 2);
    const auto second_seen = [&] {
      return std::any_of(sampled.reports.begin(), sampled.reports.end(),
                         [](const auto& r) { return r.params_version == 2; });
    };
    while (!second_seen() && controller.state() == "running") take(subscriber, sampled, 50ms);
    controller.stop();
    take(subscriber, sampled, 200ms);
    QVERIFY(second_seen());
    // Once a sample was searched with the new parameters, none after it used the old ones.
    const auto first_v2 = std::find_if(sampled.reports.begin(), sampled.reports.end(),
                                       [](const auto& r) { return r.params_version == 2; });
    QVERIFY(std::all_of(first_v2, sampled.reports.end(),
                        [](const auto& r) { return r.params_version == 2; }));
    QCOMPARE(controller.run(), config.run);  // the same run: no restart
  }

  void the_section_is_validated_with_the_field_named() {
    QVERIFY(config_error({{"fidelity", {{"samples_hz", 0}}}}).contains("fidelity.samples_hz"));
    QVERIFY(config_error({{"fidelity", {{"samples_hz", 500}}}}).contains("fidelity.samples_hz"));
    QVERIFY(config_error({{"fidelity", {{"samples_hz", "fast"}}}}).contains("fidelity.samples_hz"));
    QVERIFY(config_error({{"fidelity", {{"match_radius_px", -1}}}})
                .contains("fidelity.match_radius_px"));
    QVERIFY(config_error({{"fidelity", {{"enabled", "yes"}}}}).contains("fidelity.enabled"));
    QVERIFY(config_error({{"fidelity", {{"rate", 2}}}}).contains("fidelity.rate"));
    QVERIFY(config_error({{"fidelity", 3}}).contains("fidelity"));
    // Echoed with its defaults and read back the same.
    EngineConfig config;
    config.fidelity.enabled = true;
    config.fidelity.samples_hz = 3.5;
    const nlohmann::json echoed = config.to_json();
    QCOMPARE(echoed.at("fidelity").at("samples_hz").get<double>(), 3.5);
    const EngineConfig back = EngineConfig::from_json(echoed, "echo");
    QCOMPARE(back.fidelity.enabled, true);
    QCOMPARE(back.fidelity.samples_hz, 3.5);
    QCOMPARE(back.fidelity.match_radius_px, FidelityConfig{}.match_radius_px);
  }

  void a_run_with_nothing_to_sample_or_compare_is_refused_with_the_reason() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    EngineConfig no_codec = fidelity_config(dir, "off", 0.5);
    QVERIFY(construction_error(no_codec).contains("compression is off"));
    EngineConfig nothing = fidelity_config(dir, "lossy", 0.5);
    nothing.integration.enabled = false;
    nothing.peak_finding.enabled = false;
    QVERIFY(construction_error(nothing).contains("needs integration or peak finding"));
  }

  void the_device_resident_source_is_refused_with_the_reason() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    EngineConfig config = fidelity_config(dir, "lossy", 0.5);
    config.backend = "cuda";
    config.runtime.source = SourcePlacement::Device;
    const QString error = construction_error(config);
    QVERIFY2(error.contains("fidelity.enabled") && error.contains("runtime.source 'device'") &&
                 error.contains("runtime.source 'host'"),
             qPrintable(error));
  }

#ifdef LIVEDRP_HAVE_CUDA
  void the_cuda_part_needs_the_compress_stages_part_of_its_lane_first() {
    // Asked for as the CUDA backend asks (set_stages), but without the compress stage's part for
    // the lane: the stream it would copy does not exist. Nothing reaches a device before that.
    const DetectorDescription detector = find_detector("epix10ka2m");
    ThreadPool pool(2);
    const DetectorSimulator simulator(detector, SimulatorConfig{}, &pool);
    EngineConfig config;
    config.compression.codec = "lossy";
    config.peak_finding.enabled = true;
    config.fidelity.enabled = true;
    const auto compress = stages::make_compress_stage(config.compression, detector);
    const auto peaks =
        stages::make_peak_stage(config.peak_finding, detector, simulator.constants(), nullptr);
    const auto stage = stages::make_fidelity_stage(
        config.fidelity,
        {detector, simulator.constants(), config.calibration, compress, nullptr, peaks});
    QVERIFY(stage);
    const std::string error = thrown_text<RuntimeFault>([&] { stage->make_cuda_lane({0, 1, 1}); });
    QVERIFY2(QString::fromStdString(error).contains("no CUDA part alive for backend lane 0"),
             error.c_str());
  }
#endif
};

QTEST_GUILESS_MAIN(TestEngineFidelity)
#include "test_engine_fidelity.moc"
