#include "app/saved_configurations.hpp"

#include <algorithm>

#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QSaveFile>
#include <QStandardPaths>

#include "core/error.hpp"

namespace livedrp::app {

QString SavedConfigurations::defaultDirectory() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) +
         QStringLiteral("/configurations");
}

bool SavedConfigurations::isValidName(const QString& name) {
  static const QRegularExpression pattern(QStringLiteral("^[A-Za-z0-9_\\-][A-Za-z0-9 _.\\-]{0,63}$"));
  return pattern.match(name).hasMatch();
}

SavedConfigurations::SavedConfigurations(QString directory) : directory_(std::move(directory)) {}

QString SavedConfigurations::path(const QString& name) const {
  return QDir(directory_).filePath(name + QStringLiteral(".json"));
}

QStringList SavedConfigurations::names() const {
  QStringList names;
  const QDir dir(directory_);
  for (const QString& file : dir.entryList({QStringLiteral("*.json")}, QDir::Files)) {
    names << file.chopped(5);
  }
  std::sort(names.begin(), names.end(), [](const QString& a, const QString& b) {
    return a.compare(b, Qt::CaseInsensitive) < 0;
  });
  return names;
}

void SavedConfigurations::save(const QString& name, const EngineConfig& config) const {
  if (!isValidName(name)) {
    throw InputError("configuration name '" + name.toStdString() +
                     "' is not valid (letters, digits, space, _ - ., at most 64 characters)");
  }
  if (!QDir().mkpath(directory_)) {
    throw InputError("cannot create the directory " + directory_.toStdString());
  }
  QSaveFile file(path(name));
  const std::string text = config.to_json().dump(2) + "\n";
  if (!file.open(QIODevice::WriteOnly) || file.write(text.data(), qint64(text.size())) < 0 ||
      !file.commit()) {
    throw InputError("cannot write " + path(name).toStdString() + ": " +
                     file.errorString().toStdString());
  }
}

EngineConfig SavedConfigurations::loadFile(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    throw InputError("cannot read " + path.toStdString() + ": " + file.errorString().toStdString());
  }
  const QByteArray bytes = file.readAll();
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& error) {
    throw InputError(path.toStdString() + ": not valid JSON: " + error.what());
  }
  return EngineConfig::from_json(json, path.toStdString());
}

EngineConfig SavedConfigurations::load(const QString& name) const { return loadFile(path(name)); }

bool SavedConfigurations::remove(const QString& name) const { return QFile::remove(path(name)); }

}  // namespace livedrp::app
