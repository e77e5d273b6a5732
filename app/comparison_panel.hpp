#pragma once
// The comparison dock: pick two or more saved configurations, the detector, the event count and
// the rate; Run runs them one after another over the same events (ComparisonRunner) without
// holding up the GUI; the ComparisonView overlays their curves and tables their figures; the table
// exports as CSV or JSON.
#include <QString>
#include <QStringList>
#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QListWidget;
class QPushButton;
class QSpinBox;

namespace livedrp::widgets {
class ComparisonModel;
class ComparisonView;
}  // namespace livedrp::widgets

namespace livedrp::app {

class ComparisonRunner;

class ComparisonPanel : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kDefaultEvents = 200;

  explicit ComparisonPanel(QWidget* parent = nullptr);

  void setDirectory(const QString& directory);  // where the saved configurations are
  void refreshList();
  // Ticks exactly these saved configurations (in list order they run).
  void setChecked(const QStringList& names);
  QStringList checkedNames() const;

  // Starts the comparison of the ticked configurations; false (and why, in the progress line) when
  // fewer than two are ticked or one is going.
  bool run();
  void cancel();
  bool isRunning() const;

  bool exportCsv(const QString& path);
  bool exportJson(const QString& path);

  QListWidget* configurationList() const { return list_; }
  QComboBox* detectorCombo() const { return detector_; }
  QSpinBox* eventsSpin() const { return events_; }
  QDoubleSpinBox* rateSpin() const { return rate_; }
  QLabel* progressLabel() const { return progress_; }
  widgets::ComparisonModel* model() const { return model_; }
  widgets::ComparisonView* view() const { return view_; }
  ComparisonRunner* runner() const { return runner_; }

 signals:
  // Before the first run starts: the window stops its live run so the comparison has the machine.
  void aboutToRun();
  void finished();
  void logMessage(QString line);

 private:
  void exportDialog(bool csv);
  void updateButtons();

  QString directory_;
  widgets::ComparisonModel* model_;
  ComparisonRunner* runner_;
  QListWidget* list_;
  QComboBox* detector_;
  QSpinBox* events_;
  QDoubleSpinBox* rate_;
  QPushButton* run_;
  QPushButton* cancel_;
  QPushButton* export_csv_;
  QPushButton* export_json_;
  QLabel* progress_;
  widgets::ComparisonView* view_;
};

}  // namespace livedrp::app
