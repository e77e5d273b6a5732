#pragma once
// The replay transport bar (issue 7): open an HDF5 file or a run (a directory of recorded files),
// with the recent ones kept in QSettings; play, pause, step back and forward, loop and pace/rate;
// a progress bar and a seek slider over the replay's events; and a record button that records a
// live source into a directory. Opening a file lists the datasets in it that could be the events
// (issue 33: the engine's "replay_candidates" answer, with shape, type and events), replays the
// default one and lets the user pick another. The bar only shows and asks: the main window turns
// its requests into EngineHost calls (embedded engine) and feeds back the engine's
// ReplayStatus/RecordStatus.
#include <QStringList>
#include <QWidget>

#include <nlohmann/json.hpp>

#include "exec/engine.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QMenu;
class QProgressBar;
class QMenu;
class QPushButton;
class QSettings;
class QSlider;
class QToolButton;

namespace livedrp::app {

class ReplayTransportBar : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMaxRecent = 8;
  explicit ReplayTransportBar(QWidget* parent = nullptr);
  // Where the recent files are kept ("replay/recent"); read now. Null: none kept. `settings`
  // must outlive the bar. (The main window opens its settings after building its docks.)
  void setSettings(QSettings* settings);

  // What the file dialogs end in, public so the tests (offscreen, no dialogs) take the same path:
  // remembers `path` among the recent ones. A directory (a run) is replayed at once
  // (openRequested); for a file the bar asks for its candidate datasets (candidatesRequested) and
  // replays the default one when they come (showCandidates).
  void openPath(const QString& path);
  // The answer to candidatesRequested: a "replay_candidates" result (docs/protocol.md). Listed
  // in the dataset box with the default selected, and the default replayed (openRequested with
  // its source). Only the answer to the last request is shown (answers come in the order asked):
  // one for a file opened before, or after a run was opened since, is ignored. A malformed answer
  // is shown as an error.
  void showCandidates(const nlohmann::json& result);
  // The answer to candidatesRequested when the file has nothing to replay or cannot be read:
  // `error` (discovery's reason) is shown and the dataset box says there is nothing to choose.
  // Ignored like showCandidates when it answers an earlier request.
  void showCandidatesError(const QString& error);
  // Asks for a recording into `directory` (recordRequested); an empty one stops recording.
  void setRecording(const QString& directory);

  // The pace, rate and loop the bar shows, written into `config` (replay.pace, rate_hz,
  // replay.loop); and shown from it.
  void applyTo(EngineConfig& config) const;
  void showConfig(const EngineConfig& config);

  QStringList recentPaths() const { return recent_; }
  // Where the replay stands; while the user drags the slider it is left alone.
  void showStatus(const ReplayStatus& replay, const RecordStatus& record);
  // A run is going (the controls act on it) or not; the source is a replay or live (recording).
  void setRunActive(bool active, bool replay_source);
  void showError(const QString& error);

  // For the tests and the main window.
  QSlider* seekSlider() const { return slider_; }
  QProgressBar* progressBar() const { return progress_; }
  QLabel* positionLabel() const { return position_; }
  QLabel* recordLabel() const { return record_label_; }
  QPushButton* recordButton() const { return record_; }
  // Play, pause and step as actions of `menu` with window-wide shortcuts (Ctrl+Space,
  // Ctrl+Shift+Space, Ctrl+Left, Ctrl+Right); each does what its button does, and nothing while
  // the button is disabled (no replay running).
  void addShortcutActions(QMenu* menu);
  QToolButton* playButton() const { return play_; }
  QToolButton* pauseButton() const { return pause_; }
  QToolButton* stepBackButton() const { return step_back_; }
  QToolButton* stepForwardButton() const { return step_forward_; }
  QCheckBox* loopBox() const { return loop_; }
  QComboBox* paceCombo() const { return pace_; }
  // The datasets of the file opened last; each item's data is its replay source.
  QComboBox* datasetCombo() const { return dataset_; }
  QLabel* errorLabel() const { return error_; }
  QDoubleSpinBox* rateSpin() const { return rate_; }

 signals:
  void openRequested(QString source);  // "replay:PATH" or "replay:FILE:/dataset"
  // The candidate datasets of the HDF5 file `path` are wanted (answered by showCandidates or
  // showCandidatesError); the engine, which may run on another machine, reads the file.
  void candidatesRequested(QString path);
  void resumeRequested();
  void pauseRequested();
  void stepRequested(qint64 delta);
  void seekRequested(quint64 index);
  // Pace, rate or loop changed: they are configuration, so the run restarts with them.
  void replayOptionsChanged();
  void recordRequested(QString directory);  // empty: stop recording

 private:
  void openFileDialog();
  void openRunDialog();
  void replayRun(const QString& directory);
  void clearCandidates(const QString& placeholder);
  // Counts one answer to candidatesRequested; true when it answers the request still awaited.
  bool isAnswerToLastRequest();
  void refuseCandidates(const QString& error);
  void recordClicked(bool checked);
  void rememberRecent(const QString& path);
  void rebuildRecentMenu();
  void updateEnabled();

  QSettings* settings_ = nullptr;
  QStringList recent_;
  QToolButton* open_;
  QMenu* recent_menu_;
  QToolButton* play_;
  QToolButton* pause_;
  QToolButton* step_back_;
  QToolButton* step_forward_;
  QCheckBox* loop_;
  QComboBox* pace_;
  QDoubleSpinBox* rate_;
  QProgressBar* progress_;
  QSlider* slider_;
  QLabel* position_;
  QPushButton* record_;
  QLabel* record_label_;
  QLabel* error_;
  QComboBox* dataset_;
  QString candidates_path_;  // the file whose candidates were asked for last; empty after a run
  int candidate_requests_unanswered_ = 0;
  bool run_active_ = false;
  bool replay_source_ = false;
  bool showing_config_ = false;  // showConfig() sets widgets: no replayOptionsChanged then
};

}  // namespace livedrp::app
