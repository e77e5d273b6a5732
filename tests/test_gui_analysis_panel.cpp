// The Analysis dock (app/analysis_panel.hpp): every field is refused, with the engine's own
// message naming it, in red, before anything is sent; every field reaches the engine (the
// embedded one idle and running, a remote one through its control socket), read back from the
// engine's configuration; the dock shows the configuration in force and one opened from a file.
#include <fstream>
#include <functional>
#include <memory>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "app/analysis_panel.hpp"
#include "app/dock_layouts.hpp"
#include "app/engine_host.hpp"
#include "app/main_window.hpp"
#include "app/stream_config_panel.hpp"
#include "exec/engine_controller.hpp"
#include "gui_window_options.hpp"
#include "integrate/shipped_geometry.hpp"
#include "io/array_file.hpp"
#include "publish/control_server.hpp"

using livedrp::EngineConfig;
using livedrp::app::AnalysisPanel;
using livedrp::app::AppOptions;
using livedrp::app::MainWindow;

namespace {
// Generous limits for a loaded 2-core machine: an engine with integration builds in seconds when
// idle, but other builds and suites may share the cores (the window waits up to 120 s for a
// remote apply's answer).
constexpr int kEngineTimeoutMs = 150'000;
// The simulated ePix10ka2M: 16 segments of 352 x 384 pixels.
const std::vector<std::uint64_t> kEpixShape = {16, 352, 384};

// One event's worth of `type` zeros (a mask that masks nothing), or of radii when `radius`.
QString writeEventArray(const QString& path, livedrp::io::ElementType type, bool radius = false) {
  livedrp::io::Array array;
  array.type = type;
  array.shape = kEpixShape;
  array.bytes.assign(array.elements() * livedrp::io::element_bytes(type), 0);
  if (radius) {
    float* values = array.as<float>();
    for (std::uint64_t i = 0; i < array.elements(); ++i) values[i] = float(i % 384);
  }
  livedrp::io::write_array({path.toStdString(), ""}, livedrp::io::ArrayFormat::Npy, array);
  return path;
}

// A 4 x 4 mask: not the shape of any built-in detector's event.
QString writeSmallMask(const QString& path) {
  livedrp::io::Array array;
  array.type = livedrp::io::ElementType::UInt8;
  array.shape = {4, 4};
  array.bytes.assign(array.elements(), 0);
  livedrp::io::write_array({path.toStdString(), ""}, livedrp::io::ArrayFormat::Npy, array);
  return path;
}

// The geometry shipped for the simulated ePix10ka2M, as a PONI file of the experiment's own.
QString writePoni(const QString& path) {
  for (const auto& geometry : livedrp::integrate::shipped_geometries())
    if (geometry.name == "epix10ka2m") std::ofstream(path.toStdString()) << geometry.poni;
  return path;
}

void setText(QLineEdit* edit, const QString& text) {
  edit->setText(text);
}

// What a scientist would set up: every field of the dock away from the out-of-the-box values.
struct SetUp {
  QString poni, integration_mask, peak_mask, radius_map;

  void enter(AnalysisPanel& dock) const {
    dock.compressionBox()->setChecked(true);
    dock.codecCombo()->setCurrentText(QStringLiteral("lossy"));
    setText(dock.errorBoundEdit(), QStringLiteral("0.25"));
    dock.integrationBox()->setChecked(true);
    setText(dock.poniEdit(), poni);
    dock.binsSpin()->setValue(512);
    dock.unitCombo()->setCurrentIndex(dock.unitCombo()->findData(QStringLiteral("2th_deg")));
    setText(dock.radialMinEdit(), QStringLiteral("1.5"));
    setText(dock.radialMaxEdit(), QStringLiteral("30"));
    setText(dock.integrationMaskEdit(), integration_mask);
    setText(dock.polarizationEdit(), QStringLiteral("0.95"));
    dock.peakFindingBox()->setChecked(true);
    setText(dock.peakMaskEdit(), peak_mask);
    setText(dock.beamXEdit(), QStringLiteral("800.5"));
    setText(dock.beamYEdit(), QStringLiteral("810.25"));
    setText(dock.radiusMapEdit(), radius_map);
    for (const char* name : {"FH", "FM", "FL", "AHL", "AML"})
      dock.gainConfigCheck(name)->setChecked(std::string(name) == "FH" ||
                                             std::string(name) == "AHL");
  }

  // `config` holds every value enter() gave.
  void verifyIn(const EngineConfig& config) const {
    QCOMPARE(config.compression.codec, std::string("lossy"));
    QCOMPARE(config.compression.error_bound, 0.25);
    QVERIFY(config.integration.enabled);
    QCOMPARE(config.integration.poni, poni.toStdString());
    QCOMPARE(config.integration.npt, 512);
    QCOMPARE(config.integration.unit, std::string("2th_deg"));
    QVERIFY(config.integration.radial_range);
    QCOMPARE(config.integration.radial_range->first, 1.5);
    QCOMPARE(config.integration.radial_range->second, 30.0);
    QCOMPARE(config.integration.mask, integration_mask.toStdString());
    QVERIFY(config.integration.polarization);
    QCOMPARE(*config.integration.polarization, 0.95);
    QVERIFY(config.peak_finding.enabled);
    QCOMPARE(config.peak_finding.mask, peak_mask.toStdString());
    QVERIFY(config.peak_finding.beam);
    QCOMPARE(config.peak_finding.beam->first, 800.5);
    QCOMPARE(config.peak_finding.beam->second, 810.25);
    QCOMPARE(config.peak_finding.radius_map, radius_map.toStdString());
    QCOMPARE(config.peak_finding.search_gain_configs, (std::vector<std::string>{"FH", "AHL"}));
  }
};

// A bad value of one field, and the field the engine's message must name.
struct Refusal {
  const char* what;
  const char* field;
  std::function<void(AnalysisPanel&)> enter;
};
}  // namespace

class AnalysisPanelTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  QString path(const char* name) const { return dir_.filePath(QString::fromLatin1(name)); }

  SetUp setUp() const {
    return {writePoni(path("experiment.poni")),
            writeEventArray(path("integration_mask.npy"), livedrp::io::ElementType::UInt8),
            writeEventArray(path("peak_mask.npy"), livedrp::io::ElementType::UInt8),
            writeEventArray(path("radius.npy"), livedrp::io::ElementType::Float32, true)};
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void theDockIsInTheViewMenuAndPlacedByEveryLayout() {
    MainWindow window(idle_window_options(dir_, "menu.ini"));
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("analysisDock"));
    QVERIFY(dock);
    QCOMPARE(dock->widget(), static_cast<QWidget*>(window.analysis()));
    QStringList view_entries;
    for (QAction* menu_action : window.menuBar()->actions())
      if (menu_action->text() == QStringLiteral("&View"))
        for (QAction* action : menu_action->menu()->actions()) view_entries << action->text();
    QVERIFY(view_entries.contains(QStringLiteral("Analysis")));
    for (const auto layout : livedrp::app::DockLayouts::kBuiltIns) {
      bool placed = false;
      for (const auto& column : window.layouts()->arrangement(layout))
        for (const auto& cell : column.cells)
          for (QDockWidget* tab : cell.tabs) placed = placed || tab == dock;
      QVERIFY2(placed, qPrintable(livedrp::app::DockLayouts::title(layout)));
    }
    QVERIFY(window.analysis()->applyButton()->isEnabled());
    QVERIFY(window.analysis()->checksFiles());  // embedded: this machine's files
  }

  void theDockShowsTheConfigurationOfTheNextRun() {
    MainWindow window(idle_window_options(dir_, "shown.ini"));
    const EngineConfig next = window.engineConfig();
    AnalysisPanel& dock = *window.analysis();
    QCOMPARE(dock.compressionBox()->isChecked(), next.compression.enabled());
    QCOMPARE(dock.integrationBox()->isChecked(), next.integration.enabled);
    QCOMPARE(dock.poniEdit()->text().toStdString(), next.integration.poni);
    QCOMPARE(dock.binsSpin()->value(), next.integration.npt);
    QCOMPARE(dock.unitCombo()->currentData().toString().toStdString(), next.integration.unit);
    QCOMPARE(dock.peakFindingBox()->isChecked(), next.peak_finding.enabled);
    // What the dock shows reads back as exactly the configuration it was given.
    QVERIFY(dock.config().to_json() == next.to_json());
  }

  void everyFieldIsRefusedWithTheEnginesMessageInRedAndNothingIsSent() {
    MainWindow window(idle_window_options(dir_, "refused.ini"));
    window.show();
    AnalysisPanel& dock = *window.analysis();
    auto* error_label = dock.findChild<QLabel*>(QStringLiteral("analysisErrorLabel"));
    QVERIFY(error_label);
    QSignalSpy sent(&dock, &AnalysisPanel::applyRequested);
    const nlohmann::json before = window.engineConfig().to_json();
    const QString missing = path("no_such_file.npy");
    const std::vector<Refusal> refusals = {
        {"bins 0", "integration.npt", [](AnalysisPanel& d) { d.binsSpin()->setValue(0); }},
        {"bins past the profile's limit", "integration.npt",
         [](AnalysisPanel& d) { d.binsSpin()->setValue(70'000); }},
        {"a missing PONI file", "integration.poni",
         [&](AnalysisPanel& d) { setText(d.poniEdit(), path("missing.poni")); }},
        {"no PONI file with integration on", "integration.poni",
         [](AnalysisPanel& d) { setText(d.poniEdit(), QString()); }},
        {"radial range min > max", "integration.radial_range",
         [](AnalysisPanel& d) {
           setText(d.radialMinEdit(), QStringLiteral("5"));
           setText(d.radialMaxEdit(), QStringLiteral("2"));
         }},
        {"radial range min = max", "integration.radial_range",
         [](AnalysisPanel& d) {
           setText(d.radialMinEdit(), QStringLiteral("3"));
           setText(d.radialMaxEdit(), QStringLiteral("3"));
         }},
        {"radial range without max", "integration.radial_range",
         [](AnalysisPanel& d) { setText(d.radialMinEdit(), QStringLiteral("1")); }},
        {"polarisation past 1", "integration.polarization",
         [](AnalysisPanel& d) { setText(d.polarizationEdit(), QStringLiteral("1.5")); }},
        {"polarisation not a number", "integration.polarization",
         [](AnalysisPanel& d) { setText(d.polarizationEdit(), QStringLiteral("high")); }},
        {"a missing integration mask", "integration.mask",
         [&](AnalysisPanel& d) { setText(d.integrationMaskEdit(), missing); }},
        {"a missing peak-finding mask", "peak_finding.mask",
         [&](AnalysisPanel& d) { setText(d.peakMaskEdit(), missing); }},
        {"a missing radius map", "peak_finding.radius_map",
         [&](AnalysisPanel& d) { setText(d.radiusMapEdit(), missing); }},
        {"a beam centre without y", "peak_finding.beam",
         [](AnalysisPanel& d) { setText(d.beamXEdit(), QStringLiteral("800")); }},
        {"a beam centre not a number", "peak_finding.beam",
         [](AnalysisPanel& d) {
           setText(d.beamXEdit(), QStringLiteral("centre"));
           setText(d.beamYEdit(), QStringLiteral("800"));
         }},
        {"a lossy bound of 0", "compression.error_bound",
         [](AnalysisPanel& d) {
           d.compressionBox()->setChecked(true);
           d.codecCombo()->setCurrentText(QStringLiteral("lossy"));
           setText(d.errorBoundEdit(), QStringLiteral("0"));
         }},
        {"a negative bound", "compression.error_bound",
         [](AnalysisPanel& d) { setText(d.errorBoundEdit(), QStringLiteral("-0.5")); }},
        {"no bound", "compression.error_bound",
         [](AnalysisPanel& d) { setText(d.errorBoundEdit(), QString()); }},
    };
    for (const Refusal& refusal : refusals) {
      dock.revertButton()->click();  // the configuration in force, then one bad value
      QVERIFY(dock.errorText().isEmpty());
      refusal.enter(dock);
      QVERIFY2(!dock.apply(), refusal.what);
      dock.applyButton()->click();  // the button does the same
      const QString shown = dock.errorText();
      QVERIFY2(shown.contains(QString::fromLatin1(refusal.field)),
               qPrintable(QStringLiteral("%1: %2").arg(refusal.what, shown)));
      QVERIFY2(error_label->isVisible(), refusal.what);
      QVERIFY(error_label->styleSheet().contains(QStringLiteral("#c62828")));  // red
      QVERIFY2(sent.isEmpty(), refusal.what);
      QVERIFY2(window.engineConfig().to_json() == before, refusal.what);
      QVERIFY(window.logText().contains(QStringLiteral("analysis not applied")));
    }
    // The PONI file's own loader speaks for it: the file is named and why it was refused.
    dock.revertButton()->click();
    setText(dock.poniEdit(), path("missing.poni"));
    dock.applyButton()->click();
    QVERIFY2(dock.errorText().contains(path("missing.poni")), qPrintable(dock.errorText()));
    QVERIFY2(dock.errorText().contains(QStringLiteral("cannot be opened")),
             qPrintable(dock.errorText()));
  }

  void aStageTurnedOffIsNotCheckedForItsFiles() {
    MainWindow window(idle_window_options(dir_, "off.ini"));
    AnalysisPanel& dock = *window.analysis();
    dock.integrationBox()->setChecked(false);
    setText(dock.poniEdit(), path("kept_for_later.poni"));
    dock.applyButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(!dock.isApplying(), kEngineTimeoutMs);  // checked off the GUI thread
    QVERIFY2(dock.errorText().isEmpty(), qPrintable(dock.errorText()));
    QVERIFY(!window.engineConfig().integration.enabled);
    QCOMPARE(window.engineConfig().integration.poni, path("kept_for_later.poni").toStdString());
  }

  void everyFieldReachesTheNextRunWithNoRunGoing() {
    MainWindow window(idle_window_options(dir_, "idle.ini"));
    AnalysisPanel& dock = *window.analysis();
    const SetUp values = setUp();
    values.enter(dock);
    const auto params = window.engineConfig().peak_finding.params.minimum_snr;
    QSignalSpy sent(&dock, &AnalysisPanel::applyRequested);
    dock.applyButton()->click();
    QVERIFY2(dock.errorText().isEmpty(), qPrintable(dock.errorText()));
    QCOMPARE(sent.count(), 1);
    QTRY_VERIFY_WITH_TIMEOUT(!dock.isApplying(), kEngineTimeoutMs);  // checked off the GUI thread
    QVERIFY2(dock.errorText().isEmpty(), qPrintable(dock.errorText()));
    values.verifyIn(window.engineConfig());
    QVERIFY(dock.statusText().contains(QStringLiteral("next start")));
    // Only the dock's fields changed: the peak finder's parameters are the tuning dock's.
    QCOMPARE(window.engineConfig().peak_finding.params.minimum_snr, params);
    // The dock and the other docks show the configuration in force.
    values.verifyIn(dock.config());
    QCOMPARE(window.streamConfig()->config().compression.error_bound, 0.25);
    // A saved configuration carries them.
    QVERIFY(window.saveConfiguration(path("set_up.json")));
    values.verifyIn(livedrp::load_engine_config_file(path("set_up.json").toStdString()));
    // And the other way: the stream-configuration dock's codec shows here once applied.
    window.streamConfig()->codecCombo()->setCurrentText(QStringLiteral("lossless"));
    window.streamConfig()->applyButton()->click();
    QCOMPARE(window.engineConfig().compression.codec, std::string("lossless"));
    QCOMPARE(dock.codecCombo()->currentText(), QStringLiteral("lossless"));
    QVERIFY(dock.compressionBox()->isChecked());
  }

  void aRunningEmbeddedEngineRestartsWithTheNewSetUp() {
    EngineConfig small;
    small.source = "sim:epix10ka2m";
    small.backend = "cpu";
    small.rate_hz = 20;
    small.cpu_threads = 1;
    small.simulator_pool = 2;
    small.publish = "tcp://127.0.0.1:*";
    small.compression.codec = "off";
    small.integration.enabled = true;
    small.integration.poni = "builtin:epix10ka2m";
    small.peak_finding.enabled = false;
    const QString ini = path("running.ini");
    QSettings(ini, QSettings::IniFormat)
        .setValue("engine/config", QString::fromStdString(small.to_json().dump()));
    AppOptions options = idle_window_options(dir_, "running.ini");
    MainWindow window(options);
    window.startRun();
    auto* host = window.engineHost();
    QTRY_VERIFY_WITH_TIMEOUT(host->state() == QStringLiteral("running"), kEngineTimeoutMs);
    const std::int64_t run = host->currentConfig().run;

    AnalysisPanel& dock = *window.analysis();
    dock.binsSpin()->setValue(300);
    dock.unitCombo()->setCurrentIndex(dock.unitCombo()->findData(QStringLiteral("r_mm")));
    setText(dock.radialMinEdit(), QStringLiteral("10"));
    setText(dock.radialMaxEdit(), QStringLiteral("90"));
    setText(dock.polarizationEdit(), QStringLiteral("0.99"));
    dock.compressionBox()->setChecked(true);
    dock.codecCombo()->setCurrentText(QStringLiteral("lossy"));
    setText(dock.errorBoundEdit(), QStringLiteral("2"));
    dock.applyButton()->click();
    QVERIFY2(dock.errorText().isEmpty(), qPrintable(dock.errorText()));
    QVERIFY(dock.isApplying());
    QTRY_VERIFY_WITH_TIMEOUT(host->currentConfig().run == run + 1, kEngineTimeoutMs);
    const EngineConfig& in_force = host->currentConfig();
    QCOMPARE(in_force.integration.npt, 300);
    QCOMPARE(in_force.integration.unit, std::string("r_mm"));
    QCOMPARE(in_force.integration.radial_range->first, 10.0);
    QCOMPARE(in_force.integration.radial_range->second, 90.0);
    QCOMPARE(*in_force.integration.polarization, 0.99);
    QCOMPARE(in_force.compression.codec, std::string("lossy"));
    QCOMPARE(in_force.compression.error_bound, 2.0);
    QCOMPARE(in_force.source, small.source);  // the other docks' settings stay
    QTRY_VERIFY(!dock.isApplying());
    QVERIFY2(dock.statusText().startsWith(QStringLiteral("applied")),
             qPrintable(dock.statusText()));
    QCOMPARE(dock.binsSpin()->value(), 300);

    // A set-up the engine refuses when it builds the run (search_gain_configs needs an ePix10ka
    // gain configuration the simulated one has none of): the run goes on, the reason in red.
    dock.peakFindingBox()->setChecked(true);
    dock.gainConfigCheck("FL")->setChecked(true);
    dock.applyButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(!dock.errorText().isEmpty(), kEngineTimeoutMs);
    QVERIFY2(dock.errorText().contains(QStringLiteral("search_gain_configs")),
             qPrintable(dock.errorText()));
    QCOMPARE(host->currentConfig().run, run + 1);
    QVERIFY(!host->currentConfig().peak_finding.enabled);
    window.stopRun();
    QTRY_VERIFY_WITH_TIMEOUT(!host->isActive(), kEngineTimeoutMs);
  }

  // What only the engine can judge, because it needs the detector (a peak-finding mask of another
  // shape than the ePix10ka2M's), is refused at Apply with no run going (once the check off the
  // GUI thread answers), in the engine's words and in red; the next run's configuration is
  // unchanged.
  void aMaskOfAnotherShapeIsRefusedAtOnceWithNoRunGoing() {
    MainWindow window(idle_window_options(dir_, "shape.ini"));
    window.show();
    AnalysisPanel& dock = *window.analysis();
    auto* error_label = dock.findChild<QLabel*>(QStringLiteral("analysisErrorLabel"));
    QVERIFY(error_label);
    QVERIFY(!window.engineHost()->isActive());
    const nlohmann::json before = window.engineConfig().to_json();
    const QString mask = writeSmallMask(path("four_by_four.npy"));
    dock.peakFindingBox()->setChecked(true);
    setText(dock.peakMaskEdit(), mask);
    dock.applyButton()->click();
    // No run, no start: the check's answer.
    QTRY_VERIFY_WITH_TIMEOUT(!dock.errorText().isEmpty(), kEngineTimeoutMs);
    const QString shown = dock.errorText();
    QVERIFY2(shown.contains(QStringLiteral("peak_finding.mask")) &&
                 shown.contains(QStringLiteral("[4, 4]")) &&
                 shown.contains(QStringLiteral("2162688 pixels")),
             qPrintable(shown));
    QVERIFY(error_label->isVisible());
    QVERIFY(error_label->styleSheet().contains(QStringLiteral("#c62828")));  // red
    QVERIFY(window.engineConfig().to_json() == before);
    QVERIFY(!window.engineHost()->isActive());
    QVERIFY(window.logText().contains(QStringLiteral("peak_finding.mask")));
  }

  // The same against a remote engine: its "check" refuses the mask, nothing is applied, and its
  // run goes on with its configuration and run number.
  void aRemoteEnginesCheckRefusesAMaskOfAnotherShape() {
    EngineConfig config;
    config.backend = "cpu";
    config.cpu_threads = 1;
    config.rate_hz = 5;
    config.simulator_pool = 1;
    config.publish = "tcp://127.0.0.1:*";
    config.integration.npt = 555;  // seen in the dock once its get_config is answered
    livedrp::EngineController controller(config);
    livedrp::ControlServer server(controller, "tcp://127.0.0.1:*");
    QVERIFY(controller.start());
    AppOptions options;
    options.connect = controller.publish_endpoint();
    options.control = server.endpoint();
    options.settings_file = path("remote_shape.ini");
    MainWindow window(options);
    AnalysisPanel& dock = *window.analysis();
    QTRY_COMPARE_WITH_TIMEOUT(dock.binsSpin()->value(), 555, kEngineTimeoutMs);
    const nlohmann::json before = controller.config().to_json();
    const std::int64_t run = controller.run();

    dock.peakFindingBox()->setChecked(true);
    setText(dock.peakMaskEdit(), writeSmallMask(path("remote_four_by_four.npy")));
    dock.applyButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(!dock.errorText().isEmpty(), kEngineTimeoutMs);
    const QString shown = dock.errorText();
    QVERIFY2(shown.contains(QStringLiteral("request 'check' refused")) &&
                 shown.contains(QStringLiteral("peak_finding.mask")) &&
                 shown.contains(QStringLiteral("[4, 4]")),
             qPrintable(shown));
    QVERIFY(!dock.isApplying());
    QVERIFY(controller.config().to_json() == before);
    QCOMPARE(controller.run(), run);
    QCOMPARE(controller.state(), std::string("running"));
  }

  void aRemoteEngineTakesTheSetUpThroughItsControlSocket() {
    EngineConfig config;
    config.backend = "cpu";
    config.cpu_threads = 0;  // no run goes: every core builds the engines the applies make
    config.simulator_pool = 1;
    config.publish = "tcp://127.0.0.1:*";
    config.integration.enabled = true;
    config.integration.poni = "builtin:epix10ka2m";
    config.integration.npt = 777;
    livedrp::EngineController controller(config);
    livedrp::ControlServer server(controller, "tcp://127.0.0.1:*");
    AppOptions options;
    options.connect = controller.publish_endpoint();
    options.control = server.endpoint();
    options.settings_file = path("remote.ini");
    MainWindow window(options);
    AnalysisPanel& dock = *window.analysis();
    QVERIFY(!dock.checksFiles());  // the remote engine reads its own machine's files
    // The dock shows the remote engine's configuration (get_config), not the window's own.
    QTRY_COMPARE_WITH_TIMEOUT(dock.binsSpin()->value(), 777, kEngineTimeoutMs);

    const SetUp values = setUp();  // files on this machine, which is the engine's here
    values.enter(dock);
    dock.applyButton()->click();
    QVERIFY2(dock.errorText().isEmpty(), qPrintable(dock.errorText()));
    QTRY_VERIFY_WITH_TIMEOUT(!dock.isApplying(), kEngineTimeoutMs);
    QVERIFY2(dock.statusText().startsWith(QStringLiteral("applied on the remote engine")),
             qPrintable(dock.statusText() + QStringLiteral(" / ") + dock.errorText()));
    values.verifyIn(controller.config());
    values.verifyIn(dock.config());

    // What the engine's reader refuses is refused here: nothing goes to the socket.
    const std::uint64_t answered = server.requests_answered();
    dock.binsSpin()->setValue(0);
    dock.applyButton()->click();
    QVERIFY(dock.errorText().contains(QStringLiteral("integration.npt")));
    QCOMPARE(server.requests_answered(), answered);
    // A file the remote engine cannot open is its to refuse, and its refusal shows in red.
    dock.revertButton()->click();
    setText(dock.poniEdit(), path("not_on_the_engine.poni"));
    dock.applyButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(!dock.errorText().isEmpty(), kEngineTimeoutMs);
    QVERIFY2(dock.errorText().contains(QStringLiteral("integration.poni")),
             qPrintable(dock.errorText()));
    QCOMPARE(controller.config().integration.poni, values.poni.toStdString());

    // The stream-configuration dock's Apply changes the codec too: the dock follows its answer.
    window.streamConfig()->codecCombo()->setCurrentText(QStringLiteral("lossless"));
    window.streamConfig()->applyButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(dock.codecCombo()->currentText(), QStringLiteral("lossless"),
                              kEngineTimeoutMs);
    QCOMPARE(controller.config().compression.codec, std::string("lossless"));
  }

  void attachedWithoutAControlSocketApplyIsDisabledAndSaysWhy() {
    AppOptions options;
    options.connect = "tcp://127.0.0.1:1";  // nothing there; no control endpoint given
    options.settings_file = path("no_control.ini");
    MainWindow window(options);
    QVERIFY(!window.analysis()->applyButton()->isEnabled());
    QVERIFY(window.analysis()->applyButton()->toolTip().contains(QStringLiteral("--control")));
  }

  void theDockShowsAConfigurationOpenedFromAFile() {
    EngineConfig saved;
    saved.compression.codec = "off";
    saved.integration.enabled = true;
    saved.integration.poni = writePoni(path("opened.poni")).toStdString();
    saved.integration.npt = 640;
    saved.integration.unit = "q_A^-1";
    saved.integration.radial_range = std::make_pair(0.5, 3.0);
    saved.integration.polarization = 0.9;
    saved.integration.mask = "mask.h5:/data";
    saved.peak_finding.enabled = true;
    saved.peak_finding.beam = std::make_pair(100.0, 200.0);
    saved.peak_finding.radius_map = "radius.h5:/radius";
    saved.peak_finding.search_gain_configs = {"FM"};
    {
      std::ofstream out(path("opened.json").toStdString());
      out << saved.to_json().dump(2);
    }
    MainWindow window(idle_window_options(dir_, "opened.ini"));
    QVERIFY(window.openConfiguration(path("opened.json")));
    AnalysisPanel& dock = *window.analysis();
    QVERIFY(!dock.compressionBox()->isChecked());
    QVERIFY(dock.integrationBox()->isChecked());
    QCOMPARE(dock.poniEdit()->text().toStdString(), saved.integration.poni);
    QCOMPARE(dock.binsSpin()->value(), 640);
    QCOMPARE(dock.unitCombo()->currentData().toString(), QStringLiteral("q_A^-1"));
    QCOMPARE(dock.radialMinEdit()->text(), QStringLiteral("0.5"));
    QCOMPARE(dock.radialMaxEdit()->text(), QStringLiteral("3"));
    QCOMPARE(dock.polarizationEdit()->text(), QStringLiteral("0.9"));
    QCOMPARE(dock.integrationMaskEdit()->text(), QStringLiteral("mask.h5:/data"));
    QVERIFY(dock.peakFindingBox()->isChecked());
    QCOMPARE(dock.beamXEdit()->text(), QStringLiteral("100"));
    QCOMPARE(dock.beamYEdit()->text(), QStringLiteral("200"));
    QCOMPARE(dock.radiusMapEdit()->text(), QStringLiteral("radius.h5:/radius"));
    QVERIFY(dock.gainConfigCheck("FM")->isChecked());
    QVERIFY(!dock.gainConfigCheck("AHL")->isChecked());
    // Shown exactly: the dock's sections read back as the file's.
    const nlohmann::json shown = dock.sectionsJson();
    const nlohmann::json file = saved.to_json();
    for (const char* section : {"compression", "integration", "peak_finding"})
      for (const auto& [key, value] : shown.at(section).items())
        QVERIFY2(file.at(section).at(key) == value,
                 qPrintable(QString::fromLatin1(section) + "." + QString::fromStdString(key)));
  }
};

QTEST_MAIN(AnalysisPanelTest)
#include "test_gui_analysis_panel.moc"
