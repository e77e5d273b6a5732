#pragma once
// The "Peak finder tuning" dock: a form with every peakfinder8 parameter (the names of
// PARAMS.json and engine/peaks/peak_params.hpp), Apply (sends the fields that differ from the
// parameters in force), "Re-run on recent frames", and Save/Load of PARAMS.json files. It knows
// no engine: it emits the requests to send (applyRequested, rerunRequested, paramsRequested) and
// takes the replies in slots (showParams, showRefusal, showRerun). The main window wires these
// to the embedded engine (EngineHost) or to a remote one's control socket (RemoteControl).
//
// Values are checked here with peaks::validate before anything is sent; the engine checks again
// and its refusal (e.g. peak finding off) shows in the same red line.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <QString>
#include <QWidget>

#include <nlohmann/json.hpp>

#include "peaks/peak_params.hpp"

class QAbstractSpinBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QPushButton;
class QSpinBox;

namespace livedrp::app {

class PeakTuningPanel : public QWidget {
  Q_OBJECT

 public:
  // Frames a re-run asks for by default: the engine keeps peak_finding.recent_frames (16).
  static constexpr int kDefaultRerunFrames = 16;
  static constexpr int kMaxRerunFrames = 256;

  explicit PeakTuningPanel(QWidget* parent = nullptr);

  // The parameters as the form shows them (not validated).
  peaks::PeakFinderParams formParams() const;
  void setFormParams(const peaks::PeakFinderParams& params);
  // The parameters in force on the engine as last reported (defaults before any reply).
  const peaks::PeakFinderParams& inForce() const { return in_force_; }
  std::optional<std::uint64_t> paramsVersion() const { return version_; }
  std::optional<bool> engineEnabled() const { return enabled_; }
  // The fields whose form value differs from the one in force: {"name": value, ...}.
  nlohmann::json changedParams() const;

  // Apply: validates the form; refused locally (red line) or emits applyRequested with
  // {"params": changedParams()}. Returns whether a request was emitted.
  bool apply();
  // Emits rerunRequested with {"frames": N} from the frames box.
  void rerun();
  // PARAMS.json of the form's values / into the form (not applied). False and the reason in the
  // red line when the file cannot be written, read or parsed.
  bool saveToFile(const QString& path);
  bool loadFromFile(const QString& path);
  // No engine to talk to (e.g. attached without a control endpoint): every control that sends is
  // disabled, with `why` as its tooltip. Save/Load stay.
  void setSendAvailable(bool available, const QString& why = QString());

  QString refusalText() const;  // the red line; empty when nothing is refused
  QString statusText() const;   // what is in force, what is pending, the last re-run
  QAbstractSpinBox* field(const std::string& name) const;
  QSpinBox* rerunFramesBox() const { return rerun_frames_; }
  QPushButton* applyButton() const { return apply_button_; }
  QPushButton* rerunButton() const { return rerun_button_; }

 public slots:
  // A reply of get_peak_params / set_peak_params: {"params": {...}, "params_version": N,
  // "enabled": b}. The form takes the values in force.
  void showParams(const nlohmann::json& reply);
  // The engine refused (or no answer came): `reason` in red.
  void showRefusal(const QString& reason);
  // A rerun_peaks reply: {"frames", "hits", "peaks_per_frame", "sequences", "params_version"}.
  void showRerun(const nlohmann::json& result);

 signals:
  void applyRequested(const nlohmann::json& request);
  void rerunRequested(const nlohmann::json& request);
  void paramsRequested();

 private:
  void addIntField(const std::string& name, int minimum, int maximum, const QString& tip);
  void addFloatField(const std::string& name, double minimum, double maximum, int decimals,
                     const QString& tip);
  void updatePending();
  void updateSendControls();
  void setRefusal(const QString& text);

  std::map<std::string, QAbstractSpinBox*> fields_;
  peaks::PeakFinderParams in_force_;
  std::optional<std::uint64_t> version_;
  std::optional<bool> enabled_;
  bool send_available_ = true;
  QString send_unavailable_why_;
  QString rerun_text_;
  QLabel* refusal_ = nullptr;
  QLabel* status_ = nullptr;
  QSpinBox* rerun_frames_ = nullptr;
  QPushButton* apply_button_ = nullptr;
  QPushButton* revert_button_ = nullptr;
  QPushButton* rerun_button_ = nullptr;
  QPushButton* refresh_button_ = nullptr;
  QPushButton* save_button_ = nullptr;
  QPushButton* load_button_ = nullptr;
  QFormLayout* form_ = nullptr;
};

}  // namespace livedrp::app
