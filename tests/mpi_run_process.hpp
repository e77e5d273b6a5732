#pragma once
// `mpirun -n 3 livedrp-engine run ...` from a test, with a subscriber on the collector's endpoint
// for the whole run (test_mpi_run, test_mpi_shares): what it published and how the job ended.
// Only in a build with MPI and a launcher (LIVEDRP_TEST_MPIEXEC, set by tests/CMakeLists.txt).
#ifdef LIVEDRP_TEST_MPIEXEC
#include <QElapsedTimer>
#include <QProcess>
#include <QString>
#include <QStringList>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli_process.hpp"
#include "mpi_run_support.hpp"
#include "protocol/fidelity_topic.hpp"
#include "protocol/subscriber.hpp"

namespace livedrp::mpi_run_test {

using namespace std::chrono_literals;

// What a subscriber saw of an MPI run, and how the run ended.
struct MpiRun {
  CliResult result;
  std::vector<protocol::RadialProfile> profiles;
  std::vector<protocol::EventPeaks> peaks;
  std::vector<protocol::StatsPayload> stats;
  std::vector<protocol::ImageFrame> images;
  std::vector<protocol::FidelityReport> fidelity;
};

// `mpirun -n 3 livedrp-engine run ARGUMENTS`, subscribed to `endpoint` (when not empty) for the
// whole run; after the run ends, what the collector sent last is read until nothing more comes.
// `on_stats` sees every `stats` message as it comes, while the run goes.
inline MpiRun run_mpi(const QStringList& engine_arguments, const std::string& endpoint,
                      bool survive_a_rank = false,
                      const std::function<void(const protocol::StatsPayload&)>& on_stats = {}) {
  MpiRun run;
  std::unique_ptr<protocol::Subscriber> subscriber;
  if (!endpoint.empty())
    subscriber = std::make_unique<protocol::Subscriber>(
        endpoint,
        std::vector<std::string>{"stats", std::string(protocol::kTopicProfile),
                                 std::string(protocol::kTopicPeaks), "image", "fidelity"});
  const auto take = [&](std::chrono::milliseconds timeout) {
    if (!subscriber) return false;
    bool any = false;
    while (auto message = subscriber->receive(timeout)) {
      any = true;
      if (message->topic == "stats") {
        run.stats.push_back(protocol::stats_from_json(message->payload));
        if (on_stats) on_stats(run.stats.back());
      } else if (message->topic == protocol::kTopicProfile)
        run.profiles.push_back(protocol::profile_from_message(*message));
      else if (message->topic == protocol::kTopicPeaks)
        run.peaks.push_back(protocol::peaks_from_message(*message));
      else if (message->topic == "image")
        run.images.push_back(protocol::image_from_message(*message));
      else if (message->topic == "fidelity")
        run.fidelity.push_back(protocol::fidelity_from_message(*message));
    }
    return any;
  };
  const QString mpirun = QStringLiteral(LIVEDRP_TEST_MPIEXEC);
  QProcess process;
  process.setProcessEnvironment(mpirun_environment());
  process.start(mpirun, mpirun_arguments(mpirun, survive_a_rank)
                            << cli_executable("LIVEDRP_ENGINE_EXE") << "run" << engine_arguments);
  // A hang guard, not a speed limit: Qt Test aborts a test function after 300 s without saying
  // what the job printed, so a job still running after 240 s is stopped here and its output
  // kept for the failure's message (one such hang was seen once under ctest -j2 and not again).
  QElapsedTimer running;
  running.start();
  bool stopped = false;
  while (!process.waitForFinished(20)) {
    if (process.state() == QProcess::NotRunning) break;
    take(0ms);
    if (!stopped && running.elapsed() > 240'000) {
      stopped = true;
      qWarning("mpirun still running after 240 s: stopping it (SIGTERM, then SIGKILL)");
      process.terminate();
      if (!process.waitForFinished(10'000)) process.kill();
    }
  }
  // The collector's last messages left before it ended; they are in this socket's queue or on
  // their way through the loopback.
  while (take(1000ms)) {
  }
  run.result.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
  run.result.out = QString::fromUtf8(process.readAllStandardOutput());
  run.result.err = QString::fromUtf8(process.readAllStandardError());
  if (stopped) {
    run.result.exit_code = -1;
    run.result.err += QStringLiteral("\n[test_mpi_run] mpirun did not end within 240 s; stopped");
    qWarning("mpirun's output:\n%s\n%s", qPrintable(run.result.out), qPrintable(run.result.err));
  }
  return run;
}

}  // namespace livedrp::mpi_run_test
#endif
