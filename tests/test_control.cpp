// The control socket: an EngineController behind a ControlServer, driven by a ControlClient.
// Configuration changes restart the run with the next run number while subscribers stay connected;
// refused changes leave the run alone; every malformed request gets an error naming the problem
// and the server goes on answering; the client recovers from a timeout.
#include <QtTest>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "core/error.hpp"
#include "exec/engine_controller.hpp"
#include "io/array_file.hpp"
#include "protocol/control.hpp"
#include "protocol/control_client.hpp"
#include "protocol/subscriber.hpp"
#include "protocol/topics.hpp"
#include "publish/control_server.hpp"

using namespace livedrp;
using nlohmann::json;
using protocol::ControlClient;
using protocol::ProtocolError;
using namespace std::chrono_literals;

namespace {

// A small, slow run: the simulator builds its constants in well under a second for generic_f32
// (one 1024x1024 segment), and 100 Hz on the CPU backend leaves the 2-core test machine idle.
EngineConfig small_config(double rate_hz = 100) {
  EngineConfig c;
  c.source = "sim:generic_f32";
  c.backend = "cpu";
  c.publish = "tcp://127.0.0.1:*";
  c.rate_hz = rate_hz;
  c.simulator_pool = 2;
  c.stats_interval_s = 0.05;
  c.cpu_threads = 2;
  return c;
}

constexpr auto kReplyTimeout = 15s;  // "apply" builds an engine and drains the old run first

// Polls `condition` every 20 ms for at most `timeout`.
bool eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = 5000ms) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return condition();
}

std::uint64_t processed(const json& status) {
  return status.at("stats").at("events_processed").get<std::uint64_t>();
}

QString text(const json& value) {
  return QString::fromStdString(value.dump());
}

// The error of a reply that must have been refused.
QString refusal(const json& reply) {
  if (reply.at("ok").get<bool>()) return "unexpectedly ok: " + text(reply);
  return QString::fromStdString(reply.at("error").get<std::string>());
}

// A tcp endpoint on loopback where nothing listens (the OS picked the port a moment ago).
std::string unused_endpoint() {
  zmq::socket_t probe(protocol::shared_zmq_context(), zmq::socket_type::rep);
  probe.set(zmq::sockopt::linger, 0);
  probe.bind("tcp://127.0.0.1:*");
  const std::string endpoint = probe.get(zmq::sockopt::last_endpoint);
  probe.close();
  return endpoint;
}

}  // namespace

class TestControl : public QObject {
  Q_OBJECT
 private slots:
  void apply_restarts_the_run_with_the_new_runtime_and_the_next_run_number() {
    EngineController controller(small_config());
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());
    protocol::Subscriber subscriber(controller.publish_endpoint(), {"status"});

    QCOMPARE(client.start(kReplyTimeout).at("run").get<int>(), 1);
    QVERIFY(eventually([&] { return processed(client.status()) > 0; }));

    const json result = client.set_runtime({{"slots_per_stream", 2}, {"batch", 3}}, kReplyTimeout);
    QCOMPARE(result.at("restarted").get<bool>(), true);
    QCOMPARE(result.at("run").get<int>(), 2);
    QCOMPARE(result.at("state").get<std::string>(), std::string("running"));

    const json status = client.status();
    QCOMPARE(status.at("run").get<int>(), 2);
    QCOMPARE(status.at("state").get<std::string>(), std::string("running"));
    const json& runtime = status.at("config").at("runtime");
    QCOMPARE(runtime.at("slots_per_stream").get<int>(), 2);
    QCOMPARE(runtime.at("batch").get<int>(), 3);
    QCOMPARE(runtime.at("streams").get<int>(), 1);  // not given: unchanged
    QCOMPARE(status.at("config").at("rate_hz").get<double>(), 100.0);
    QCOMPARE(status.at("config").at("source").get<std::string>(), std::string("sim:generic_f32"));
    QCOMPARE(status.at("publish").get<std::string>(), controller.publish_endpoint());
    QVERIFY(eventually([&] { return processed(client.status()) > 0; }));

    // The same subscriber, never reconnected, sees run 1 end and run 2 run with the new runtime.
    bool saw_run1_finished = false, saw_run2_running = false;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!(saw_run1_finished && saw_run2_running) &&
           std::chrono::steady_clock::now() < deadline) {
      const auto message = subscriber.receive(200ms);
      if (!message) continue;
      const auto payload = protocol::status_from_json(message->payload);
      if (message->run == 1 && payload.state == "finished") saw_run1_finished = true;
      if (message->run == 2 && payload.state == "running") {
        QCOMPARE(payload.config.at("runtime").at("batch").get<int>(), 3);
        QCOMPARE(payload.config.at("run").get<int>(), 2);
        saw_run2_running = true;
      }
    }
    QVERIFY(saw_run1_finished);
    QVERIFY(saw_run2_running);
  }

  void bad_partial_config_is_refused_naming_the_field_and_the_run_goes_on() {
    EngineController controller(small_config());
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());
    client.start();
    QVERIFY(eventually([&] { return processed(client.status()) > 0; }));

    QString error = refusal(client.request(
        protocol::make_control_request("set_runtime", {{"runtime", {{"streams", 99}}}})));
    QVERIFY2(error.contains("runtime.streams") && error.contains("99"), qPrintable(error));
    error = refusal(client.request(
        protocol::make_control_request("apply", {{"config", {{"rate_hz", "fast"}}}})));
    QVERIFY2(error.contains("rate_hz") && error.contains("fast"), qPrintable(error));
    error = refusal(
        client.request(protocol::make_control_request("apply", {{"config", {{"evnets", 3}}}})));
    QVERIFY2(error.contains("unknown field 'evnets'"), qPrintable(error));
    error = refusal(client.request(
        protocol::make_control_request("apply", {{"config", {{"source", "sim:pilatus6m"}}}})));
    QVERIFY2(error.contains("pilatus6m"), qPrintable(error));

    // The old run was never touched: same run number, same configuration, still counting.
    const json before = client.status();
    QCOMPARE(before.at("run").get<int>(), 1);
    QCOMPARE(before.at("state").get<std::string>(), std::string("running"));
    QCOMPARE(before.at("config").at("runtime").at("streams").get<int>(), 1);
    QCOMPARE(before.at("config").at("source").get<std::string>(), std::string("sim:generic_f32"));
    QVERIFY(eventually([&] { return processed(client.status()) > processed(before); }));
  }

  void malformed_requests_are_answered_with_an_error_naming_the_problem() {
    EngineController controller(small_config());
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());
    // A request with the envelope and `fields`, as bytes.
    const auto with = [](const json& fields) {
      json request = {{"schema", "livedrp"}, {"schema_version", 1}};
      request.update(fields);
      return request.dump();
    };
    const struct {
      std::vector<std::string> parts;
      const char* expected;
    } cases[] = {
        {{"status please"}, "not valid JSON"},
        {{""}, "not valid JSON"},
        {{std::string("\xff\xfe") + "x"}, "not valid JSON"},
        {{"[1, 2]"}, "must be a JSON object, got array"},
        // Nested 400,000 deep (within the size limit): refused at the first level too deep,
        // before anything could recurse over it.
        {{std::string(400000, '[') + std::string(400000, ']')}, "nested more than 64 deep"},
        {{json{{"schema", "other"}, {"schema_version", 1}, {"request", "status"}}.dump()},
         "'schema' is \"other\""},
        {{json{{"schema_version", 1}, {"request", "status"}}.dump()}, "lacks field 'schema'"},
        {{json{{"schema", "livedrp"}, {"schema_version", 2}, {"request", "status"}}.dump()},
         "'schema_version' is 2"},
        {{with(json::object())}, "lacks field 'request'"},
        {{with({{"request", 5}})}, "field 'request' must be a non-empty string"},
        {{with({{"request", "launch"}})}, "unknown request 'launch'"},
        {{with({{"request", "apply"}})}, "lacks field 'config'"},
        {{with({{"request", "apply"}, {"config", "fast"}})},
         "field 'config' must be a JSON object"},
        {{with({{"request", "set_runtime"}, {"runtime", json::array({1})}})},
         "field 'runtime' must be a JSON object"},
        {{with({{"request", "status"}, {"verbose", true}})}, "unknown field 'verbose'"},
        {{with({{"request", "status"}}), "second part"}, "got 2 parts"},
        {{with({{"request", "status"},
                {"pad", std::string(protocol::kControlMaxRequestBytes, 'x')}})},
         "larger than the limit"},
    };
    for (const auto& c : cases) {
      const json reply = client.request_raw(c.parts, 5s);
      const QString error = refusal(reply);
      QVERIFY2(error.contains(c.expected),
               qPrintable("expected '" + QString(c.expected) + "' in: " + error));
      // ...and the server keeps answering.
      QCOMPARE(client.status(5s).at("state").get<std::string>(), std::string("idle"));
    }
    QCOMPARE(server.requests_answered(), std::uint64_t(2 * std::size(cases)));
  }

  void start_stop_and_status_round_trip_with_real_counts() {
    EngineController controller(small_config(200));
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());

    json status = client.status();
    QCOMPARE(status.at("state").get<std::string>(), std::string("idle"));
    QCOMPARE(status.at("run").get<int>(), 1);
    QCOMPARE(processed(status), std::uint64_t(0));

    json result = client.start(kReplyTimeout);
    QCOMPARE(result.at("started").get<bool>(), true);
    QCOMPARE(result.at("state").get<std::string>(), std::string("running"));
    QVERIFY(eventually([&] { return processed(client.status()) > 0; }));
    const std::uint64_t first = processed(client.status());
    QVERIFY(eventually([&] { return processed(client.status()) > first + 10; }));
    // Starting a run that goes is no error and changes nothing.
    result = client.start();
    QCOMPARE(result.at("started").get<bool>(), false);
    QCOMPARE(result.at("run").get<int>(), 1);

    result = client.stop(kReplyTimeout);
    QCOMPARE(result.at("state").get<std::string>(), std::string("finished"));
    const json& stats = result.at("stats");
    const auto in = stats.at("events_in").get<std::uint64_t>();
    const auto done = stats.at("events_processed").get<std::uint64_t>();
    const auto dropped = stats.at("events_dropped").get<std::uint64_t>();
    QVERIFY(done > first + 10);
    QCOMPARE(in, done + dropped);  // drained: nothing left in flight
    QCOMPARE(stats.at("events_in_flight").get<std::uint64_t>(), std::uint64_t(0));
    QCOMPARE(stats.at("order_errors").get<std::uint64_t>(), std::uint64_t(0));
    std::this_thread::sleep_for(200ms);
    status = client.status();
    QCOMPARE(status.at("state").get<std::string>(), std::string("finished"));
    QCOMPARE(processed(status), done);  // stopped means stopped

    // The next start is a new run with the next number and fresh counts.
    result = client.start(kReplyTimeout);
    QCOMPARE(result.at("started").get<bool>(), true);
    QCOMPARE(result.at("run").get<int>(), 2);
    QVERIFY(eventually([&] {
      const json s = client.status();
      return s.at("run").get<int>() == 2 && processed(s) > 0 && processed(s) < done + 1000;
    }));
    client.stop(kReplyTimeout);
    QCOMPARE(controller.state(), std::string("finished"));
  }

  void client_timeout_throws_within_the_timeout_and_the_client_recovers() {
    const std::string endpoint = unused_endpoint();
    ControlClient client(endpoint);
    const auto timeout = 300ms;
    const auto begin = std::chrono::steady_clock::now();
    QString error;
    try {
      client.request(protocol::make_control_request("status"), timeout);
    } catch (const ProtocolError& e) {
      error = e.what();
    }
    const auto elapsed = std::chrono::steady_clock::now() - begin;
    QVERIFY2(error.contains("no reply") && error.contains(QString::fromStdString(endpoint)),
             qPrintable(error));
    QVERIFY(elapsed >= timeout);
    QVERIFY(elapsed < timeout + 500ms);

    // A server appears on that endpoint: the same client works (its stuck REQ socket was replaced).
    EngineController controller(small_config());
    std::unique_ptr<ControlServer> server;
    QVERIFY(eventually([&] {
      try {
        server = std::make_unique<ControlServer>(controller, endpoint);
        return true;
      } catch (const InputError&) {
        return false;  // the port may linger a moment after the probe closed it
      }
    }));
    QCOMPARE(client.status(5s).at("state").get<std::string>(), std::string("idle"));
    QCOMPARE(client.get_config(5s).at("config").at("source").get<std::string>(),
             std::string("sim:generic_f32"));
  }

  void changing_publish_is_refused_and_restating_it_is_accepted() {
    EngineController controller(small_config());
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());
    const std::string bound = controller.publish_endpoint();
    QVERIFY(bound.rfind("tcp://127.0.0.1:", 0) == 0 && bound.back() != '*');

    const QString error = refusal(client.request(protocol::make_control_request(
        "apply", {{"config", {{"publish", "tcp://127.0.0.1:5999"}}}})));
    QVERIFY2(error.contains("'publish'") && error.contains("tcp://127.0.0.1:5999") &&
                 error.contains(QString::fromStdString(bound)),
             qPrintable(error));
    QCOMPARE(controller.publish_endpoint(), bound);

    // A whole configuration sent back as get_config gave it is fine, "publish" included.
    const json config = client.get_config().at("config");
    QCOMPARE(config.at("publish").get<std::string>(), bound);
    const json result = client.apply(config, kReplyTimeout);
    QCOMPARE(result.at("restarted").get<bool>(), false);
    QCOMPARE(result.at("config").at("publish").get<std::string>(), bound);
  }

  void partial_changes_merge_key_by_key() {
    EngineConfig initial = small_config();
    initial.runtime.slots_per_stream = 3;
    initial.seed = 42;
    EngineController controller(initial);
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());

    json result = client.apply({{"runtime", {{"batch", 4}}},
                                {"simulator", {{"hit_fraction", 0.5}}},
                                {"stats_interval_s", 0.1}},
                               kReplyTimeout);
    QCOMPARE(result.at("restarted").get<bool>(), false);  // nothing was running
    QCOMPARE(result.at("state").get<std::string>(), std::string("idle"));
    QCOMPARE(result.at("run").get<int>(), 1);  // an idle engine keeps its run number
    const json& config = result.at("config");
    QCOMPARE(config.at("runtime").at("batch").get<int>(), 4);
    QCOMPARE(config.at("runtime").at("slots_per_stream").get<int>(), 3);
    QCOMPARE(config.at("simulator").at("hit_fraction").get<double>(), 0.5);
    QCOMPARE(config.at("simulator").at("seed").get<int>(), 42);
    QCOMPARE(config.at("simulator").at("pool_events").get<int>(), 2);
    QCOMPARE(config.at("stats_interval_s").get<double>(), 0.1);
    QCOMPARE(config.at("rate_hz").get<double>(), 100.0);

    result = client.set_calibration({{"common_mode", false}}, kReplyTimeout);
    QCOMPARE(result.at("config").at("calibration").at("common_mode").get<bool>(), false);
    QCOMPARE(result.at("config").at("calibration").at("common_mode_min_pixels").get<int>(),
             initial.calibration.common_mode_min_pixels);
    QCOMPARE(controller.config().calibration.common_mode, false);
    QCOMPARE(controller.config().runtime.batch, 4);

    // The conveniences throw with the server's text when refused.
    QString error;
    try {
      client.set_runtime({{"launch", "warp"}});
    } catch (const ProtocolError& e) {
      error = e.what();
    }
    QVERIFY2(error.contains("runtime.launch") && error.contains("warp"), qPrintable(error));
  }

  void shutdown_is_answered_and_flagged_and_the_server_stops_promptly() {
    EngineController controller(small_config());
    auto server = std::make_unique<ControlServer>(controller, "tcp://127.0.0.1:*");
    ControlClient client(server->endpoint());
    QVERIFY(!server->shutdown_requested());
    QCOMPARE(client.shutdown().at("state").get<std::string>(), std::string("idle"));
    QVERIFY(server->shutdown_requested());
    const auto begin = std::chrono::steady_clock::now();
    server.reset();
    QVERIFY(std::chrono::steady_clock::now() - begin < 500ms);
  }

  // A read-only socket answers what only looks and refuses, naming why, what would change, stop
  // or shut down the run or read a file; the run is untouched and the socket keeps answering.
  void a_read_only_socket_only_looks() {
    EngineController controller(small_config());
    ControlServer server(controller, "tcp://127.0.0.1:*", ControlAccess::ReadOnly);
    ControlClient client(server.endpoint());
    QCOMPARE(client.status().at("state").get<std::string>(), std::string("idle"));
    const json config =
        client.request(protocol::make_control_request("get_config", json::object()));
    QVERIFY2(config.at("ok").get<bool>(), qPrintable(text(config)));
    QVERIFY(client.request(protocol::make_control_request("get_peak_params", json::object()))
                .at("ok")
                .get<bool>());
    for (const auto& request :
         {protocol::make_control_request("apply", {{"config", {{"rate_hz", 5}}}}),
          protocol::make_control_request("start", json::object()),
          protocol::make_control_request("stop", json::object()),
          protocol::make_control_request("shutdown", json::object()),
          protocol::make_control_request("replay_candidates", {{"path", "/etc/hostname"}})}) {
      const QString error = refusal(client.request(request));
      QVERIFY2(error.contains("read-only") &&
                   error.contains(QString::fromStdString(request.at("request").get<std::string>())),
               qPrintable(error));
    }
    QVERIFY(!server.shutdown_requested());
    QCOMPARE(controller.config().rate_hz, small_config().rate_hz);
    QCOMPARE(client.status().at("state").get<std::string>(), std::string("idle"));
  }

  // With control roots, a request naming a file or folder outside them is refused naming the
  // field (the recording folder, a PONI file, a file to list, a way out through '..'), the run is
  // untouched, and what is inside passes the roots' check.
  void control_roots_confine_the_paths_requests_name() {
    QTemporaryDir root, elsewhere;
    const std::string inside = root.path().toStdString();
    EngineController controller(small_config());
    ControlServer server(controller, "tcp://127.0.0.1:*", ControlAccess::Full,
                         ControlRoots({inside}));
    ControlClient client(server.endpoint());
    const std::vector<std::pair<json, std::string>> refused = {
        {protocol::make_control_request(
             "apply", {{"config", {{"record", {{"directory", elsewhere.path().toStdString()}}}}}}),
         "record.directory"},
        {protocol::make_control_request(
             "apply",
             {{"config", {{"integration", {{"enabled", true}, {"poni", "/etc/hostname"}}}}}}),
         "integration.poni"},
        {protocol::make_control_request(
             "apply", {{"config", {{"record", {{"directory", inside + "/../escaped"}}}}}}),
         "record.directory"},
        {protocol::make_control_request("replay_candidates", {{"path", "/etc/hostname"}}), "path"}};
    for (const auto& [request, field] : refused) {
      const QString error = refusal(client.request(request));
      QVERIFY2(error.contains(QString::fromStdString(field)) && error.contains("outside") &&
                   error.contains("--control-root"),
               qPrintable(error));
    }
    QVERIFY(controller.config().record.directory.empty());
    QVERIFY(!std::filesystem::exists(std::filesystem::path(inside).parent_path() / "escaped"));
    // Inside the root the roots have nothing to say (the file itself is then judged as usual).
    const QString inside_error = refusal(client.request(
        protocol::make_control_request("replay_candidates", {{"path", inside + "/missing.h5"}})));
    QVERIFY2(!inside_error.contains("outside"), qPrintable(inside_error));

    QVERIFY_THROWS_EXCEPTION(InputError, ControlRoots({inside + "/no such folder"}));
    const auto paths = ControlRoots::paths_in(
        {{"integration", {{"poni", "builtin:epix10ka2m"}, {"mask", "m.h5:/mask"}}},
         {"replay", {{"detector", "epix10ka2m"}}},
         {"stream", {{"detector", "mine.json"}}}});
    QCOMPARE(paths.size(), std::size_t(2));
    QCOMPARE(paths[0].second, std::string("m.h5"));
    QCOMPARE(paths[1].second, std::string("mine.json"));
  }

  // "check" judges a change as building its engine would, against the detector (a mask of
  // another shape), and changes nothing: the running run, its number and the configuration in
  // force stay; a good change is accepted, answered with what an apply would put in force, and
  // not applied.
  void check_refuses_what_the_engine_would_and_changes_nothing() {
    QTemporaryDir dir;
    const auto mask = [&](const char* name, std::vector<std::uint64_t> shape) {
      io::Array array;
      array.type = io::ElementType::UInt8;
      array.shape = std::move(shape);
      array.bytes.assign(array.elements(), 0);
      const std::string path = dir.filePath(name).toStdString();
      io::write_array({path, ""}, io::ArrayFormat::Npy, array);
      return path;
    };
    const std::string bad = mask("bad.npy", {4, 4});
    const std::string good = mask("good.npy", {1024, 1024});  // generic_f32's one segment
    EngineController controller(small_config());
    ControlServer server(controller, "tcp://127.0.0.1:*");
    ControlClient client(server.endpoint());
    client.start();
    QVERIFY(eventually([&] { return processed(client.status()) > 0; }));
    const json before = client.get_config();

    const QString error = refusal(client.request(protocol::make_control_request(
        "check", {{"config", {{"peak_finding", {{"enabled", true}, {"mask", bad}}}}}})));
    QVERIFY2(error.startsWith("request 'check' refused: peak_finding.mask: ") &&
                 error.contains("[4, 4]") && error.contains("generic_f32"),
             qPrintable(error));
    QCOMPARE(text(client.get_config()), text(before));
    json status = client.status();
    QCOMPARE(status.at("run").get<int>(), 1);
    QCOMPARE(status.at("state").get<std::string>(), std::string("running"));

    const json reply = client.request(protocol::make_control_request(
        "check", {{"config", {{"peak_finding", {{"enabled", true}, {"mask", good}}}}}}));
    QVERIFY2(reply.at("ok").get<bool>(), qPrintable(text(reply)));
    const json& result = reply.at("result");
    QCOMPARE(result.at("run").get<int>(), 1);
    QCOMPARE(result.at("checked").at("peak_finding").at("mask").get<std::string>(), good);
    QCOMPARE(text(client.get_config()), text(before));
    status = client.status();
    QCOMPARE(status.at("run").get<int>(), 1);
    QCOMPARE(status.at("state").get<std::string>(), std::string("running"));
    QVERIFY(eventually([&] { return processed(client.status()) > processed(status); }));
    // What the reader refuses is refused as for apply, naming the field.
    const QString reader = refusal(client.request(
        protocol::make_control_request("check", {{"config", {{"rate_hz", "fast"}}}})));
    QVERIFY2(reader.contains("rate_hz") && reader.contains("fast"), qPrintable(reader));
  }

  void bad_control_endpoint_is_named() {
    EngineController controller(small_config());
    QString error;
    try {
      ControlServer server(controller, "bogus://x");
    } catch (const InputError& e) {
      error = e.what();
    }
    QVERIFY2(error.contains("bogus://x") && error.contains("control"), qPrintable(error));
    QVERIFY_THROWS_EXCEPTION(ProtocolError, ControlClient("nonsense"));
  }
};

QTEST_GUILESS_MAIN(TestControl)
#include "test_control.moc"
