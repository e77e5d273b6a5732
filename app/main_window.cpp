#include "app/main_window.hpp"

#include <algorithm>
#include <exception>
#include <optional>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDateTime>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QScreen>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QUrl>

#include <QLabel>
#include "app/alarm_panel.hpp"
#include "app/analysis_defaults.hpp"
#include "app/analysis_panel.hpp"
#include "app/average_image_export.hpp"
#include "app/comparison_panel.hpp"
#include "app/dock_layouts.hpp"
#include "app/engine_config_check.hpp"
#include "app/engine_host.hpp"
#include "app/engine_liveness.hpp"
#include "app/fidelity_panel.hpp"
#include "app/peak_tuning_panel.hpp"
#include "app/plot_export_actions.hpp"
#include "app/recent_configurations.hpp"
#include "app/remote_control.hpp"
#include "app/remote_curve.hpp"
#include "app/replay_transport_bar.hpp"
#include "app/run_control_widget.hpp"
#include "app/saved_configurations.hpp"
#include "app/stream_config_panel.hpp"
#include "app/subscriber_thread.hpp"
#include "app/window_files.hpp"
#include "exec/peak_requests.hpp"
#include "integrate/shipped_geometry.hpp"
#include "peaks/peak_params.hpp"
#include "publish/replay_candidates.hpp"
#include "widgets/compression_view.hpp"
#include "widgets/counters_view.hpp"
#include "widgets/detector_image_view.hpp"
#include "widgets/engine_view.hpp"
#include "widgets/fidelity_view.hpp"
#include "widgets/gain_occupancy_view.hpp"
#include "widgets/hit_rate_chart.hpp"
#include "widgets/hit_rate_model.hpp"
#include "widgets/number_format.hpp"
#include "widgets/peak_finding_model.hpp"
#include "widgets/peak_table_view.hpp"
#include "widgets/profile_model.hpp"
#include "widgets/radial_profile_view.hpp"
#include "widgets/rate_strip_chart.hpp"
#include "widgets/run_status_widget.hpp"
#include "widgets/stats_model.hpp"

namespace livedrp::app {
namespace {
// How often an attached window asks the remote engine where its replay stands.
constexpr int kRemoteReplayPollMs = 250;
// Malformed-message reports reach the log at most this often; the count is always in the status
// bar.
constexpr qint64 kMalformedLogIntervalMs = 1'000;

const char* kGeometryKey = "window/geometry";
const char* kStateKey = "window/state";
const char* kEngineConfigKey = "engine/config";
const char* kChartWindowKey = "chart/window_s";
const char* kProfileLogYKey = "profile/log_y";
const char* kProfileLogColourKey = "profile/log_colour";
const char* kImageScaleKey = "image/scale";      // the detector image's colour scale, by name
const char* kImagePaletteKey = "image/palette";  // and its palette
const char* kConfigurationsDirKey = "configurations/directory";
const char* kComparisonEventsKey = "comparison/events";
const char* kComparisonDetectorKey = "comparison/detector";
const char* kComparisonRateKey = "comparison/rate_hz";
const char* kComparisonCheckedKey = "comparison/configurations";

QDockWidget* makeDock(const QString& title, const QString& name, QWidget* content,
                      QMainWindow* window) {
  auto* dock = new QDockWidget(title, window);
  dock->setObjectName(name);  // saveState/restoreState find docks by object name
  dock->setWidget(content);
  return dock;
}
}  // namespace

const std::vector<std::string>& MainWindow::subscribedTopics() {
  static const std::vector<std::string> topics{
      std::string(protocol::kTopicStats),   std::string(protocol::kTopicStatus),
      std::string(protocol::kTopicProfile), std::string(protocol::kTopicPeaks),
      std::string(protocol::kTopicImage),   std::string(protocol::kTopicLog),
      std::string(protocol::kTopicFidelity)};
  return topics;
}

MainWindow::MainWindow(const AppOptions& options, QWidget* parent)
    : QMainWindow(parent),
      attached_(!options.connect.empty()),
      connect_endpoint_(QString::fromStdString(options.connect)),
      base_config_(outOfTheBoxConfig()),
      model_(new widgets::StatsModel(this)),
      profile_model_(new widgets::ProfileModel(this)),
      peak_model_(new widgets::PeakFindingModel(this)),
      hit_rate_model_(new widgets::HitRateModel(this)) {
  setObjectName(QStringLiteral("livedrpMainWindow"));
  widgets::registerProtocolMetaTypes();
  setDockNestingEnabled(true);
  setAcceptDrops(true);  // configurations, geometries and files to replay (openDroppedFile)
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowNestedDocks |
                 QMainWindow::AllowTabbedDocks);
  buildDocks();
  settings_ = options.settings_file.isEmpty()
                  ? std::make_unique<QSettings>()
                  : std::make_unique<QSettings>(options.settings_file, QSettings::IniFormat);
  layouts_ = new DockLayouts(*this,
                             WindowDocks{.rates = chart_dock_,
                                         .run_control = run_dock_,
                                         .counters = counters_dock_,
                                         .log = log_dock_,
                                         .stream_config = stream_config_dock_,
                                         .engine = engine_dock_,
                                         .comparison = comparison_dock_,
                                         .compression = compression_dock_,
                                         .fidelity = fidelity_dock_,
                                         .radial_profile = radial_profile_dock_,
                                         .detector_image = detector_image_dock_,
                                         .peak_table = peak_table_dock_,
                                         .hit_rate = hit_rate_dock_,
                                         .gain_occupancy = gain_occupancy_dock_,
                                         .peak_tuning = peak_tuning_dock_,
                                         .analysis = analysis_dock_,
                                         .replay = replay_dock_,
                                         .alarms = alarms_dock_},
                             kLayoutVersion, *settings_, this);
  connect(layouts_, &DockLayouts::logMessage, this, &MainWindow::appendLog);
  alarms_->useSettings(settings_.get());
  connect(alarms_, &AlarmPanel::engineLog, this, &MainWindow::appendLog);
  connect(peak_model_, &widgets::PeakFindingModel::imageReceived, alarms_,
          [this](const widgets::ImageFramePtr& image) {
            if (image) alarms_->applyImage(*image);
          });
  recent_ = new RecentConfigurations(*settings_, this, this);
  recent_->setAvailable(!attached_);  // attached, configurations are not opened from here
  connect(recent_, &RecentConfigurations::openRequested, this, [this](const QString& path) {
    if (!QFileInfo::exists(path)) {
      recent_->remove(path);
      showFileProblem(
          tr("configuration not opened: %1 no longer exists (removed from Open Recent)").arg(path));
      return;
    }
    openConfiguration(path);
  });
  plot_export_ = new PlotExportActions(*this);
  plot_export_->attachPlots();
  connect(plot_export_, &PlotExportActions::exported, this, &MainWindow::appendLog);
  connect(plot_export_, &PlotExportActions::failed, this, &MainWindow::showFileProblem);
  // The run's average image (the images received since it started), in the configuration the
  // window knows for that run: the embedded engine's, else the one the engine's `status` sent.
  average_export_ =
      new AverageImageExport(*this, *detector_image_view_, [this](std::int64_t run) -> std::string {
        if (!attached_ && host_ && host_->currentConfig().run == run)
          return host_->currentConfig().to_json().dump();
        if (model_->hasStatus()) {
          const nlohmann::json& config = model_->latestStatus().config;
          if (config.is_object() && config.contains("run") && config.at("run").is_number() &&
              config.at("run").get<std::int64_t>() == run)
            return config.dump();
        }
        return {};
      });
  plot_export_->addImageAction(average_export_->action());
  connect(average_export_, &AverageImageExport::exported, this, [this](const QString& line) {
    appendLog(line);
    statusBar()->showMessage(line, kStatusMessageMs);
  });
  connect(average_export_, &AverageImageExport::failed, this, &MainWindow::showFileProblem);
  buildMenus();
  // The dashboard is made for a whole screen; saved settings bring the window's own size back.
  if (const QScreen* screen = this->screen()) resize(screen->availableGeometry().size());
  layouts_->arrange(BuiltInLayout::Dashboard);
  readSettings(*settings_, settings_->fileName());

  // The command line wins over the saved settings: a configuration file first, then the options.
  if (options.config) {
    base_config_ = *options.config;
    appendLog(tr("configuration read from %1").arg(options.config_file));
    if (!options.config_file.isEmpty()) recent_->add(options.config_file);
  }
  if (options.source) base_config_.source = *options.source;
  if (options.backend) base_config_.backend = *options.backend;
  if (options.rate_hz) base_config_.rate_hz = *options.rate_hz;
  if (options.publish) base_config_.publish = *options.publish;
  followSource(base_config_);  // a --source of another detector takes its shipped geometry
  run_control_->setConfig(base_config_);
  stream_config_->setConfig(base_config_);
  analysis_->setConfig(base_config_);
  transport_->setSettings(settings_.get());
  transport_->showConfig(base_config_);

  // The remote engine's CURVE keys, for the subscriber and the control client (none embedded).
  setRemoteCurve(attached_ ? options.curve : std::nullopt);
  if (attached_) {
    // Without a control endpoint there is nothing to send the replay controls to.
    transport_->setEnabled(!options.control.empty());
    run_control_->setAttached(connect_endpoint_);
    if (options.control.empty()) {
      stream_config_->setApplyAvailable(
          false, tr("not available: no control endpoint for %1 (give --control ENDPOINT)")
                     .arg(connect_endpoint_));
    } else {
      remote_ = new RemoteControl(QString::fromStdString(options.control), this);
      connect(remote_, &RemoteControl::applyDone, this, [this](bool ok, const QString& text) {
        if (ok) {
          stream_config_->showApplied(
              tr("applied on the remote engine at %1").arg(remote_->endpoint()));
          appendLog(tr("remote engine accepted the configuration: %1").arg(text));
        } else {
          stream_config_->showError(tr("not applied: %1").arg(text));
          appendLog(tr("remote engine refused the configuration: %1").arg(text));
        }
      });
      stream_config_->setApplyAvailable(true);
      connectRemoteTransport();
    }
    comparison_->setEnabled(false);
    comparison_->setToolTip(
        tr("The comparison runs on an embedded engine; not available while "
           "attached to a remote one"));
    connect(model_, &widgets::StatsModel::updated, this, &MainWindow::showRemoteRun);
    appendLog(tr("attached to the engine at %1").arg(connect_endpoint_));
    subscribeTo(connect_endpoint_);
  } else {
    host_ = new EngineHost(this);
    connectHost();
    connectTransport();
    run_control_->setEndpoint(QString::fromStdString(base_config_.publish));
    // The radial-profile dock says why it stays empty, for the source the next start uses.
    connect(run_control_->sourceCombo(), &QComboBox::currentTextChanged, this,
            &MainWindow::showIntegrationState);
    showIntegrationState();
    if (options.autostart) startRun();
  }
  connectPeakTuning();
  connectAnalysis();
  connectRadialUnit();
  updateTitle();
}

void MainWindow::connectRadialUnit() {
  // A radial range is given in the unit: it means nothing in another, so it goes back to pyFAI's
  // default range with the change.
  if (host_) {
    radial_profile_view_->setUnitChangeAvailable(true);
    connect(radial_profile_view_, &widgets::RadialProfileView::unitRequested, this,
            [this](const QString& unit) {
              EngineConfig next = run_control_->config(base_config_);
              next.integration.unit = unit.toStdString();
              next.integration.radial_range.reset();
              applyRunConfig(next, tr("radial unit %1").arg(unit));
            });
  } else if (remote_) {
    radial_profile_view_->setUnitChangeAvailable(true);
    connect(radial_profile_view_, &widgets::RadialProfileView::unitRequested, this,
            [this](const QString& unit) {
              const nlohmann::json partial = {
                  {"integration", {{"unit", unit.toStdString()}, {"radial_range", nullptr}}}};
              if (!remote_->apply(partial))
                appendLog(tr("radial unit %1 not sent: another change is applying").arg(unit));
              else
                appendLog(tr("asked the remote engine to integrate in %1").arg(unit));
            });
  }
}

void MainWindow::connectPeakTuning() {
  if (host_) {
    // With a run going, parameters go to the engine; with none, they are the next run's.
    connect(peak_tuning_, &PeakTuningPanel::applyRequested, this,
            [this](const nlohmann::json& request) {
              if (host_->isActive()) {
                host_->setPeakParams(request);
                return;
              }
              try {
                base_config_.peak_finding.params =
                    merge_peak_params_request(base_config_.peak_finding.params, request);
              } catch (const std::exception& error) {
                peak_tuning_->showRefusal(QString::fromUtf8(error.what()));
                appendLog(tr("peak finder: %1").arg(QString::fromUtf8(error.what())));
                return;
              }
              showNextRunPeakParams();
              appendLog(tr("peak finder: no run; the parameters apply from the next start"));
            });
    connect(peak_tuning_, &PeakTuningPanel::paramsRequested, this, [this] {
      if (host_->isActive())
        host_->requestPeakParams();
      else
        showNextRunPeakParams();
    });
    connect(peak_tuning_, &PeakTuningPanel::rerunRequested, this,
            [this](const nlohmann::json& request) {
              std::optional<std::uint64_t> frames;
              if (request.contains("frames")) frames = request.at("frames").get<std::uint64_t>();
              host_->rerunPeaks(frames);
            });
    connect(host_, &EngineHost::peakParamsReceived, peak_tuning_, &PeakTuningPanel::showParams);
    connect(host_, &EngineHost::peakRerunDone, peak_tuning_, &PeakTuningPanel::showRerun);
    connect(host_, &EngineHost::peakRequestFailed, peak_tuning_, &PeakTuningPanel::showRefusal);
    connect(host_, &EngineHost::peakRequestFailed, this,
            [this](const QString& error) { appendLog(tr("peak finder: %1").arg(error)); });
    // The parameters the engine took are kept for the next start (and saved with the layout).
    connect(host_, &EngineHost::peakParamsReceived, this, [this](const nlohmann::json& reply) {
      try {
        base_config_.peak_finding.params =
            peaks::parse_peak_params(reply.at("params"), "the engine's peak-finder parameters");
      } catch (const std::exception& error) {
        appendLog(tr("peak finder: %1").arg(QString::fromUtf8(error.what())));
      }
    });
    // Each new run (start, apply) shows what it has in force.
    connect(host_, &EngineHost::started, host_, &EngineHost::requestPeakParams);
    return;
  }
  if (remote_) {
    connect(peak_tuning_, &PeakTuningPanel::applyRequested, this,
            [this](const nlohmann::json& request) {
              remote_->request(QStringLiteral("set_peak_params"), request);
            });
    connect(peak_tuning_, &PeakTuningPanel::rerunRequested, this,
            [this](const nlohmann::json& request) {
              remote_->request(QStringLiteral("rerun_peaks"), request);
            });
    connect(peak_tuning_, &PeakTuningPanel::paramsRequested, this,
            [this] { remote_->request(QStringLiteral("get_peak_params")); });
    connect(
        remote_, &RemoteControl::requestDone, this,
        [this](const QString& name, const nlohmann::json& result) {
          if (name == QLatin1String("get_peak_params") || name == QLatin1String("set_peak_params"))
            peak_tuning_->showParams(result);
          else if (name == QLatin1String("rerun_peaks"))
            peak_tuning_->showRerun(result);
        });
    connect(
        remote_, &RemoteControl::requestFailed, this,
        [this](const QString& name, const QString& error) {
          if (!name.endsWith(QLatin1String("_peak_params")) && name != QLatin1String("rerun_peaks"))
            return;
          peak_tuning_->showRefusal(error);
          appendLog(tr("peak finder on the remote engine: %1").arg(error));
        });
    remote_->request(QStringLiteral("get_peak_params"));
    return;
  }
  peak_tuning_->setSendAvailable(
      false, tr("not available: no control endpoint for %1 (give --control ENDPOINT)")
                 .arg(connect_endpoint_));
}

MainWindow::~MainWindow() = default;

void MainWindow::buildDocks() {
  chart_ = new widgets::RateStripChart(model_);
  counters_ = new widgets::CountersView(model_);
  run_control_ = new RunControlWidget;
  stream_config_ = new StreamConfigPanel;
  engine_view_ = new widgets::EngineView(model_);
  comparison_ = new ComparisonPanel;
  compression_view_ = new widgets::CompressionView(model_);
  radial_profile_view_ = new widgets::RadialProfileView(profile_model_);
  transport_ = new ReplayTransportBar;
  detector_image_view_ = new widgets::DetectorImageView(peak_model_);
  peak_table_view_ = new widgets::PeakTableView(peak_model_);
  hit_rate_chart_ = new widgets::HitRateChart(hit_rate_model_);
  gain_occupancy_view_ = new widgets::GainOccupancyView(peak_model_);
  peak_tuning_ = new PeakTuningPanel;
  analysis_ = new AnalysisPanel;
  log_ = new QPlainTextEdit;
  log_->setObjectName(QStringLiteral("log"));
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(kLogLines);
  log_->setLineWrapMode(QPlainTextEdit::NoWrap);

  chart_dock_ = makeDock(tr("Rates"), QStringLiteral("ratesDock"), chart_, this);
  run_dock_ = makeDock(tr("Run control"), QStringLiteral("runControlDock"), run_control_, this);
  counters_dock_ = makeDock(tr("Counters"), QStringLiteral("countersDock"), counters_, this);
  log_dock_ = makeDock(tr("Log"), QStringLiteral("logDock"), log_, this);
  stream_config_dock_ = makeDock(tr("Stream configuration"), QStringLiteral("streamConfigDock"),
                                 stream_config_, this);
  engine_dock_ = makeDock(tr("Engine"), QStringLiteral("engineDock"), engine_view_, this);
  comparison_dock_ =
      makeDock(tr("Comparison"), QStringLiteral("comparisonDock"), comparison_, this);
  compression_dock_ =
      makeDock(tr("Compression"), QStringLiteral("compressionDock"), compression_view_, this);
  fidelity_ = new FidelityPanel;
  fidelity_dock_ =
      makeDock(tr("Compression fidelity"), QStringLiteral("fidelityDock"), fidelity_, this);
  radial_profile_dock_ = makeDock(tr("Radial profile"), QStringLiteral("radialProfileDock"),
                                  radial_profile_view_, this);

  detector_image_dock_ = makeDock(tr("Detector image"), QStringLiteral("detectorImageDock"),
                                  detector_image_view_, this);
  peak_table_dock_ = makeDock(tr("Peaks"), QStringLiteral("peakTableDock"), peak_table_view_, this);
  hit_rate_dock_ = makeDock(tr("Hit rate"), QStringLiteral("hitRateDock"), hit_rate_chart_, this);
  gain_occupancy_dock_ =
      makeDock(tr("Gain modes"), QStringLiteral("gainOccupancyDock"), gain_occupancy_view_, this);
  peak_tuning_dock_ =
      makeDock(tr("Peak finder tuning"), QStringLiteral("peakTuningDock"), peak_tuning_, this);
  analysis_dock_ = makeDock(tr("Analysis"), QStringLiteral("analysisDock"), analysis_, this);

  replay_dock_ = makeDock(tr("Replay"), QStringLiteral("replayDock"), transport_, this);
  alarms_ = new AlarmPanel;
  alarms_dock_ = makeDock(tr("Alarms"), QStringLiteral("alarmsDock"), alarms_, this);

  run_toolbar_ = addToolBar(tr("Run"));
  run_toolbar_->setObjectName(QStringLiteral("runToolBar"));
  run_toolbar_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  run_toolbar_->addAction(run_control_->startAction());
  run_toolbar_->addAction(run_control_->stopAction());

  run_status_ = new widgets::RunStatusWidget(model_);
  statusBar()->addPermanentWidget(run_status_);
  statusBar()->addPermanentWidget(alarms_->indicator());
  liveness_ = new EngineLiveness(this);
  liveness_->showIn(*run_status_, [this](const QString& line) { appendLog(line); });

  connect(run_control_, &RunControlWidget::startRequested, this, &MainWindow::startRun);
  connect(run_control_, &RunControlWidget::stopRequested, this, &MainWindow::stopRun);
  connect(stream_config_, &StreamConfigPanel::applyRequested, this, &MainWindow::applyStreamConfig);
  connect(stream_config_, &StreamConfigPanel::logMessage, this, [this](const QString& line) {
    appendLog(line);
    comparison_->refreshList();  // a configuration was saved, loaded or deleted
  });
  connect(comparison_, &ComparisonPanel::logMessage, this, &MainWindow::appendLog);
  // A profile that passes the header checks but not the profile's own (lengths, unit, ...).
  connect(profile_model_, &widgets::ProfileModel::rejected, this,
          [this](quint64 count, const QString& error) {
            if (profile_rejection_log_clock_.isValid() &&
                profile_rejection_log_clock_.elapsed() < kMalformedLogIntervalMs)
              return;
            profile_rejection_log_clock_.start();
            appendLog(tr("%1 profile message(s) refused; last: %2").arg(count).arg(error));
          });
  connect(peak_model_, &widgets::PeakFindingModel::rejected, this,
          [this](quint64 count, const QString& error) {
            if (peak_rejection_log_clock_.isValid() &&
                peak_rejection_log_clock_.elapsed() < kMalformedLogIntervalMs)
              return;
            peak_rejection_log_clock_.start();
            appendLog(tr("%1 image/peaks message(s) refused; last: %2").arg(count).arg(error));
          });
  connect(peak_table_view_, &widgets::PeakTableView::peakSelected, detector_image_view_,
          &widgets::DetectorImageView::selectPeak);
  connect(comparison_, &ComparisonPanel::aboutToRun, this, [this] {
    if (host_ && host_->isActive()) {
      appendLog(tr("stopping the live run: the comparison gets the machine to itself"));
      stopRun();
    }
  });
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open_config =
      file->addAction(tr("&Open Configuration..."), this, &MainWindow::openConfigurationDialog);
  open_config->setShortcut(QKeySequence::Open);
  file->addMenu(recent_->menu());
  QAction* save_config =
      file->addAction(tr("Save &Configuration..."), this, &MainWindow::saveConfigurationDialog);
  save_config->setShortcut(QKeySequence::Save);
  // Attached, the configuration is the remote engine's (the stream-configuration dock applies it).
  open_config->setEnabled(!attached_);
  save_config->setEnabled(!attached_);
  file->addSeparator();
  file->addAction(tr("&Save Layout..."), this, &MainWindow::saveLayoutDialog);
  file->addAction(tr("&Load Layout..."), this, &MainWindow::loadLayoutDialog);
  file->addSeparator();
  file->addMenu(plot_export_->menu());
  file->addAction(average_export_->action());
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
  // Some platforms (and the offscreen one) define no standard Quit key.
  if (quit->shortcut().isEmpty()) quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(run_control_->startAction());
  run->addAction(run_control_->stopAction());

  // The replay dock's transport from anywhere in the window.
  transport_->addShortcutActions(menuBar()->addMenu(tr("Re&play")));

  QMenu* view = menuBar()->addMenu(tr("&View"));
  for (QDockWidget* dock :
       {chart_dock_, run_dock_, counters_dock_, log_dock_, stream_config_dock_, engine_dock_,
        comparison_dock_, compression_dock_, fidelity_dock_, radial_profile_dock_,
        detector_image_dock_, peak_table_dock_, hit_rate_dock_, gain_occupancy_dock_,
        peak_tuning_dock_, analysis_dock_, replay_dock_, alarms_dock_}) {
    view->addAction(dock->toggleViewAction());
  }
  view->addAction(run_toolbar_->toggleViewAction());
  view->addSeparator();
  view->addMenu(layouts_->menu());

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Keyboard Shortcuts"), this, [this] {
    QMessageBox::information(this, tr("Keyboard shortcuts"), keyboardShortcutsText());
  });
}

QString MainWindow::keyboardShortcutsText() const {
  return menuShortcutsText(*menuBar());
}

void MainWindow::connectHost() {
  connect(host_, &EngineHost::statusChanged, this,
          [this](const protocol::StatusPayload& status, qint64 time_ns) {
            model_->applyStatus(status, time_ns);
            run_control_->setRunActive(host_->isActive());
            QString line = tr("engine %1").arg(QString::fromStdString(status.state));
            if (!status.message.empty())
              line += QStringLiteral(": ") + QString::fromStdString(status.message);
            appendLog(line);
          });
  connect(
      host_, &EngineHost::started, this,
      [this](const QString& endpoint, const QString& backend, const QString& device) {
        run_control_->setEndpoint(endpoint);
        appendLog(tr("engine running on %1 (%2), publishing on %3").arg(backend, device, endpoint));
        subscribeTo(connectableEndpoint(endpoint));
        updateTitle();
      });
  connect(host_, &EngineHost::runFinished, this,
          [this](const protocol::StatsPayload& summary, const QString& error) {
            appendLog(tr("run summary: %1 events in, %2 processed, %3 dropped in %4 (%5 average)%6")
                          .arg(widgets::formatCount(summary.events_in),
                               widgets::formatCount(summary.events_processed),
                               widgets::formatCount(summary.events_dropped),
                               widgets::formatDuration(summary.elapsed_s),
                               widgets::formatRateHz(summary.event_rate_hz),
                               error.isEmpty() ? QString() : tr("; failed: ") + error));
          });
  // The live writers' files, run by run (a restart with the same paths writes the next segment).
  connect(host_, &EngineHost::writersReported, this,
          [this](const WriteSegment& segment, bool ended) {
            appendLog(RunControlWidget::writersLine(segment, ended));
            run_control_->showWriters(host_->writeSegments());
          });
  connect(host_, &EngineHost::applied, this, [this](const QString& json, qint64 run) {
    try {
      base_config_ = EngineConfig::from_json(nlohmann::json::parse(json.toStdString()), "engine");
    } catch (const std::exception& error) {
      appendLog(tr("applied configuration not readable: %1").arg(QString::fromUtf8(error.what())));
    }
    run_control_->setConfig(base_config_);
    stream_config_->setConfig(base_config_);
    transport_->showConfig(base_config_);
    transport_->setRunActive(true, base_config_.source.rfind("replay:", 0) == 0);
    showIntegrationState();
    // No model_->clear(): the model starts a new series itself when the run number changes.
    const QString text = tr("applied: run %1 with %2")
                             .arg(run)
                             .arg(QString::fromStdString(describe(base_config_.runtime)));
    stream_config_->showApplied(text);
    appendLog(text);
  });
  connect(host_, &EngineHost::applyFailed, this, [this](const QString& error) {
    stream_config_->showError(tr("not applied (the run goes on unchanged): %1").arg(error));
    appendLog(tr("stream configuration not applied: %1").arg(error));
    statusBar()->showMessage(error, kStatusMessageMs);
  });
  connect(host_, &EngineHost::errorOccurred, this, [this](const QString& error) {
    statusBar()->showMessage(error, kStatusMessageMs);
    run_control_->setRunActive(host_->isActive());
  });
}

void MainWindow::connectTransport() {
  connect(transport_, &ReplayTransportBar::openRequested, this, &MainWindow::openReplay);
  // The embedded engine has no control socket: the same answer, from the engine library. Only
  // the file's metadata is read, which is quick enough for the GUI thread.
  connect(transport_, &ReplayTransportBar::candidatesRequested, this, [this](const QString& path) {
    try {
      transport_->showCandidates(replay_candidates_result(path.toStdString()));
    } catch (const std::exception& error) {
      const QString reason = QString::fromUtf8(error.what());
      transport_->showCandidatesError(reason);
      appendLog(tr("nothing to replay: %1").arg(reason));
    }
  });
  connect(transport_, &ReplayTransportBar::pauseRequested, host_, &EngineHost::pauseReplay);
  connect(transport_, &ReplayTransportBar::resumeRequested, host_, &EngineHost::resumeReplay);
  connect(transport_, &ReplayTransportBar::stepRequested, host_, &EngineHost::stepReplay);
  connect(transport_, &ReplayTransportBar::seekRequested, host_, &EngineHost::seekReplay);
  connect(transport_, &ReplayTransportBar::replayOptionsChanged, this, [this] {
    EngineConfig next = run_control_->config(base_config_);
    transport_->applyTo(next);
    applyRunConfig(next, tr("replay pace %1, rate %2, loop %3")
                             .arg(QString::fromStdString(next.replay.pace))
                             .arg(next.rate_hz)
                             .arg(next.replay.loop ? tr("on") : tr("off")));
  });
  connect(transport_, &ReplayTransportBar::recordRequested, this, [this](const QString& dir) {
    EngineConfig next = run_control_->config(base_config_);
    next.record.directory = dir.toStdString();
    applyRunConfig(next, dir.isEmpty() ? tr("recording off") : tr("recording to %1").arg(dir));
  });
  connect(host_, &EngineHost::replayStatusChanged, transport_, &ReplayTransportBar::showStatus);
  connect(host_, &EngineHost::replayControlFailed, this, [this](const QString& error) {
    transport_->showError(error);
    appendLog(tr("replay control refused: %1").arg(error));
  });
  connect(host_, &EngineHost::statusChanged, this, [this] {
    transport_->setRunActive(host_->isActive(),
                             run_control_->config(base_config_).source.rfind("replay:", 0) == 0);
  });
}

void MainWindow::connectRemoteTransport() {
  const auto send = [this](const QString& action, const nlohmann::json& fields) {
    remote_->replay(action, fields);
  };
  connect(transport_, &ReplayTransportBar::pauseRequested, this,
          [send] { send(QStringLiteral("pause"), nlohmann::json::object()); });
  connect(transport_, &ReplayTransportBar::resumeRequested, this,
          [send] { send(QStringLiteral("resume"), nlohmann::json::object()); });
  connect(transport_, &ReplayTransportBar::stepRequested, this, [send](qint64 delta) {
    send(QStringLiteral("step"), {{"delta", delta}});
  });
  connect(transport_, &ReplayTransportBar::seekRequested, this, [send](quint64 index) {
    send(QStringLiteral("seek"), {{"index", index}});
  });
  connect(transport_, &ReplayTransportBar::openRequested, this, &MainWindow::openReplay);
  // The file lives on the engine's machine: the engine lists its datasets.
  connect(transport_, &ReplayTransportBar::candidatesRequested, this, [this](const QString& path) {
    remote_->request(QStringLiteral("replay_candidates"), {{"path", path.toStdString()}});
  });
  connect(remote_, &RemoteControl::requestDone, this,
          [this](const QString& name, const nlohmann::json& result) {
            if (name == QLatin1String("replay_candidates")) transport_->showCandidates(result);
          });
  connect(remote_, &RemoteControl::requestFailed, this,
          [this](const QString& name, const QString& error) {
            if (name != QLatin1String("replay_candidates")) return;
            transport_->showCandidatesError(error);
            appendLog(tr("nothing to replay on the remote engine: %1").arg(error));
          });
  // Pace, rate, loop and recording are configuration: an "apply" (the remote run restarts).
  connect(transport_, &ReplayTransportBar::replayOptionsChanged, this, [this] {
    EngineConfig next = base_config_;
    transport_->applyTo(next);
    nlohmann::json partial = {{"replay", {{"pace", next.replay.pace}, {"loop", next.replay.loop}}}};
    if (next.replay.pace == "rate") partial["rate_hz"] = next.rate_hz;
    if (!remote_->apply(partial)) transport_->showError(tr("busy: another change is applying"));
  });
  connect(transport_, &ReplayTransportBar::recordRequested, this, [this](const QString& dir) {
    if (!remote_->apply({{"record", {{"directory", dir.toStdString()}}}}))
      transport_->showError(tr("busy: another change is applying"));
  });
  connect(remote_, &RemoteControl::replayStatusReceived, this,
          [this](const ReplayStatus& replay, const RecordStatus& record) {
            transport_->setRunActive(true, replay.active);
            transport_->showStatus(replay, record);
          });
  connect(remote_, &RemoteControl::replayFailed, this,
          [this](const QString& action, const QString& error) {
            if (action == QLatin1String("status")) return;  // polls: the log would fill up
            transport_->showError(error);
            appendLog(tr("replay %1 refused by the remote engine: %2").arg(action, error));
          });
  // The remote engine's replay position, polled: the control socket has no push channel.
  auto* poll = new QTimer(this);
  poll->setInterval(kRemoteReplayPollMs);
  connect(poll, &QTimer::timeout, this, [this] { remote_->replay(QStringLiteral("status")); });
  poll->start();
}

void MainWindow::openReplay(const QString& source) {
  if (attached_) {
    if (!remote_) return;
    EngineConfig next = base_config_;
    transport_->applyTo(next);
    nlohmann::json partial = {{"source", source.toStdString()},
                              {"record", {{"directory", ""}}},
                              {"replay", {{"pace", next.replay.pace}, {"loop", next.replay.loop}}}};
    if (next.replay.pace == "rate") partial["rate_hz"] = next.rate_hz;
    if (remote_->apply(partial))
      appendLog(tr("replaying %1 on the remote engine").arg(source));
    else
      transport_->showError(tr("busy: another change is applying"));
    return;
  }
  if (!host_) return;
  EngineConfig next = run_control_->config(base_config_);
  next.source = source.toStdString();
  followSource(next);             // no shipped geometry for a replay: integration says so
  next.record.directory.clear();  // a replay is not recorded again by default
  transport_->applyTo(next);
  applyRunConfig(next, tr("replaying %1").arg(source));
  transport_->setRunActive(host_->isActive(), true);
  if (!host_->isActive()) startRun();
}

void MainWindow::applyRunConfig(const EngineConfig& next, const QString& what) {
  if (!host_) return;
  if (host_->isActive()) {
    host_->apply(next);  // answered by applied() / applyFailed()
    appendLog(tr("applying: %1 (run %2 drains, run %3 starts)")
                  .arg(what)
                  .arg(host_->currentConfig().run)
                  .arg(host_->currentConfig().run + 1));
    return;
  }
  base_config_ = next;
  run_control_->setConfig(base_config_);
  analysis_->setConfig(base_config_);
  appendLog(tr("%1: applies at the next start").arg(what));
}

void MainWindow::startRun() {
  if (!host_ || host_->isActive()) return;
  base_config_ = run_control_->config(base_config_);
  model_->clear();          // a new run starts a new chart
  profile_model_->clear();  // and shows no profile until one of this run arrives
  peak_model_->clear();     // nor an image or peaks of the last run
  hit_rate_model_->clear();
  showIntegrationState();
  if (const QString off = integrationOffReason(base_config_); !off.isEmpty()) appendLog(off);
  if (host_->start(base_config_)) {
    run_control_->setRunActive(true);
    appendLog(tr("starting the embedded engine: %1, backend %2, %3, publishing on %4")
                  .arg(QString::fromStdString(base_config_.source),
                       QString::fromStdString(base_config_.backend),
                       base_config_.rate_hz > 0 ? widgets::formatRateHz(base_config_.rate_hz)
                                                : tr("as fast as possible"),
                       QString::fromStdString(base_config_.publish)));
  }
  updateTitle();
}

void MainWindow::applyStreamConfig(const EngineConfig& config) {
  if (attached_) {
    if (!remote_) return;
    if (remote_->apply(stream_config_->partialJson())) {
      stream_config_->showApplying(
          tr("applying on the remote engine at %1 ...").arg(remote_->endpoint()));
      appendLog(tr("applying %1 on the remote engine")
                    .arg(QString::fromStdString(describe(config.runtime))));
    }
    return;
  }
  // The run-control fields own the source and the rate; the panel owns the rest.
  EngineConfig next = config;
  const EngineConfig current = run_control_->config(base_config_);
  next.source = current.source;
  next.rate_hz = current.rate_hz;
  next.publish = base_config_.publish;
  next.run = base_config_.run;
  if (host_->isActive()) {
    host_->apply(next);
    stream_config_->showApplying(tr("applying: run %1 drains, run %2 starts with %3")
                                     .arg(host_->currentConfig().run)
                                     .arg(host_->currentConfig().run + 1)
                                     .arg(QString::fromStdString(describe(next.runtime))));
    appendLog(tr("applying the stream configuration %1")
                  .arg(QString::fromStdString(describe(next.runtime))));
    return;
  }
  base_config_ = next;
  run_control_->setConfig(base_config_);
  analysis_->setConfig(base_config_);  // the codec is in both docks
  const QString text = tr("no run active: %1 applies at the next start")
                           .arg(QString::fromStdString(describe(next.runtime)));
  stream_config_->showApplied(text);
  appendLog(text);
}

void MainWindow::stopRun() {
  if (!host_ || !host_->isActive()) return;
  host_->stop();
  run_control_->stopAction()->setEnabled(false);  // once is enough; the state follows
  appendLog(tr("stop requested"));
}

void MainWindow::subscribeTo(const QString& endpoint) {
  if (subscriber_ && subscriber_->endpoint() == endpoint && subscriber_->isRunning()) return;
  if (subscriber_) {
    // Retire the old subscriber without waiting for it: it ends within one receive timeout.
    SubscriberThread* old = subscriber_;
    old->disconnect(this);
    connect(old, &QThread::finished, old, &QObject::deleteLater);
    old->stop();
  }
  auto* thread = new SubscriberThread(endpoint, subscribedTopics(), this);
  subscriber_ = thread;
  liveness_->reset();
  connect(
      thread, &SubscriberThread::messagesReceived, this,
      [this, thread](const widgets::MessageBatch& batch) {
        if (thread != subscriber_) return;  // drop what a retired one sent
        model_->apply(batch);
        profile_model_->apply(batch);
        fidelity_->view()->apply(batch);
        peak_model_->apply(batch);
        hit_rate_model_->apply(batch);
        alarms_->apply(batch);
        liveness_->noteMessages(model_->hasStatus() ? model_->latestStatus().state : std::string());
      });
  connect(
      thread, &SubscriberThread::malformedMessages, this,
      [this, thread](quint64 count, const QString& last_error) {
        if (thread != subscriber_) return;
        run_status_->setMalformedCount(count, last_error);
        if (!malformed_log_clock_.isValid() ||
            malformed_log_clock_.elapsed() >= kMalformedLogIntervalMs) {
          malformed_log_clock_.start();
          appendLog(tr("%1 malformed message(s) rejected; last: %2").arg(count).arg(last_error));
        }
      });
  connect(thread, &SubscriberThread::failed, this, [this](const QString& error) {
    appendLog(error);
    statusBar()->showMessage(error, kStatusMessageMs);
  });
  thread->start();
  appendLog(tr("subscribed to %1").arg(endpoint));
}

void MainWindow::showRemoteRun() {
  if (!model_->hasStatus()) return;
  const protocol::StatusPayload& status = model_->latestStatus();
  if (!remote_config_shown_ && status.config.is_object() && !status.config.empty()) {
    try {
      stream_config_->setConfig(EngineConfig::from_json(status.config, "remote engine status"));
      remote_config_shown_ = true;
    } catch (const std::exception& error) {
      appendLog(tr("the remote engine's configuration is not readable here: %1")
                    .arg(QString::fromUtf8(error.what())));
      remote_config_shown_ = true;
    }
  }
  std::optional<double> rate_hz;
  if (const auto it = status.config.find("rate_hz"); it != status.config.end() && it->is_number()) {
    rate_hz = it->get<double>();
  }
  const std::string& backend = model_->hasStats() && !model_->latestStats().backend.empty()
                                   ? model_->latestStats().backend
                                   : status.backend;
  run_control_->showRemoteRun(QString::fromStdString(status.source),
                              QString::fromStdString(backend), rate_hz);
}

EngineConfig MainWindow::engineConfig() const {
  // Attached, the run-control fields show the remote engine's run, not a configuration of ours.
  return attached_ ? base_config_ : run_control_->config(base_config_);
}

void MainWindow::readSettings(QSettings& settings, const QString& origin) {
  const QByteArray geometry = settings.value(kGeometryKey).toByteArray();
  if (!geometry.isEmpty()) restoreGeometry(geometry);
  const QByteArray state = settings.value(kStateKey).toByteArray();
  if (!state.isEmpty() && !layouts_->restoreWindowState(state)) {
    appendLog(
        tr("%1: the saved window layout is from another version; using the default").arg(origin));
  }
  setConfigurationsDirectory(
      settings.value(kConfigurationsDirKey, SavedConfigurations::defaultDirectory()).toString());
  if (settings.contains(kComparisonEventsKey)) {
    comparison_->eventsSpin()->setValue(settings.value(kComparisonEventsKey).toInt());
  }
  if (settings.contains(kComparisonDetectorKey)) {
    comparison_->detectorCombo()->setCurrentText(settings.value(kComparisonDetectorKey).toString());
  }
  if (settings.contains(kComparisonRateKey)) {
    comparison_->rateSpin()->setValue(settings.value(kComparisonRateKey).toDouble());
  }
  if (settings.contains(kComparisonCheckedKey)) {
    comparison_->setChecked(settings.value(kComparisonCheckedKey).toStringList());
  }
  bool ok = false;
  const double window_s = settings.value(kChartWindowKey).toDouble(&ok);
  if (ok && window_s > 0) chart_->setWindowSeconds(window_s);
  radial_profile_view_->logYBox()->setChecked(settings.value(kProfileLogYKey, false).toBool());
  radial_profile_view_->logColourBox()->setChecked(
      settings.value(kProfileLogColourKey, false).toBool());
  // By name, so a reordered list keeps the choice; an unknown name keeps the default.
  if (const int scale = detector_image_view_->scaleSelector()->findText(
          settings.value(kImageScaleKey).toString());
      scale >= 0)
    detector_image_view_->scaleSelector()->setCurrentIndex(scale);
  if (const int palette = detector_image_view_->paletteSelector()->findText(
          settings.value(kImagePaletteKey).toString());
      palette >= 0)
    detector_image_view_->paletteSelector()->setCurrentIndex(palette);

  const QString json = settings.value(kEngineConfigKey).toString();
  if (json.isEmpty()) return;
  try {
    base_config_ = EngineConfig::from_json(nlohmann::json::parse(json.toStdString()),
                                           origin.toStdString() + " [" + kEngineConfigKey + "]");
  } catch (const std::exception& error) {
    appendLog(
        tr("ignoring the saved engine configuration: %1").arg(QString::fromUtf8(error.what())));
  }
  run_control_->setConfig(base_config_);
  stream_config_->setConfig(base_config_);
  analysis_->setConfig(base_config_);
}

void MainWindow::setConfigurationsDirectory(const QString& directory) {
  configurations_dir_ = directory;
  stream_config_->setDirectory(directory);
  comparison_->setDirectory(directory);
}

void MainWindow::writeSettings(QSettings& settings) const {
  settings.setValue(kGeometryKey, saveGeometry());
  settings.setValue(kStateKey, saveState(kLayoutVersion));
  settings.setValue(kChartWindowKey, chart_->windowSeconds());
  settings.setValue(kProfileLogYKey, radial_profile_view_->logYBox()->isChecked());
  settings.setValue(kProfileLogColourKey, radial_profile_view_->logColourBox()->isChecked());
  settings.setValue(kImageScaleKey, detector_image_view_->scaleSelector()->currentText());
  settings.setValue(kImagePaletteKey, detector_image_view_->paletteSelector()->currentText());
  settings.setValue(kConfigurationsDirKey, configurations_dir_);
  settings.setValue(kComparisonEventsKey, comparison_->eventsSpin()->value());
  settings.setValue(kComparisonDetectorKey, comparison_->detectorCombo()->currentText());
  settings.setValue(kComparisonRateKey, comparison_->rateSpin()->value());
  settings.setValue(kComparisonCheckedKey, comparison_->checkedNames());
  // Attached to a remote engine, the embedded engine's saved configuration is left as it was.
  if (!attached_) {
    settings.setValue(kEngineConfigKey, QString::fromStdString(engineConfig().to_json().dump()));
  }
}

bool MainWindow::saveLayout(const QString& path) {
  QSettings settings(path, QSettings::IniFormat);
  writeSettings(settings);
  settings.sync();
  if (settings.status() != QSettings::NoError) {
    const QString error = tr("cannot write the layout to %1").arg(path);
    appendLog(error);
    statusBar()->showMessage(error, kStatusMessageMs);
    return false;
  }
  appendLog(tr("layout and engine configuration saved to %1").arg(path));
  return true;
}

bool MainWindow::loadLayout(const QString& path) {
  if (!QFileInfo(path).isReadable()) {
    const QString error = tr("cannot read the layout %1: no such readable file").arg(path);
    appendLog(error);
    statusBar()->showMessage(error, kStatusMessageMs);
    return false;
  }
  QSettings settings(path, QSettings::IniFormat);
  if (settings.status() != QSettings::NoError) {
    const QString error = tr("%1 is not a layout file (INI format expected)").arg(path);
    appendLog(error);
    statusBar()->showMessage(error, kStatusMessageMs);
    return false;
  }
  readSettings(settings, path);
  appendLog(tr("layout loaded from %1%2")
                .arg(path, host_ && host_->isActive()
                               ? tr("; the engine configuration applies at the next start")
                               : QString()));
  return true;
}

void MainWindow::showNextRunPeakParams() {
  // Version 0: no run has them in force yet.
  const EngineConfig next = run_control_->config(base_config_);
  peak_tuning_->showParams(peak_params_reply(
      PeakParamsState{next.peak_finding.enabled, next.peak_finding.params, /*version=*/0}));
}

void MainWindow::saveLayoutDialog() {
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save layout and engine configuration"), QString(), tr("livedrp layout (*.ini)"));
  if (!path.isEmpty()) saveLayout(path.endsWith(QLatin1String(".ini")) ? path : path + ".ini");
}

void MainWindow::loadLayoutDialog() {
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Load layout and engine configuration"), QString(), tr("livedrp layout (*.ini)"));
  if (!path.isEmpty()) loadLayout(path);
}

SubscriberThread* MainWindow::subscriber() const {
  return subscriber_.data();
}

QString MainWindow::logText() const {
  return log_->toPlainText();
}

void MainWindow::appendLog(const QString& line) {
  log_->appendPlainText(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss ")) + line);
}

void MainWindow::showIntegrationState() {
  if (attached_) return;  // a remote engine's configuration is its own
  const EngineConfig next = run_control_->config(base_config_);
  const QString off = integrationOffReason(next);
  radial_profile_view_->setNoDataText(
      off.isEmpty() ? tr("no profile data yet: integration with %1 (%2 bins, %3) starts with the "
                         "run's first events")
                          .arg(QString::fromStdString(next.integration.poni))
                          .arg(next.integration.npt)
                          .arg(QString::fromStdString(next.integration.unit))
                    : off);
}

void MainWindow::updateTitle() {
  if (attached_) {
    setWindowTitle(tr("livedrp — attached to %1").arg(connect_endpoint_));
  } else {
    setWindowTitle(tr("livedrp — embedded engine, %1")
                       .arg(QString::fromStdString(run_control_->config(base_config_).source)));
  }
}

void MainWindow::closeEvent(QCloseEvent* event) {
  // A set-up still being checked is not applied to a closing window (its thread finishes the
  // check on its own; the application's end waits for it).
  if (config_check_->isRunning()) {
    config_check_->cancel();
    refuseAnalysis(tr("the window closed while the set-up was checked"));
  }
  writeSettings(*settings_);
  settings_->sync();
  if (host_ && host_->isActive()) host_->stop();  // the host drains and joins when destroyed
  event->accept();
}

}  // namespace livedrp::app
