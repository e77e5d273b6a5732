#include "app/replay_transport_bar.hpp"

#include <algorithm>
#include <climits>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSlider>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>

namespace livedrp::app {

namespace {
const QString kRecentKey = QStringLiteral("replay/recent");

QToolButton* makeButton(QWidget* parent, const QString& name, QStyle::StandardPixmap icon,
                        const QString& tip) {
  auto* button = new QToolButton(parent);
  button->setObjectName(name);
  button->setIcon(parent->style()->standardIcon(icon));
  button->setToolTip(tip);
  return button;
}
}  // namespace

ReplayTransportBar::ReplayTransportBar(QWidget* parent) : QWidget(parent) {
  open_ = makeButton(this, QStringLiteral("replayOpen"), QStyle::SP_DialogOpenButton,
                     tr("Open an HDF5 file or a recorded run to replay"));
  open_->setText(tr("Open"));
  open_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  open_->setPopupMode(QToolButton::MenuButtonPopup);
  recent_menu_ = new QMenu(open_);
  open_->setMenu(recent_menu_);
  connect(open_, &QToolButton::clicked, this, &ReplayTransportBar::openFileDialog);

  step_back_ = makeButton(this, QStringLiteral("replayStepBack"), QStyle::SP_MediaSkipBackward,
                          tr("Step back: pause and re-send the previous event"));
  play_ = makeButton(this, QStringLiteral("replayPlay"), QStyle::SP_MediaPlay, tr("Play"));
  pause_ = makeButton(this, QStringLiteral("replayPause"), QStyle::SP_MediaPause,
                      tr("Pause: hold events at the source (nothing is dropped)"));
  step_forward_ = makeButton(this, QStringLiteral("replayStepForward"), QStyle::SP_MediaSkipForward,
                             tr("Step: pause and send one event"));
  connect(step_back_, &QToolButton::clicked, this, [this] { emit stepRequested(-1); });
  connect(play_, &QToolButton::clicked, this, &ReplayTransportBar::resumeRequested);
  connect(pause_, &QToolButton::clicked, this, &ReplayTransportBar::pauseRequested);
  connect(step_forward_, &QToolButton::clicked, this, [this] { emit stepRequested(1); });

  loop_ = new QCheckBox(tr("Loop"), this);
  loop_->setObjectName(QStringLiteral("replayLoop"));
  pace_ = new QComboBox(this);
  pace_->setObjectName(QStringLiteral("replayPace"));
  pace_->addItem(tr("as recorded"), QStringLiteral("recorded"));
  pace_->addItem(tr("at rate"), QStringLiteral("rate"));
  pace_->addItem(tr("flat out"), QStringLiteral("flat_out"));
  rate_ = new QDoubleSpinBox(this);
  rate_->setObjectName(QStringLiteral("replayRate"));
  rate_->setRange(0.1, 1e6);
  rate_->setDecimals(1);
  rate_->setValue(10);
  rate_->setSuffix(tr(" Hz"));
  const auto options_changed = [this] {
    rate_->setEnabled(pace_->currentData().toString() == QLatin1String("rate"));
    if (!showing_config_) emit replayOptionsChanged();
  };
  connect(loop_, &QCheckBox::toggled, this, options_changed);
  connect(pace_, &QComboBox::currentIndexChanged, this, options_changed);
  // Only once editing is done: each change restarts the run.
  connect(rate_, &QDoubleSpinBox::editingFinished, this, [this] {
    if (!showing_config_ && pace_->currentData().toString() == QLatin1String("rate"))
      emit replayOptionsChanged();
  });
  rate_->setEnabled(false);

  progress_ = new QProgressBar(this);
  progress_->setObjectName(QStringLiteral("replayProgress"));
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat(QStringLiteral("%p%"));
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setObjectName(QStringLiteral("replaySeek"));
  slider_->setRange(0, 0);
  slider_->setToolTip(tr("Seek: the event to replay next"));
  // Seek when the user lets go (or moves by keyboard/page), not at every pixel of a drag.
  connect(slider_, &QSlider::sliderReleased, this,
          [this] { emit seekRequested(quint64(slider_->value())); });
  connect(slider_, &QSlider::actionTriggered, this, [this](int action) {
    if (action != QAbstractSlider::SliderMove)
      QMetaObject::invokeMethod(
          this, [this] { emit seekRequested(quint64(slider_->value())); }, Qt::QueuedConnection);
  });
  position_ = new QLabel(tr("no replay"), this);
  position_->setObjectName(QStringLiteral("replayPosition"));

  record_ = new QPushButton(style()->standardIcon(QStyle::SP_DialogSaveButton), tr("Record"), this);
  record_->setObjectName(QStringLiteral("recordButton"));
  record_->setCheckable(true);
  record_->setToolTip(tr("Record the live source to HDF5 files in a chosen directory"));
  connect(record_, &QPushButton::clicked, this, &ReplayTransportBar::recordClicked);
  record_label_ = new QLabel(this);
  record_label_->setObjectName(QStringLiteral("recordStatus"));
  error_ = new QLabel(this);
  error_->setObjectName(QStringLiteral("replayError"));
  error_->setStyleSheet(QStringLiteral("color: #b00020"));
  error_->setWordWrap(true);
  dataset_ = new QComboBox(this);
  dataset_->setObjectName(QStringLiteral("replayDataset"));
  dataset_->setToolTip(tr("The datasets of the file that could be the events; pick one to replay"));
  dataset_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  // `activated`: the user's choice only, not the bar filling the list.
  connect(dataset_, &QComboBox::activated, this, [this](int index) {
    const QString source = dataset_->itemData(index).toString();
    if (source.isEmpty()) return;
    error_->clear();
    emit openRequested(source);
  });
  clearCandidates(tr("open a file to list its datasets"));

  auto* controls = new QHBoxLayout;
  controls->addWidget(open_);
  for (QWidget* w :
       {static_cast<QWidget*>(step_back_), static_cast<QWidget*>(play_),
        static_cast<QWidget*>(pause_), static_cast<QWidget*>(step_forward_),
        static_cast<QWidget*>(loop_), static_cast<QWidget*>(pace_), static_cast<QWidget*>(rate_)})
    controls->addWidget(w);
  controls->addStretch(1);
  controls->addWidget(record_);
  controls->addWidget(record_label_);
  auto* progress = new QHBoxLayout;
  progress->addWidget(slider_, 3);
  progress->addWidget(progress_, 1);
  progress->addWidget(position_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addLayout(progress);
  auto* dataset = new QHBoxLayout;
  auto* dataset_label = new QLabel(tr("Dataset:"), this);
  dataset_label->setBuddy(dataset_);
  dataset->addWidget(dataset_label);
  dataset->addWidget(dataset_, 1);
  layout->addLayout(dataset);
  layout->addWidget(error_);

  rebuildRecentMenu();
  updateEnabled();
}

void ReplayTransportBar::setSettings(QSettings* settings) {
  settings_ = settings;
  recent_ = settings_ ? settings_->value(kRecentKey).toStringList() : QStringList();
  while (recent_.size() > kMaxRecent) recent_.removeLast();
  rebuildRecentMenu();
}

void ReplayTransportBar::openFileDialog() {
  const QString start = recent_.isEmpty() ? QString() : QFileInfo(recent_.front()).path();
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Replay an HDF5 file"), start,
                                   tr("HDF5 files (*.h5 *.hdf5 *.cxi *.nxs);;All files (*)"));
  if (!path.isEmpty()) openPath(path);
}

void ReplayTransportBar::openRunDialog() {
  const QString start = recent_.isEmpty() ? QString() : QFileInfo(recent_.front()).path();
  const QString path = QFileDialog::getExistingDirectory(
      this, tr("Replay a run (a directory of recorded files)"), start);
  if (!path.isEmpty()) replayRun(path);
}

void ReplayTransportBar::replayRun(const QString& directory) {
  rememberRecent(directory);
  error_->clear();
  candidates_path_.clear();
  clearCandidates(tr("a run: every file's events, in order"));
  emit openRequested(QStringLiteral("replay:") + directory);
}

void ReplayTransportBar::openPath(const QString& path) {
  // Only a local directory is known to be a run here; anything else is asked about, and the
  // engine (which may be remote) says what it is.
  if (QFileInfo(path).isDir()) {
    replayRun(path);
    return;
  }
  rememberRecent(path);
  error_->clear();
  candidates_path_ = path;
  ++candidate_requests_unanswered_;
  clearCandidates(tr("looking for datasets in %1 ...").arg(QFileInfo(path).fileName()));
  emit candidatesRequested(path);
}

namespace {
// "/entry/data/data — 7 × 512 × 1024 uint16, 7 events (default)" and the like.
QString describeCandidate(const nlohmann::json& candidate) {
  const auto& parts = candidate.at("parts");
  const std::string dataset = candidate.at("dataset").get<std::string>();
  QString name = dataset.empty()
                     ? ReplayTransportBar::tr("%1 linked parts together").arg(parts.size())
                     : QString::fromStdString(dataset);
  QStringList dims;
  for (const auto& extent : candidate.at("shape"))
    dims << QString::number(extent.get<std::uint64_t>());
  const std::uint64_t events = candidate.at("events").get<std::uint64_t>();
  QString text =
      ReplayTransportBar::tr("%1 — %2 %3, %4 %5")
          .arg(name, dims.join(QStringLiteral(" × ")),
               QString::fromStdString(candidate.at("dtype").get<std::string>()))
          .arg(events)
          .arg(events == 1 ? ReplayTransportBar::tr("event") : ReplayTransportBar::tr("events"));
  if (candidate.at("default").get<bool>()) text += ReplayTransportBar::tr(" (default)");
  return text;
}
}  // namespace

bool ReplayTransportBar::isAnswerToLastRequest() {
  if (candidate_requests_unanswered_ == 0) return false;  // nothing was asked
  --candidate_requests_unanswered_;
  // Answers come in the order asked (the engine library at once, RemoteControl one at a time);
  // a run opened since leaves no file waiting for one.
  return candidate_requests_unanswered_ == 0 && !candidates_path_.isEmpty();
}

void ReplayTransportBar::showCandidates(const nlohmann::json& result) {
  if (!isAnswerToLastRequest()) return;
  QString path;
  QStringList texts, sources, tips;
  int default_index = 0;
  try {
    path = QString::fromStdString(result.at("path").get<std::string>());
    if (path != candidates_path_) return;  // an answer about a file opened before
    default_index = result.at("default").get<int>();
    for (const auto& candidate : result.at("candidates")) {
      texts << describeCandidate(candidate);
      sources << QString::fromStdString(candidate.at("source").get<std::string>());
      QStringList parts;
      for (const auto& part : candidate.at("parts"))
        parts << QString::fromStdString(part.get<std::string>());
      tips << tr("replays %1").arg(parts.join(QStringLiteral(", ")));
    }
  } catch (const std::exception& error) {
    if (!path.isEmpty() && path != candidates_path_) return;
    refuseCandidates(tr("the engine's list of datasets cannot be read: %1")
                         .arg(QString::fromUtf8(error.what())));
    return;
  }
  if (texts.isEmpty() || default_index < 0 || default_index >= texts.size()) {
    refuseCandidates(tr("the engine listed no dataset to replay in %1").arg(path));
    return;
  }
  dataset_->clear();
  for (int i = 0; i < texts.size(); ++i) {
    dataset_->addItem(texts[i], sources[i]);
    dataset_->setItemData(i, tips[i], Qt::ToolTipRole);
  }
  dataset_->setCurrentIndex(default_index);
  dataset_->setEnabled(texts.size() > 1);  // one candidate: nothing to choose
  emit openRequested(sources[default_index]);
}

void ReplayTransportBar::showCandidatesError(const QString& error) {
  if (isAnswerToLastRequest()) refuseCandidates(error);
}

void ReplayTransportBar::refuseCandidates(const QString& error) {
  clearCandidates(tr("no dataset to replay"));
  error_->setText(error);
}

void ReplayTransportBar::clearCandidates(const QString& placeholder) {
  dataset_->clear();
  dataset_->setPlaceholderText(placeholder);
  dataset_->setCurrentIndex(-1);
  dataset_->setEnabled(false);
}

void ReplayTransportBar::rememberRecent(const QString& path) {
  recent_.removeAll(path);
  recent_.prepend(path);
  while (recent_.size() > kMaxRecent) recent_.removeLast();
  if (settings_) settings_->setValue(kRecentKey, recent_);
  rebuildRecentMenu();
}

void ReplayTransportBar::rebuildRecentMenu() {
  recent_menu_->clear();
  recent_menu_->addAction(tr("Open file..."), this, &ReplayTransportBar::openFileDialog);
  recent_menu_->addAction(tr("Open run (directory)..."), this, &ReplayTransportBar::openRunDialog);
  if (recent_.isEmpty()) return;
  recent_menu_->addSeparator();
  for (const QString& path : recent_) {
    // Copied into the lambda: openPath() rebuilds this menu, deleting the action being handled.
    recent_menu_->addAction(path, this, [this, path] {
      QMetaObject::invokeMethod(
          this, [this, path] { openPath(path); }, Qt::QueuedConnection);
    });
  }
}

void ReplayTransportBar::recordClicked(bool checked) {
  if (!checked) {
    setRecording(QString());
    return;
  }
  const QString directory =
      QFileDialog::getExistingDirectory(this, tr("Record the live source into a directory"));
  if (directory.isEmpty()) {
    record_->setChecked(false);
    return;
  }
  setRecording(directory);
}

void ReplayTransportBar::setRecording(const QString& directory) {
  record_->setChecked(!directory.isEmpty());
  record_label_->setText(directory.isEmpty() ? QString() : tr("recording to %1").arg(directory));
  emit recordRequested(directory);
}

void ReplayTransportBar::applyTo(EngineConfig& config) const {
  config.replay.loop = loop_->isChecked();
  config.replay.pace = pace_->currentData().toString().toStdString();
  if (config.replay.pace == "rate") config.rate_hz = rate_->value();
}

void ReplayTransportBar::showConfig(const EngineConfig& config) {
  showing_config_ = true;
  loop_->setChecked(config.replay.loop);
  const int index = pace_->findData(QString::fromStdString(config.replay.pace));
  if (index >= 0) pace_->setCurrentIndex(index);
  if (config.rate_hz > 0) rate_->setValue(config.rate_hz);
  rate_->setEnabled(config.replay.pace == "rate");
  record_->setChecked(config.record.enabled());
  showing_config_ = false;
}

void ReplayTransportBar::showStatus(const ReplayStatus& replay, const RecordStatus& record) {
  if (replay.active) {
    const int total = int(std::min<std::uint64_t>(replay.total_events, INT_MAX));
    // The slider names the next event to replay; the label the last one handed on (1-based).
    const int shown =
        replay.handed == 0 ? 0 : int(std::min<std::uint64_t>(replay.position, INT_MAX));
    progress_->setRange(0, std::max(total, 1));
    progress_->setValue(replay.handed == 0 ? 0 : shown + 1);
    slider_->setRange(0, std::max(total - 1, 0));
    if (!slider_->isSliderDown()) {
      const QSignalBlocker block(slider_);
      slider_->setValue(shown);
    }
    QString text = replay.handed == 0
                       ? tr("- / %1").arg(replay.total_events)
                       : tr("%1 / %2").arg(replay.position + 1).arg(replay.total_events);
    if (replay.paused) text += tr(", paused");
    if (replay.loops > 0) text += tr(", loop %1").arg(replay.loops + 1);
    if (!replay.limited_by.empty())
      text += tr(", limited by %1").arg(QString::fromStdString(replay.limited_by));
    // Files of the run that could not be read are left out: say so, with each reason on hover.
    QString tip = QString::fromStdString(replay.pace_note);
    if (!replay.skipped_files.empty()) {
      text += replay.skipped_files.size() == 1
                  ? tr(", 1 file left out")
                  : tr(", %1 files left out").arg(replay.skipped_files.size());
      for (const auto& reason : replay.skipped_files)
        tip += (tip.isEmpty() ? QString() : QStringLiteral("\n")) + QString::fromStdString(reason);
    }
    position_->setText(text);
    position_->setToolTip(tip);
    pause_->setEnabled(run_active_ && !replay.paused);
    play_->setEnabled(run_active_ && replay.paused);
  }
  if (record.active) {
    QString text = tr("recorded %1 events").arg(record.events);
    // Events the writer could not keep up with (record.when_full "drop"): counted, never hidden.
    if (record.dropped > 0) text += tr(", %1 not recorded (writer queue full)").arg(record.dropped);
    if (!record.files.empty())
      text += tr(" in %1 file(s), last %2")
                  .arg(record.files.size())
                  .arg(QString::fromStdString(record.files.back()));
    record_label_->setText(text);
  }
}

void ReplayTransportBar::addShortcutActions(QMenu* menu) {
  const auto add = [this, menu](const QString& text, const QKeySequence& key, QToolButton* button) {
    QAction* action = menu->addAction(text);
    action->setShortcut(key);
    connect(action, &QAction::triggered, button, [button] {
      if (button->isEnabled()) button->click();
    });
  };
  add(tr("&Play"), QKeySequence(Qt::CTRL | Qt::Key_Space), play_);
  add(tr("P&ause"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Space), pause_);
  add(tr("Step &Back"), QKeySequence(Qt::CTRL | Qt::Key_Left), step_back_);
  add(tr("Step &Forward"), QKeySequence(Qt::CTRL | Qt::Key_Right), step_forward_);
}

void ReplayTransportBar::setRunActive(bool active, bool replay_source) {
  run_active_ = active;
  replay_source_ = replay_source;
  if (replay_source && !active && position_->text() == tr("no replay"))
    position_->setText(tr("not started"));
  updateEnabled();
}

void ReplayTransportBar::showError(const QString& error) {
  error_->setText(error);
}

void ReplayTransportBar::updateEnabled() {
  const bool controls = run_active_ && replay_source_;
  for (QWidget* w : {static_cast<QWidget*>(play_), static_cast<QWidget*>(pause_),
                     static_cast<QWidget*>(step_back_), static_cast<QWidget*>(step_forward_),
                     static_cast<QWidget*>(slider_)})
    w->setEnabled(controls);
  // Recording is for live sources: a replay is a recording already.
  record_->setEnabled(!replay_source_);
}

}  // namespace livedrp::app
