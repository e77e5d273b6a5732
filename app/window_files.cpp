#include "app/window_files.hpp"

#include <QAction>
#include <QCoreApplication>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QSaveFile>
#include <QStringList>

namespace livedrp::app {

DroppedFile droppedFileKind(const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == QLatin1String("json")) return DroppedFile::Configuration;
  if (suffix == QLatin1String("poni")) return DroppedFile::Geometry;
  if (QStringList{"h5", "hdf5", "nxs", "cxi"}.contains(suffix)) return DroppedFile::Replay;
  return DroppedFile::Other;
}

QString droppableKindsText() {
  return QCoreApplication::translate("livedrp::app",
                                     "a pipeline configuration (.json), a PONI geometry (.poni) "
                                     "or an HDF5 file to replay (.h5, .hdf5, .nxs, .cxi)");
}

std::optional<QString> writeConfigurationFile(const EngineConfig& config, const QString& path) {
  QSaveFile file(path);
  const QByteArray text = QByteArray::fromStdString(config.to_json().dump(2) + "\n");
  if (!file.open(QIODevice::WriteOnly) || file.write(text) != text.size() || !file.commit())
    return file.errorString();
  return std::nullopt;
}

namespace {

// The shortcuts of `menu` and of its submenus (File > Export > Current Plot...), each line
// naming the path of menus that leads to it.
void appendShortcuts(const QMenu& menu, const QString& path, QStringList& lines) {
  for (const QAction* action : menu.actions()) {
    const QString text = QString(action->text()).remove(QLatin1Char('&'));
    if (const QMenu* submenu = action->menu()) {
      appendShortcuts(*submenu, path + QStringLiteral(" > ") + text, lines);
      continue;
    }
    if (action->shortcut().isEmpty()) continue;
    lines << QStringLiteral("%1\t%2 > %3")
                 .arg(action->shortcut().toString(QKeySequence::NativeText), path, text);
  }
}

}  // namespace

QString menuShortcutsText(const QMenuBar& menus) {
  QStringList lines;
  for (const QAction* menu_action : menus.actions())
    if (const QMenu* menu = menu_action->menu())
      appendShortcuts(*menu, QString(menu_action->text()).remove(QLatin1Char('&')), lines);
  return lines.join(QLatin1Char('\n'));
}

}  // namespace livedrp::app
