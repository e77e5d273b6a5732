#pragma once
// File > Open Recent: the pipeline configuration files last opened or saved (File > Open/Save
// Configuration, a dropped .json, `livedrp --config`), newest first, kept in the application's
// QSettings (key "configurations/recent") so the list is there at the next start.
#include <QObject>
#include <QString>
#include <QStringList>

class QMenu;
class QSettings;
class QWidget;

namespace livedrp::app {

class RecentConfigurations : public QObject {
  Q_OBJECT

 public:
  // Enough to find last week's set-ups; more would make the menu a list to read.
  static constexpr int kCapacity = 10;
  static constexpr const char* kSettingsKey = "configurations/recent";

  // The menu is made a child of `menu_parent` (the window, for its title bar's style).
  RecentConfigurations(QSettings& settings, QWidget* menu_parent, QObject* parent = nullptr);

  // Absolute paths, newest first.
  QStringList paths() const;
  // Puts `path` (made absolute) first, once, dropping the oldest beyond kCapacity.
  void add(const QString& path);
  void remove(const QString& path);
  void clear();

  // File > Open Recent: "1 NAME.json" ... (the whole path in each entry's tool tip and status
  // tip), then Clear Menu; disabled while the list is empty or `available` is false (attached to
  // a remote engine, where configurations are not opened). Rebuilt each time it opens.
  QMenu* menu() const { return menu_; }
  void setAvailable(bool available);

 signals:
  void openRequested(const QString& path);

 private:
  void store(const QStringList& paths);
  void rebuildMenu();
  void updateEnabled();

  QSettings& settings_;
  QMenu* menu_;
  bool available_ = true;
};

}  // namespace livedrp::app
