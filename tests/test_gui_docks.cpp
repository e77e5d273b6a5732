// The stream-configuration, engine and comparison docks in the main window: present, listed in
// the View menu, and their settings (saved-configuration directory, comparison fields) persist
// with the layout.
#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "app/app_options.hpp"
#include "app/comparison_panel.hpp"
#include "app/main_window.hpp"
#include "app/saved_configurations.hpp"
#include "app/stream_config_panel.hpp"
#include "exec/engine.hpp"

using livedrp::app::AppOptions;
using livedrp::app::MainWindow;

class DocksTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  AppOptions options(const QString& ini) {
    AppOptions o;
    o.autostart = false;
    o.settings_file = dir_.filePath(ini);
    return o;
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void theWindowHasTheNewDocksInTheViewMenu() {
    MainWindow window(options("docks.ini"));
    QStringList view_entries;
    for (QAction* menu_action : window.menuBar()->actions()) {
      if (menu_action->text() != QStringLiteral("&View")) continue;
      for (QAction* action : menu_action->menu()->actions()) view_entries << action->text();
    }
    for (const char* name : {"streamConfigDock", "engineDock", "comparisonDock"}) {
      auto* dock = window.findChild<QDockWidget*>(QString::fromLatin1(name));
      QVERIFY2(dock, name);
      QVERIFY2(view_entries.contains(dock->windowTitle()), name);
    }
    QVERIFY(window.streamConfig()->applyButton()->isEnabled());  // embedded: Apply available
  }

  void configurationsAndComparisonSettingsPersistWithTheLayout() {
    const QString configurations = dir_.filePath("saved");
    livedrp::app::SavedConfigurations(configurations).save("one", livedrp::EngineConfig{});
    livedrp::app::SavedConfigurations(configurations).save("two", livedrp::EngineConfig{});
    const QString layout = dir_.filePath("layout.ini");
    {
      MainWindow window(options("persist.ini"));
      window.streamConfig()->setDirectory(configurations);  // as if chosen; persisted below
      QVERIFY(window.loadLayout(layout) == false);           // nothing there yet
    }
    {
      QSettings settings(layout, QSettings::IniFormat);
      settings.setValue("configurations/directory", configurations);
    }
    {
      MainWindow window(options("persist.ini"));
      QVERIFY(window.loadLayout(layout));
      QCOMPARE(window.configurationsDirectory(), configurations);
      QCOMPARE(window.streamConfig()->savedList()->count(), 2);
      QCOMPARE(window.comparison()->configurationList()->count(), 2);
      window.comparison()->setChecked({"one", "two"});
      window.comparison()->eventsSpin()->setValue(77);
      window.comparison()->detectorCombo()->setCurrentText("sim:jungfrau4m");
      window.comparison()->rateSpin()->setValue(25);
      QVERIFY(window.saveLayout(layout));
    }
    MainWindow window(options("persist2.ini"));
    QVERIFY(window.loadLayout(layout));
    QCOMPARE(window.comparison()->checkedNames(), (QStringList{"one", "two"}));
    QCOMPARE(window.comparison()->eventsSpin()->value(), 77);
    QCOMPARE(window.comparison()->detectorCombo()->currentText(), QStringLiteral("sim:jungfrau4m"));
    QCOMPARE(window.comparison()->rateSpin()->value(), 25.0);
  }
};

QTEST_MAIN(DocksTest)
#include "test_gui_docks.moc"
