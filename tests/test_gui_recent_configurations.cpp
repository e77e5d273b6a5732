// File > Open Recent: the pipeline configurations opened or saved in the window, or given with
// `livedrp --config`, newest first, each once, at most RecentConfigurations::kCapacity; kept in
// the settings for the next window; an entry opens its file; a file gone is refused and dropped.
#include <QAction>
#include <QDir>
#include <QFile>
#include <QMenu>
#include <QMenuBar>
#include <QTemporaryDir>
#include <QTest>

#include "app/app_options.hpp"
#include "app/main_window.hpp"
#include "app/recent_configurations.hpp"
#include "app/window_files.hpp"
#include "exec/engine.hpp"
#include "gui_window_options.hpp"

using livedrp::EngineConfig;
using livedrp::app::AppOptions;
using livedrp::app::MainWindow;
using livedrp::app::RecentConfigurations;

namespace {
// The File menu's Open Recent entries as the user sees them when it opens.
QStringList recentMenuEntries(const MainWindow& window) {
  QMenu* menu = window.findChild<QMenu*>(QStringLiteral("recentConfigurationsMenu"));
  if (menu == nullptr) return {QStringLiteral("no Open Recent menu")};
  emit menu->aboutToShow();
  QStringList entries;
  for (const QAction* action : menu->actions())
    if (!action->isSeparator()) entries << action->text();
  return entries;
}

QAction* recentEntry(const MainWindow& window, const QString& text) {
  QMenu* menu = window.findChild<QMenu*>(QStringLiteral("recentConfigurationsMenu"));
  emit menu->aboutToShow();
  for (QAction* action : menu->actions())
    if (action->text() == text) return action;
  return nullptr;
}

bool fileMenuHoldsRecent(const MainWindow& window) {
  for (const QAction* menu_action : window.menuBar()->actions()) {
    if (menu_action->text() != QLatin1String("&File")) continue;
    for (const QAction* action : menu_action->menu()->actions())
      if (action->menu() && action->menu()->objectName() == "recentConfigurationsMenu") return true;
  }
  return false;
}
}  // namespace

class RecentConfigurationsTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  AppOptions options(const QString& settings_name) {
    return idle_window_options(dir_, settings_name);
  }

  // A valid configuration file whose rate tells it apart.
  QString configurationFile(const QString& name, double rate_hz) {
    EngineConfig config;
    config.rate_hz = rate_hz;
    const QString path = dir_.filePath(name);
    if (const auto problem = livedrp::app::writeConfigurationFile(config, path))
      qFatal("cannot write %s: %s", qPrintable(path), qPrintable(*problem));
    return path;
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void openedAndSavedConfigurationsAreListedNewestFirstOnce() {
    MainWindow window(options(QStringLiteral("list.ini")));
    QVERIFY(fileMenuHoldsRecent(window));
    QVERIFY(window.recentConfigurations()->paths().isEmpty());
    QVERIFY(!window.recentConfigurations()->menu()->menuAction()->isEnabled());  // nothing yet

    const QString slow = configurationFile(QStringLiteral("slow.json"), 10);
    const QString fast = configurationFile(QStringLiteral("fast.json"), 900);
    QVERIFY(window.openConfiguration(slow));
    QVERIFY(window.openConfiguration(fast));
    const QString saved = dir_.filePath(QStringLiteral("saved.json"));
    QVERIFY(window.saveConfiguration(saved));
    QVERIFY(window.openConfiguration(slow));  // again: to the front, not twice
    QCOMPARE(window.recentConfigurations()->paths(), (QStringList{slow, saved, fast}));
    QVERIFY(window.recentConfigurations()->menu()->menuAction()->isEnabled());
    QCOMPARE(recentMenuEntries(window),
             (QStringList{QStringLiteral("&1 slow.json"), QStringLiteral("&2 saved.json"),
                          QStringLiteral("&3 fast.json"), QStringLiteral("&Clear Menu")}));

    // A file that is not a configuration is not remembered.
    const QString bad = dir_.filePath(QStringLiteral("bad.json"));
    QFile file(bad);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("{\"rate_hz\": \"fast\"}");
    file.close();
    QVERIFY(!window.openConfiguration(bad));
    QVERIFY(!window.recentConfigurations()->paths().contains(bad));
  }

  void theListKeepsTheNewestUpToItsCapacity() {
    MainWindow window(options(QStringLiteral("capacity.ini")));
    QStringList opened;
    for (int i = 0; i < RecentConfigurations::kCapacity + 3; ++i) {
      opened.prepend(configurationFile(QStringLiteral("c%1.json").arg(i), 100 + i));
      QVERIFY(window.openConfiguration(opened.front()));
    }
    QCOMPARE(window.recentConfigurations()->paths(),
             opened.mid(0, RecentConfigurations::kCapacity));
  }

  void theListSurvivesANewWindowAndAnEntryOpensItsFile() {
    const QString first = configurationFile(QStringLiteral("first.json"), 42);
    const QString second = configurationFile(QStringLiteral("second.json"), 77);
    {
      MainWindow window(options(QStringLiteral("persist.ini")));
      QVERIFY(window.openConfiguration(first));
      QVERIFY(window.openConfiguration(second));
    }
    MainWindow window(options(QStringLiteral("persist.ini")));
    QCOMPARE(window.recentConfigurations()->paths(), (QStringList{second, first}));
    QAction* entry = recentEntry(window, QStringLiteral("&2 first.json"));
    QVERIFY(entry);
    QCOMPARE(entry->toolTip(), first);
    entry->trigger();
    QCOMPARE(window.engineConfig().rate_hz, 42.0);  // the file's configuration, for the next start
    QCOMPARE(window.recentConfigurations()->paths(), (QStringList{first, second}));
  }

  void aConfigurationGivenOnTheCommandLineIsListedFirst() {
    const QString given = configurationFile(QStringLiteral("given.json"), 12);
    AppOptions o = options(QStringLiteral("command_line.ini"));
    o.config_file = given;
    o.config = livedrp::load_engine_config_file(given.toStdString());
    MainWindow window(o);
    QCOMPARE(window.recentConfigurations()->paths(), QStringList{given});
    // A relative path is remembered as the file it named.
    AppOptions relative = options(QStringLiteral("command_line.ini"));
    const QString previous = QDir::currentPath();
    QVERIFY(QDir::setCurrent(dir_.path()));
    relative.config_file = QStringLiteral("given.json");
    relative.config = livedrp::load_engine_config_file("given.json");
    MainWindow again(relative);
    QVERIFY(QDir::setCurrent(previous));
    QCOMPARE(again.recentConfigurations()->paths(), QStringList{given});
  }

  void aFileGoneIsRefusedAndDroppedAndClearMenuEmptiesTheList() {
    const QString kept = configurationFile(QStringLiteral("kept.json"), 5);
    const QString gone = configurationFile(QStringLiteral("gone.json"), 6);
    MainWindow window(options(QStringLiteral("gone.ini")));
    QVERIFY(window.openConfiguration(kept));
    QVERIFY(window.openConfiguration(gone));
    QVERIFY(QFile::remove(gone));
    QAction* entry = recentEntry(window, QStringLiteral("&1 gone.json"));
    QVERIFY(entry);
    entry->trigger();
    QCOMPARE(window.engineConfig().rate_hz, 6.0);  // unchanged: nothing was opened
    QVERIFY(window.logText().contains(QLatin1String("no longer exists")));
    QCOMPARE(window.recentConfigurations()->paths(), QStringList{kept});

    QAction* clear = recentEntry(window, QStringLiteral("&Clear Menu"));
    QVERIFY(clear);
    clear->trigger();
    QVERIFY(window.recentConfigurations()->paths().isEmpty());
    QVERIFY(!window.recentConfigurations()->menu()->menuAction()->isEnabled());
  }

  void attachedToARemoteEngineTheMenuIsDisabled() {
    const QString path = configurationFile(QStringLiteral("remote.json"), 3);
    {
      MainWindow window(options(QStringLiteral("attached.ini")));
      QVERIFY(window.openConfiguration(path));
    }
    AppOptions o = options(QStringLiteral("attached.ini"));
    o.connect = "tcp://127.0.0.1:1";  // nothing there: only the window's state is looked at
    MainWindow window(o);
    QCOMPARE(window.recentConfigurations()->paths(), QStringList{path});
    QVERIFY(!window.recentConfigurations()->menu()->menuAction()->isEnabled());
  }
};

QTEST_MAIN(RecentConfigurationsTest)
#include "test_gui_recent_configurations.moc"
