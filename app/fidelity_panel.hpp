#pragma once
// The "Compression fidelity" dock: the FidelityView (what the newest sampled event lost to the
// codec) and, beneath it, what a scientist changes while watching it: sampling on or off, the
// samples a second and the lossy codec's error bound. Apply merges them into the configuration
// in force as {"compression": {"codec": "lossy", "error_bound": B}, "fidelity": {"enabled": ON,
// "samples_hz": HZ}}, reads the result with the engine's own reader (withAnalysisSections), shows
// a refusal in red naming the field and sends nothing; otherwise applyRequested carries the
// sections and the main window applies them as the Analysis dock's Apply (a running run restarts
// with them, the next run number; attached, an "apply" request). The fields follow the
// configuration shown by setConfig and the newest report's bound and rate, until edited.
#include <functional>

#include <QString>
#include <QWidget>

#include <nlohmann/json.hpp>

#include "exec/engine.hpp"
#include "widgets/fidelity_view.hpp"

class QCheckBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace livedrp::app {

class FidelityPanel : public QWidget {
  Q_OBJECT

 public:
  explicit FidelityPanel(QWidget* parent = nullptr);

  widgets::FidelityView* view() const { return view_; }
  // The configuration the sections are merged into when validated (the other docks' as they
  // stand); unset: the defaults.
  void setBaseConfig(std::function<EngineConfig()> base) { base_ = std::move(base); }
  // Shows the configuration in force: sampling, its rate and the bound (edits are replaced).
  void setConfig(const EngineConfig& config);
  // The sections the fields give, not validated.
  nlohmann::json sectionsJson() const;
  // Validates and emits applyRequested; false (and the reason in red) when refused.
  bool apply();
  void setApplyAvailable(bool available, const QString& why = QString());
  // The outcome of the last Apply, from the engine: refused (in red) or applied.
  bool isApplying() const { return applying_; }
  void showRefusal(const QString& text);
  void showApplied();

  QCheckBox* samplingBox() const { return sampling_; }
  QLineEdit* samplesHzField() const { return samples_hz_; }
  QLineEdit* boundField() const { return bound_; }
  QPushButton* applyButton() const { return apply_; }
  QString errorText() const;  // empty when nothing is refused

 signals:
  void applyRequested(const nlohmann::json& sections);

 private:
  void followReport();

  widgets::FidelityView* view_ = nullptr;
  QCheckBox* sampling_ = nullptr;
  QLineEdit* samples_hz_ = nullptr;
  QLineEdit* bound_ = nullptr;
  QPushButton* apply_ = nullptr;
  QLabel* error_ = nullptr;
  std::function<EngineConfig()> base_;
  bool edited_ = false;
  bool applying_ = false;  // Apply sent, the engine's answer not shown yet  // a field changed by
                           // hand since the configuration was shown
};

}  // namespace livedrp::app
