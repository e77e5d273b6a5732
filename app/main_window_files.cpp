// The main window's file actions (main_window.hpp): pipeline configurations opened and saved
// (File menu, Open Recent, `livedrp --config`), and files dropped on the window, each opened as
// what it is (window_files.hpp says which kinds).
#include <algorithm>
#include <exception>

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QMimeData>
#include <QStatusBar>
#include <QUrl>

#include "app/analysis_panel.hpp"
#include "app/engine_host.hpp"
#include "app/main_window.hpp"
#include "app/recent_configurations.hpp"
#include "app/replay_transport_bar.hpp"
#include "app/run_control_widget.hpp"
#include "app/stream_config_panel.hpp"
#include "app/window_files.hpp"
#include "integrate/shipped_geometry.hpp"

namespace livedrp::app {

void MainWindow::showFileProblem(const QString& problem) {
  appendLog(problem);
  statusBar()->showMessage(problem, kStatusMessageMs);
}

bool MainWindow::saveConfiguration(const QString& path) {
  if (attached_) {
    showFileProblem(tr("attached to a remote engine: its configuration is not saved from here"));
    return false;
  }
  if (const auto problem = writeConfigurationFile(engineConfig(), path)) {
    showFileProblem(tr("cannot write the configuration to %1: %2").arg(path, *problem));
    return false;
  }
  recent_->add(path);
  appendLog(tr("configuration saved to %1").arg(path));
  return true;
}

bool MainWindow::openConfiguration(const QString& path) {
  if (attached_) {
    showFileProblem(
        tr("attached to a remote engine: apply a configuration to it from the stream "
           "configuration dock"));
    return false;
  }
  EngineConfig loaded;
  try {
    loaded = load_engine_config_file(path.toStdString());
  } catch (const std::exception& error) {
    showFileProblem(tr("configuration not opened: %1").arg(QString::fromUtf8(error.what())));
    return false;
  }
  base_config_ = loaded;
  run_control_->setConfig(base_config_);
  stream_config_->setConfig(base_config_);
  analysis_->setConfig(base_config_);
  transport_->showConfig(base_config_);
  showIntegrationState();
  recent_->add(path);
  appendLog(tr("configuration opened from %1%2")
                .arg(path, host_ && host_->isActive() ? tr("; it applies at the next start")
                                                      : QString()));
  return true;
}

void MainWindow::saveConfigurationDialog() {
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save pipeline configuration"), QString(), tr("pipeline configuration (*.json)"));
  if (!path.isEmpty())
    saveConfiguration(path.endsWith(QLatin1String(".json")) ? path : path + ".json");
}

void MainWindow::openConfigurationDialog() {
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open pipeline configuration"), QString(), tr("pipeline configuration (*.json)"));
  if (!path.isEmpty()) openConfiguration(path);
}

bool MainWindow::openDroppedFile(const QString& path) {
  const DroppedFile kind = droppedFileKind(path);
  if (kind == DroppedFile::Replay) {
    openReplay(QStringLiteral("replay:") + path);
    return true;
  }
  if (attached_) {
    showFileProblem(
        tr("%1 not opened: attached to a remote engine, only a replay is sent to it").arg(path));
    return false;
  }
  if (kind == DroppedFile::Configuration) return openConfiguration(path);
  if (kind == DroppedFile::Geometry) {
    try {
      integrate::load_poni(path.toStdString());  // refused here, not at the next start
    } catch (const std::exception& error) {
      showFileProblem(tr("geometry not taken: %1").arg(QString::fromUtf8(error.what())));
      return false;
    }
    base_config_.integration.enabled = true;
    base_config_.integration.poni = path.toStdString();
    run_control_->setConfig(base_config_);
    stream_config_->setConfig(base_config_);
    analysis_->setConfig(base_config_);
    showIntegrationState();
    appendLog(tr("geometry %1: integration uses it from the next start").arg(path));
    return true;
  }
  showFileProblem(tr("%1 not opened: drop %2").arg(path, droppableKindsText()));
  return false;
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  const QList<QUrl> urls = event->mimeData()->urls();
  const bool all_files =
      !urls.isEmpty() && std::all_of(urls.begin(), urls.end(), [](const QUrl& url) {
        return url.isLocalFile() && droppedFileKind(url.toLocalFile()) != DroppedFile::Other;
      });
  if (all_files) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) openDroppedFile(url.toLocalFile());
  event->acceptProposedAction();
}

}  // namespace livedrp::app
