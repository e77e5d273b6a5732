#pragma once
// What the suites that start `mpirun -n 3 livedrp-engine run` share (test_mpi_run,
// test_mpi_control): the launcher's arguments and environment (Open MPI as root, more ranks than
// cores), free endpoints, configuration files, and the share of events each rank takes.
#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>
#include <QString>
#include <QStringList>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "exec/engine.hpp"
#include "publish/publisher.hpp"

namespace livedrp::mpi_run_test {

constexpr int kRanks = 3;

inline void write_json(const QString& path, const nlohmann::json& json) {
  std::ofstream out(path.toStdString());
  out << json.dump(2) << "\n";
}

inline nlohmann::json read_json(const QString& path) {
  std::ifstream in(path.toStdString());
  return nlohmann::json::parse(in);
}

// A port nobody listens on now: bound once by a publisher here and given back, so that the test
// can subscribe before the collector binds it (ZeroMQ connects as soon as it does).
inline std::string free_endpoint() {
  Publisher probe("tcp://127.0.0.1:*");
  return probe.endpoint();
}

// Open MPI refuses to run as root without both (CI runs as root).
inline QProcessEnvironment mpirun_environment() {
  QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
  environment.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
  environment.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
  return environment;
}

inline bool is_open_mpi(const QString& mpirun) {
  QProcess version;
  version.setProcessEnvironment(mpirun_environment());
  version.setProcessChannelMode(QProcess::MergedChannels);
  version.start(mpirun, {"--version"});
  version.waitForFinished(-1);
  // "mpirun (Open MPI) 4.1.4", "mpiexec (OpenRTE) 4.1.4 ... www.open-mpi.org"
  return QString::fromUtf8(version.readAll())
      .contains(QRegularExpression("Open MPI|OpenRTE|open-mpi\\.org"));
}

// The mpirun that CMake found, with what Open MPI needs to start three ranks on a two-core
// machine (MPICH's starts them as they are); `survive_a_rank`: the launcher lets the other ranks
// live on when one dies (both end the whole job by default).
inline QStringList mpirun_arguments(const QString& mpirun, bool survive_a_rank) {
  const bool open_mpi = is_open_mpi(mpirun);
  QStringList arguments{"-n", QString::number(kRanks)};
  if (open_mpi) arguments << "--oversubscribe";
  if (survive_a_rank) arguments << (open_mpi ? "--enable-recovery" : "-disable-auto-cleanup");
  return arguments;
}

// The events of `events` that the share `index` of `count` takes (index modulo count).
inline std::uint64_t share_size(std::uint64_t events, std::uint64_t index, std::uint64_t count) {
  std::uint64_t n = 0;
  for (std::uint64_t i = 0; i < events; ++i) n += i % count == index ? 1 : 0;
  return n;
}

// A simulator run's configuration: few events of a small pool, one CPU thread per rank.
inline EngineConfig sim_config(std::uint64_t events) {
  EngineConfig c;
  c.source = "sim:epix10ka2m";
  c.backend = "cpu";
  c.cpu_threads = 1;
  c.simulator_pool = 3;  // generating events is slow on a two-core machine
  c.events = events;
  c.full_ring = "wait";  // nothing dropped: the counts are exact
  c.stats_interval_s = 0.05;
  c.publish = "";
  return c;
}

}  // namespace livedrp::mpi_run_test
