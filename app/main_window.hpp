#pragma once
// The livedrp main window: dock widgets over one main window (rates chart, run control, counters,
// log), a run toolbar and a status bar. It composes the widgets (which know only the protocol),
// the subscriber thread and, unless attached to a remote engine, the embedded EngineHost.
// Layout, window geometry and the engine configuration persist together in QSettings, and can be
// saved to / loaded from one .ini file.
#include <memory>

#include <QByteArray>
#include <QElapsedTimer>
#include <QMainWindow>
#include <QPointer>
#include <QString>

#include "app/app_options.hpp"
#include "exec/engine.hpp"
#include "widgets/protocol_metatypes.hpp"

class QDockWidget;
class QPlainTextEdit;
class QSettings;
class QToolBar;

namespace livedrp::widgets {
class CountersView;
class RateStripChart;
class RunStatusWidget;
class StatsModel;
}  // namespace livedrp::widgets

namespace livedrp::app {

class EngineHost;
class RunControlWidget;
class SubscriberThread;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // Bumped when the dock arrangement changes incompatibly (QMainWindow::saveState's version).
  static constexpr int kLayoutVersion = 1;
  // Lines kept in the log dock.
  static constexpr int kLogLines = 2000;
  // Topics the window shows; `image`, `profile` and `peaks` are not subscribed to.
  static const std::vector<std::string>& subscribedTopics();

  explicit MainWindow(const AppOptions& options, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Embedded engine: start with the run-control settings / stop. No-ops when attached.
  void startRun();
  void stopRun();

  // Window layout, geometry and engine configuration in one .ini file. False (and the reason in
  // the log and the status bar) when the file cannot be written or read.
  bool saveLayout(const QString& path);
  bool loadLayout(const QString& path);

  bool isAttached() const { return attached_; }
  EngineConfig engineConfig() const;
  widgets::StatsModel* model() const { return model_; }
  widgets::RateStripChart* chart() const { return chart_; }
  widgets::RunStatusWidget* runStatus() const { return run_status_; }
  widgets::CountersView* counters() const { return counters_; }
  RunControlWidget* runControl() const { return run_control_; }
  EngineHost* engineHost() const { return host_; }  // null when attached
  SubscriberThread* subscriber() const;  // the current one; null before the first subscription
  QString logText() const;

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildDocks();
  void buildMenus();
  void connectHost();
  void subscribeTo(const QString& endpoint);
  void showRemoteRun();
  void readSettings(QSettings& settings, const QString& origin);
  void writeSettings(QSettings& settings) const;
  void resetLayout();
  void saveLayoutDialog();
  void loadLayoutDialog();
  void appendLog(const QString& line);
  void updateTitle();

  const bool attached_;
  const QString connect_endpoint_;
  EngineConfig base_config_;  // everything the run-control fields do not show
  std::unique_ptr<QSettings> settings_;

  widgets::StatsModel* model_;
  widgets::RateStripChart* chart_ = nullptr;
  widgets::CountersView* counters_ = nullptr;
  widgets::RunStatusWidget* run_status_ = nullptr;
  RunControlWidget* run_control_ = nullptr;
  QPlainTextEdit* log_ = nullptr;
  QToolBar* run_toolbar_ = nullptr;
  QDockWidget* chart_dock_ = nullptr;
  QDockWidget* run_dock_ = nullptr;
  QDockWidget* counters_dock_ = nullptr;
  QDockWidget* log_dock_ = nullptr;
  QByteArray default_state_;

  EngineHost* host_ = nullptr;
  QPointer<SubscriberThread> subscriber_;
  QElapsedTimer malformed_log_clock_;
};

}  // namespace livedrp::app
