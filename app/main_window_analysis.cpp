// The main window's Analysis dock (analysis_panel.hpp): where its Apply goes and which
// configuration it shows. Embedded, a running run restarts with the dock's sections (the next run
// number) and with no run they become the next start's configuration; attached, they go to the
// remote engine as an "apply" request, and the dock shows what its get_config answers. Either way
// the whole configuration is first checked against the detector as the engine would build it
// (check_engine_config on a worker thread here, engine_config_check.hpp; a "check" request
// there): a refusal shows in red and nothing changes.
#include <cstdint>
#include <exception>
#include <utility>

#include "app/analysis_panel.hpp"
#include "app/engine_config_check.hpp"
#include "app/engine_host.hpp"
#include "app/fidelity_panel.hpp"
#include "app/main_window.hpp"
#include "app/remote_control.hpp"
#include "app/run_control_widget.hpp"
#include "app/stream_config_panel.hpp"

namespace livedrp::app {

void MainWindow::connectAnalysis() {
  config_check_ = new EngineConfigCheck(this);
  connect(analysis_, &AnalysisPanel::logMessage, this, &MainWindow::appendLog);
  connect(analysis_, &AnalysisPanel::applyRequested, this, &MainWindow::applyAnalysis);
  // The fidelity dock's sampling and bound go the same way as the Analysis dock's sections.
  connect(fidelity_, &FidelityPanel::applyRequested, this, &MainWindow::applyAnalysis);
  fidelity_->setBaseConfig([this] { return run_control_->config(base_config_); });
  fidelity_->setConfig(base_config_);
  // Wherever the configuration in force changes (a file opened, another dock's apply, a remote
  // get_config), the Analysis dock is shown it; the fidelity dock follows.
  connect(analysis_, &AnalysisPanel::configShown, fidelity_, &FidelityPanel::setConfig);
  if (host_) {
    analysis_->setChecksFiles(true);  // the embedded engine reads this machine's files
    connect(config_check_, &EngineConfigCheck::passed, this, &MainWindow::applyCheckedAnalysis);
    connect(config_check_, &EngineConfigCheck::refused, this, &MainWindow::refuseAnalysis);
    // After the window's own handler (connectHost): base_config_ is the new run's.
    connect(host_, &EngineHost::applied, this, [this](const QString&, qint64 run) {
      analysis_->setConfig(base_config_);
      if (fidelity_->isApplying()) fidelity_->showApplied();
      if (analysis_->isApplying())
        analysis_->showApplied(tr("applied: run %1 runs with it").arg(run));
    });
    connect(host_, &EngineHost::applyFailed, this, [this](const QString& error) {
      if (fidelity_->isApplying())
        fidelity_->showRefusal(tr("not applied (the run goes on unchanged): %1").arg(error));
      if (analysis_->isApplying())
        analysis_->showError(tr("not applied (the run goes on unchanged): %1").arg(error));
    });
    return;
  }
  if (!remote_) {
    fidelity_->setApplyAvailable(
        false, tr("not available: no control endpoint for %1 (give --control ENDPOINT)")
                   .arg(connect_endpoint_));
    analysis_->setApplyAvailable(
        false, tr("not available: no control endpoint for %1 (give --control ENDPOINT)")
                   .arg(connect_endpoint_));
    return;
  }
  connect(remote_, &RemoteControl::requestDone, this,
          [this](const QString& name, const nlohmann::json& result) {
            if (name == QLatin1String("check")) {
              // Judged as the engine would build it: now it goes.
              const nlohmann::json sections = std::exchange(analysis_checking_, nullptr);
              if (!sections.is_null()) sendAnalysisApply(sections);
              return;
            }
            if (name != QLatin1String("get_config") && name != QLatin1String("apply")) return;
            try {
              analysis_->setConfig(
                  EngineConfig::from_json(result.at("config"), "the remote engine's get_config"));
            } catch (const std::exception& error) {
              appendLog(tr("the remote engine's configuration is not readable here: %1")
                            .arg(QString::fromUtf8(error.what())));
            }
            if (name == QLatin1String("apply") && fidelity_->isApplying()) fidelity_->showApplied();
            if (name == QLatin1String("apply"))
              analysis_->showApplied(tr("applied on the remote engine at %1: run %2")
                                         .arg(remote_->endpoint())
                                         .arg(result.value("run", std::int64_t(0))));
          });
  connect(remote_, &RemoteControl::requestFailed, this,
          [this](const QString& name, const QString& error) {
            if (name == QLatin1String("check")) {
              const nlohmann::json sections = std::exchange(analysis_checking_, nullptr);
              if (sections.is_null()) return;
              // An engine from before the request: its apply judges the change itself.
              if (error.contains(QLatin1String("unknown request 'check'"))) {
                sendAnalysisApply(sections);
                return;
              }
              if (fidelity_->isApplying()) fidelity_->showRefusal(tr("not applied: %1").arg(error));
              analysis_->showError(tr("not applied: %1").arg(error));
              appendLog(tr("the remote engine refused the analysis set-up: %1").arg(error));
            } else if (name == QLatin1String("apply")) {
              if (fidelity_->isApplying()) fidelity_->showRefusal(tr("not applied: %1").arg(error));
              analysis_->showError(tr("not applied: %1").arg(error));
              appendLog(tr("the remote engine refused the analysis set-up: %1").arg(error));
            } else if (name == QLatin1String("get_config")) {
              appendLog(tr("the remote engine's configuration: %1").arg(error));
            }
          });
  // The stream-configuration dock's Apply may change the codec: its answer carries the
  // configuration then in force.
  connect(remote_, &RemoteControl::applyDone, this, [this](bool ok, const QString& text) {
    if (!ok) return;
    const nlohmann::json result = nlohmann::json::parse(text.toStdString(), nullptr, false);
    if (!result.is_object() || !result.contains("config")) return;
    try {
      analysis_->setConfig(
          EngineConfig::from_json(result.at("config"), "the remote engine's apply"));
    } catch (const std::exception& error) {
      appendLog(tr("the remote engine's configuration is not readable here: %1")
                    .arg(QString::fromUtf8(error.what())));
    }
  });
  remote_->request(QStringLiteral("get_config"));
}

void MainWindow::applyAnalysis(const nlohmann::json& sections) {
  // One set-up checked at a time (the Analysis dock's Apply is disabled meanwhile; the fidelity
  // dock's is not): a second would be judged over a base the first is about to change.
  if (config_check_->isRunning() || !analysis_checking_.is_null()) {
    if (fidelity_->isApplying())
      fidelity_->showRefusal(
          tr("not applied: the Analysis dock's set-up is being checked; "
             "apply again when it is answered"));
    appendLog(tr("a set-up arrived while another was being checked: not applied"));
    return;
  }
  if (remote_) {
    // Checked first: a refusal of what needs the detector (a mask of another shape) comes back
    // without the running run being touched; "check" passed, the sections go as "apply".
    analysis_->showApplying(tr("checking on the remote engine at %1 ...").arg(remote_->endpoint()));
    analysis_checking_ = sections;
    remote_->request(QStringLiteral("check"), {{"config", sections}}, RemoteControl::kApplyTimeout);
    return;
  }
  if (!host_) return;
  // Over the configuration of the other docks as they stand (source, rate, peak parameters).
  const EngineConfig base = run_control_->config(base_config_);
  EngineConfig next;
  try {
    next = withAnalysisSections(base, sections);
  } catch (const std::exception& error) {
    refuseAnalysis(QString::fromUtf8(error.what()));
    return;
  }
  // What only the engine can judge (the detector's shape and gain configurations, the PONI
  // placing its layout), judged as the engine would build the run: with no run going, the
  // refusal shows here and not when Start fails; with one going, it is not stopped for it. On a
  // worker thread (engine_config_check.hpp): with every stage on it takes about a second here.
  analysis_check_base_ = base.to_json();
  analysis_->showApplying(
      tr("checking the set-up against %1 ...").arg(QString::fromStdString(next.source)));
  config_check_->start(next);
}

void MainWindow::applyCheckedAnalysis(const EngineConfig& next) {
  // The configuration checked is the one that goes, never the dock's fields as they are now;
  // and only over the base it was built on: another dock's change, or a configuration opened,
  // while it was checked would otherwise be undone by it.
  if (run_control_->config(base_config_).to_json() != analysis_check_base_) {
    refuseAnalysis(
        tr("the configuration changed while the set-up was checked (another dock, "
           "a file opened); Apply again"));
    return;
  }
  if (host_->isActive()) {
    analysis_->showApplying(tr("applying: run %1 drains, run %2 starts with it")
                                .arg(host_->currentConfig().run)
                                .arg(host_->currentConfig().run + 1));
    applyRunConfig(next, tr("the analysis set-up"));  // answered by applied() / applyFailed()
    return;
  }
  applyRunConfig(next, tr("the analysis set-up"));
  stream_config_->setConfig(base_config_);  // the codec is in both docks
  showIntegrationState();
  showNextRunPeakParams();
  analysis_->showApplied(tr("no run going: the next start runs with it"));
  if (fidelity_->isApplying()) fidelity_->showApplied();
}

void MainWindow::refuseAnalysis(const QString& reason) {
  if (fidelity_->isApplying()) fidelity_->showRefusal(tr("not applied: %1").arg(reason));
  analysis_->showError(tr("not applied: %1").arg(reason));
  appendLog(tr("the analysis set-up is not applied: %1").arg(reason));
}

void MainWindow::sendAnalysisApply(const nlohmann::json& sections) {
  analysis_->showApplying(tr("applying on the remote engine at %1 ...").arg(remote_->endpoint()));
  appendLog(tr("applying the analysis set-up on the remote engine"));
  remote_->request(QStringLiteral("apply"), {{"config", sections}}, RemoteControl::kApplyTimeout);
}

}  // namespace livedrp::app
