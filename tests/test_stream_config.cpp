// The runtime configuration in the pipeline JSON: defaults, round trips, and bad values refused
// with the field and the allowed values named.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "exec/backend.hpp"
#include "exec/engine.hpp"
#include "exec/stream_config.hpp"

using namespace livedrp;
using nlohmann::json;

namespace {
QString error_of(const json& runtime) {
  try {
    EngineConfig::from_json({{"runtime", runtime}}, "test.json");
  } catch (const InputError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}
}  // namespace

class TestStreamConfig : public QObject {
  Q_OBJECT
 private slots:
  void defaults_are_one_plain_stream_with_batch_one() {
    const StreamConfig c;
    QCOMPARE(c.streams, 1);
    QCOMPARE(c.batch, 1);
    QCOMPARE(c.launch, LaunchMode::Plain);
    QCOMPARE(c.segments, SegmentsPerLaunch::All);
    QCOMPARE(c.host_threads, HostThreadModel::OneForAll);
    QCOMPARE(c.source, SourcePlacement::Host);
    QCOMPARE(QString::fromStdString(describe(c)), QString("1 stream, plain, K=1, all segments"));
  }

  void every_field_round_trips_through_the_pipeline_json() {
    EngineConfig config;
    config.runtime.streams = 8;
    config.runtime.slots_per_stream = 3;
    config.runtime.launch = LaunchMode::Graph;
    config.runtime.batch = 4;
    config.runtime.segments = SegmentsPerLaunch::One;
    config.runtime.host_threads = HostThreadModel::PerStream;
    config.runtime.source = SourcePlacement::Device;
    config.runtime.on_fault = FaultPolicy::FallbackCpu;
    const json written = config.to_json();
    QCOMPARE(written.at("runtime").at("launch").get<std::string>(), std::string("graph"));
    QCOMPARE(written.at("runtime").at("segments_per_launch").get<std::string>(), std::string("one"));
    const EngineConfig read = EngineConfig::from_json(written, "round trip");
    QVERIFY(read.runtime == config.runtime);
    QCOMPARE(QString::fromStdString(describe(read.runtime)),
             QString("8 streams, graph, K=4, one segment per launch, thread per stream, "
                     "device-resident source"));
  }

  void a_partial_runtime_keeps_the_other_defaults() {
    const EngineConfig read = EngineConfig::from_json({{"runtime", {{"streams", 4}}}}, "partial");
    QCOMPARE(read.runtime.streams, 4);
    QCOMPARE(read.runtime.batch, 1);
    QCOMPARE(read.runtime.launch, LaunchMode::Plain);
  }

  void bad_values_name_the_field_and_what_is_allowed() {
    QVERIFY(error_of({{"streams", 0}}).contains("'runtime.streams' must be an integer in 1..16"));
    QVERIFY(error_of({{"streams", 17}}).contains("runtime.streams"));
    QVERIFY(error_of({{"streams", "four"}}).contains("runtime.streams"));
    QVERIFY(error_of({{"batch", 65}}).contains("'runtime.batch' must be an integer in 1..64"));
    QVERIFY(error_of({{"slots_per_stream", 0}}).contains("runtime.slots_per_stream"));
    const QString launch = error_of({{"launch", "warp"}});
    QVERIFY2(launch.contains("runtime.launch") && launch.contains("plain, graph, device_graph, persistent") &&
                 launch.contains("warp"),
             qPrintable(launch));
    QVERIFY(error_of({{"segments_per_launch", 2}}).contains("runtime.segments_per_launch"));
    QVERIFY(error_of({{"host_threads", "many"}}).contains("one_for_all, per_stream"));
    QVERIFY(error_of({{"source", "fpga"}}).contains("host, device"));
    QVERIFY(error_of({{"on_fault", "ignore"}}).contains("stop, fallback_cpu"));
    QVERIFY(error_of({{"stream", 4}}).contains("unknown field 'runtime.stream'"));
    QVERIFY(error_of(json::array()).contains("'runtime' must be a JSON object"));
    QVERIFY(error_of({{"streams", 2}}).isEmpty());
  }

  void the_cpu_backend_says_the_runtime_settings_are_not_its_own() {
    const DetectorDescription detector = find_detector("generic_f32");
    const CalibrationConstants constants = identity_constants(detector);
    StreamConfig runtime;
    runtime.streams = 4;
    const BackendChoice choice = make_backend("cpu", detector, constants, {}, 1, runtime);
    QCOMPARE(QString::fromStdString(choice.backend->name()), QString("cpu"));
    QVERIFY2(QString::fromStdString(choice.note).contains("apply to the CUDA backend only"),
             choice.note.c_str());
    QCOMPARE(choice.backend->lane_occupancy().size(), std::size_t(1));
    const BackendChoice plain = make_backend("cpu", detector, constants, {}, 1, StreamConfig{});
    QCOMPARE(QString::fromStdString(plain.note), QString("cpu: as requested"));
  }
};

QTEST_GUILESS_MAIN(TestStreamConfig)
#include "test_stream_config.moc"
