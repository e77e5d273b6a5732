// The control socket's replay controls (docs/protocol.md, "Control socket", request "replay"):
// simulator events recorded by the engine are replayed by an EngineController behind a
// ControlServer; pause, step (forward and back), seek and resume sent over the socket land on the
// events they name, "status" reports the replay's position and the recording's files, and every
// malformed replay request is refused naming the field while the server goes on answering.
#include <QtTest>

#include <chrono>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "exec/engine.hpp"
#include "exec/engine_controller.hpp"
#include "protocol/control.hpp"
#include "protocol/control_client.hpp"
#include "publish/control_server.hpp"

using namespace livedrp;
using nlohmann::json;
using protocol::ControlClient;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kEvents = 5;

// generic_f32 (one 1024x1024 float segment) keeps each event at 4 MiB and the simulator's
// constants quick to build on the 2-core test machine.
EngineConfig cpu_config(const std::string& source) {
  EngineConfig c;
  c.source = source;
  c.backend = "cpu";
  c.publish = "";
  c.simulator_pool = 2;
  c.stats_interval_s = 0.05;
  c.cpu_threads = 2;
  c.full_ring = "wait";
  c.replay.pace = "flat_out";
  return c;
}

// Records kEvents simulator events into `directory` through the engine's own recorder, the way an
// operator records a live source; returns the files written.
std::vector<std::string> record_simulator(const fs::path& directory) {
  EngineConfig c = cpu_config("sim:generic_f32");
  c.events = kEvents;
  c.record.directory = directory.string();
  Engine engine(c);
  engine.start();
  engine.wait();
  const RunSummary summary = engine.summary();
  if (!summary.error.empty()) qFatal("recording failed: %s", summary.error.c_str());
  return engine.record_status().files;
}

std::uint64_t events_in(ControlClient& client) {
  return client.status().at("stats").at("events_in").get<std::uint64_t>();
}

QString refusal(const json& reply) {
  if (reply.at("ok").get<bool>()) return "unexpectedly ok: " + QString::fromStdString(reply.dump());
  return QString::fromStdString(reply.at("error").get<std::string>());
}

json replay_request(const json& fields) {
  return protocol::make_control_request("replay", fields);
}

}  // namespace

class TestControlReplay : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  fs::path recorded_;

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    recorded_ = fs::path(dir_.path().toStdString()) / "recorded";
    const auto files = record_simulator(recorded_);
    QCOMPARE(files.size(), std::size_t(1));
  }

  // Paused before the start, the replay hands on one event per step; a step back re-sends the
  // previous event; a seek moves the next event; resume runs to the end. Each reply carries the
  // replay status the step left behind.
  void pause_step_seek_and_resume_over_the_socket() {
    EngineController controller(cpu_config("replay:" + recorded_.string()));
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());

    json result = client.replay("pause");
    QCOMPARE(result.at("replay").at("active").get<bool>(), true);
    QCOMPARE(result.at("replay").at("paused").get<bool>(), true);
    QCOMPARE(result.at("replay").at("total_events").get<std::uint64_t>(), kEvents);
    QCOMPARE(result.at("record").at("active").get<bool>(), false);
    client.start();
    QTest::qWait(200);
    QCOMPARE(events_in(client), std::uint64_t(0));  // paused: nothing enters

    client.replay("step");
    QTRY_COMPARE_WITH_TIMEOUT(events_in(client), std::uint64_t(1), 5000);
    QCOMPARE(client.replay("status").at("replay").at("position").get<std::uint64_t>(), 0u);
    client.replay("step", {{"delta", 1}});
    QTRY_COMPARE_WITH_TIMEOUT(events_in(client), std::uint64_t(2), 5000);
    QCOMPARE(client.replay("status").at("replay").at("position").get<std::uint64_t>(), 1u);
    client.replay("step", {{"delta", -1}});
    QTRY_COMPARE_WITH_TIMEOUT(events_in(client), std::uint64_t(3), 5000);
    result = client.replay("status");
    QCOMPARE(result.at("replay").at("position").get<std::uint64_t>(), 0u);
    QCOMPARE(result.at("replay").at("handed").get<std::uint64_t>(), 3u);
    QCOMPARE(result.at("replay").at("paused").get<bool>(), true);

    client.replay("seek", {{"index", 3}});
    client.replay("step");  // the next event after a seek is the one sought
    QTRY_COMPARE_WITH_TIMEOUT(events_in(client), std::uint64_t(4), 5000);
    QCOMPARE(client.replay("status").at("replay").at("position").get<std::uint64_t>(), 3u);

    result = client.replay("resume");
    QCOMPARE(result.at("replay").at("paused").get<bool>(), false);
    QTRY_COMPARE_WITH_TIMEOUT(client.status().at("state").get<std::string>(),
                              std::string("finished"), 5000);
    const json status = client.status();
    QCOMPARE(status.at("stats").at("events_in").get<std::uint64_t>(), kEvents);  // 4 steps + 1
    QCOMPARE(status.at("stats").at("events_processed").get<std::uint64_t>(), kEvents);
    QCOMPARE(status.at("replay").at("position").get<std::uint64_t>(), kEvents - 1);
    QCOMPARE(status.at("replay").at("pace").get<std::string>(), std::string("flat_out"));
  }

  // A live source being recorded: "status" names the recording's events and, once the run is
  // over, its files; the replay block says there is no replay.
  void status_reports_the_recording_of_a_live_source() {
    const fs::path directory = fs::path(dir_.path().toStdString()) / "live";
    EngineConfig c = cpu_config("sim:generic_f32");
    c.events = 3;
    c.record.directory = directory.string();
    EngineController controller(c);
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());
    client.start();
    QTRY_COMPARE_WITH_TIMEOUT(client.status().at("state").get<std::string>(),
                              std::string("finished"), 10000);
    const json status = client.status();
    QCOMPARE(status.at("replay").at("active").get<bool>(), false);
    const json& record = status.at("record");
    QCOMPARE(record.at("active").get<bool>(), true);
    QCOMPARE(record.at("events").get<std::uint64_t>(), 3u);
    QCOMPARE(record.at("dropped").get<std::uint64_t>(), 0u);  // 3 events fit the writer's queue
    QCOMPARE(record.at("files").size(), std::size_t(1));
    const fs::path file = record.at("files").at(0).get<std::string>();
    QVERIFY(fs::exists(file));
    QCOMPARE(file.parent_path(), directory);
  }

  // Each bad replay request is answered with an error naming what is wrong; the server goes on.
  void bad_replay_requests_are_refused_naming_the_field() {
    EngineController controller(cpu_config("replay:" + recorded_.string()));
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());
    controller.pause();
    client.start();

    struct Case {
      json fields;
      QStringList expected;
    };
    const std::vector<Case> cases = {
        {json::object(), {"lacks field 'action'"}},
        {{{"action", "rewind"}}, {"'action'", "rewind"}},
        {{{"action", 3}}, {"'action'"}},
        {{{"action", "step"}, {"delta", 0}}, {"'delta'", "non-zero"}},
        {{{"action", "step"}, {"delta", "back"}}, {"'delta'", "back"}},
        {{{"action", "pause"}, {"delta", 1}}, {"'delta'", "only with action 'step'"}},
        {{{"action", "seek"}}, {"lacks field 'index'"}},
        {{{"action", "seek"}, {"index", -1}}, {"'index'", "non-negative"}},
        {{{"action", "seek"}, {"index", 1.5}}, {"'index'", "non-negative"}},
        {{{"action", "step"}, {"index", 1}}, {"'index'", "only with action 'seek'"}},
        {{{"action", "seek"}, {"index", 5}}, {"refused", "seek to event 5", "5 events"}},
        {{{"action", "pause"}, {"speed", 2}}, {"unknown field 'speed'"}},
    };
    for (const Case& c : cases) {
      const QString error = refusal(client.request(replay_request(c.fields)));
      for (const QString& part : c.expected)
        QVERIFY2(error.contains(part),
                 qPrintable(QString::fromStdString(c.fields.dump()) + " -> " + error));
    }
    // Nothing above moved the replay: still paused at the start.
    const json result = client.replay("status");
    QCOMPARE(result.at("replay").at("paused").get<bool>(), true);
    QCOMPARE(result.at("replay").at("handed").get<std::uint64_t>(), 0u);
    QCOMPARE(result.at("state").get<std::string>(), std::string("running"));
    client.stop();
  }

  // The controls need a replay: on a simulator source they are refused naming why, while
  // "status" answers for any source.
  void controls_on_a_live_source_are_refused() {
    EngineConfig c = cpu_config("sim:generic_f32");
    c.rate_hz = 50;
    EngineController controller(c);
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());
    client.start();
    for (const char* action : {"pause", "resume", "step"}) {
      const QString error = refusal(client.request(replay_request({{"action", action}})));
      QVERIFY2(error.contains("needs a replay source"), qPrintable(error));
    }
    QCOMPARE(client.replay("status").at("replay").at("active").get<bool>(), false);
    client.stop();
    QVERIFY(server.requests_answered() >= 6);
  }
};

QTEST_GUILESS_MAIN(TestControlReplay)
#include "test_control_replay.moc"
