#pragma once
// The stream-configuration panel: backend, the runtime (streams, slots per stream, launch mode,
// batch K, segments per launch, host thread model, source placement), calibration common mode and
// live compression (codec, and the error bound of the lossy one).
// Apply asks for the configuration to be applied to the running engine (MainWindow routes it to the
// embedded EngineHost, or to a remote engine's control socket); errors come back to the panel.
// Named configurations are saved as JSON files (SavedConfigurations) and listed here; loading one
// shows it, validated first, so a bad file is refused with its error and changes nothing.
#include <QString>
#include <QWidget>

#include <nlohmann/json.hpp>

#include "app/saved_configurations.hpp"
#include "exec/engine.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSpinBox;

namespace livedrp::app {

class StreamConfigPanel : public QWidget {
  Q_OBJECT

 public:
  explicit StreamConfigPanel(QWidget* parent = nullptr);

  // Where the named configurations live; the list is re-read.
  void setDirectory(const QString& directory);
  const SavedConfigurations& saved() const { return saved_; }

  // Shows `config`; fields the panel does not edit (source, rate, ring, ...) are kept as they are
  // and come back in config().
  void setConfig(const EngineConfig& config);
  // The shown configuration as JSON (EngineConfig JSON, the panel's fields merged in).
  nlohmann::json configJson() const;
  // Validated (EngineConfig::from_json); throws InputError naming the field.
  EngineConfig config() const;
  // Only what the panel edits, as a merge patch for a remote engine's "apply" request.
  nlohmann::json partialJson() const;

  // Named configurations: false, with the error shown in the panel, when it fails.
  bool saveAs(const QString& name);
  bool loadSaved(const QString& name);
  bool loadFile(const QString& path);
  void refreshSavedList();

  // Apply: enabled (embedded, or a remote engine with a control socket), or disabled with why.
  void setApplyAvailable(bool available, const QString& why = QString());
  void showApplying(const QString& text);
  void showApplied(const QString& text);
  void showError(const QString& text);
  QString statusText() const;
  QString errorText() const;

  QComboBox* backendCombo() const { return backend_; }
  QSpinBox* streamsSpin() const { return streams_; }
  QSpinBox* slotsSpin() const { return slots_; }
  QComboBox* launchCombo() const { return launch_; }
  QSpinBox* batchSpin() const { return batch_; }
  QComboBox* segmentsCombo() const { return segments_; }
  QComboBox* hostThreadsCombo() const { return host_threads_; }
  QComboBox* sourceCombo() const { return source_; }
  QCheckBox* commonModeCheck() const { return common_mode_; }
  QComboBox* codecCombo() const { return codec_; }
  QDoubleSpinBox* errorBoundSpin() const { return error_bound_; }
  QPushButton* applyButton() const { return apply_; }
  QListWidget* savedList() const { return saved_list_; }
  QLineEdit* nameEdit() const { return name_; }

 signals:
  // The user pressed Apply and the configuration is valid.
  void applyRequested(livedrp::EngineConfig config);
  // One line for the log (saved, loaded, refused ...).
  void logMessage(QString line);

 private:
  void requestApply();
  void updateErrorBoundEnabled();
  void saveClicked();
  void loadClicked();
  void deleteClicked();

  SavedConfigurations saved_;
  nlohmann::json base_;  // the configuration shown, fields included as last set
  QComboBox* backend_;
  QSpinBox* streams_;
  QSpinBox* slots_;
  QComboBox* launch_;
  QSpinBox* batch_;
  QComboBox* segments_;
  QComboBox* host_threads_;
  QComboBox* source_;
  QCheckBox* common_mode_;
  QComboBox* codec_;
  QDoubleSpinBox* error_bound_;
  QPushButton* apply_;
  QLabel* status_;
  QLabel* error_;
  QListWidget* saved_list_;
  QLineEdit* name_;
  QPushButton* save_;
  QPushButton* load_;
  QPushButton* delete_;
  bool apply_available_ = true;
};

}  // namespace livedrp::app
