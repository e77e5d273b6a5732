#include "app/recent_configurations.hpp"

#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QMenu>
#include <QSettings>

namespace livedrp::app {

RecentConfigurations::RecentConfigurations(QSettings& settings, QWidget* menu_parent,
                                           QObject* parent)
    : QObject(parent), settings_(settings), menu_(new QMenu(tr("Open &Recent"), menu_parent)) {
  menu_->setObjectName(QStringLiteral("recentConfigurationsMenu"));
  menu_->setToolTipsVisible(true);  // the whole path of each entry
  // Rebuilt as it opens, never from one of its own actions (which clearing would delete).
  connect(menu_, &QMenu::aboutToShow, this, &RecentConfigurations::rebuildMenu);
  rebuildMenu();
  updateEnabled();
}

QStringList RecentConfigurations::paths() const {
  return settings_.value(QLatin1String(kSettingsKey)).toStringList();
}

void RecentConfigurations::add(const QString& path) {
  const QString absolute = QDir::cleanPath(QFileInfo(path).absoluteFilePath());
  QStringList list = paths();
  list.removeAll(absolute);
  list.prepend(absolute);
  while (list.size() > kCapacity) list.removeLast();
  store(list);
}

void RecentConfigurations::remove(const QString& path) {
  QStringList list = paths();
  list.removeAll(path);
  store(list);
}

void RecentConfigurations::clear() {
  store({});
}

void RecentConfigurations::setAvailable(bool available) {
  available_ = available;
  updateEnabled();
}

void RecentConfigurations::store(const QStringList& list) {
  settings_.setValue(QLatin1String(kSettingsKey), list);
  settings_.sync();  // another window, or a crash, still finds it
  updateEnabled();
}

void RecentConfigurations::updateEnabled() {
  menu_->menuAction()->setEnabled(available_ && !paths().isEmpty());
}

void RecentConfigurations::rebuildMenu() {
  menu_->clear();
  const QStringList list = paths();
  for (int i = 0; i < list.size(); ++i) {
    const QString& path = list[i];
    // "&1 name.json": the digit is the entry's key while the menu is open.
    QAction* entry =
        menu_->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(path).fileName()), this,
                         [this, path] { emit openRequested(path); });
    entry->setToolTip(path);
    entry->setStatusTip(path);
  }
  menu_->addSeparator();
  QAction* clear_menu = menu_->addAction(tr("&Clear Menu"), this, &RecentConfigurations::clear);
  clear_menu->setEnabled(!list.isEmpty());
}

}  // namespace livedrp::app
