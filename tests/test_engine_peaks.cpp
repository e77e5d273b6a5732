// Live peak finding on the CPU backend: the engine, run on the simulator with peak finding on,
// must publish `peaks` messages whose lists are an independent PeakFinder8's on the same
// calibrated events (calibrate_event_cpu here), value for value; `image` messages whose pixels
// are those events assembled, with their gain-mode occupancy and peaks; a stats block whose
// counts are the sums; parameter changes that apply to the events after them without a restart;
// re-runs over the kept frames equal to offline searches with the new parameters; and refusals
// that name what is wrong. The CUDA backend against the CPU is test_gpu_engine_peaks.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "engine_error_text.hpp"
#include "exec/engine_controller.hpp"
#include "live_peaks_support.hpp"
#include "test_time_scale.hpp"

using namespace livedrp;
using namespace livedrp::live_peaks_test;

namespace {

QString input_error(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestEnginePeaks : public QObject {
  Q_OBJECT
 private slots:
  void peaks_images_and_stats_equal_the_offline_search() {
    const EngineConfig config = live_config();
    ThreadPool pool(2);
    const DetectorSimulator simulator = engine_simulator(config, pool);
    const DetectorDescription& detector = simulator.detector();
    const ImageAssembly assembly(detector);

    PeakMessages seen;
    RunSummary summary;
    {
      Engine engine(config);
      protocol::Subscriber subscriber(engine.publish_endpoint(), peak_topics());
      std::this_thread::sleep_for(200ms);
      engine.start();
      while (!engine.finished()) take_messages(subscriber, seen, 20ms);
      engine.wait();
      take_messages(subscriber, seen, 500ms);
      summary = engine.summary();
    }
    QVERIFY2(summary.error.empty(), summary.error.c_str());
    QCOMPARE(summary.stats.events_processed, config.events);

    const OfflineEvents offline = offline_events(config, simulator, pool);
    peaks::PeakFinder8 finder =
        independent_finder(detector, simulator.constants(), config.peak_finding.params);
    std::vector<peaks::PeakList> lists;
    std::uint64_t hits = 0, found = 0;
    for (const auto& frame : offline.calibrated) {
      lists.push_back(finder.find(frame.data()));
      hits += lists.back().hit ? 1 : 0;
      found += std::uint64_t(lists.back().found);
    }
    qInfo("%llu of %llu events are hits, %llu peaks; %zu peaks and %zu image messages",
          (unsigned long long)hits, (unsigned long long)config.events, (unsigned long long)found,
          seen.peaks.size(), seen.images.size());
    QVERIFY2(hits >= 2, "the simulated run should have hits to publish");

    // Every `peaks` message: a hit event of this run, its list the offline one value for value.
    QVERIFY(!seen.peaks.empty());
    for (std::size_t m = 0; m < seen.peaks.size(); ++m) {
      const protocol::EventPeaks& p = seen.peaks[m];
      QCOMPARE(seen.runs[m], config.run);
      QVERIFY(!p.rerun);
      QVERIFY(p.hit);
      QCOMPARE(p.params_version, std::uint64_t(1));
      QCOMPARE(p.min_peaks_for_hit, std::uint64_t(config.peak_finding.params.min_peaks_for_hit));
      const std::size_t index = offline.index_of(p.sequence);
      QVERIFY(index < offline.sequences.size());
      QCOMPARE(p.pulse_id, offline.pulse_ids[index]);
      const QString difference = compare_list(p, lists[index], assembly);
      QVERIFY2(difference.isEmpty(), qPrintable(QString("event %1: ").arg(index) + difference));
      if (m > 0) QVERIFY(p.sequence > seen.peaks[m - 1].sequence);
    }
    // The run's last hit is always sent (it waits for its turn, then the run's end flushes it).
    std::size_t last_hit = 0;
    for (std::size_t i = 0; i < lists.size(); ++i)
      if (lists[i].hit) last_hit = i;
    QCOMPARE(seen.peaks.back().sequence, offline.sequences[last_hit]);

    // Every image: the event's calibrated pixels assembled, its occupancy decoded, its peaks.
    QVERIFY(!seen.images.empty());
    for (const protocol::ImageFrame& image : seen.images) {
      const std::size_t index = offline.index_of(image.sequence);
      QVERIFY(index < offline.sequences.size());
      QCOMPARE(image.height, std::uint64_t(assembly.height()));
      QCOMPARE(image.width, std::uint64_t(assembly.width()));
      QCOMPARE(image.unit, std::string("keV"));
      std::vector<float> expected(assembly.height() * assembly.width());
      assembly.assemble(offline.calibrated[index].data(), expected.data());
      QCOMPARE(image.pixels.size(), expected.size());
      for (std::size_t k = 0; k < expected.size(); ++k) {
        const bool same =
            std::isnan(expected[k]) ? std::isnan(image.pixels[k]) : image.pixels[k] == expected[k];
        if (!same)
          QFAIL(qPrintable(QString("image pixel %1: %2, expected %3")
                               .arg(k)
                               .arg(image.pixels[k])
                               .arg(expected[k])));
      }
      const calib::GainOccupancy occupancy =
          calib::gain_occupancy(detector, simulator.constants(), offline.raw[index].data());
      QCOMPARE(image.gain_modes, occupancy.modes);
      QCOMPARE(image.segments, std::uint64_t(occupancy.segments));
      QCOMPARE(image.gain_occupancy, occupancy.fraction);
      QVERIFY(image.has_peaks);
      const QString difference = compare_list(image.peaks, lists[index], assembly);
      QVERIFY2(difference.isEmpty(), qPrintable(difference));
      // The assembly travels with it: the detector's own grid and placement, and the image's
      // origin at the placement's bounds rounded down.
      QVERIFY(image.assembly.has_value());
      QVERIFY(image.assembly->grid == detector.grid());
      QVERIFY(image.assembly->placement == detector.placement);
      const AssembledBounds bounds = assembled_bounds(detector);
      QCOMPARE(image.assembly->origin_x, std::floor(bounds.min_x));
      QCOMPARE(image.assembly->origin_y, std::floor(bounds.min_y));
      QCOMPARE(image.assembly->height, assembly.height());
      QCOMPARE(image.assembly->width, assembly.width());
    }

    // The stats block: the run's totals are the sums, and so are the intervals' counts.
    QVERIFY(summary.stats.peak_finding.has_value());
    const protocol::PeakFindingStats& total = *summary.stats.peak_finding;
    QCOMPARE(total.total_events, config.events);
    QCOMPARE(total.total_hits, hits);
    QCOMPARE(total.total_peaks, found);
    QCOMPARE(total.params_version, std::uint64_t(1));
    QCOMPARE(total.peaks_messages, std::uint64_t(seen.peaks.size()));
    QCOMPARE(total.peaks_messages + total.hits_not_sent, hits);
    std::uint64_t interval_events = 0, interval_hits = 0, interval_peaks = 0;
    for (const protocol::StatsPayload& s : seen.stats) {
      QVERIFY(s.peak_finding.has_value());
      interval_events += s.peak_finding->interval_events;
      interval_hits += s.peak_finding->interval_hits;
      interval_peaks += s.peak_finding->interval_peaks;
    }
    QCOMPARE(interval_events, config.events);
    QCOMPARE(interval_hits, hits);
    QCOMPARE(interval_peaks, found);
    QCOMPARE(seen.stats.back().peak_finding->total_hits, hits);
    bool has_stage = false;
    for (const auto& stage : summary.stats.stages)
      if (stage.name == "peak") {
        has_stage = true;
        QVERIFY(stage.mean_us > 0);
      }
    QVERIFY(has_stage);
  }

  void peaks_messages_keep_to_their_rate_newest_hit_first() {
    EngineConfig config = live_config();
    config.events = 8;
    // One message per 5 s, so that 8 hits come faster than that on any machine and some are
    // always replaced: at 2 Hz, the sanitizer build on a loaded 2-core machine (8 hits in 7.3 s)
    // sent them all.
    config.peak_finding.peaks_hz = 0.2;
    config.image.publish_hz = 0;
    PeakMessages seen;
    RunSummary summary;
    const auto start = std::chrono::steady_clock::now();
    double seconds = 0;
    {
      Engine engine(config);
      protocol::Subscriber subscriber(engine.publish_endpoint(), peak_topics());
      std::this_thread::sleep_for(200ms);
      engine.start();
      while (!engine.finished()) take_messages(subscriber, seen, 20ms);
      engine.wait();
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      take_messages(subscriber, seen, 500ms);
      summary = engine.summary();
    }
    QVERIFY2(summary.error.empty(), summary.error.c_str());
    QVERIFY(seen.images.empty());  // image.publish_hz 0: off
    const protocol::PeakFindingStats& total = *summary.stats.peak_finding;
    // At most one message per 1/peaks_hz, plus the run's last hit flushed at the end.
    const double allowed = seconds * config.peak_finding.peaks_hz + 2;
    qInfo("%zu peaks messages in %.2f s for %llu hits (%llu not sent)", seen.peaks.size(), seconds,
          (unsigned long long)total.total_hits, (unsigned long long)total.hits_not_sent);
    QVERIFY(double(seen.peaks.size()) <= allowed);
    QCOMPARE(total.peaks_messages, std::uint64_t(seen.peaks.size()));
    // Every hit is sent or counted as replaced by a newer one.
    QCOMPARE(total.peaks_messages + total.hits_not_sent, total.total_hits);
    QVERIFY(total.hits_not_sent > 0);
    for (std::size_t m = 1; m < seen.peaks.size(); ++m)
      QVERIFY(seen.peaks[m].sequence > seen.peaks[m - 1].sequence);
  }

  void parameter_changes_apply_to_later_events_and_reruns_without_a_restart() {
    EngineConfig config = live_config();
    config.events = 10;
    config.rate_hz = 8;  // a run of about a second, so a change lands in the middle
    config.full_ring = "wait";
    config.image.publish_hz = 0;
    // All five gain configurations dealt to the ASICs: the fixed medium- and low-gain ones give
    // noise peaks near the SNR cut, so that a stricter minimum_snr visibly finds fewer (on the
    // default AHL layout every peak is a strong Bragg peak, found either way).
    config.simulator_gain_configs = {"FH", "FM", "FL", "AHL", "AML"};
    ThreadPool pool(2);
    const DetectorSimulator simulator = engine_simulator(config, pool);
    const DetectorDescription& detector = simulator.detector();
    const ImageAssembly assembly(detector);

    EngineController controller(config);
    const std::int64_t run = controller.run();
    protocol::Subscriber subscriber(controller.publish_endpoint(), peak_topics());
    std::this_thread::sleep_for(200ms);
    const nlohmann::json before = controller.peak_params_json();
    QCOMPARE(before.at("params_version").get<int>(), 1);
    QCOMPARE(before.at("enabled").get<bool>(), true);
    QCOMPARE(before.at("params"), peaks::to_json(config.peak_finding.params));

    QVERIFY(controller.start());
    PeakMessages seen;
    while (seen.peaks.empty() && controller.state() == "running")
      take_messages(subscriber, seen, 20ms);
    // A stricter search: a higher SNR for thresholds and peaks.
    const auto change_start = std::chrono::steady_clock::now();
    const nlohmann::json after = controller.set_peak_params({{"minimum_snr", 9.0}});
    const double change_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - change_start).count();
    qInfo("set_peak_params took %.3f s", change_s);
    QVERIFY(change_s < 1.0 * testing::time_scale());
    QCOMPARE(after.at("params_version").get<int>(), 2);
    QCOMPARE(after.at("params").at("minimum_snr").get<double>(), 9.0);
    // The rest stays as it was.
    QCOMPARE(after.at("params").at("min_peaks_for_hit").get<int>(),
             config.peak_finding.params.min_peaks_for_hit);
    QCOMPARE(controller.config().peak_finding.params.minimum_snr, 9.0f);
    while (controller.state() == "running") take_messages(subscriber, seen, 20ms);
    take_messages(subscriber, seen, 500ms);
    QCOMPARE(controller.run(), run);  // the same run: no restart
    const RunSummary summary = controller.summary();
    QVERIFY2(summary.error.empty(), summary.error.c_str());
    QCOMPARE(summary.stats.peak_finding->params_version, std::uint64_t(2));

    // Each message's list is the offline search with the parameters of its version.
    const OfflineEvents offline = offline_events(config, simulator, pool);
    peaks::PeakFinderParams strict = config.peak_finding.params;
    strict.minimum_snr = 9.0f;
    peaks::PeakFinder8 loose_finder =
        independent_finder(detector, simulator.constants(), config.peak_finding.params);
    peaks::PeakFinder8 strict_finder = independent_finder(detector, simulator.constants(), strict);
    std::size_t strict_messages = 0;
    for (const protocol::EventPeaks& p : seen.peaks) {
      const std::size_t index = offline.index_of(p.sequence);
      QVERIFY(index < offline.sequences.size());
      QVERIFY(p.params_version == 1 || p.params_version == 2);
      peaks::PeakFinder8& finder = p.params_version == 1 ? loose_finder : strict_finder;
      strict_messages += p.params_version == 2 ? 1 : 0;
      const QString difference =
          compare_list(p, finder.find(offline.calibrated[index].data()), assembly);
      QVERIFY2(difference.isEmpty(), qPrintable(difference));
    }
    // The stricter parameters find fewer peaks on the same frames.
    std::uint64_t loose_found = 0, strict_found = 0;
    for (const auto& frame : offline.calibrated) {
      loose_found += std::uint64_t(loose_finder.find(frame.data()).found);
      strict_found += std::uint64_t(strict_finder.find(frame.data()).found);
    }
    QVERIFY(strict_found < loose_found);
    qInfo("version-2 messages: %zu; offline peaks %llu -> %llu", strict_messages,
          (unsigned long long)loose_found, (unsigned long long)strict_found);

    // Re-run the newest frames with the parameters in force: the offline lists, published with
    // rerun true, all of them hit or not.
    PeakMessages reruns;
    const nlohmann::json rerun = controller.rerun_peaks(3);
    take_messages(subscriber, reruns, 500ms);
    QCOMPARE(rerun.at("frames").get<int>(), 3);
    QCOMPARE(rerun.at("params_version").get<int>(), 2);
    const auto sequences = rerun.at("sequences").get<std::vector<std::uint64_t>>();
    const auto per_frame = rerun.at("peaks_per_frame").get<std::vector<std::uint64_t>>();
    QCOMPARE(sequences.size(), std::size_t(3));
    QCOMPARE(sequences,
             (std::vector<std::uint64_t>(offline.sequences.end() - 3, offline.sequences.end())));
    QCOMPARE(reruns.peaks.size(), std::size_t(3));
    std::uint64_t rerun_hits = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      const std::size_t index = offline.index_of(sequences[k]);
      const peaks::PeakList expected = strict_finder.find(offline.calibrated[index].data());
      QCOMPARE(per_frame[k], std::uint64_t(expected.found));
      rerun_hits += expected.hit ? 1 : 0;
      QVERIFY(reruns.peaks[k].rerun);
      QCOMPARE(reruns.peaks[k].params_version, std::uint64_t(2));
      QCOMPARE(reruns.peaks[k].sequence, sequences[k]);
      const QString difference = compare_list(reruns.peaks[k], expected, assembly);
      QVERIFY2(difference.isEmpty(), qPrintable(difference));
    }
    QCOMPARE(rerun.at("hits").get<std::uint64_t>(), rerun_hits);
    // All kept frames when no count is given.
    QCOMPARE(controller.rerun_peaks(std::nullopt).at("frames").get<int>(),
             config.peak_finding.recent_frames);
  }

  void bad_parameters_are_refused_with_the_reason() {
    EngineConfig config = live_config();
    config.publish = "";
    EngineController controller(config);
    QString error = input_error([&] {
      controller.set_peak_params({{"min_pixel_count", 5}, {"max_pixel_count", 3}});
    });
    QVERIFY2(error.contains("max_pixel_count") && error.contains("min_pixel_count"),
             qPrintable(error));
    error = input_error([&] { controller.set_peak_params({{"minimum_snr", "high"}}); });
    QVERIFY2(error.contains("minimum_snr"), qPrintable(error));
    error = input_error([&] { controller.set_peak_params({{"min_snr", 4}}); });
    QVERIFY2(error.contains("min_snr"), qPrintable(error));  // unknown name
    error = input_error([&] { controller.set_peak_params(nlohmann::json::array()); });
    QVERIFY2(error.contains("params"), qPrintable(error));
    // Nothing changed.
    QCOMPARE(controller.peak_params_json().at("params_version").get<int>(), 1);
    QCOMPARE(controller.config().peak_finding.params.max_pixel_count,
             config.peak_finding.params.max_pixel_count);
    // The {"params": {...}} form of the control request works as well.
    QCOMPARE(controller.set_peak_params({{"params", {{"local_bg_radius", 4}}}})
                 .at("params")
                 .at("local_bg_radius")
                 .get<int>(),
             4);
    error = input_error([&] { controller.rerun_peaks(0); });
    QVERIFY2(error.contains("frames"), qPrintable(error));
    error = input_error([&] { controller.rerun_peaks(5); });  // recent_frames is 4
    QVERIFY2(error.contains("recent_frames"), qPrintable(error));

    EngineConfig off = config;
    off.peak_finding.enabled = false;
    EngineController idle(off);
    QCOMPARE(idle.peak_params_json().at("enabled").get<bool>(), false);
    error = input_error([&] { idle.set_peak_params({{"minimum_snr", 6}}); });
    QVERIFY2(error.contains("peak finding is off") && error.contains("\"enabled\": true"),
             qPrintable(error));
    error = input_error([&] { idle.rerun_peaks(std::nullopt); });
    QVERIFY2(error.contains("peak finding is off"), qPrintable(error));

    EngineConfig none_kept = config;
    none_kept.peak_finding.recent_frames = 0;
    EngineController nothing_kept(none_kept);
    error = input_error([&] { nothing_kept.rerun_peaks(std::nullopt); });
    QVERIFY2(error.contains("recent_frames"), qPrintable(error));
  }

  void bad_peak_finding_configuration_names_the_field() {
    struct Case {
      nlohmann::json json;
      const char* field;
    };
    const std::vector<Case> cases = {
        {{{"peak_finding", {{"enabled", 1}}}}, "peak_finding.enabled"},
        {{{"peak_finding", {{"params", {{"minimum_snr", -1}}}}}}, "minimum_snr"},
        {{{"peak_finding", {{"params", {{"min_snr", 4}}}}}}, "peak_finding.params"},
        {{{"peak_finding", {{"params", 3}}}}, "peak_finding.params"},
        {{{"peak_finding", {{"beam", {1.0}}}}}, "peak_finding.beam"},
        {{{"peak_finding", {{"beam", "centre"}}}}, "peak_finding.beam"},
        {{{"peak_finding", {{"radius_map", 2}}}}, "peak_finding.radius_map"},
        {{{"peak_finding", {{"mask", false}}}}, "peak_finding.mask"},
        {{{"peak_finding", {{"peaks_hz", 0}}}}, "peak_finding.peaks_hz"},
        {{{"peak_finding", {{"recent_frames", 257}}}}, "peak_finding.recent_frames"},
        {{{"peak_finding", {{"recent_frames", -1}}}}, "peak_finding.recent_frames"},
        {{{"peak_finding", {{"hz", 3}}}}, "peak_finding.hz"},
        {{{"image", {{"publish_hz", -1}}}}, "image.publish_hz"},
        {{{"image", {{"rate", 1}}}}, "image.rate"},
    };
    for (const Case& c : cases) {
      const QString error = config_error(c.json);
      QVERIFY2(error.contains(c.field),
               qPrintable(QString::fromStdString(c.json.dump()) + " -> '" + error + "'"));
    }
    QVERIFY(config_error({{"peak_finding", {{"enabled", true}}}, {"image", {{"publish_hz", 0}}}})
                .isEmpty());
  }

  void peak_finding_section_round_trips_and_merges_by_parameter() {
    EngineConfig c;
    c.peak_finding.enabled = true;
    c.peak_finding.params.minimum_snr = 7.5f;
    c.peak_finding.params.max_res = 800;
    c.peak_finding.beam = std::make_pair(512.5, 600.25);
    c.peak_finding.radius_map = "r.h5:/radius";
    c.peak_finding.mask = "m.npy";
    c.peak_finding.peaks_hz = 3;
    c.peak_finding.recent_frames = 32;
    c.image.publish_hz = 1;
    const EngineConfig again = EngineConfig::from_json(c.to_json(), "round trip");
    QCOMPARE(again.to_json(), c.to_json());
    QCOMPARE(again.peak_finding.beam, c.peak_finding.beam);
    QCOMPARE(again.peak_finding.params.minimum_snr, 7.5f);
    const EngineConfig defaults = EngineConfig::from_json(EngineConfig().to_json(), "defaults");
    QVERIFY(!defaults.peak_finding.enabled);
    QVERIFY(!defaults.peak_finding.beam.has_value());
    QCOMPARE(defaults.peak_finding.peaks_hz, 10.0);
    QCOMPARE(defaults.peak_finding.recent_frames, 16);
    QCOMPARE(defaults.image.publish_hz, 2.0);

    // apply_json merges peak_finding and its params key by key.
    EngineConfig base = live_config();
    base.publish = "";
    base.peak_finding.params.max_pixel_count = 150;
    EngineController controller(base);
    controller.apply_json({{"peak_finding", {{"params", {{"minimum_snr", 6.5}}}}}});
    const EngineConfig merged = controller.config();
    QVERIFY(merged.peak_finding.enabled);
    QCOMPARE(merged.peak_finding.params.minimum_snr, 6.5f);
    QCOMPARE(merged.peak_finding.params.max_pixel_count, 150);
    QCOMPARE(merged.peak_finding.params.min_peaks_for_hit,
             base.peak_finding.params.min_peaks_for_hit);
    QCOMPARE(merged.peak_finding.recent_frames, base.peak_finding.recent_frames);
  }

  void engine_refuses_unusable_peak_finding_naming_the_field() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    EngineConfig c = live_config();
    c.publish = "";
    EngineConfig missing = c;
    missing.peak_finding.mask = dir.filePath("nowhere.npy").toStdString();
    QVERIFY2(construction_error(missing).contains("peak_finding.mask"),
             qPrintable(construction_error(missing)));
    EngineConfig missing_map = c;
    missing_map.peak_finding.radius_map = dir.filePath("nowhere.h5:/r").toStdString();
    QVERIFY2(construction_error(missing_map).contains("peak_finding.radius_map"),
             qPrintable(construction_error(missing_map)));
    EngineConfig bad = c;
    bad.peak_finding.params.iterations = 0;
    QVERIFY2(construction_error(bad).contains("iterations"), qPrintable(construction_error(bad)));
    EngineConfig device = c;
    device.runtime.source = SourcePlacement::Device;
    device.runtime.launch = LaunchMode::Persistent;  // the launched consumers carry the stage
    device.backend = "cuda";
    QVERIFY2(construction_error(device).contains("calibrates only") &&
                 construction_error(device).contains("peak finding"),
             qPrintable(construction_error(device)));
  }
};

QTEST_GUILESS_MAIN(TestEnginePeaks)
#include "test_engine_peaks.moc"
