#pragma once
// The command line of the livedrp GUI. Values given here override the saved settings.
#include <optional>
#include <string>

#include <QString>
#include <QStringList>

#include "exec/engine.hpp"
#include "protocol/curve_keys.hpp"

namespace livedrp::app {

// The embedded engine's default endpoint: loopback only (DESIGN: defaults bind to 127.0.0.1), the
// same port the headless engine uses, so a `--connect` GUI finds either.
inline constexpr const char* kDefaultPublishEndpoint = "tcp://127.0.0.1:5555";
// The control endpoint of a remote engine published on `connect` (tcp://HOST:PORT ->
// tcp://HOST:PORT+1); empty when it cannot be derived (not tcp, no numeric port).
std::string defaultControlEndpoint(const std::string& connect);

// Sources the run-control combo offers; any other `sim:DETECTOR` may be typed in.
inline constexpr const char* kSimulatorSources[] = {"sim:epix10ka2m", "sim:jungfrau4m",
                                                    "sim:eiger2x4m"};
// Live detector streams the combo offers as examples: the endpoints the repository's stand-in
// publishers bind in their documentation (docs/formats.md); a real receiver's address is typed in.
inline constexpr const char* kStreamSourceExamples[] = {"sls:tcp://127.0.0.1:30001",
                                                        "dectris:tcp://127.0.0.1:31001"};
inline constexpr const char* kBackends[] = {"auto", "cpu", "cuda"};

struct AppOptions {
  // --config FILE.json: the pipeline configuration the embedded engine starts from (as
  // `livedrp-engine run --config` reads it), read and checked when the command line is; it wins
  // over the saved settings, and --source, --backend, --rate and --publish over it.
  std::optional<EngineConfig> config;
  QString config_file;
  std::optional<std::string> source;   // --source
  std::optional<std::string> backend;  // --backend
  std::optional<double> rate_hz;       // --rate (0 = as fast as possible)
  std::optional<std::string> publish;  // --publish: the embedded engine's endpoint
  std::string connect;                 // --connect: attach to a remote engine; no embedded one
  // --control: the remote engine's control socket; empty = derived from --connect (same host,
  // the publisher's port + 1, as the headless engine binds by default).
  std::string control;
  // --curve-server-key FILE.pub and --curve-key FILE.key (both, with --connect): reach a remote
  // engine that runs with CURVE (livedrp-engine run --curve-key ...), read and checked here.
  std::optional<protocol::CurveClient> curve;
  bool autostart = true;          // --no-autostart clears it
  QString settings_file;          // --settings: an .ini file instead of the user's settings
  QString screenshot_file;        // --screenshot
  double screenshot_after_s = 5;  // --screenshot-after
  double benchmark_gui_s = 0;     // --benchmark-gui; 0: off
};

struct CommandLine {
  enum class Action { Run, ShowHelp, ShowVersion, Error };
  Action action = Action::Run;
  AppOptions options;
  QString text;  // the help text, the version, or the error (which option, which value, why)
};

// `arguments` includes the program name first, as QCoreApplication::arguments() does.
CommandLine parseCommandLine(const QStringList& arguments);

}  // namespace livedrp::app
