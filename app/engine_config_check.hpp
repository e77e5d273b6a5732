#pragma once
// check_engine_config (exec/config_check.hpp) off the GUI thread, for the Analysis dock's Apply.
// With every stage on, the check builds the integrator's and the peak finder's tables: 0.8-1.5 s
// on the 2-core development machine, which froze the window while it ran on the GUI thread. Here
// it runs on a pool thread and its answer comes back to the GUI thread as a signal.
//
// Why the check may run beside a running engine: it reads its own copy of the configuration and
// builds its own detector description, constants and stages; nothing of a running Engine is
// reachable from it. What it shares with one is process-wide and made for threads: the stage
// registry (under its mutex), function-local statics (initialised once, then read), spdlog's
// loggers, and HDF5 (the project's platform builds it thread-safe, H5_HAVE_THREADSAFE, which also
// makes the error-printing switch that the file readers flip a per-thread one). The embedded
// engine host builds a whole new Engine beside the running one the same way (engine_host.hpp,
// apply()).
//
// One answer at a time: start() while a check runs supersedes it, and cancel() or this object's
// end drops the answer (nothing interrupts check_engine_config; its thread finishes it and the
// answer goes nowhere). The application's end waits for that thread: the threads of
// QThreadPool::globalInstance() are waited for by QCoreApplication's destructor.
#include <cstdint>
#include <functional>
#include <utility>

#include <QObject>
#include <QString>

#include "exec/engine.hpp"

namespace livedrp::app {

class EngineConfigCheck : public QObject {
  Q_OBJECT

 public:
  // What judges a configuration: throws (InputError) with the reason; check_engine_config unless
  // a test gives another.
  using Check = std::function<void(const EngineConfig&)>;

  explicit EngineConfigCheck(QObject* parent = nullptr, Check check = {});

  // Checks a copy of `config` on a pool thread; a check still running is superseded (its answer
  // dropped). Returns at once.
  void start(const EngineConfig& config);
  // Drops the answer of the check running, if any.
  void cancel();
  // Between start() and its answer (or cancel()).
  bool isRunning() const { return running_; }
  // Another judge for the checks started from now on (tests hold a check open with one).
  void setCheck(Check check) { check_ = std::move(check); }

 signals:
  // The configuration given to start(), as it was given: what was checked is what goes on.
  void passed(const livedrp::EngineConfig& config);
  void refused(const QString& reason);

 private:
  void answer(std::uint64_t ticket, const EngineConfig& config, const QString& reason, bool ok);

  Check check_;
  std::uint64_t ticket_ = 0;  // the check whose answer is awaited; older answers are dropped
  bool running_ = false;
};

}  // namespace livedrp::app
