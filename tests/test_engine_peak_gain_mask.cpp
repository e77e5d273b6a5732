// Live peak finding restricted to some ePix10ka gain configurations (peak_finding.
// search_gain_configs): on the simulated ePix10ka2M with its ASICs dealt FH FM FL AHL AML in turn
// (simulator.gain_configs; out of the box every ASIC is AHL), a run searching FH and AHL must
// report no peak on a pixel configured otherwise, publish the lists of an independent PeakFinder8
// whose mask leaves those pixels out (built here from the simulator's constants, as
// engine/tools/bench_peaks.cpp does), and bring the count from the false peaks of the medium- and
// low-gain ASICs down to the simulator's true Bragg peaks. The field is checked as strictly as the
// rest of the configuration (names, types, duplicates), round-trips through JSON, merges through
// apply, is refused by set_peak_params (it shapes the mask, fixed for a run), and is refused for a
// detector without a per-pixel gain configuration and when no pixel has a listed configuration.
#include <QtTest>

#include <algorithm>
#include <array>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "engine_error_text.hpp"
#include "exec/engine_controller.hpp"
#include "stages/peaks/live_peaks.hpp"
#include "live_peaks_support.hpp"

using namespace livedrp;
using namespace livedrp::live_peaks_test;

namespace {

const std::vector<std::string> kHighGainStart = {"FH", "AHL"};

QString input_error(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

// The parameters of tests/test_peakfinder8_simulated.cpp and bench_peaks: above two 9.5 keV
// photons in one pixel, three pixels at least; a hit from 2 peaks so that every list is sent.
peaks::PeakFinderParams truth_params() {
  peaks::PeakFinderParams params;
  params.adc_threshold = 20.0f;
  params.minimum_snr = 5;
  params.min_pixel_count = 3;
  params.max_pixel_count = 200;
  params.min_peaks_for_hit = 2;
  return params;
}

// Whether slab pixel p starts in high gain: its configuration, read from the constants here
// (not through the engine's code), is FH or AHL.
bool searched_pixel(const CalibrationConstants& constants, std::size_t p) {
  const int config = constants.pixel_status[p] & calib::kStatusConfigBits;
  return config == calib::kConfigFH || config == calib::kConfigAHL;
}

// The slab pixel under a reported peak's centroid (pixel centres at integer fs/ss).
std::size_t peak_pixel(const DetectorDescription& detector, float fs, float ss) {
  return std::size_t(std::lround(ss)) * std::size_t(detector.cols) + std::size_t(std::lround(fs));
}

}  // namespace

class TestEnginePeakGainMask : public QObject {
  Q_OBJECT
 private slots:
  void searching_fh_and_ahl_leaves_other_configurations_out_and_meets_the_truth() {
    EngineConfig config = live_config();
    config.events = 3;  // the simulator's pool: each event once
    config.peak_finding.params = truth_params();
    config.simulator_gain_configs = {"FH", "FM", "FL", "AHL", "AML"};  // a mixed layout
    config.peak_finding.search_gain_configs = kHighGainStart;
    config.peak_finding.recent_frames = 3;
    config.image.publish_hz = 0;
    ThreadPool pool(2);
    const DetectorSimulator simulator = engine_simulator(config, pool);
    const DetectorDescription& detector = simulator.detector();
    const CalibrationConstants& constants = simulator.constants();
    const ImageAssembly assembly(detector);

    // Every configuration is on the detector, so the choice matters.
    std::array<std::size_t, 5> per_config{};
    for (std::size_t p = 0; p < constants.pixels; ++p)
      ++per_config[std::size_t(constants.pixel_status[p] & calib::kStatusConfigBits)];
    for (std::size_t value = 0; value < per_config.size(); ++value)
      QVERIFY2(per_config[value] > 0,
               qPrintable(QString("no pixel in configuration %1").arg(value)));

    // The run, then a re-run over its kept frames: every frame's list, hit or not.
    EngineController controller(config);
    protocol::Subscriber subscriber(controller.publish_endpoint(), peak_topics());
    std::this_thread::sleep_for(200ms);
    QVERIFY(controller.start());
    PeakMessages seen;
    while (controller.state() == "running") take_messages(subscriber, seen, 20ms);
    take_messages(subscriber, seen, 300ms);
    const RunSummary summary = controller.summary();
    QVERIFY2(summary.error.empty(), summary.error.c_str());
    QCOMPARE(summary.stats.events_processed, config.events);
    const nlohmann::json rerun = controller.rerun_peaks(std::nullopt);
    take_messages(subscriber, seen, 500ms);
    QCOMPARE(rerun.at("frames").get<std::uint64_t>(), config.events);

    // Offline: the same frames, searched with every configuration and with FH and AHL only.
    const OfflineEvents offline = offline_events(config, simulator, pool);
    peaks::PeakFinder8 everywhere =
        independent_finder(detector, constants, config.peak_finding.params);
    const AssembledPoint beam = assembled_bounds(detector).centre();
    std::vector<std::uint8_t> bad(detector.pixels());
    for (std::size_t p = 0; p < bad.size(); ++p)
      bad[p] = constants.masked(p) || !searched_pixel(constants, p) ? 1 : 0;
    peaks::PeakFinder8 high_gain(peaks::slab_layout(detector),
                                 peaks::radius_map(detector, beam.x, beam.y), bad,
                                 config.peak_finding.params);
    std::vector<peaks::PeakList> lists;
    std::uint64_t found = 0, hits = 0;
    for (const auto& frame : offline.calibrated) {
      lists.push_back(high_gain.find(frame.data()));
      found += std::uint64_t(lists.back().found);
      hits += lists.back().hit ? 1 : 0;
    }

    // Every message (the run's hits and the re-run's frames): no peak outside FH and AHL, and the
    // list is the offline FH+AHL search's, value for value.
    std::size_t reruns = 0;
    QVERIFY(!seen.peaks.empty());
    for (const protocol::EventPeaks& p : seen.peaks) {
      reruns += p.rerun ? 1 : 0;
      const std::size_t index = offline.index_of(p.sequence);
      QVERIFY(index < offline.sequences.size());
      for (const protocol::PeakRow& row : p.peaks) {
        const std::size_t pixel = peak_pixel(detector, row.fs, row.ss);
        QVERIFY2(pixel < detector.pixels() && searched_pixel(constants, pixel),
                 qPrintable(QString("event %1: a peak at fs %2 ss %3 on a pixel configured %4")
                                .arg(index)
                                .arg(row.fs)
                                .arg(row.ss)
                                .arg(constants.pixel_status[std::min(pixel, constants.pixels - 1)] &
                                     calib::kStatusConfigBits)));
      }
      const QString difference = compare_list(p, lists[index], assembly);
      QVERIFY2(difference.isEmpty(), qPrintable(QString("event %1: ").arg(index) + difference));
    }
    QCOMPARE(reruns, std::size_t(config.events));
    QCOMPARE(summary.stats.peak_finding->total_peaks, found);
    QCOMPARE(summary.stats.peak_finding->total_hits, hits);

    // Against the simulator's truth: the Bragg peaks centred on searched, unmasked pixels. The
    // search with every configuration finds false peaks by the hundred on each frame; the FH+AHL
    // one finds the true peaks there (one may be missed, a couple of powder or bright-spot clusters
    // may be added), and its confident peaks (SNR >= 10) are true ones but for one at most.
    for (std::size_t index = 0; index < offline.calibrated.size(); ++index) {
      std::vector<std::uint8_t> raw(detector.raw_event_bytes());
      EventTruth truth;
      simulator.generate(index % std::size_t(config.simulator_pool), raw.data(), &truth, &pool);
      QVERIFY(truth.hit);
      std::size_t true_there = 0;
      for (const TruePeak& t : truth.peaks) {
        const std::size_t pixel = std::size_t(t.segment) * detector.pixels_per_segment() +
                                  std::size_t(std::lround(t.row)) * std::size_t(detector.cols) +
                                  std::size_t(std::lround(t.col));
        true_there += searched_pixel(constants, pixel) && !constants.masked(pixel) ? 1 : 0;
      }
      const std::uint64_t all_configs =
          std::uint64_t(everywhere.find(offline.calibrated[index].data()).found);
      const peaks::PeakList& list = lists[index];
      std::size_t confident = 0, confident_true = 0;
      for (const peaks::Peak& p : list.peaks) {
        if (p.snr < 10) continue;
        ++confident;
        const bool bragg =
            std::any_of(truth.peaks.begin(), truth.peaks.end(), [&](const TruePeak& t) {
              return t.segment == p.segment &&
                     std::hypot(t.row - double(p.ss_in_segment), t.col - double(p.fs)) < 1.5;
            });
        confident_true += bragg ? 1 : 0;
      }
      qInfo(
          "event %zu: %zu true Bragg peaks (%zu on FH/AHL pixels); found %d with FH+AHL (%zu with "
          "SNR >= 10, %zu of them true), %llu with every configuration",
          index, truth.peaks.size(), true_there, list.found, confident, confident_true,
          (unsigned long long)all_configs);
      QVERIFY2(all_configs > 10 * std::max<std::size_t>(true_there, 1),
               "the search over every configuration should find false peaks by the hundred");
      QVERIFY(std::size_t(list.found) <= true_there + 2);
      QVERIFY(std::size_t(list.found) + 1 >= true_there);
      QVERIFY(confident_true + 1 >= confident);
    }
  }

  void detector_without_gain_configuration_refuses_the_field() {
    EngineConfig config = live_config();
    config.publish = "";
    config.source = "sim:jungfrau4m";
    config.peak_finding.search_gain_configs = {"FH"};
    const QString error = construction_error(config);
    QVERIFY2(error.contains("peak_finding.search_gain_configs") && error.contains("jungfrau4m") &&
                 error.contains("no per-pixel gain configuration"),
             qPrintable(error));

    // The same through the geometry alone, for a float32 detector.
    const DetectorDescription generic = find_detector("generic_f32");
    LivePeakFindingConfig peak_finding;
    peak_finding.search_gain_configs = {"AHL"};
    const QString generic_error = input_error(
        [&] { LivePeakGeometry geometry(peak_finding, generic, identity_constants(generic)); });
    QVERIFY2(generic_error.contains("peak_finding.search_gain_configs") &&
                 generic_error.contains("generic_f32"),
             qPrintable(generic_error));
    // Empty: every pixel searched, on any detector.
    peak_finding.search_gain_configs.clear();
    QVERIFY(input_error([&] {
              LivePeakGeometry geometry(peak_finding, generic, identity_constants(generic));
            }).isEmpty());
  }

  void configurations_matching_no_pixel_are_refused() {
    // Constants configured FH everywhere (a run all in fixed high gain): searching AHL and AML
    // would search nothing.
    const DetectorDescription detector = find_detector("epix10ka2m");
    const CalibrationConstants constants = identity_constants(detector);
    LivePeakFindingConfig peak_finding;
    peak_finding.search_gain_configs = {"AHL", "AML"};
    const QString error =
        input_error([&] { LivePeakGeometry geometry(peak_finding, detector, constants); });
    QVERIFY2(error.contains("peak_finding.search_gain_configs") &&
                 error.contains("nothing would be searched") && error.contains("FH"),
             qPrintable(error));
    peak_finding.search_gain_configs = {"FH"};
    QVERIFY(input_error([&] {
              LivePeakGeometry geometry(peak_finding, detector, constants);
            }).isEmpty());
  }

  void bad_search_gain_configs_name_the_field_and_the_allowed_names() {
    struct Case {
      nlohmann::json value;
      std::vector<const char*> expected;  // every one in the error
    };
    const std::vector<Case> cases = {
        {{"FH", "XH"}, {"\"XH\"", "FH", "FM", "FL", "AHL", "AML"}},
        {{"fh"}, {"\"fh\"", "did you mean \"FH\""}},
        {{"AHL-H"}, {"\"AHL-H\"", "AML"}},  // a gain mode's name, not a configuration's
        {"FH", {"must be a list", "\"FH\""}},
        {3, {"must be a list"}},
        {{{"FH", true}}, {"must be a list"}},
        {{1, 3}, {"must hold gain-configuration names", "1"}},
        {{"FH", nullptr}, {"must hold gain-configuration names", "null"}},
        {{"AHL", "FH", "AHL"}, {"\"AHL\" twice"}},
    };
    for (const Case& c : cases) {
      const QString error = config_error({{"peak_finding", {{"search_gain_configs", c.value}}}});
      const QString context = QString::fromStdString(c.value.dump()) + " -> '" + error + "'";
      QVERIFY2(error.contains("test.json") && error.contains("peak_finding.search_gain_configs"),
               qPrintable(context));
      for (const char* part : c.expected) QVERIFY2(error.contains(part), qPrintable(context));
    }
    // Accepted: a list of distinct names, an empty list and null (both: every pixel searched).
    for (const nlohmann::json& value :
         {nlohmann::json({"FH", "AHL"}), nlohmann::json::array(), nlohmann::json(),
          nlohmann::json({"FH", "FM", "FL", "AHL", "AML"})})
      QVERIFY2(config_error({{"peak_finding", {{"search_gain_configs", value}}}}).isEmpty(),
               qPrintable(QString::fromStdString(value.dump())));
    QVERIFY(EngineConfig::from_json({{"peak_finding", {{"search_gain_configs", nullptr}}}}, "t")
                .peak_finding.search_gain_configs.empty());
  }

  void search_gain_configs_round_trip_and_merge_through_apply() {
    EngineConfig c;
    c.peak_finding.enabled = true;
    c.peak_finding.search_gain_configs = {"AHL", "FH"};
    const nlohmann::json json = c.to_json();
    QCOMPARE(json.at("peak_finding").at("search_gain_configs"), nlohmann::json({"AHL", "FH"}));
    const EngineConfig again = EngineConfig::from_json(json, "round trip");
    QCOMPARE(again.peak_finding.search_gain_configs, c.peak_finding.search_gain_configs);
    QCOMPARE(again.to_json(), json);
    // Absent or default: empty, written as [].
    const EngineConfig defaults = EngineConfig::from_json(nlohmann::json::object(), "defaults");
    QVERIFY(defaults.peak_finding.search_gain_configs.empty());
    QCOMPARE(defaults.to_json().at("peak_finding").at("search_gain_configs"),
             nlohmann::json::array());
    QCOMPARE(EngineConfig::from_json(defaults.to_json(), "defaults").to_json(), defaults.to_json());

    // apply merges it into peak_finding, keeping the other fields; null clears it.
    EngineConfig base = live_config();
    base.publish = "";
    base.peak_finding.recent_frames = 2;
    EngineController controller(base);
    controller.apply_json({{"peak_finding", {{"search_gain_configs", {"FH", "AHL"}}}}});
    QCOMPARE(controller.config().peak_finding.search_gain_configs, kHighGainStart);
    QCOMPARE(controller.config().peak_finding.recent_frames, 2);
    QVERIFY(controller.config().peak_finding.enabled);
    QCOMPARE(controller.peak_params_json().at("enabled").get<bool>(), true);
    controller.apply_json({{"peak_finding", {{"search_gain_configs", nullptr}}}});
    QVERIFY(controller.config().peak_finding.search_gain_configs.empty());
    // A refused value leaves the configuration in force.
    const QString error = input_error([&] {
      controller.apply_json({{"peak_finding", {{"search_gain_configs", {"HIGH"}}}}});
    });
    QVERIFY2(error.contains("peak_finding.search_gain_configs") && error.contains("\"HIGH\""),
             qPrintable(error));
    QVERIFY(controller.config().peak_finding.search_gain_configs.empty());
  }

  void set_peak_params_refuses_search_gain_configs_and_says_to_apply() {
    EngineConfig config = live_config();
    config.publish = "";
    config.peak_finding.search_gain_configs = kHighGainStart;
    EngineController controller(config);
    for (const nlohmann::json& request :
         {nlohmann::json({{"search_gain_configs", {"FH"}}}),
          nlohmann::json({{"params", {{"search_gain_configs", {"FH"}}}}}),
          nlohmann::json({{"minimum_snr", 6}, {"search_gain_configs", {"FH"}}})}) {
      const QString error = input_error([&] { controller.set_peak_params(request); });
      QVERIFY2(error.contains("search_gain_configs") &&
                   error.contains("cannot change while the run") && error.contains("apply") &&
                   error.contains("restarts"),
               qPrintable(QString::fromStdString(request.dump()) + " -> " + error));
    }
    // Nothing changed.
    QCOMPARE(controller.peak_params_json().at("params_version").get<int>(), 1);
    QCOMPARE(controller.config().peak_finding.search_gain_configs, kHighGainStart);
    QCOMPARE(controller.config().peak_finding.params.minimum_snr,
             config.peak_finding.params.minimum_snr);
  }
};

QTEST_GUILESS_MAIN(TestEnginePeakGainMask)
#include "test_engine_peak_gain_mask.moc"
