#include "app/app_options.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QCoreApplication>

namespace livedrp::app {

std::string defaultControlEndpoint(const std::string& connect) {
  const QString endpoint = QString::fromStdString(connect);
  if (!endpoint.startsWith(QLatin1String("tcp://"))) return {};
  const int colon = endpoint.lastIndexOf(QLatin1Char(':'));
  if (colon <= 5) return {};
  bool ok = false;
  const int port = endpoint.mid(colon + 1).toInt(&ok);
  if (!ok || port <= 0 || port >= 65535) return {};
  return (endpoint.left(colon + 1) + QString::number(port + 1)).toStdString();
}

CommandLine parseCommandLine(const QStringList& arguments) {
  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "livedrp: live data-reduction monitor for X-ray area detectors.\n"
      "By default it embeds the processing engine and starts it on the simulated detector."));
  const QCommandLineOption help = parser.addHelpOption();
  const QCommandLineOption version = parser.addVersionOption();
  const QCommandLineOption source(
      QStringLiteral("source"),
      QStringLiteral("Event source of the embedded engine (sim:epix10ka2m, "
                     "sim:jungfrau4m, sim:DETECTOR)."),
      QStringLiteral("SOURCE"));
  const QCommandLineOption backend(QStringLiteral("backend"),
                                   QStringLiteral("Engine backend: auto, cpu or cuda."),
                                   QStringLiteral("BACKEND"));
  const QCommandLineOption rate(QStringLiteral("rate"),
                                QStringLiteral("Source event rate in Hz; 0 = as fast as possible."),
                                QStringLiteral("HZ"));
  const QCommandLineOption publish(
      QStringLiteral("publish"),
      QStringLiteral("Endpoint the embedded engine publishes on (default %1; tcp://127.0.0.1:* "
                     "picks a free port).")
          .arg(QLatin1String(kDefaultPublishEndpoint)),
      QStringLiteral("ENDPOINT"));
  const QCommandLineOption connect(
      QStringLiteral("connect"),
      QStringLiteral("Attach to a running headless engine at ENDPOINT instead of embedding one."),
      QStringLiteral("ENDPOINT"));
  const QCommandLineOption control(
      QStringLiteral("control"),
      QStringLiteral("With --connect: the remote engine's control socket (default: the same host, "
                     "the publisher's port + 1)."),
      QStringLiteral("ENDPOINT"));
  const QCommandLineOption curve_server_key(
      QStringLiteral("curve-server-key"),
      QStringLiteral("With --connect: the remote engine's CURVE public key file (.pub), for an "
                     "engine run with --curve-key."),
      QStringLiteral("FILE"));
  const QCommandLineOption curve_key(
      QStringLiteral("curve-key"),
      QStringLiteral("With --curve-server-key: this GUI's CURVE secret key file (.key, from "
                     "livedrp-engine keygen), whose .pub the engine lists in --curve-clients."),
      QStringLiteral("FILE"));
  const QCommandLineOption no_autostart(
      QStringLiteral("no-autostart"),
      QStringLiteral("Do not start the embedded engine at launch."));
  const QCommandLineOption settings(
      QStringLiteral("settings"),
      QStringLiteral("Read and write window layout and settings in FILE (.ini) instead of the "
                     "user's settings."),
      QStringLiteral("FILE"));
  const QCommandLineOption screenshot(
      QStringLiteral("screenshot"),
      QStringLiteral("Save a PNG of the main window to FILE and quit (see --screenshot-after)."),
      QStringLiteral("FILE"));
  const QCommandLineOption screenshot_after(
      QStringLiteral("screenshot-after"),
      QStringLiteral("Seconds to run before the screenshot is taken (default 5)."),
      QStringLiteral("SECONDS"));
  const QCommandLineOption benchmark_gui(
      QStringLiteral("benchmark-gui"),
      QStringLiteral("Measure the window for SECONDS after the first image is drawn (repaints a "
                     "second, event-to-screen time of the images), print the figures and quit."),
      QStringLiteral("SECONDS"));
  const QCommandLineOption config(
      QStringLiteral("config"),
      QStringLiteral("Start the embedded engine from this pipeline configuration (JSON, as "
                     "livedrp-engine run --config reads it); --source, --backend, --rate and "
                     "--publish override it."),
      QStringLiteral("FILE"));
  parser.addOptions({config, source, backend, rate, publish, connect, control, curve_server_key,
                     curve_key, no_autostart, settings, screenshot, screenshot_after,
                     benchmark_gui});

  CommandLine result;
  if (!parser.parse(arguments)) {
    result.action = CommandLine::Action::Error;
    result.text = parser.errorText();
    return result;
  }
  if (parser.isSet(help)) {
    result.action = CommandLine::Action::ShowHelp;
    result.text = parser.helpText();
    return result;
  }
  if (parser.isSet(version)) {
    result.action = CommandLine::Action::ShowVersion;
    result.text = QCoreApplication::applicationName() + QLatin1Char(' ') +
                  QCoreApplication::applicationVersion();
    return result;
  }
  auto fail = [&result](const QString& text) {
    result.action = CommandLine::Action::Error;
    result.text = text;
    return result;
  };
  if (!parser.positionalArguments().isEmpty()) {
    return fail(QStringLiteral("unexpected argument '%1' (options start with --)")
                    .arg(parser.positionalArguments().first()));
  }

  AppOptions& options = result.options;
  if (parser.isSet(source)) {
    const QString value = parser.value(source).trimmed();
    if (value.isEmpty())
      return fail(QStringLiteral("--source: empty; expected e.g. sim:epix10ka2m"));
    options.source = value.toStdString();
  }
  if (parser.isSet(backend)) {
    const std::string value = parser.value(backend).trimmed().toLower().toStdString();
    if (std::find(std::begin(kBackends), std::end(kBackends), value) == std::end(kBackends)) {
      return fail(QStringLiteral("--backend: '%1' is not one of auto, cpu, cuda")
                      .arg(parser.value(backend)));
    }
    options.backend = value;
  }
  if (parser.isSet(rate)) {
    bool ok = false;
    const double value = parser.value(rate).toDouble(&ok);
    if (!ok || !std::isfinite(value) || value < 0) {
      return fail(QStringLiteral("--rate: '%1' is not a rate in Hz (a number >= 0; 0 = as fast "
                                 "as possible)")
                      .arg(parser.value(rate)));
    }
    options.rate_hz = value;
  }
  auto endpoint = [&](const QCommandLineOption& option, std::string& out) -> bool {
    const QString value = parser.value(option).trimmed();
    if (!value.contains(QLatin1String("://"))) return false;
    out = value.toStdString();
    return true;
  };
  if (parser.isSet(publish)) {
    std::string value;
    if (!endpoint(publish, value)) {
      return fail(QStringLiteral("--publish: '%1' is not a ZeroMQ endpoint (tcp://HOST:PORT, "
                                 "ipc://PATH, inproc://NAME)")
                      .arg(parser.value(publish)));
    }
    options.publish = value;
  }
  if (parser.isSet(connect)) {
    if (!endpoint(connect, options.connect)) {
      return fail(QStringLiteral("--connect: '%1' is not a ZeroMQ endpoint (e.g. "
                                 "tcp://detector-node:5555)")
                      .arg(parser.value(connect)));
    }
    if (parser.isSet(publish) || parser.isSet(source) || parser.isSet(backend) ||
        parser.isSet(rate)) {
      return fail(
          QStringLiteral("--connect attaches to a remote engine; --source, --backend, "
                         "--rate and --publish configure the embedded one: use one or "
                         "the other"));
    }
  }
  if (parser.isSet(config)) {
    if (parser.isSet(connect))
      return fail(
          QStringLiteral("--config configures the embedded engine; --connect attaches to "
                         "a remote one: use one or the other"));
    options.config_file = parser.value(config);
    try {
      options.config = load_engine_config_file(options.config_file.toStdString());
    } catch (const std::exception& error) {
      return fail(QStringLiteral("--config: %1").arg(QString::fromUtf8(error.what())));
    }
  }
  if (parser.isSet(control)) {
    if (!parser.isSet(connect)) {
      return fail(
          QStringLiteral("--control: only with --connect (the embedded engine is "
                         "controlled directly)"));
    }
    if (!endpoint(control, options.control)) {
      return fail(QStringLiteral("--control: '%1' is not a ZeroMQ endpoint (e.g. "
                                 "tcp://detector-node:5556)")
                      .arg(parser.value(control)));
    }
  } else if (parser.isSet(connect)) {
    options.control = defaultControlEndpoint(options.connect);
  }
  if (parser.isSet(curve_server_key) || parser.isSet(curve_key)) {
    if (!parser.isSet(connect))
      return fail(QStringLiteral(
          "--curve-server-key and --curve-key: only with --connect (they reach a remote engine)"));
    if (!parser.isSet(curve_server_key) || !parser.isSet(curve_key))
      return fail(QStringLiteral(
          "CURVE needs both --curve-server-key FILE.pub (the engine's) and --curve-key FILE.key "
          "(this GUI's)"));
    try {
      options.curve = protocol::load_curve_client(parser.value(curve_server_key).toStdString(),
                                                  parser.value(curve_key).toStdString());
    } catch (const std::exception& error) {
      return fail(QStringLiteral("CURVE: %1").arg(QString::fromUtf8(error.what())));
    }
  }
  options.autostart = !parser.isSet(no_autostart);
  if (parser.isSet(settings)) options.settings_file = parser.value(settings);
  if (parser.isSet(screenshot)) {
    options.screenshot_file = parser.value(screenshot);
    if (options.screenshot_file.isEmpty())
      return fail(QStringLiteral("--screenshot: empty file name"));
  }
  if (parser.isSet(screenshot_after)) {
    bool ok = false;
    const double value = parser.value(screenshot_after).toDouble(&ok);
    if (!ok || !std::isfinite(value) || value < 0) {
      return fail(QStringLiteral("--screenshot-after: '%1' is not a number of seconds >= 0")
                      .arg(parser.value(screenshot_after)));
    }
    options.screenshot_after_s = value;
  }
  if (parser.isSet(benchmark_gui)) {
    bool ok = false;
    const double value = parser.value(benchmark_gui).toDouble(&ok);
    if (!ok || !std::isfinite(value) || value <= 0 || value > 86400) {
      return fail(QStringLiteral("--benchmark-gui: '%1' is not a number of seconds in (0, 86400]")
                      .arg(parser.value(benchmark_gui)));
    }
    options.benchmark_gui_s = value;
  }
  return result;
}

}  // namespace livedrp::app
