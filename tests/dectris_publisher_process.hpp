#pragma once
// The stand-in Dectris detector as a process, for the suites that feed the engine from it
// (test_stream_dectris, test_mpi_shares): LIVEDRP_DECTRIS_PUBLISHER_EXE names the program.
#include <string>

#include <QProcess>
#include <QString>
#include <QStringList>

namespace livedrp::testing {

// livedrp-dectris-publisher started with `arguments` and --bind on a free port: the endpoint it
// bound, read from its first line ("dectris publisher: PUSH tcp://..."), or empty when it said
// none.
inline std::string start_dectris_publisher(QProcess& process, QStringList arguments) {
  arguments << "--bind"
            << "tcp://127.0.0.1:*";
  process.start(qEnvironmentVariable("LIVEDRP_DECTRIS_PUBLISHER_EXE"), arguments);
  if (!process.waitForStarted(20000)) return {};
  while (!process.canReadLine())
    if (!process.waitForReadyRead(20000)) return {};
  const std::string line = process.readLine().toStdString();
  const std::size_t at = line.find("tcp://");
  if (at == std::string::npos) return {};
  return line.substr(at, line.find(',', at) - at);
}

}  // namespace livedrp::testing
