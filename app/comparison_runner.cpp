#include "app/comparison_runner.hpp"

#include <QTimer>

#include "app/engine_host.hpp"
#include "widgets/comparison_model.hpp"

namespace livedrp::app {

ComparisonRunner::ComparisonRunner(widgets::ComparisonModel* model, QObject* parent)
    : QObject(parent), model_(model), host_(new EngineHost(this)) {
  host_->setStatsForwarding(true);
  connect(host_, &EngineHost::statsReported, this,
          [this](const protocol::StatsPayload& stats, qint64 run) {
            if (in_run_ && run == current_ + 1) model_->addStats(current_, stats);
          });
  connect(host_, &EngineHost::runFinished, this,
          [this](const protocol::StatsPayload& summary, const QString& error) {
            if (!in_run_) return;
            summary_ = summary;
            summary_error_ = error;
            has_summary_ = true;
          });
  connect(host_, &EngineHost::statusChanged, this,
          [this](const protocol::StatusPayload& status, qint64) {
            const bool ended = status.state == "finished" || status.state == "error";
            if (in_run_ && ended && !host_->isActive()) conclude(QString::fromStdString(status.message));
          });
}

ComparisonRunner::~ComparisonRunner() = default;

EngineConfig ComparisonRunner::runConfig(const EngineConfig& saved, const ComparisonSettings& settings,
                                         std::int64_t run) {
  EngineConfig config = saved;
  config.source = settings.source;
  config.events = settings.events;
  config.rate_hz = settings.rate_hz;
  config.seed = settings.seed;
  config.simulator_pool = settings.simulator_pool;
  config.publish.clear();  // the runner reads the stats directly; nothing to bind
  config.run = run;
  return config;
}

bool ComparisonRunner::start(const std::vector<ComparisonEntry>& entries,
                             const ComparisonSettings& settings) {
  if (running_ || entries.empty()) return false;
  entries_ = entries;
  settings_ = settings;
  model_->clear();
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const ComparisonEntry& entry = entries_[i];
    const bool loaded = entry.load_error.isEmpty();
    model_->addRun(entry.name,
                   loaded ? QString::fromStdString(describe(entry.config.runtime)) : QString(),
                   loaded ? runConfig(entry.config, settings_, std::int64_t(i) + 1).to_json()
                          : nlohmann::json::object());
  }
  running_ = true;
  cancelled_ = false;
  current_ = -1;
  next();
  return true;
}

void ComparisonRunner::cancel() {
  if (!running_) return;
  cancelled_ = true;
  if (in_run_) {
    host_->stop();  // the run's end concludes it; next() then marks the rest
  } else {
    next();
  }
}

void ComparisonRunner::next() {
  ++current_;
  in_run_ = false;
  if (current_ >= int(entries_.size())) {
    running_ = false;
    emit progress(tr("comparison finished: %1 configuration(s)").arg(entries_.size()));
    emit finished();
    return;
  }
  const ComparisonEntry& entry = entries_[std::size_t(current_)];
  if (cancelled_) {
    model_->fail(current_, tr("cancelled"));
    QTimer::singleShot(0, this, &ComparisonRunner::next);
    return;
  }
  if (!entry.load_error.isEmpty()) {
    model_->fail(current_, entry.load_error);
    emit progress(tr("%1: %2").arg(entry.name, entry.load_error));
    QTimer::singleShot(0, this, &ComparisonRunner::next);
    return;
  }
  has_summary_ = false;
  summary_error_.clear();
  const EngineConfig config = runConfig(entry.config, settings_, current_ + 1);
  if (!host_->start(config)) {
    // The host is still ending the previous run; try again when it has.
    --current_;
    QTimer::singleShot(EngineHost::kFinishPoll.count(), this, &ComparisonRunner::next);
    return;
  }
  in_run_ = true;
  model_->setRunning(current_);
  emit progress(tr("running %1 of %2: %3 (%4)")
                    .arg(current_ + 1)
                    .arg(entries_.size())
                    .arg(entry.name, QString::fromStdString(describe(config.runtime))));
}

void ComparisonRunner::conclude(const QString& status_message) {
  in_run_ = false;
  const QString name = entries_[std::size_t(current_)].name;
  if (has_summary_) {
    model_->finish(current_, summary_, cancelled_ && summary_error_.isEmpty() ? tr("cancelled")
                                                                              : summary_error_);
    emit progress(tr("%1: %2 events processed, %3 dropped, %4 Hz over the run%5")
                      .arg(name)
                      .arg(summary_.events_processed)
                      .arg(summary_.events_dropped)
                      .arg(summary_.event_rate_hz, 0, 'f', 1)
                      .arg(summary_error_.isEmpty() ? QString() : tr("; failed: ") + summary_error_));
  } else {
    const QString error = status_message.isEmpty() ? tr("the engine did not start") : status_message;
    model_->fail(current_, error);
    emit progress(tr("%1 failed: %2").arg(name, error));
  }
  QTimer::singleShot(0, this, &ComparisonRunner::next);
}

}  // namespace livedrp::app
