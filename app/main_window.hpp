#pragma once
// The livedrp main window: dock widgets over one main window (rates chart, run control, counters,
// engine view, stream configuration, comparison, compression, radial profile, detector image,
// peaks, hit rate, gain modes, peak finder tuning, analysis, replay, log), a run toolbar and a
// status bar.
// It composes the widgets (which know only the protocol), the subscriber thread and, unless
// attached to a remote engine, the embedded EngineHost.
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
class QDragEnterEvent;
class QDropEvent;
class QPlainTextEdit;
class QSettings;
class QToolBar;

namespace livedrp::widgets {
class CompressionView;
class CountersView;
class DetectorImageView;
class EngineView;
class GainOccupancyView;
class HitRateChart;
class HitRateModel;
class PeakFindingModel;
class PeakTableView;
class ProfileModel;
class RadialProfileView;
class RateStripChart;
class RunStatusWidget;
class StatsModel;
}  // namespace livedrp::widgets

namespace livedrp::app {

class AlarmPanel;
class AnalysisPanel;
class AverageImageExport;
class ComparisonPanel;
class DockLayouts;
class EngineConfigCheck;
class EngineLiveness;
class EngineHost;
class FidelityPanel;
class PeakTuningPanel;
class PlotExportActions;
class RecentConfigurations;
class RemoteControl;
class ReplayTransportBar;
class RunControlWidget;
class StreamConfigPanel;
class SubscriberThread;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // Bumped when the dock arrangement changes incompatibly (QMainWindow::saveState's version).
  // 2: stream configuration, engine, comparison docks; 3: the dashboard replaces the tabbed
  // default (a window saved before opens on the dashboard once); 4: the analysis dock (placed by
  // the dashboard once, rather than wherever the older state leaves a dock it does not name);
  // 6: the compression fidelity dock (placed the same way).
  static constexpr int kLayoutVersion = 6;
  // Lines kept in the log dock.
  static constexpr int kLogLines = 2000;
  // How long a transient status-bar message (an error, a saved layout) stays.
  static constexpr int kStatusMessageMs = 15'000;
  // Topics the window shows: stats, status, profile, peaks, image.
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

  // The pipeline configuration alone, in the JSON that `livedrp --config` and `livedrp-engine run
  // --config` read. Opening one makes it the configuration of the next start (or Apply); false,
  // and the reason (the file, the field) in the log and the status bar, when the file cannot be
  // written or read, is not a valid configuration, or the window is attached to a remote engine.
  // A file saved or opened goes first in File > Open Recent.
  bool saveConfiguration(const QString& path);
  bool openConfiguration(const QString& path);

  // "Ctrl+R\tRun > Start" ... : every menu shortcut, one a line (Help > Keyboard Shortcuts).
  QString keyboardShortcutsText() const;

  bool isAttached() const { return attached_; }
  EngineConfig engineConfig() const;
  widgets::StatsModel* model() const { return model_; }
  widgets::RateStripChart* chart() const { return chart_; }
  widgets::RunStatusWidget* runStatus() const { return run_status_; }
  widgets::CountersView* counters() const { return counters_; }
  RunControlWidget* runControl() const { return run_control_; }
  StreamConfigPanel* streamConfig() const { return stream_config_; }
  widgets::EngineView* engineView() const { return engine_view_; }
  ComparisonPanel* comparison() const { return comparison_; }
  widgets::CompressionView* compressionView() const { return compression_view_; }
  FidelityPanel* fidelityPanel() const { return fidelity_; }
  // `profile` messages from the subscriber go to this model; the "Radial profile" dock shows it.
  widgets::ProfileModel* profileModel() const { return profile_model_; }
  widgets::RadialProfileView* radialProfileView() const { return radial_profile_view_; }
  // `image` and `peaks` messages go to this model; the "Detector image", "Peaks" and "Gain
  // modes" docks show it. The "Hit rate" dock follows the `stats` messages' peak_finding block.
  widgets::PeakFindingModel* peakModel() const { return peak_model_; }
  widgets::HitRateModel* hitRateModel() const { return hit_rate_model_; }
  widgets::DetectorImageView* detectorImageView() const { return detector_image_view_; }
  widgets::PeakTableView* peakTableView() const { return peak_table_view_; }
  widgets::HitRateChart* hitRateChart() const { return hit_rate_chart_; }
  widgets::GainOccupancyView* gainOccupancyView() const { return gain_occupancy_view_; }
  // The "Peak finder tuning" dock: on the embedded engine through the EngineHost, on a remote
  // one through its control socket (--control); without one its sending controls are disabled.
  PeakTuningPanel* peakTuning() const { return peak_tuning_; }
  // The "Analysis" dock: the stages on or off and their inputs (geometry, masks, codec); Apply
  // goes where the peak-tuning dock's does (main_window_analysis.cpp).
  AnalysisPanel* analysis() const { return analysis_; }
  // The "Replay" dock: open a file or run, transport, seek, record; on the embedded engine, or
  // on a remote one through its control socket (--control).
  ReplayTransportBar* transportBar() const { return transport_; }
  // Replays `source` ("replay:PATH"): starts a run, or applies it to the running one (next run).
  void openReplay(const QString& source);
  RemoteControl* remoteControl() const { return remote_; }  // null when embedded or unknown
  // The named dock layouts (View > Layouts): the dashboard the window opens on, the operator's,
  // the peak-finder tuner's, the stream comparer's, and the user's own.
  DockLayouts* layouts() const { return layouts_; }
  // File > Open Recent: the configurations opened or saved here, or given with --config.
  RecentConfigurations* recentConfigurations() const { return recent_; }
  // File > Export and every plot's right-click menu: pictures (PNG, SVG) and data (CSV, .npy).
  PlotExportActions* plotExport() const { return plot_export_; }
  // File > Export Average Image (HDF5) and the detector image's right-click entry: the mean of
  // the images received since the run started, in the engine's average-image layout.
  AverageImageExport* averageImageExport() const { return average_export_; }
  // Where the named configurations are saved (QSettings "configurations/directory").
  QString configurationsDirectory() const { return configurations_dir_; }
  // The stream-configuration panel's Apply: embedded, to the EngineHost (the running engine
  // restarts with the next run number; idle, the configuration is kept for the next start);
  // attached, to the remote engine's control socket. Never blocks.
  void applyStreamConfig(const EngineConfig& config);
  EngineHost* engineHost() const { return host_; }  // null when attached
  // Embedded: runs the Analysis dock's check_engine_config off the GUI thread.
  EngineConfigCheck* configCheck() const { return config_check_; }
  SubscriberThread* subscriber() const;  // the current one; null before the first subscription
  EngineLiveness* liveness() const { return liveness_; }
  QString logText() const;

  // A file dropped on the window (or given here): a .json pipeline configuration opens
  // (openConfiguration), a .poni geometry becomes integration's for the next start, an HDF5 file
  // (.h5, .hdf5, .nxs, .cxi) replays (openReplay). False, with the reason in the log and the
  // status bar, for anything else, an unreadable or invalid file, or attached to a remote engine
  // (only a replay is sent there).
  bool openDroppedFile(const QString& path);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void buildDocks();
  void buildMenus();
  void connectHost();
  void connectTransport();
  void connectRemoteTransport();  // attached, with a control endpoint
  void connectPeakTuning();       // to the host, the remote engine, or disabled
  void connectAnalysis();         // likewise (main_window_analysis.cpp)
  void applyAnalysis(const nlohmann::json& sections);
  // Embedded: `next` passed check_engine_config; applied if the base it was built on still holds.
  void applyCheckedAnalysis(const EngineConfig& next);
  void refuseAnalysis(const QString& reason);  // in red in the docks that asked, and the log
  // Attached: the sections a "check" request is judging, sent as "apply" once it passes.
  void sendAnalysisApply(const nlohmann::json& sections);
  // The radial-profile dock's unit selector drives the engine's integration.unit.
  void connectRadialUnit();
  // Embedded: applies `next` to the running engine, or keeps it for the next start.
  void applyRunConfig(const EngineConfig& next, const QString& what);
  void subscribeTo(const QString& endpoint);
  void showRemoteRun();
  void readSettings(QSettings& settings, const QString& origin);
  void writeSettings(QSettings& settings) const;
  void saveLayoutDialog();
  void loadLayoutDialog();
  void saveConfigurationDialog();
  void openConfigurationDialog();
  void showFileProblem(const QString& problem);  // in the log and the status bar
  // The peak-tuning dock shows the parameters the next start will run with (no run going).
  void showNextRunPeakParams();
  void appendLog(const QString& line);
  void updateTitle();
  // The radial-profile dock's placeholder: why integration is off for the next start's
  // configuration, or what it waits for (embedded engine only).
  void showIntegrationState();
  void setConfigurationsDirectory(const QString& directory);

  const bool attached_;
  const QString connect_endpoint_;
  EngineConfig base_config_;  // everything the run-control fields do not show
  std::unique_ptr<QSettings> settings_;

  widgets::StatsModel* model_;
  widgets::ProfileModel* profile_model_;
  widgets::PeakFindingModel* peak_model_;
  widgets::HitRateModel* hit_rate_model_;
  widgets::RateStripChart* chart_ = nullptr;
  widgets::CountersView* counters_ = nullptr;
  widgets::RunStatusWidget* run_status_ = nullptr;
  RunControlWidget* run_control_ = nullptr;
  StreamConfigPanel* stream_config_ = nullptr;
  widgets::EngineView* engine_view_ = nullptr;
  ComparisonPanel* comparison_ = nullptr;
  widgets::CompressionView* compression_view_ = nullptr;
  widgets::RadialProfileView* radial_profile_view_ = nullptr;
  QDockWidget* stream_config_dock_ = nullptr;
  QDockWidget* engine_dock_ = nullptr;
  QDockWidget* comparison_dock_ = nullptr;
  QDockWidget* compression_dock_ = nullptr;
  FidelityPanel* fidelity_ = nullptr;
  QDockWidget* fidelity_dock_ = nullptr;
  QDockWidget* radial_profile_dock_ = nullptr;
  widgets::DetectorImageView* detector_image_view_ = nullptr;
  widgets::PeakTableView* peak_table_view_ = nullptr;
  widgets::HitRateChart* hit_rate_chart_ = nullptr;
  widgets::GainOccupancyView* gain_occupancy_view_ = nullptr;
  PeakTuningPanel* peak_tuning_ = nullptr;
  QDockWidget* detector_image_dock_ = nullptr;
  QDockWidget* peak_table_dock_ = nullptr;
  QDockWidget* hit_rate_dock_ = nullptr;
  QDockWidget* gain_occupancy_dock_ = nullptr;
  QDockWidget* peak_tuning_dock_ = nullptr;
  AnalysisPanel* analysis_ = nullptr;
  QDockWidget* analysis_dock_ = nullptr;
  ReplayTransportBar* transport_ = nullptr;
  QDockWidget* replay_dock_ = nullptr;
  AlarmPanel* alarms_ = nullptr;
  QDockWidget* alarms_dock_ = nullptr;
  RemoteControl* remote_ = nullptr;
  bool remote_config_shown_ = false;
  nlohmann::json analysis_checking_;  // attached: the sections under "check"; null when none
  EngineConfigCheck* config_check_ = nullptr;
  nlohmann::json analysis_check_base_;  // embedded: the base of the configuration under check
  QString configurations_dir_;
  QPlainTextEdit* log_ = nullptr;
  QToolBar* run_toolbar_ = nullptr;
  QDockWidget* chart_dock_ = nullptr;
  QDockWidget* run_dock_ = nullptr;
  QDockWidget* counters_dock_ = nullptr;
  QDockWidget* log_dock_ = nullptr;
  DockLayouts* layouts_ = nullptr;
  RecentConfigurations* recent_ = nullptr;
  PlotExportActions* plot_export_ = nullptr;
  AverageImageExport* average_export_ = nullptr;
  EngineLiveness* liveness_ = nullptr;

  EngineHost* host_ = nullptr;
  QPointer<SubscriberThread> subscriber_;
  QElapsedTimer malformed_log_clock_;
  QElapsedTimer profile_rejection_log_clock_;
  QElapsedTimer peak_rejection_log_clock_;
};

}  // namespace livedrp::app
