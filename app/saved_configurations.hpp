#pragma once
// Named engine configurations saved as files: DIRECTORY/NAME.json holds the EngineConfig JSON
// (EngineConfig::to_json), the same JSON the CLI and the benchmarks read. The stream-configuration
// panel saves and loads them; the comparison runs them.
#include <QString>
#include <QStringList>

#include "exec/engine.hpp"

namespace livedrp::app {

class SavedConfigurations {
 public:
  // The default directory: <application data>/configurations.
  static QString defaultDirectory();
  // Names: letters, digits, space, '_', '-', '.', 1..64 characters, not starting with '.'.
  static bool isValidName(const QString& name);

  explicit SavedConfigurations(QString directory = defaultDirectory());

  const QString& directory() const { return directory_; }
  QString path(const QString& name) const;  // DIRECTORY/NAME.json
  QStringList names() const;                // sorted, case-insensitively

  // Writes `config` (creating the directory); throws InputError naming the file on failure.
  void save(const QString& name, const EngineConfig& config) const;
  // Reads and validates; throws InputError naming the file and the field.
  EngineConfig load(const QString& name) const;
  static EngineConfig loadFile(const QString& path);
  bool remove(const QString& name) const;

 private:
  QString directory_;
};

}  // namespace livedrp::app
