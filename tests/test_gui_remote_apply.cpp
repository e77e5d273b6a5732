// Apply in --connect mode: the panel's fields go to the remote engine's control socket as an
// "apply" request, off the GUI thread, and the engine's answer (ok, or its error) is shown. The
// remote engine here is a minimal REP socket that answers the way the control protocol says.
#include <atomic>
#include <thread>

#include <QComboBox>
#include <QElapsedTimer>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include <zmq.hpp>

#include "app/app_options.hpp"
#include "app/main_window.hpp"
#include "app/remote_control.hpp"
#include "app/stream_config_panel.hpp"
#include "protocol/control.hpp"
#include "protocol/subscriber.hpp"

using livedrp::app::AppOptions;
using livedrp::app::MainWindow;

namespace {
// Answers "apply" requests: ok when runtime.streams is in 1..16, the engine's error otherwise.
class ControlResponder {
 public:
  ControlResponder() : socket_(livedrp::protocol::shared_zmq_context(), zmq::socket_type::rep) {
    socket_.set(zmq::sockopt::rcvtimeo, 50);
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { loop(); });
  }
  ~ControlResponder() {
    stop_ = true;
    thread_.join();
  }
  const std::string& endpoint() const { return endpoint_; }
  nlohmann::json lastRequest() const {
    std::lock_guard lock(mutex_);
    return last_;
  }
  int requests() const { return requests_; }

 private:
  void loop() {
    while (!stop_) {
      zmq::message_t message;
      if (!socket_.recv(message)) continue;
      nlohmann::json reply;
      try {
        const auto request = livedrp::protocol::parse_control_request(message.to_string_view());
        {
          std::lock_guard lock(mutex_);
          last_ = request.body;
        }
        const int streams = request.body.at("config").at("runtime").at("streams").get<int>();
        const std::string launch =
            request.body.at("config").at("runtime").value("launch", std::string("plain"));
        reply = launch == "persistent"
                    ? livedrp::protocol::make_control_error(
                          "runtime.launch 'persistent' needs the CUDA backend; this engine runs cpu")
                : streams >= 1 && streams <= 16
                    ? livedrp::protocol::make_control_ok({{"run", 8}})
                    : livedrp::protocol::make_control_error(
                          "request: field 'runtime.streams' must be an integer in 1..16, got " +
                          std::to_string(streams));
      } catch (const std::exception& error) {
        reply = livedrp::protocol::make_control_error(error.what());
      }
      ++requests_;
      const std::string text = reply.dump();
      socket_.send(zmq::buffer(text), zmq::send_flags::none);
    }
  }

  zmq::socket_t socket_;
  std::string endpoint_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  mutable std::mutex mutex_;
  nlohmann::json last_;
};
}  // namespace

class RemoteApplyTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void theControlEndpointIsDerivedFromTheConnectEndpoint() {
    QCOMPARE(livedrp::app::defaultControlEndpoint("tcp://node-3:5555"), std::string("tcp://node-3:5556"));
    QCOMPARE(livedrp::app::defaultControlEndpoint("ipc:///tmp/x"), std::string());
    const auto line = livedrp::app::parseCommandLine(
        {"livedrp", "--connect", "tcp://127.0.0.1:6000", "--control", "tcp://127.0.0.1:7000"});
    QCOMPARE(line.options.control, std::string("tcp://127.0.0.1:7000"));
    QCOMPARE(livedrp::app::parseCommandLine({"livedrp", "--control", "tcp://h:1"}).action,
             livedrp::app::CommandLine::Action::Error);
  }

  void applySendsThePanelFieldsAndShowsTheAnswer() {
    ControlResponder responder;
    AppOptions options;
    options.connect = "tcp://127.0.0.1:1";  // nothing publishes there; only control matters here
    options.control = responder.endpoint();
    options.settings_file = dir_.filePath("remote.ini");
    MainWindow window(options);
    auto& panel = *window.streamConfig();
    QVERIFY(window.remoteControl());
    QVERIFY(panel.applyButton()->isEnabled());

    panel.streamsSpin()->setValue(4);
    panel.launchCombo()->setCurrentText(QStringLiteral("graph"));
    QElapsedTimer call;
    call.start();
    panel.applyButton()->click();
    QVERIFY2(call.elapsed() < 100, "Apply waited for the remote engine");
    QTRY_VERIFY_WITH_TIMEOUT(panel.statusText().startsWith(QStringLiteral("applied on the remote engine")),
                             10'000);
    const nlohmann::json request = responder.lastRequest();
    QCOMPARE(request.at("request").get<std::string>(), std::string("apply"));
    QCOMPARE(request.at("config").at("runtime").at("streams").get<int>(), 4);
    QCOMPARE(request.at("config").at("runtime").at("launch").get<std::string>(), std::string("graph"));
    QVERIFY(!request.at("config").contains("source"));  // only what the panel edits
    QVERIFY(panel.errorText().isEmpty());

    // The remote engine refuses: its error is shown in the panel and the log.
    panel.launchCombo()->setCurrentText(QStringLiteral("persistent"));
    panel.applyButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(!panel.errorText().isEmpty(), 10'000);
    QVERIFY2(panel.errorText().contains(QStringLiteral("needs the CUDA backend")),
             qPrintable(panel.errorText()));
    QVERIFY(window.logText().contains(QStringLiteral("remote engine refused the configuration")));
    QVERIFY(panel.applyButton()->isEnabled());

    // The panel cannot send 17 streams (its spin box stops at 16), so ask through the client as a
    // script would and check the GUI path's refusal handling with a bad value from the server.
    livedrp::app::RemoteControl remote(QString::fromStdString(responder.endpoint()));
    bool done = false, ok = true;
    QString text;
    connect(&remote, &livedrp::app::RemoteControl::applyDone, this, [&](bool o, const QString& t) {
      done = true;
      ok = o;
      text = t;
    });
    QVERIFY(remote.apply({{"runtime", {{"streams", 17}}}}));
    QVERIFY(!remote.apply({{"runtime", {{"streams", 2}}}}));  // one request at a time
    QTRY_VERIFY_WITH_TIMEOUT(done, 10'000);
    QVERIFY(!ok);
    QVERIFY2(text.contains(QStringLiteral("runtime.streams")), qPrintable(text));
  }

  void withoutAControlEndpointApplyIsDisabledAndSaysWhy() {
    AppOptions options;
    options.connect = "ipc:///tmp/livedrp-no-such-engine";
    options.settings_file = dir_.filePath("remote2.ini");
    MainWindow window(options);
    QVERIFY(!window.remoteControl());
    QVERIFY(!window.streamConfig()->applyButton()->isEnabled());
    QVERIFY(window.streamConfig()->applyButton()->toolTip().startsWith(QStringLiteral("not available")));
  }
};

QTEST_MAIN(RemoteApplyTest)
#include "test_gui_remote_apply.moc"
