#pragma once
// The "Analysis" dock: what the engine does with each event, set up in the window. Each stage is
// turned on or off (compression, integration, peak finding) and given its inputs: integration's
// PONI file, bins, unit, radial range, mask and polarisation factor; peak finding's mask, beam
// centre or radius map and the ePix10ka gain configurations it searches; the codec and its error
// bound. These are the "compression", "integration" and "peak_finding" sections of the pipeline
// JSON (the README's "Command line" section); the dock edits no other key of them.
//
// The dock has no rules of its own: Apply puts its sections into the configuration shown and
// reads the result with the engine's own reader (EngineConfig::from_json), and, where the files
// are on this machine, opens the files it names with the engine's own loaders. Whatever they
// refuse is shown in red beside Apply, naming the field, and nothing is sent. A text field that
// is not a number goes to the reader as text, so that the reader names it too.
// Otherwise applyRequested carries the sections, and the main window has the whole configuration
// checked against the detector (check_engine_config embedded, a "check" request remote) and then
// sends them to the embedded engine or, as an "apply" request, to a remote one; a refusal comes
// back to the same line.
#include <map>
#include <string>

#include <QString>
#include <QWidget>

#include <nlohmann/json.hpp>

#include "exec/engine.hpp"

class QCheckBox;
class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace livedrp::app {

// `config` with `sections` merged in as the engine's "apply" request merges a change (each
// section key by key), read by EngineConfig::from_json: throws InputError naming the field.
EngineConfig withAnalysisSections(const EngineConfig& config, const nlohmann::json& sections);

class AnalysisPanel : public QWidget {
  Q_OBJECT

 public:
  explicit AnalysisPanel(QWidget* parent = nullptr);

  // Shows `config`, the configuration in force (or the next run's); edits not applied are
  // replaced, except those made while an Apply is answered (the fields then differ from what
  // they were at showApplying): those stay, and showApplied says they are not applied. Keys the
  // dock does not edit are kept and validated with the dock's.
  void setConfig(const EngineConfig& config);
  // The dock's three sections as its fields give them, not validated: what Apply sends.
  nlohmann::json sectionsJson() const;
  // The configuration shown with the dock's sections in, validated as the engine validates it
  // (withAnalysisSections, then the files when setChecksFiles): throws InputError.
  EngineConfig config() const;

  // On: the PONI file, masks and radius map of the stages turned on are opened here before
  // anything is sent (the embedded engine reads this machine's files). Off for a remote engine,
  // which reads its own machine's files and refuses what it cannot open.
  void setChecksFiles(bool on) { checks_files_ = on; }
  bool checksFiles() const { return checks_files_; }

  // Validates; a refusal goes in red beside Apply (and the log) and nothing is emitted; else
  // emits applyRequested. Returns whether it did; false, doing nothing, while an Apply is
  // answered (isApplying).
  bool apply();
  // Apply: enabled, or disabled with `why` as its tooltip (attached without a control socket).
  void setApplyAvailable(bool available, const QString& why = QString());
  void showApplying(const QString& text);
  void showApplied(const QString& text);
  void showError(const QString& text);
  // Between showApplying and the answer (showApplied or showError): the whole configuration's
  // check against the detector (on a worker thread, or the remote engine's) and then its
  // application. Apply is disabled meanwhile.
  bool isApplying() const { return applying_; }
  QString statusText() const;
  QString errorText() const;  // the red line; empty when nothing is refused

  QGroupBox* compressionBox() const { return compression_; }
  QComboBox* codecCombo() const { return codec_; }
  QLineEdit* errorBoundEdit() const { return error_bound_; }
  QGroupBox* integrationBox() const { return integration_; }
  QLineEdit* poniEdit() const { return poni_; }
  QSpinBox* binsSpin() const { return bins_; }
  QComboBox* unitCombo() const { return unit_; }
  QLineEdit* radialMinEdit() const { return radial_min_; }
  QLineEdit* radialMaxEdit() const { return radial_max_; }
  QLineEdit* integrationMaskEdit() const { return integration_mask_; }
  QLineEdit* polarizationEdit() const { return polarization_; }
  QGroupBox* peakFindingBox() const { return peak_finding_; }
  QLineEdit* peakMaskEdit() const { return peak_mask_; }
  QLineEdit* beamXEdit() const { return beam_x_; }
  QLineEdit* beamYEdit() const { return beam_y_; }
  QLineEdit* radiusMapEdit() const { return radius_map_; }
  // One check box per ePix10ka gain configuration (epix10ka_config_names), by name.
  QCheckBox* gainConfigCheck(const std::string& name) const;
  QPushButton* applyButton() const { return apply_; }
  QPushButton* revertButton() const { return revert_; }

 signals:
  // {"compression": {...}, "integration": {...}, "peak_finding": {...}}, validated.
  void applyRequested(const nlohmann::json& sections);
  // One line for the log (a refusal).
  void logMessage(QString line);
  // setConfig showed `config` (the configuration in force): docks that show other sections of it
  // (the fidelity dock) follow.
  void configShown(const livedrp::EngineConfig& config);

 private:
  QWidget* buildCompression();
  QWidget* buildIntegration();
  QWidget* buildPeakFinding();
  void showFields(const EngineConfig& config);  // setConfig without keeping edits (Revert)
  // A path field with a "..." button that picks a file (filter: `filter`).
  QWidget* fileRow(QLineEdit* edit, const QString& caption, const QString& filter);

  EngineConfig shown_;              // the configuration last shown (setConfig)
  nlohmann::json fields_at_apply_;  // sectionsJson() when the Apply answered now began
  bool checks_files_ = false;
  bool applying_ = false;
  bool apply_available_ = true;

  QGroupBox* compression_ = nullptr;
  QComboBox* codec_ = nullptr;
  QLineEdit* error_bound_ = nullptr;
  QGroupBox* integration_ = nullptr;
  QLineEdit* poni_ = nullptr;
  QSpinBox* bins_ = nullptr;
  QComboBox* unit_ = nullptr;
  QLineEdit* radial_min_ = nullptr;
  QLineEdit* radial_max_ = nullptr;
  QLineEdit* integration_mask_ = nullptr;
  QLineEdit* polarization_ = nullptr;
  QGroupBox* peak_finding_ = nullptr;
  QLineEdit* peak_mask_ = nullptr;
  QLineEdit* beam_x_ = nullptr;
  QLineEdit* beam_y_ = nullptr;
  QLineEdit* radius_map_ = nullptr;
  std::map<std::string, QCheckBox*> gain_configs_;
  QPushButton* apply_ = nullptr;
  QPushButton* revert_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* error_ = nullptr;
};

}  // namespace livedrp::app
