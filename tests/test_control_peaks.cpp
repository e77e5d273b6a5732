// The control socket's peak-finding requests (docs/protocol.md, "Control socket"):
// get_peak_params, set_peak_params and rerun_peaks sent over a real socket to an EngineController
// behind a ControlServer while a run goes: a change applies to the running run without a restart
// (same run number, later `peaks` messages carry the new version) and shows in get_config; a
// re-run publishes every kept frame's list with rerun true; every malformed request is refused
// naming the field while the server goes on answering.
#include <QtTest>

#include <chrono>

#include <nlohmann/json.hpp>

#include "exec/engine_controller.hpp"
#include "live_peaks_support.hpp"
#include "protocol/control.hpp"
#include "protocol/control_client.hpp"
#include "publish/control_server.hpp"

using namespace livedrp;
using namespace livedrp::live_peaks_test;
using nlohmann::json;
using protocol::ControlClient;

namespace {

// A run that goes on until stopped, slowly enough for the 2-core machine to search every event.
EngineConfig running_config() {
  EngineConfig c = live_config();
  c.events = 0;
  c.rate_hz = 4;
  c.full_ring = "drop";
  c.image.publish_hz = 0;
  return c;
}

QString refusal(const json& reply) {
  if (reply.at("ok").get<bool>()) return "unexpectedly ok: " + QString::fromStdString(reply.dump());
  return QString::fromStdString(reply.at("error").get<std::string>());
}

json result_of(const json& reply) {
  if (!reply.at("ok").get<bool>()) qFatal("refused: %s", reply.dump().c_str());
  return reply.at("result");
}

}  // namespace

class TestControlPeaks : public QObject {
  Q_OBJECT
 private slots:
  void parameters_change_the_running_run_and_reruns_publish_every_frame() {
    const EngineConfig config = running_config();
    EngineController controller(config);
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());
    protocol::Subscriber subscriber(controller.publish_endpoint(), peak_topics());
    QTest::qWait(200);

    json params = result_of(client.request(protocol::make_control_request("get_peak_params")));
    QCOMPARE(params.at("enabled").get<bool>(), true);
    QCOMPARE(params.at("params_version").get<int>(), 1);
    QCOMPARE(params.at("params"), peaks::to_json(config.peak_finding.params));

    client.start();
    const std::int64_t run = client.status().at("run").get<std::int64_t>();
    PeakMessages seen;
    const auto wait_for = [&](const std::function<bool()>& condition) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!condition() && std::chrono::steady_clock::now() < deadline)
        take_messages(subscriber, seen, 20ms);
      return condition();
    };
    QVERIFY(wait_for([&] { return seen.peaks.size() >= 1; }));

    const json changed = result_of(client.request(protocol::make_control_request(
        "set_peak_params", {{"params", {{"minimum_snr", 8.0}, {"min_peaks_for_hit", 1}}}})));
    QCOMPARE(changed.at("params_version").get<int>(), 2);
    QCOMPARE(changed.at("params").at("minimum_snr").get<double>(), 8.0);
    QCOMPARE(changed.at("params").at("max_pixel_count").get<int>(),
             config.peak_finding.params.max_pixel_count);  // untouched
    // The run goes on: same run number, still running, and the configuration in force shows it.
    const json status = client.status();
    QCOMPARE(status.at("run").get<std::int64_t>(), run);
    QCOMPARE(status.at("state").get<std::string>(), std::string("running"));
    QCOMPARE(client.get_config()
                 .at("config")
                 .at("peak_finding")
                 .at("params")
                 .at("minimum_snr")
                 .get<double>(),
             8.0);
    QCOMPARE(result_of(client.request(protocol::make_control_request("get_peak_params")))
                 .at("params_version")
                 .get<int>(),
             2);
    // Later events are searched with version 2 (each message says which version found it).
    const auto changed_at = std::chrono::steady_clock::now();
    QVERIFY(wait_for([&] { return !seen.peaks.empty() && seen.peaks.back().params_version == 2; }));
    qInfo("first version-2 list %.2f s after the change (events at %.0f Hz)",
          std::chrono::duration<double>(std::chrono::steady_clock::now() - changed_at).count(),
          config.rate_hz);
    for (const auto& p : seen.peaks)
      QCOMPARE(p.min_peaks_for_hit, std::uint64_t(p.params_version == 2 ? 1 : 2));

    // A re-run over the newest two kept frames: both published with rerun true, hit or not.
    seen.peaks.clear();
    const json rerun =
        result_of(client.request(protocol::make_control_request("rerun_peaks", {{"frames", 2}})));
    QCOMPARE(rerun.at("frames").get<int>(), 2);
    QCOMPARE(rerun.at("params_version").get<int>(), 2);
    const auto sequences = rerun.at("sequences").get<std::vector<std::uint64_t>>();
    const auto per_frame = rerun.at("peaks_per_frame").get<std::vector<std::uint64_t>>();
    QCOMPARE(sequences.size(), std::size_t(2));
    QVERIFY(sequences[0] < sequences[1]);
    QVERIFY(wait_for([&] {
      std::size_t reruns = 0;
      for (const auto& p : seen.peaks) reruns += p.rerun ? 1 : 0;
      return reruns == 2;
    }));
    std::vector<protocol::EventPeaks> reruns;
    for (const auto& p : seen.peaks)
      if (p.rerun) reruns.push_back(p);
    std::uint64_t hits = 0;
    for (std::size_t k = 0; k < 2; ++k) {
      QCOMPARE(reruns[k].sequence, sequences[k]);
      QCOMPARE(reruns[k].found, per_frame[k]);
      QCOMPARE(reruns[k].params_version, std::uint64_t(2));
      hits += reruns[k].hit ? 1 : 0;
    }
    QCOMPARE(rerun.at("hits").get<std::uint64_t>(), hits);
    QCOMPARE(client.status().at("run").get<std::int64_t>(), run);
    client.stop();
  }

  void malformed_peak_requests_are_refused_naming_the_field() {
    EngineController controller(running_config());
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());
    struct Case {
      const char* request;
      json fields;
      QStringList expected;
    };
    const std::vector<Case> cases = {
        {"set_peak_params", json::object(), {"lacks field 'params'"}},
        {"set_peak_params", {{"params", 5}}, {"'params'", "JSON object"}},
        {"set_peak_params",
         {{"params", {{"min_pixel_count", 5}, {"max_pixel_count", 3}}}},
         {"request 'set_peak_params' refused", "max_pixel_count", "min_pixel_count"}},
        {"set_peak_params", {{"params", {{"min_snr", 4}}}}, {"refused", "'min_snr'"}},
        {"set_peak_params", {{"params", {{"iterations", "five"}}}}, {"refused", "iterations"}},
        {"set_peak_params",
         {{"params", json::object()}, {"apply", true}},
         {"unknown field 'apply'"}},
        {"rerun_peaks", {{"frames", 0}}, {"'frames'", "positive integer"}},
        {"rerun_peaks", {{"frames", -2}}, {"'frames'", "positive integer"}},
        {"rerun_peaks", {{"frames", 1.5}}, {"'frames'", "positive integer"}},
        {"rerun_peaks", {{"frames", "all"}}, {"'frames'", "positive integer"}},
        {"rerun_peaks", {{"frames", 100}}, {"refused", "recent_frames"}},
        {"rerun_peaks", {{"count", 2}}, {"unknown field 'count'"}},
        {"get_peak_params", {{"version", 1}}, {"unknown field 'version'"}},
    };
    for (const Case& c : cases) {
      const QString error =
          refusal(client.request(protocol::make_control_request(c.request, c.fields)));
      for (const QString& part : c.expected)
        QVERIFY2(error.contains(part),
                 qPrintable(QString(c.request) + " " + QString::fromStdString(c.fields.dump()) +
                            " -> " + error));
    }
    // Nothing above changed the parameters; an unknown request lists the new ones.
    QCOMPARE(result_of(client.request(protocol::make_control_request("get_peak_params")))
                 .at("params_version")
                 .get<int>(),
             1);
    const QString unknown = refusal(client.request(protocol::make_control_request("peaks")));
    QVERIFY2(unknown.contains("get_peak_params") && unknown.contains("set_peak_params") &&
                 unknown.contains("rerun_peaks"),
             qPrintable(unknown));
  }

  void requests_with_peak_finding_off_say_how_to_turn_it_on() {
    EngineConfig c = running_config();
    c.peak_finding.enabled = false;
    EngineController controller(c);
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());
    const json params =
        result_of(client.request(protocol::make_control_request("get_peak_params")));
    QCOMPARE(params.at("enabled").get<bool>(), false);
    QCOMPARE(params.at("params_version").get<int>(), 0);
    for (const char* name : {"set_peak_params", "rerun_peaks"}) {
      const json fields = std::string(name) == "set_peak_params"
                              ? json{{"params", {{"minimum_snr", 6}}}}
                              : json::object();
      const QString error = refusal(client.request(protocol::make_control_request(name, fields)));
      QVERIFY2(error.contains("peak finding is off") && error.contains("peak_finding"),
               qPrintable(error));
    }
    // Turned on with apply, the requests work.
    client.apply({{"peak_finding", {{"enabled", true}}}});
    QCOMPARE(result_of(client.request(protocol::make_control_request("get_peak_params")))
                 .at("enabled")
                 .get<bool>(),
             true);
  }
};

QTEST_GUILESS_MAIN(TestControlPeaks)
#include "test_control_peaks.moc"
