// The Analysis dock's check against the detector runs off the GUI thread (app/engine_config_check
// .hpp): the window goes on while a set-up is checked, Apply waits for the answer, the answer
// reaches the dock (applied and in the window's configuration, or refused in red), only the
// configuration checked is applied (not edits made meanwhile, not over a base changed meanwhile),
// and a window closed during a check applies nothing.
//
// The checks here are the engine's own (check_engine_config), held back by a gate where a test
// needs to act while one runs: every wait is on a condition, none on the clock.
#include <atomic>
#include <fstream>
#include <future>
#include <memory>

#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>
#include <QTimer>

#include "app/analysis_panel.hpp"
#include "app/engine_config_check.hpp"
#include "app/engine_host.hpp"
#include "app/main_window.hpp"
#include "exec/config_check.hpp"
#include "gui_window_options.hpp"
#include "io/array_file.hpp"

using livedrp::EngineConfig;
using livedrp::app::AnalysisPanel;
using livedrp::app::EngineConfigCheck;
using livedrp::app::MainWindow;

namespace {
// Generous: the check with every stage on takes about a second on an idle 2-core machine, and
// other builds and suites may share the cores.
constexpr int kCheckTimeoutMs = 120'000;

// Holds every check started through it until open() (or its end, so that no pool thread is left
// waiting when a test fails early), then runs the engine's own check.
class Gate {
 public:
  Gate() : opened_(release_.get_future().share()) {}
  ~Gate() { open(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  EngineConfigCheck::Check check() {
    return [entered = entered_, opened = opened_](const EngineConfig& config) {
      ++*entered;
      opened.wait();
      livedrp::check_engine_config(config);
    };
  }
  int entered() const { return entered_->load(); }
  void open() {
    if (!released_) release_.set_value();
    released_ = true;
  }

 private:
  std::promise<void> release_;
  std::shared_future<void> opened_;
  std::shared_ptr<std::atomic<int>> entered_ = std::make_shared<std::atomic<int>>(0);
  bool released_ = false;
};

// Turns integration on with `bins` bins in the window's Analysis dock and applies it, its check
// held at `gate`: true once the check has begun.
bool applyHeld(MainWindow& window, Gate& gate, int bins) {
  window.configCheck()->setCheck(gate.check());
  AnalysisPanel& dock = *window.analysis();
  dock.integrationBox()->setChecked(true);
  dock.binsSpin()->setValue(bins);
  dock.applyButton()->click();
  return QTest::qWaitFor([&] { return gate.entered() == 1; }, kCheckTimeoutMs);
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

// Every stage on (the check builds the integrator's and the peak finder's tables).
void turnEveryStageOn(AnalysisPanel& dock) {
  dock.compressionBox()->setChecked(true);
  dock.integrationBox()->setChecked(true);
  dock.peakFindingBox()->setChecked(true);
}
}  // namespace

class AnalysisCheckTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  QString path(const char* name) const { return dir_.filePath(QString::fromLatin1(name)); }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  // The event loop keeps turning while a check runs: a timer ticks, Apply is disabled and the
  // dock says it is checking; then the answer applies the set-up.
  void theWindowGoesOnWhileASetUpIsChecked() {
    MainWindow window(idle_window_options(dir_, "goes_on.ini"));
    window.show();
    Gate gate;
    window.configCheck()->setCheck(gate.check());
    AnalysisPanel& dock = *window.analysis();
    turnEveryStageOn(dock);
    dock.binsSpin()->setValue(321);

    dock.applyButton()->click();
    QVERIFY(dock.isApplying());
    QVERIFY(!dock.applyButton()->isEnabled());
    QVERIFY2(dock.statusText().startsWith(QStringLiteral("checking")),
             qPrintable(dock.statusText()));
    QVERIFY(dock.errorText().isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(gate.entered() == 1, kCheckTimeoutMs);

    int ticks = 0;
    QTimer timer;
    connect(&timer, &QTimer::timeout, this, [&ticks] { ++ticks; });
    timer.start(1);
    QTRY_VERIFY(ticks >= 5);  // the check is held open all this time
    QVERIFY(window.configCheck()->isRunning());
    QVERIFY(!dock.applyButton()->isEnabled());
    QVERIFY(!dock.apply());  // one Apply at a time
    QCOMPARE(gate.entered(), 1);

    gate.open();
    QTRY_VERIFY_WITH_TIMEOUT(!dock.isApplying(), kCheckTimeoutMs);
    QVERIFY2(dock.errorText().isEmpty(), qPrintable(dock.errorText()));
    QVERIFY2(dock.statusText().contains(QStringLiteral("next start")),
             qPrintable(dock.statusText()));
    QVERIFY(dock.applyButton()->isEnabled());
    const EngineConfig in_force = window.engineConfig();
    QCOMPARE(in_force.integration.npt, 321);
    QVERIFY(in_force.integration.enabled);
    QVERIFY(in_force.peak_finding.enabled);
    QVERIFY(in_force.compression.enabled());
  }

  // A set-up the detector refuses (a mask of another shape) comes back in red from the worker;
  // nothing changes.
  void aRefusalFromTheWorkerShowsInRed() {
    MainWindow window(idle_window_options(dir_, "refused.ini"));
    window.show();
    AnalysisPanel& dock = *window.analysis();
    const nlohmann::json before = window.engineConfig().to_json();
    dock.peakFindingBox()->setChecked(true);
    dock.peakMaskEdit()->setText(writeSmallMask(path("four_by_four.npy")));
    QSignalSpy refused(window.configCheck(), &EngineConfigCheck::refused);
    dock.applyButton()->click();
    QVERIFY(refused.wait(kCheckTimeoutMs));
    const QString shown = dock.errorText();
    QVERIFY2(shown.contains(QStringLiteral("peak_finding.mask")) &&
                 shown.contains(QStringLiteral("[4, 4]")),
             qPrintable(shown));
    auto* error_label = dock.findChild<QLabel*>(QStringLiteral("analysisErrorLabel"));
    QVERIFY(error_label && error_label->isVisible());
    QVERIFY(error_label->styleSheet().contains(QStringLiteral("#c62828")));  // red
    QVERIFY(!dock.isApplying());
    QVERIFY(dock.applyButton()->isEnabled());
    QVERIFY(window.engineConfig().to_json() == before);
  }

  // What goes is what was checked: fields edited while the check runs are neither checked nor
  // applied; they stay in the dock, which says they are not applied.
  void editsMadeDuringTheCheckAreNotApplied() {
    MainWindow window(idle_window_options(dir_, "edits.ini"));
    Gate gate;
    QVERIFY(applyHeld(window, gate, 300));
    AnalysisPanel& dock = *window.analysis();

    dock.binsSpin()->setValue(999);
    dock.polarizationEdit()->setText(QStringLiteral("0.5"));
    gate.open();
    QTRY_VERIFY_WITH_TIMEOUT(!dock.isApplying(), kCheckTimeoutMs);
    QVERIFY2(dock.errorText().isEmpty(), qPrintable(dock.errorText()));
    const EngineConfig in_force = window.engineConfig();
    QCOMPARE(in_force.integration.npt, 300);
    QVERIFY(!in_force.integration.polarization);
    QCOMPARE(dock.binsSpin()->value(), 999);
    QCOMPARE(dock.polarizationEdit()->text(), QStringLiteral("0.5"));
    QVERIFY2(dock.statusText().contains(QStringLiteral("not applied")),
             qPrintable(dock.statusText()));
    QCOMPARE(gate.entered(), 1);
  }

  // A check whose base changed meanwhile (a configuration opened) is stale: not applied, said in
  // red; the configuration opened stays in force.
  void aCheckOverAChangedConfigurationIsNotApplied() {
    EngineConfig opened;
    opened.source = "sim:epix10ka2m";
    opened.integration.enabled = true;
    opened.integration.poni = "builtin:epix10ka2m";
    opened.integration.npt = 640;
    {
      std::ofstream out(path("opened.json").toStdString());
      out << opened.to_json().dump(2);
    }
    MainWindow window(idle_window_options(dir_, "stale.ini"));
    Gate gate;
    QVERIFY(applyHeld(window, gate, 300));
    AnalysisPanel& dock = *window.analysis();

    QVERIFY(window.openConfiguration(path("opened.json")));
    QCOMPARE(window.engineConfig().integration.npt, 640);
    QSignalSpy passed(window.configCheck(), &EngineConfigCheck::passed);
    gate.open();
    QVERIFY(passed.wait(kCheckTimeoutMs));  // the check itself passes
    QVERIFY2(dock.errorText().contains(QStringLiteral("changed while")),
             qPrintable(dock.errorText()));
    QVERIFY(!dock.isApplying());
    QCOMPARE(window.engineConfig().integration.npt, 640);
    QCOMPARE(dock.binsSpin()->value(), 640);  // the dock shows what is in force
  }

  // Closing the window during a check applies nothing; destroying it before the answer arrives
  // leaves the answer nowhere to go, and nothing breaks.
  void aWindowClosedDuringACheckAppliesNothing() {
    auto window = std::make_unique<MainWindow>(idle_window_options(dir_, "closed.ini"));
    window->show();
    Gate gate;
    const int npt = window->engineConfig().integration.npt;
    QVERIFY(applyHeld(*window, gate, npt + 7));
    AnalysisPanel& dock = *window->analysis();

    QVERIFY(window->close());
    QVERIFY(!window->configCheck()->isRunning());
    QVERIFY2(dock.errorText().contains(QStringLiteral("closed")), qPrintable(dock.errorText()));
    QSignalSpy passed(window->configCheck(), &EngineConfigCheck::passed);
    gate.open();
    QVERIFY(QThreadPool::globalInstance()->waitForDone(kCheckTimeoutMs));
    QCoreApplication::sendPostedEvents();  // the answer, delivered and dropped
    QCOMPARE(passed.count(), 0);
    QCOMPARE(window->engineConfig().integration.npt, npt);

    // Destroyed with a check running: its answer arrives after the window is gone.
    Gate second;
    window->configCheck()->setCheck(second.check());
    dock.binsSpin()->setValue(npt + 9);
    dock.applyButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(second.entered() == 1, kCheckTimeoutMs);
    window.reset();
    second.open();
    QVERIFY(QThreadPool::globalInstance()->waitForDone(kCheckTimeoutMs));
    QCoreApplication::sendPostedEvents();
  }
};

QTEST_MAIN(AnalysisCheckTest)
#include "test_gui_analysis_check.moc"
