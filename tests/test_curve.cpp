// ZeroMQ CURVE on the publish and control sockets (protocol/curve_keys, publish/curve_server):
// key files as `livedrp-engine keygen` writes them and every way a key file can be wrong; a
// publisher under a CurveServer delivers to a listed client and to nobody else (an unlisted
// key is refused by the authenticator, a client without CURVE cannot complete the handshake);
// and `livedrp-engine run --curve-key --curve-clients --control` answers a listed client while
// an unlisted one gets no reply and is counted as refused, as an operator would run it.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <chrono>
#include <optional>
#include <string>

#include "cli_process.hpp"
#include "core/error.hpp"
#include "protocol/control_client.hpp"
#include "protocol/curve_keys.hpp"
#include "protocol/message.hpp"
#include "protocol/subscriber.hpp"
#include "protocol/topics.hpp"
#include "publish/curve_server.hpp"
#include "publish/publisher.hpp"

using namespace livedrp;
using namespace std::chrono_literals;

namespace {

QString input_error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

protocol::Message status_message(std::uint64_t sequence) {
  protocol::StatusPayload status;
  status.state = "running";
  protocol::Message message = protocol::make_status_message(status);
  message.sequence = sequence;
  return message;
}

}  // namespace

class TestCurve : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  std::string path(const QString& name) const { return (dir_.path() + "/" + name).toStdString(); }
  void make_keys(const QString& stem) {
    protocol::write_curve_key_files(path(stem), protocol::generate_curve_key_pair());
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    for (const char* stem : {"server", "alice", "mallory"}) make_keys(stem);
  }

  void key_files_round_trip_and_keep_the_secret_private() {
    const protocol::CurveKeyPair keys = protocol::generate_curve_key_pair();
    QVERIFY(protocol::is_z85_key(keys.public_key) && protocol::is_z85_key(keys.secret_key));
    protocol::write_curve_key_files(path("round"), keys);
    const protocol::CurveKeyPair secret = protocol::read_curve_key_file(path("round.key"), true);
    QCOMPARE(secret.public_key, keys.public_key);
    QCOMPARE(secret.secret_key, keys.secret_key);
    const protocol::CurveKeyPair pub = protocol::read_curve_key_file(path("round.pub"), false);
    QCOMPARE(pub.public_key, keys.public_key);
    QVERIFY(pub.secret_key.empty());
    QFile pub_file(QString::fromStdString(path("round.pub")));
    QVERIFY(pub_file.open(QIODevice::ReadOnly));
    QVERIFY(!pub_file.readAll().contains(QByteArray::fromStdString(keys.secret_key)));
    struct stat info {};
    QCOMPARE(::stat(path("round.key").c_str(), &info), 0);
    QCOMPARE(int(info.st_mode & 0777), 0600);
    // Never overwritten.
    QVERIFY(input_error_of([&] {
              protocol::write_curve_key_files(path("round"), keys);
            }).contains("exists already"));
  }

  void a_wrong_key_file_is_named_with_what_is_wrong() {
    QString error = input_error_of([&] { protocol::read_curve_key_file(path("round.pub"), true); });
    QVERIFY2(error.contains("round.pub") && error.contains("give the .key file"),
             qPrintable(error));
    error = input_error_of([&] { protocol::read_curve_key_file(path("absent.key"), true); });
    QVERIFY2(error.contains("absent.key") && error.contains("cannot read"), qPrintable(error));
    QFile bad(QString::fromStdString(path("bad.pub")));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("curve\n    public-key = \"tooshort\"\n");
    bad.close();
    error = input_error_of([&] { protocol::read_curve_key_file(path("bad.pub"), false); });
    QVERIFY2(error.contains("line 2") && error.contains("40-character Z85"), qPrintable(error));
    // A secret others may read is refused, with its mode.
    QVERIFY(QFile::copy(QString::fromStdString(path("alice.key")),
                        QString::fromStdString(path("open.key"))));
    QCOMPARE(::chmod(path("open.key").c_str(), 0644), 0);
    error = input_error_of([&] { protocol::read_curve_key_file(path("open.key"), true); });
    QVERIFY2(error.contains("open.key") && error.contains("644") && error.contains("chmod 600"),
             qPrintable(error));
    // A server that admits nobody is a mistake.
    error = input_error_of([&] { load_curve_server(path("server.key"), {}); });
    QVERIFY2(error.contains("--curve-clients"), qPrintable(error));
    QDir(dir_.path()).mkdir("empty");
    error = input_error_of([&] { load_curve_server(path("server.key"), {path("empty")}); });
    QVERIFY2(error.contains("holds no .pub file"), qPrintable(error));
  }

  void a_curve_publisher_delivers_to_listed_clients_only() {
    // alice listed (her .pub), mallory not.
    CurveServer server(load_curve_server(path("server.key"), {path("alice.pub")}));
    QCOMPARE(server.client_count(), std::size_t(1));
    Publisher publisher("tcp://127.0.0.1:*");
    const std::string endpoint = publisher.endpoint();
    const auto client_of = [&](const char* who) {
      return protocol::load_curve_client(path("server.pub"), path(QString(who) + ".key"));
    };
    protocol::Subscriber alice(endpoint, {"status"}, client_of("alice"));
    protocol::Subscriber mallory(endpoint, {"status"}, client_of("mallory"));
    protocol::Subscriber plain(endpoint, {"status"});
    std::uint64_t sequence = 0;
    int received = 0;
    // Publish until alice has five messages and mallory's handshake has been refused.
    for (QDeadlineTimer deadline(30000); !deadline.hasExpired();) {
      publisher.publish(status_message(++sequence));
      if (auto message = alice.receive(50ms)) {
        QCOMPARE(message->topic, std::string("status"));
        ++received;
      }
      if (received >= 5 && server.refused() >= 1) break;
    }
    QVERIFY2(received >= 5, qPrintable(QString("alice received %1").arg(received)));
    QVERIFY2(server.refused() >= 1, "mallory's handshake was not refused");
    QVERIFY(server.admitted() >= 1);
    // Everything alice got went past the others too: they have nothing.
    QVERIFY(!mallory.receive(100ms).has_value());
    QVERIFY(!plain.receive(100ms).has_value());
  }

  void the_engine_with_curve_answers_only_listed_control_clients() {
    const QString engine = cli_executable("LIVEDRP_ENGINE_EXE");
    // keygen as the operator runs it.
    const CliResult keygen = run_cli("LIVEDRP_ENGINE_EXE", {"keygen", dir_.path() + "/op"});
    QVERIFY2(keygen.exit_code == 0, qPrintable(keygen.err));
    QVERIFY(keygen.out.contains("op.key") && keygen.out.contains("op.pub"));
    const CliResult again = run_cli("LIVEDRP_ENGINE_EXE", {"keygen", dir_.path() + "/op"});
    QCOMPARE(again.exit_code, 2);
    QVERIFY(again.err.contains("exists already"));

    // Misuse is refused before anything binds.
    CliResult bad = run_cli("LIVEDRP_ENGINE_EXE", {"run", "--backend", "cpu", "--curve-clients",
                                                   dir_.path() + "/op.pub"});
    QCOMPARE(bad.exit_code, 2);
    QVERIFY2(bad.err.contains("--curve-clients needs --curve-key"), qPrintable(bad.err));
    bad = run_cli("LIVEDRP_ENGINE_EXE",
                  {"run", "--backend", "cpu", "--curve-key", dir_.path() + "/server.pub",
                   "--curve-clients", dir_.path() + "/op.pub"});
    QCOMPARE(bad.exit_code, 2);
    QVERIFY2(bad.err.contains("give the .key file"), qPrintable(bad.err));

    QProcess process;
    process.setReadChannel(QProcess::StandardError);
    process.start(
        engine, {"run", "--source", "sim:generic_f32", "--backend", "cpu", "--rate", "50",
                 "--publish", "tcp://127.0.0.1:*", "--control", "tcp://127.0.0.1:*", "--curve-key",
                 dir_.path() + "/server.key", "--curve-clients", dir_.path() + "/op.pub"});
    const auto cleanup = qScopeGuard([&process] {
      if (process.state() != QProcess::NotRunning) {
        process.kill();
        process.waitForFinished(5000);
      }
    });
    QString err;
    const QString announced = await_control_endpoint(process, err);
    QVERIFY2(!announced.isEmpty(), qPrintable("no control endpoint announced: " + err));
    QVERIFY2(err.contains("CURVE on") && err.contains("1 client key"), qPrintable(err));
    const std::string endpoint = announced.toStdString();

    // The stranger (mallory) gets no reply; the refusal is logged by the engine.
    protocol::ControlClient stranger(
        endpoint, protocol::load_curve_client(path("server.pub"), path("mallory.key")));
    bool answered = true;
    try {
      stranger.status(std::chrono::seconds(2));
    } catch (const protocol::ProtocolError&) {
      answered = false;
    }
    QVERIFY2(!answered, "an unlisted client was answered");
    // No CURVE at all: no answer either.
    protocol::ControlClient plain(endpoint);
    answered = true;
    try {
      plain.status(std::chrono::seconds(1));
    } catch (const protocol::ProtocolError&) {
      answered = false;
    }
    QVERIFY2(!answered, "a client without CURVE was answered");

    // The operator's key is listed: status, the publish endpoint's stats, then shutdown.
    const protocol::CurveClient op =
        protocol::load_curve_client(path("server.pub"), path("op.key"));
    protocol::ControlClient client(endpoint, op);
    const nlohmann::json status = client.status(std::chrono::seconds(10));
    QCOMPARE(status.at("state").get<std::string>(), std::string("running"));
    protocol::Subscriber subscriber(status.at("publish").get<std::string>(), {"stats"}, op);
    std::optional<protocol::Message> stats;
    for (QDeadlineTimer deadline(20000); !stats && !deadline.hasExpired();)
      stats = subscriber.receive(200ms);
    QVERIFY2(stats.has_value(), "no stats reached the listed subscriber");
    client.shutdown(std::chrono::seconds(5));
    QVERIFY(process.waitForFinished(30000));
    err += QString::fromUtf8(process.readAllStandardError());
    QCOMPARE(process.exitCode(), 0);
    // The refusal is in the engine's log (spdlog writes to standard output).
    const QString out = QString::fromUtf8(process.readAllStandardOutput());
    QVERIFY2(out.contains("CURVE: refused") && out.contains("unlisted key"), qPrintable(out));
  }
};

QTEST_GUILESS_MAIN(TestCurve)
#include "test_curve.moc"
