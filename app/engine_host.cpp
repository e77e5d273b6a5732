#include "app/engine_host.hpp"

#include <chrono>
#include <exception>
#include <utility>

#include "core/error.hpp"
#include "exec/peak_requests.hpp"
#include "peaks/peak_params.hpp"
#include "publish/publisher.hpp"

namespace livedrp::app {
namespace {
qint64 nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

QString describe(const std::exception& error) {
  if (dynamic_cast<const InputError*>(&error)) {
    return QStringLiteral("configuration error: ") + QString::fromUtf8(error.what());
  }
  if (dynamic_cast<const RuntimeFault*>(&error)) {
    return QStringLiteral("engine fault: ") + QString::fromUtf8(error.what());
  }
  return QStringLiteral("engine error: ") + QString::fromUtf8(error.what());
}
}  // namespace

EngineHost::EngineHost(QObject* parent) : QObject(parent) {
  widgets::registerProtocolMetaTypes();
  qRegisterMetaType<livedrp::WriteSegment>();
  worker_ = std::thread([this] { workerLoop(); });
}

EngineHost::~EngineHost() {
  post({Command::Kind::Quit, {}});
  worker_.join();
}

bool EngineHost::start(const EngineConfig& config) {
  if (active_) return false;
  active_ = true;
  state_ = QStringLiteral("starting");
  post({Command::Kind::Start, config});
  return true;
}

void EngineHost::stop() {
  if (!active_) return;
  post({Command::Kind::Stop, {}});
}

void EngineHost::pauseReplay() {
  post({Command::Kind::Pause, {}});
}
void EngineHost::resumeReplay() {
  post({Command::Kind::Resume, {}});
}
void EngineHost::stepReplay(qint64 delta) {
  Command command{Command::Kind::Step, {}};
  command.delta = delta;
  post(std::move(command));
}
void EngineHost::seekReplay(quint64 index) {
  Command command{Command::Kind::Seek, {}};
  command.index = index;
  post(std::move(command));
}

void EngineHost::requestPeakParams() {
  post({Command::Kind::PeakParams, {}});
}
void EngineHost::setPeakParams(const nlohmann::json& partial) {
  Command command{Command::Kind::SetPeakParams, {}};
  command.peak_params = partial;
  post(std::move(command));
}
void EngineHost::rerunPeaks(std::optional<std::uint64_t> frames) {
  Command command{Command::Kind::RerunPeaks, {}};
  command.frames = frames;
  post(std::move(command));
}

bool EngineHost::apply(const EngineConfig& config) {
  if (!active_) return false;
  post({Command::Kind::Apply, config});
  return true;
}

void EngineHost::post(Command command) {
  {
    std::lock_guard lock(mutex_);
    commands_.push_back(std::move(command));
  }
  wake_.notify_one();
}

void EngineHost::workerLoop() {
  for (;;) {
    std::optional<Command> command;
    {
      std::unique_lock lock(mutex_);
      if (running_) {
        wake_.wait_for(lock, kFinishPoll, [this] { return !commands_.empty(); });
      } else {
        wake_.wait(lock, [this] { return !commands_.empty(); });
      }
      if (!commands_.empty()) {
        command = std::move(commands_.front());
        commands_.pop_front();
      }
    }
    if (!command) {
      if (running_) reportReplayStatus();
      if (running_ && engine_->finished()) workerFinish();
      continue;
    }
    switch (command->kind) {
      case Command::Kind::Start:
        workerStart(command->config);
        break;
      case Command::Kind::Stop:
        workerStop();
        break;
      case Command::Kind::Apply:
        workerApply(std::move(command->config));
        break;
      case Command::Kind::Pause:
      case Command::Kind::Resume:
      case Command::Kind::Step:
      case Command::Kind::Seek:
        workerReplayControl(*command);
        break;
      case Command::Kind::PeakParams:
      case Command::Kind::SetPeakParams:
      case Command::Kind::RerunPeaks:
        workerPeakRequest(*command);
        break;
      case Command::Kind::Quit:
        try {
          if (engine_ && running_) {
            engine_->request_stop();
            engine_->wait();
          }
          engine_.reset();
          publisher_.reset();
        } catch (const std::exception&) {
          // Shutting down: nobody is left to tell.
        }
        return;
    }
  }
}

std::unique_ptr<Engine> EngineHost::makeEngine(const EngineConfig& requested) {
  // The write segment as the control socket's controller chooses it: a restart with the same
  // paths writes the next segment's names.
  EngineConfig config = requested;
  segments_.choose(config);
  if (config.publish.empty()) {
    publisher_.reset();
    publisher_requested_.clear();
  } else if (!publisher_ || publisher_requested_ != config.publish) {
    publisher_.reset();  // unbind first: the new endpoint may be the same port
    publisher_ = std::make_shared<Publisher>(config.publish);
    publisher_->forward_log();  // the engine's warnings reach the Log dock (and remote viewers)
    publisher_requested_ = config.publish;
  }
  auto engine = std::make_unique<Engine>(config, publisher_);
  segments_.note_created(config);
  if (forward_stats_) {
    const qint64 run = config.run;
    engine->set_progress_callback([this, run](const protocol::StatsPayload& stats) {
      QMetaObject::invokeMethod(
          this, [this, stats, run] { emit statsReported(stats, run); }, Qt::QueuedConnection);
    });
  }
  return engine;
}

void EngineHost::announceStarted(const EngineConfig& config) {
  const QString endpoint = QString::fromStdString(engine_->publish_endpoint());
  // From here the engine reports its own states (starting, running, ...) on the wire; the host
  // speaks again for the run's end, which it sees first-hand.
  QMetaObject::invokeMethod(
      this,
      [this, endpoint, config, backend = backend_, device = device_] {
        endpoint_ = endpoint;
        current_config_ = config;
        state_ = QStringLiteral("running");
        emit started(endpoint, backend, device);
      },
      Qt::QueuedConnection);
}

void EngineHost::workerStart(const EngineConfig& config) {
  config_ = config;
  backend_.clear();
  device_.clear();
  try {
    engine_.reset();  // the previous run's engine goes now (the publisher stays if reusable)
    reportStatus(QStringLiteral("starting"), QString());
    engine_ = makeEngine(config);
    config_ = engine_->config();
    backend_ = QString::fromStdString(engine_->backend_name());
    device_ = QString::fromStdString(engine_->device_name());
    engine_->start();
    running_ = true;
    announceStarted(config_);
    reportWriters(*engine_, false);
  } catch (const std::exception& error) {
    engine_.reset();
    running_ = false;
    reportError(describe(error));
  }
}

void EngineHost::workerApply(EngineConfig config) {
  if (!engine_ || !running_) {
    const QString error = QStringLiteral("no run to apply the configuration to: the run ended");
    QMetaObject::invokeMethod(
        this, [this, error] { emit applyFailed(error); }, Qt::QueuedConnection);
    return;
  }
  config.run = config_.run + 1;
  config.publish = config_.publish;  // same publisher: subscribers stay connected
  // Build the new engine while the old one still runs: a rejected configuration changes nothing.
  std::unique_ptr<Engine> next;
  try {
    next = makeEngine(config);
  } catch (const std::exception& error) {
    const QString text = describe(error);
    QMetaObject::invokeMethod(
        this, [this, text] { emit applyFailed(text); }, Qt::QueuedConnection);
    return;
  }
  reportStatus(QStringLiteral("stopping"),
               QStringLiteral("applying a new configuration: draining run %1").arg(config_.run));
  RunSummary summary;
  try {
    engine_->request_stop();
    engine_->wait();
    summary = engine_->summary();
  } catch (const std::exception& error) {
    summary.error = error.what();
  }
  reportWriters(*engine_, true);
  {
    const QString error = QString::fromStdString(summary.error);
    QMetaObject::invokeMethod(
        this, [this, stats = summary.stats, error] { emit runFinished(stats, error); },
        Qt::QueuedConnection);
  }
  engine_ = std::move(next);
  config_ = engine_->config();
  backend_ = QString::fromStdString(engine_->backend_name());
  device_ = QString::fromStdString(engine_->device_name());
  try {
    engine_->start();
  } catch (const std::exception& error) {
    engine_.reset();
    running_ = false;
    const QString text = describe(error);
    QMetaObject::invokeMethod(
        this, [this, text] { emit applyFailed(text); }, Qt::QueuedConnection);
    reportError(text);
    return;
  }
  running_ = true;
  announceStarted(config_);
  reportWriters(*engine_, false);
  const QString json = QString::fromStdString(config_.to_json().dump());
  const qint64 run = config_.run;
  QMetaObject::invokeMethod(
      this, [this, json, run] { emit applied(json, run); }, Qt::QueuedConnection);
}

void EngineHost::workerStop() {
  if (!engine_ || !running_) return;  // already ended by itself; its end was reported
  reportStatus(QStringLiteral("stopping"), QStringLiteral("draining events in flight"));
  try {
    engine_->request_stop();
    engine_->wait();
  } catch (const std::exception& error) {
    running_ = false;
    reportError(describe(error));
    return;
  }
  workerFinish();
}

void EngineHost::workerReplayControl(const Command& command) {
  if (!engine_) {
    const QString error = QStringLiteral("no run to control: start a replay first");
    QMetaObject::invokeMethod(
        this, [this, error] { emit replayControlFailed(error); }, Qt::QueuedConnection);
    return;
  }
  try {
    switch (command.kind) {
      case Command::Kind::Pause:
        engine_->pause();
        break;
      case Command::Kind::Resume:
        engine_->resume();
        break;
      case Command::Kind::Step:
        engine_->step(command.delta);
        break;
      case Command::Kind::Seek:
        engine_->seek(command.index);
        break;
      default:
        break;
    }
  } catch (const std::exception& error) {
    const QString text = QString::fromUtf8(error.what());
    QMetaObject::invokeMethod(
        this, [this, text] { emit replayControlFailed(text); }, Qt::QueuedConnection);
  }
  reportReplayStatus();
}

// The control socket's peak requests (exec/peak_requests.hpp) on the engine this host owns.
void EngineHost::workerPeakRequest(const Command& command) {
  const auto fail = [this](const QString& error) {
    QMetaObject::invokeMethod(
        this, [this, error] { emit peakRequestFailed(error); }, Qt::QueuedConnection);
  };
  if (!engine_ || !running_) {
    fail(
        QStringLiteral("no run: peak-finder parameters apply to a running engine (start a run "
                       "with peak_finding.enabled)"));
    return;
  }
  try {
    if (command.kind == Command::Kind::RerunPeaks) {
      const nlohmann::json result = rerun_peaks_reply(engine_->rerun_peaks(command.frames));
      QMetaObject::invokeMethod(
          this, [this, result] { emit peakRerunDone(result); }, Qt::QueuedConnection);
      return;
    }
    if (command.kind == Command::Kind::SetPeakParams) {
      const peaks::PeakFinderParams params =
          apply_peak_params_request(*engine_, command.peak_params);
      config_.peak_finding.params = params;  // the next run (apply, restart) keeps them
      QMetaObject::invokeMethod(
          this, [this, params] { current_config_.peak_finding.params = params; },
          Qt::QueuedConnection);
    }
    const nlohmann::json reply = peak_params_reply(engine_->peak_params());
    QMetaObject::invokeMethod(
        this, [this, reply] { emit peakParamsReceived(reply); }, Qt::QueuedConnection);
  } catch (const std::exception& error) {
    fail(QString::fromUtf8(error.what()));
  }
}

void EngineHost::reportReplayStatus() {
  if (!engine_) return;
  ReplayStatus replay = engine_->replay_status();
  RecordStatus record = engine_->record_status();
  QMetaObject::invokeMethod(
      this, [this, replay, record] { emit replayStatusChanged(replay, record); },
      Qt::QueuedConnection);
}

void EngineHost::workerFinish() {
  running_ = false;
  RunSummary summary;
  try {
    engine_->wait();
    summary = engine_->summary();
  } catch (const std::exception& error) {
    reportError(describe(error));
    return;
  }
  reportReplayStatus();  // the final position, and the recording's files now the run is over
  reportWriters(*engine_, true);
  const QString error = QString::fromStdString(summary.error);
  QMetaObject::invokeMethod(
      this, [this, stats = summary.stats, error] { emit runFinished(stats, error); },
      Qt::QueuedConnection);
  if (!error.isEmpty()) {
    reportError(QStringLiteral("engine fault: ") + error);
    return;
  }
  reportStatus(QStringLiteral("finished"), QStringLiteral("%1 events processed, %2 dropped")
                                               .arg(summary.stats.events_processed)
                                               .arg(summary.stats.events_dropped));
}

void EngineHost::reportWriters(const Engine& engine, bool ended) {
  if (!engine.config().write.enabled()) return;
  WriteSegment segment = write_segment_of(engine);
  QMetaObject::invokeMethod(
      this,
      [this, segment, ended] {
        // A run is listed once: its start's entry is replaced by its end's.
        if (!write_segments_.empty() && write_segments_.back().run == segment.run &&
            write_segments_.back().segment == segment.segment)
          write_segments_.back() = segment;
        else
          write_segments_.push_back(segment);
        emit writersReported(segment, ended);
      },
      Qt::QueuedConnection);
}

void EngineHost::reportStatus(const QString& state, const QString& message) {
  protocol::StatusPayload status;
  status.state = state.toStdString();
  status.message = message.toStdString();
  status.source = config_.source;
  status.backend = backend_.toStdString();
  status.device = device_.toStdString();
  try {
    status.config = config_.to_json();
  } catch (const std::exception&) {
    status.config = nlohmann::json::object();
  }
  const qint64 time_ns = nowNs();
  const bool ended = state == QLatin1String("finished") || state == QLatin1String("error");
  QMetaObject::invokeMethod(
      this,
      [this, status, time_ns, state, ended] {
        state_ = state;
        if (ended) active_ = false;
        emit statusChanged(status, time_ns);
      },
      Qt::QueuedConnection);
}

void EngineHost::reportError(const QString& error) {
  QMetaObject::invokeMethod(
      this, [this, error] { emit errorOccurred(error); }, Qt::QueuedConnection);
  reportStatus(QStringLiteral("error"), error);
}

}  // namespace livedrp::app
