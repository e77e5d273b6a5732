// The main window's dock layouts (View > Layouts): on a 1920x1080 screen the default dashboard
// shows rates, compression, radial profile and the detector image side by side (none tabbed
// behind another, none overlapping, each large enough to read); each built-in layout shows the
// docks its user needs the same way and still places every dock; a user layout saved by name
// brings back the docks' geometry and visibility, in this window and in a new one (QSettings).
#include <map>
#include <vector>

#include <QAction>
#include <QCoreApplication>
#include <QDockWidget>
#include <QLayout>
#include <QMenu>
#include <QMenuBar>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>

#include "app/app_options.hpp"
#include "app/dock_layouts.hpp"
#include "app/main_window.hpp"
#include "gui_window_options.hpp"

using livedrp::app::AppOptions;
using livedrp::app::BuiltInLayout;
using livedrp::app::DockLayouts;
using livedrp::app::MainWindow;

namespace {
// The screen the layouts are made for.
const QSize kScreen(1920, 1080);
// Smallest dock a layout may show as one of its user's: a plot with readable axes.
const QSize kMinimumShown(300, 200);

// What the user sees of a dock: shown or closed, in front (on the window) or a tab behind
// another, with which other docks it is tabbed, and where it is when in front.
struct DockState {
  bool visible = false;
  bool in_front = false;
  QRect geometry;
  QStringList tabbed_with;
  bool operator==(const DockState& other) const {
    return visible == other.visible && in_front == other.in_front &&
           tabbed_with == other.tabbed_with && (!in_front || geometry == other.geometry);
  }
};
using WindowSnapshot = std::map<QString, DockState>;

WindowSnapshot snapshot(const MainWindow& window) {
  WindowSnapshot docks;
  for (QDockWidget* dock : window.findChildren<QDockWidget*>()) {
    DockState& state = docks[dock->objectName()];
    state.visible = dock->isVisible();
    // A tab behind another keeps its place in the layout, moved off the window.
    state.in_front = state.visible && window.rect().contains(dock->geometry());
    state.geometry = dock->geometry();
    for (const QDockWidget* other : window.tabifiedDockWidgets(dock))
      state.tabbed_with << other->objectName();
    state.tabbed_with.sort();
  }
  return docks;
}

QString describe(const QString& name, const DockState& state) {
  const QRect& g = state.geometry;
  return QStringLiteral("%1 %2 %3x%4+%5+%6 tabbed with [%7]")
      .arg(name, !state.visible   ? QStringLiteral("closed")
                 : state.in_front ? QStringLiteral("in front")
                                  : QStringLiteral("behind"))
      .arg(g.width())
      .arg(g.height())
      .arg(g.x())
      .arg(g.y())
      .arg(state.tabbed_with.join(QLatin1Char(' ')));
}

QString describe(const WindowSnapshot& docks) {
  QStringList lines;
  for (const auto& [name, state] : docks) lines << describe(name, state);
  return lines.join(QLatin1Char('\n'));
}

// The docks that differ, as "expected / actual" lines.
QString difference(const WindowSnapshot& expected, const WindowSnapshot& actual) {
  QStringList lines;
  for (const auto& [name, state] : expected) {
    const auto found = actual.find(name);
    if (found == actual.end())
      lines << name + QStringLiteral(" missing");
    else if (!(found->second == state))
      lines << QStringLiteral("expected ") + describe(name, state) + QStringLiteral("\n  actual ") +
                   describe(name, found->second);
  }
  return lines.join(QLatin1Char('\n'));
}

QDockWidget* dock(const MainWindow& window, const char* name) {
  return window.findChild<QDockWidget*>(QString::fromLatin1(name));
}

// Why `names` are not all shown side by side in `window`: each visible, at least kMinimumShown,
// inside the window, none tabbed with another of them, no two overlapping. Empty when they are.
QString sideBySideProblem(const MainWindow& window, const std::vector<const char*>& names) {
  std::vector<QDockWidget*> docks;
  for (const char* name : names) {
    QDockWidget* found = dock(window, name);
    if (found == nullptr) return QStringLiteral("no dock %1").arg(QLatin1String(name));
    docks.push_back(found);
  }
  for (QDockWidget* shown : docks) {
    const QString name = shown->objectName();
    if (!shown->isVisible() || shown->isFloating()) return name + QStringLiteral(" not shown");
    if (shown->width() < kMinimumShown.width() || shown->height() < kMinimumShown.height())
      return name + QStringLiteral(" smaller than 300x200");
    if (!window.rect().contains(shown->geometry())) return name + QStringLiteral(" off window");
    for (QDockWidget* other : docks) {
      if (other == shown) continue;
      if (window.tabifiedDockWidgets(shown).contains(other))
        return name + QStringLiteral(" tabbed with ") + other->objectName();
      if (shown->geometry().intersects(other->geometry()))
        return name + QStringLiteral(" overlaps ") + other->objectName();
    }
  }
  return {};
}

QMenu* layoutsMenu(const MainWindow& window) {
  return window.findChild<QMenu*>(QStringLiteral("layoutsMenu"));
}
}  // namespace

class LayoutsTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  AppOptions options(const QString& settings_name) {
    return idle_window_options(dir_, settings_name);
  }

  static void showOnTheScreen(MainWindow& window) {
    window.resize(kScreen);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCOMPARE(window.size(), kScreen);
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }
  void theDefaultLayoutShowsRateCompressionProfileAndImageTogether() {
    MainWindow window(options(QStringLiteral("default.ini")));  // nothing saved: first start
    showOnTheScreen(window);
    const std::vector<const char*> four{"ratesDock", "compressionDock", "radialProfileDock",
                                        "detectorImageDock"};
    QTRY_VERIFY2(sideBySideProblem(window, four).isEmpty(),
                 qPrintable(sideBySideProblem(window, four) + QLatin1Char('\n') +
                            describe(snapshot(window))));
    // The image, 2 Mpixel, gets the most room of the four.
    const QSize image = dock(window, "detectorImageDock")->size();
    for (const char* plot : {"ratesDock", "compressionDock", "radialProfileDock"}) {
      const QSize other = dock(window, plot)->size();
      QVERIFY2(image.width() * image.height() > other.width() * other.height(), plot);
    }
    // The rest are tabbed out of the way, not hidden: each one's tab is one click away.
    for (const QDockWidget* any : window.findChildren<QDockWidget*>()) {
      QVERIFY2(!any->isFloating(), qPrintable(any->objectName()));
      QVERIFY2(window.dockWidgetArea(const_cast<QDockWidget*>(any)) != Qt::NoDockWidgetArea,
               qPrintable(any->objectName()));
      QVERIFY2(any->toggleViewAction()->isChecked(), qPrintable(any->objectName()));
    }
  }

  void eachBuiltInLayoutShowsTheDocksItsUserNeeds() {
    const std::vector<std::pair<BuiltInLayout, std::vector<const char*>>> needs{
        {BuiltInLayout::Operator,
         {"ratesDock", "countersDock", "radialProfileDock", "detectorImageDock", "hitRateDock"}},
        {BuiltInLayout::PeakTuning,
         {"peakTuningDock", "detectorImageDock", "peakTableDock", "hitRateDock"}},
        {BuiltInLayout::StreamComparison,
         {"streamConfigDock", "comparisonDock", "engineDock", "ratesDock"}},
        {BuiltInLayout::Dashboard,
         {"ratesDock", "compressionDock", "radialProfileDock", "detectorImageDock"}}};
    MainWindow window(options(QStringLiteral("builtins.ini")));
    showOnTheScreen(window);
    const int dock_count = static_cast<int>(window.findChildren<QDockWidget*>().size());
    for (const auto& [layout, shown] : needs) {
      const QString title = DockLayouts::title(layout);
      // Half the docks hidden or floating first: a layout brings every one back in place.
      dock(window, "logDock")->close();
      dock(window, "countersDock")->setFloating(true);
      window.layouts()->arrange(layout);
      QTRY_VERIFY2(sideBySideProblem(window, shown).isEmpty(),
                   qPrintable(title + QStringLiteral(": ") + sideBySideProblem(window, shown) +
                              QLatin1Char('\n') + describe(snapshot(window))));
      int placed = 0;
      for (const auto& column : window.layouts()->arrangement(layout))
        for (const auto& cell : column.cells) placed += static_cast<int>(cell.tabs.size());
      QCOMPARE(placed, dock_count);  // each dock once
      for (QDockWidget* any : window.findChildren<QDockWidget*>()) {
        QVERIFY2(!any->isFloating() && window.dockWidgetArea(any) != Qt::NoDockWidgetArea &&
                     any->toggleViewAction()->isChecked(),
                 qPrintable(title + QStringLiteral(": ") + any->objectName()));
      }
    }
  }

  void aUserLayoutGivesBackTheDocksAsSaved() {
    MainWindow window(options(QStringLiteral("user.ini")));
    showOnTheScreen(window);
    // Something no built-in makes: the tuning layout, the log closed, the tuning panel wider.
    window.layouts()->arrange(BuiltInLayout::PeakTuning);
    dock(window, "logDock")->close();
    QDockWidget* tuning = dock(window, "peakTuningDock");
    QTRY_VERIFY(window.rect().contains(tuning->geometry()));
    const int built_in_width = tuning->width();
    window.resizeDocks({tuning}, {built_in_width + 100}, Qt::Horizontal);
    QTRY_VERIFY2(tuning->width() > built_in_width + 50, qPrintable(describe(snapshot(window))));
    const WindowSnapshot saved = snapshot(window);
    QVERIFY(!saved.at(QStringLiteral("logDock")).visible);

    QCOMPARE(window.layouts()->saveUserLayout(QStringLiteral("night shift")), std::nullopt);
    QCOMPARE(window.layouts()->userLayoutNames(), QStringList{QStringLiteral("night shift")});
    window.layouts()->arrange(BuiltInLayout::StreamComparison);
    QTRY_VERIFY(snapshot(window) != saved);

    QVERIFY(window.layouts()->restoreUserLayout(QStringLiteral("night shift")));
    QTRY_VERIFY2(snapshot(window) == saved, qPrintable(difference(saved, snapshot(window))));
  }

  void userLayoutsSurviveANewWindow() {
    const QString settings = QStringLiteral("survive.ini");
    WindowSnapshot saved;
    {
      MainWindow window(options(settings));
      showOnTheScreen(window);
      window.layouts()->arrange(BuiltInLayout::Operator);
      dock(window, "gainOccupancyDock")->close();
      QTRY_VERIFY(!dock(window, "gainOccupancyDock")->isVisible());
      window.layout()->activate();  // the closed dock's tab bar goes: the relayout it asked for
      saved = snapshot(window);
      QCOMPARE(window.layouts()->saveUserLayout(QStringLiteral("beamtime-2")), std::nullopt);
      QCOMPARE(window.layouts()->saveUserLayout(QStringLiteral("Another")), std::nullopt);
      QVERIFY(window.layouts()->deleteUserLayout(QStringLiteral("Another")));
    }
    MainWindow window(options(settings));
    QCOMPARE(window.layouts()->userLayoutNames(), QStringList{QStringLiteral("beamtime-2")});
    showOnTheScreen(window);
    QVERIFY(window.layouts()->restoreUserLayout(QStringLiteral("beamtime-2")));
    QTRY_VERIFY2(snapshot(window) == saved, qPrintable(difference(saved, snapshot(window))));
    // The dashboard's sizes, waiting for the first show, do not undo the restored layout.
    QCoreApplication::processEvents();
    QVERIFY(snapshot(window) == saved);
  }

  void layoutNamesAreCheckedAndUnknownLayoutsRefused() {
    MainWindow window(options(QStringLiteral("names.ini")));
    DockLayouts& layouts = *window.layouts();
    for (const QString& bad : {QString(), QStringLiteral("a/b"), QStringLiteral(".hidden"),
                               QStringLiteral("Dashboard"), QStringLiteral("operator")})
      QVERIFY2(layouts.saveUserLayout(bad).has_value(), qPrintable(bad));
    QVERIFY(layouts.userLayoutNames().isEmpty());
    QVERIFY(!layouts.restoreUserLayout(QStringLiteral("never saved")));
    QVERIFY(window.logText().contains(QLatin1String("no layout \"never saved\"")));
    QVERIFY(!layouts.deleteUserLayout(QStringLiteral("never saved")));
  }

  void theViewMenuOffersTheBuiltInsAndTheUserLayouts() {
    MainWindow window(options(QStringLiteral("menu.ini")));
    showOnTheScreen(window);
    QMenu* menu = layoutsMenu(window);
    QVERIFY(menu);
    QVERIFY(window.layouts()->saveUserLayout(QStringLiteral("mine")) == std::nullopt);
    emit menu->aboutToShow();  // as when it opens
    QStringList entries;
    for (const QAction* action : menu->actions()) entries << action->text();
    for (const QString& expected :
         {QStringLiteral("Dashboard (default)"), QStringLiteral("Operator"),
          QStringLiteral("Peak-Finder Tuning"), QStringLiteral("Stream Comparison"),
          QStringLiteral("mine"), QStringLiteral("Save Current Layout &As..."),
          QStringLiteral("&Delete Layout")})
      QVERIFY2(entries.contains(expected), qPrintable(expected + " in " + entries.join(", ")));
    for (QAction* action : menu->actions())
      if (action->text() == QLatin1String("Stream Comparison")) action->trigger();
    QTRY_VERIFY(
        sideBySideProblem(window, {"streamConfigDock", "comparisonDock", "engineDock", "ratesDock"})
            .isEmpty());
  }

  void aWindowSavedWithTheOldTabbedLayoutOpensOnTheDashboard() {
    const QString ini = dir_.filePath(QStringLiteral("old.ini"));
    {
      MainWindow old(options(QStringLiteral("old-source.ini")));
      QSettings settings(ini, QSettings::IniFormat);
      settings.setValue("window/state", old.saveState(MainWindow::kLayoutVersion - 1));
    }
    AppOptions o = options(QStringLiteral("unused.ini"));
    o.settings_file = ini;
    MainWindow window(o);
    QVERIFY(window.logText().contains(QLatin1String("from another version")));
    showOnTheScreen(window);
    QTRY_VERIFY(sideBySideProblem(window, {"ratesDock", "compressionDock", "radialProfileDock",
                                           "detectorImageDock"})
                    .isEmpty());
  }
};

QTEST_MAIN(LayoutsTest)
#include "test_gui_layouts.moc"
