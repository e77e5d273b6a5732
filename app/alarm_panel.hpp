#pragma once
// The Alarms dock and its status-bar indicator (docs/gui.md, "Alarms"): the operator sets the
// thresholds here, the panel feeds the engine's `stats`, `status`, `log` and decoded `image`
// messages to an
// AlarmMonitor and paints the indicator green, amber or red with the reasons. `log` entries also
// come out formatted for the Log dock.
#include <QElapsedTimer>
#include <QString>
#include <QWidget>

#include "app/alarm_monitor.hpp"
#include "widgets/protocol_metatypes.hpp"

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSettings;
class QTimer;

namespace livedrp::app {

class AlarmPanel : public QWidget {
  Q_OBJECT

 public:
  explicit AlarmPanel(QWidget* parent = nullptr);
  // Loads the thresholds kept there and keeps every change there from now on.
  void useSettings(QSettings* settings);

  // The status bar's indicator; the panel owns and paints it.
  QLabel* indicator() const { return indicator_; }
  // Reads `stats`, `status` and `log` messages; other topics are ignored.
  void apply(const widgets::MessageBatch& batch);
  // A decoded `image` (the window's peak-finding model decodes them): its gain occupancy.
  void applyImage(const protocol::ImageFrame& image);
  // Applies settings to the fields and the monitor; throws InputError for invalid ones.
  void setAlarmSettings(const AlarmSettings& settings);
  AlarmSettings alarmSettings() const { return monitor_.settings(); }
  AlarmState state() const { return monitor_.state(seconds()); }
  // A line such as "engine error: ..." (tests read the problem shown for invalid fields).
  QString fieldProblem() const;

 public slots:
  void acknowledge();

 signals:
  // A `log` entry as a Log dock line, e.g. "engine warning: ... (3 more held back)".
  void engineLog(const QString& line);

 private:
  void onFieldsChanged();
  void refresh();
  double seconds() const { return double(clock_.nsecsElapsed()) * 1e-9; }

  QSettings* settings_ = nullptr;
  AlarmMonitor monitor_;
  QElapsedTimer clock_;
  QTimer* tick_;
  QCheckBox *rate_on_, *drops_on_, *hits_on_, *gain_on_, *errors_on_;
  QDoubleSpinBox *rate_floor_, *drop_ceiling_, *hit_min_, *hit_max_, *gain_ceiling_, *red_after_;
  QLineEdit* gain_mode_;
  QPushButton* acknowledge_;
  QLabel *problem_, *summary_, *indicator_;
  bool loading_ = false;
};

}  // namespace livedrp::app
