#include "app/stream_config_panel.hpp"

#include <exception>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "app/app_options.hpp"

namespace livedrp::app {
namespace {
// The ranges the engine accepts (engine/exec/stream_config.cpp validates the same).
constexpr int kMaxStreams = 16;
constexpr int kMaxSlotsPerStream = 64;
constexpr int kMaxBatch = 64;
// Lossy bounds are in the calibrated unit (keV or photons): a millionth is already below any
// detector's noise, a million above any signal.
constexpr double kMinErrorBound = 1e-6;
constexpr double kMaxErrorBound = 1e6;
constexpr int kErrorBoundDecimals = 6;

QComboBox* makeCombo(const QString& name, const QStringList& items, QWidget* parent) {
  auto* combo = new QComboBox(parent);
  combo->setObjectName(name);
  combo->addItems(items);
  return combo;
}

QSpinBox* makeSpin(const QString& name, int minimum, int maximum, QWidget* parent) {
  auto* spin = new QSpinBox(parent);
  spin->setObjectName(name);
  spin->setRange(minimum, maximum);
  return spin;
}

void selectText(QComboBox* combo, const std::string& text) {
  const int index = combo->findText(QString::fromStdString(text));
  if (index >= 0) combo->setCurrentIndex(index);
}

std::string text(const QComboBox* combo) {
  return combo->currentText().toStdString();
}
}  // namespace

StreamConfigPanel::StreamConfigPanel(QWidget* parent)
    : QWidget(parent),
      backend_(makeCombo(QStringLiteral("backendCombo"), {}, this)),
      streams_(makeSpin(QStringLiteral("streamsSpin"), 1, kMaxStreams, this)),
      slots_(makeSpin(QStringLiteral("slotsSpin"), 1, kMaxSlotsPerStream, this)),
      launch_(makeCombo(QStringLiteral("launchCombo"),
                        {"plain", "graph", "device_graph", "persistent"}, this)),
      batch_(makeSpin(QStringLiteral("batchSpin"), 1, kMaxBatch, this)),
      segments_(makeCombo(QStringLiteral("segmentsCombo"), {"all", "one"}, this)),
      host_threads_(
          makeCombo(QStringLiteral("hostThreadsCombo"), {"one_for_all", "per_stream"}, this)),
      source_(makeCombo(QStringLiteral("sourcePlacementCombo"), {"host", "device"}, this)),
      common_mode_(new QCheckBox(tr("common-mode correction"), this)),
      codec_(makeCombo(QStringLiteral("codecCombo"), {"off", "lossless", "lossy"}, this)),
      error_bound_(new QDoubleSpinBox(this)),
      apply_(new QPushButton(tr("Apply"), this)),
      status_(new QLabel(this)),
      error_(new QLabel(this)),
      saved_list_(new QListWidget(this)),
      name_(new QLineEdit(this)),
      save_(new QPushButton(tr("Save"), this)),
      load_(new QPushButton(tr("Load"), this)),
      delete_(new QPushButton(tr("Delete"), this)) {
  setObjectName(QStringLiteral("streamConfigPanel"));
  for (const char* backend : kBackends) backend_->addItem(QString::fromLatin1(backend));
  common_mode_->setObjectName(QStringLiteral("commonModeCheck"));
  apply_->setObjectName(QStringLiteral("applyButton"));
  status_->setObjectName(QStringLiteral("statusLabel"));
  error_->setObjectName(QStringLiteral("errorLabel"));
  saved_list_->setObjectName(QStringLiteral("savedList"));
  name_->setObjectName(QStringLiteral("nameEdit"));
  streams_->setToolTip(tr("CUDA streams (1-%1); the CPU backend has one lane").arg(kMaxStreams));
  slots_->setToolTip(tr("Launches in flight per stream (buffers allocated once)"));
  launch_->setToolTip(
      tr("plain: host launches; graph: CUDA graph replay; device_graph: a graph "
         "that relaunches itself; persistent: one resident kernel"));
  batch_->setToolTip(tr("K events per launch"));
  segments_->setToolTip(tr("The whole detector per launch, or one segment at a time"));
  host_threads_->setToolTip(
      tr("Host threads retiring completions: one for all streams, or one per "
         "stream"));
  source_->setToolTip(
      tr("Where the source writes events: pinned host ring, or a ring in GPU "
         "memory with doorbells"));
  codec_->setToolTip(
      tr("Live compression on the CPU backend: lossless compresses the raw detector "
         "data, lossy the calibrated image within the error bound"));
  error_bound_->setObjectName(QStringLiteral("errorBoundSpin"));
  error_bound_->setDecimals(kErrorBoundDecimals);
  error_bound_->setRange(kMinErrorBound, kMaxErrorBound);
  error_bound_->setToolTip(tr("Absolute error bound of the lossy codec, in the calibrated unit"));
  status_->setWordWrap(true);
  status_->setTextFormat(Qt::PlainText);
  error_->setWordWrap(true);
  error_->setTextFormat(Qt::PlainText);
  error_->setStyleSheet(QStringLiteral("QLabel { color: #c62828; }"));
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->hide();

  auto* form = new QFormLayout;
  form->addRow(tr("backend"), backend_);
  form->addRow(tr("streams"), streams_);
  form->addRow(tr("slots per stream"), slots_);
  form->addRow(tr("launch"), launch_);
  form->addRow(tr("batch K"), batch_);
  form->addRow(tr("segments per launch"), segments_);
  form->addRow(tr("host threads"), host_threads_);
  form->addRow(tr("source ring"), source_);
  form->addRow(tr("calibration"), common_mode_);
  form->addRow(tr("compression"), codec_);
  form->addRow(tr("error bound"), error_bound_);

  auto* saved_box = new QGroupBox(tr("Saved configurations"), this);
  auto* saved_layout = new QVBoxLayout(saved_box);
  saved_list_->setMinimumHeight(60);
  saved_layout->addWidget(saved_list_);
  auto* name_row = new QHBoxLayout;
  name_->setPlaceholderText(tr("name"));
  name_row->addWidget(name_, 1);
  name_row->addWidget(save_);
  saved_layout->addLayout(name_row);
  auto* list_row = new QHBoxLayout;
  list_row->addWidget(load_);
  list_row->addWidget(delete_);
  list_row->addStretch(1);
  saved_layout->addLayout(list_row);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(apply_);
  layout->addWidget(status_);
  layout->addWidget(error_);
  layout->addWidget(saved_box, 1);

  connect(codec_, &QComboBox::currentTextChanged, this,
          &StreamConfigPanel::updateErrorBoundEnabled);
  connect(apply_, &QPushButton::clicked, this, &StreamConfigPanel::requestApply);
  connect(save_, &QPushButton::clicked, this, &StreamConfigPanel::saveClicked);
  connect(load_, &QPushButton::clicked, this, &StreamConfigPanel::loadClicked);
  connect(delete_, &QPushButton::clicked, this, &StreamConfigPanel::deleteClicked);
  connect(saved_list_, &QListWidget::itemDoubleClicked, this, &StreamConfigPanel::loadClicked);
  connect(saved_list_, &QListWidget::currentTextChanged, name_, &QLineEdit::setText);

  setConfig(EngineConfig{});
  refreshSavedList();
}

void StreamConfigPanel::setDirectory(const QString& directory) {
  saved_ = SavedConfigurations(directory);
  refreshSavedList();
}

void StreamConfigPanel::refreshSavedList() {
  const QString current =
      saved_list_->currentItem() ? saved_list_->currentItem()->text() : QString();
  saved_list_->clear();
  saved_list_->addItems(saved_.names());
  const auto found = saved_list_->findItems(current, Qt::MatchExactly);
  if (!found.isEmpty()) saved_list_->setCurrentItem(found.front());
  saved_list_->setToolTip(tr("Saved in %1").arg(saved_.directory()));
}

void StreamConfigPanel::setConfig(const EngineConfig& config) {
  base_ = config.to_json();
  selectText(backend_, config.backend);
  streams_->setValue(config.runtime.streams);
  slots_->setValue(config.runtime.slots_per_stream);
  selectText(launch_, std::string(to_string(config.runtime.launch)));
  batch_->setValue(config.runtime.batch);
  selectText(segments_, std::string(to_string(config.runtime.segments)));
  selectText(host_threads_, std::string(to_string(config.runtime.host_threads)));
  selectText(source_, std::string(to_string(config.runtime.source)));
  common_mode_->setChecked(config.calibration.common_mode);
  selectText(codec_, config.compression.codec);
  error_bound_->setValue(config.compression.error_bound);
  updateErrorBoundEnabled();
}

void StreamConfigPanel::updateErrorBoundEnabled() {
  error_bound_->setEnabled(codec_->currentText() == QStringLiteral("lossy"));
}

nlohmann::json StreamConfigPanel::partialJson() const {
  return {{"backend", text(backend_)},
          {"runtime",
           {{"streams", streams_->value()},
            {"slots_per_stream", slots_->value()},
            {"launch", text(launch_)},
            {"batch", batch_->value()},
            {"segments_per_launch", text(segments_)},
            {"host_threads", text(host_threads_)},
            {"source", text(source_)}}},
          {"calibration", {{"common_mode", common_mode_->isChecked()}}},
          {"compression", {{"codec", text(codec_)}, {"error_bound", error_bound_->value()}}}};
}

nlohmann::json StreamConfigPanel::configJson() const {
  nlohmann::json json = base_;
  json.merge_patch(partialJson());
  return json;
}

EngineConfig StreamConfigPanel::config() const {
  return EngineConfig::from_json(configJson(), "stream configuration panel");
}

bool StreamConfigPanel::saveAs(const QString& name) {
  try {
    saved_.save(name, config());
  } catch (const std::exception& error) {
    showError(QString::fromUtf8(error.what()));
    return false;
  }
  refreshSavedList();
  const auto found = saved_list_->findItems(name, Qt::MatchExactly);
  if (!found.isEmpty()) saved_list_->setCurrentItem(found.front());
  error_->hide();
  status_->setText(tr("saved as \"%1\"").arg(name));
  emit logMessage(tr("stream configuration saved to %1").arg(saved_.path(name)));
  return true;
}

bool StreamConfigPanel::loadSaved(const QString& name) {
  return loadFile(saved_.path(name));
}

bool StreamConfigPanel::loadFile(const QString& path) {
  EngineConfig config;
  try {
    config = SavedConfigurations::loadFile(path);
  } catch (const std::exception& error) {
    showError(tr("not loaded: %1").arg(QString::fromUtf8(error.what())));
    return false;
  }
  setConfig(config);
  error_->hide();
  status_->setText(tr("loaded %1: %2; press Apply to run it")
                       .arg(QFileInfo(path).completeBaseName(),
                            QString::fromStdString(describe(config.runtime))));
  emit logMessage(tr("stream configuration loaded from %1").arg(path));
  return true;
}

void StreamConfigPanel::setApplyAvailable(bool available, const QString& why) {
  apply_available_ = available;
  apply_->setEnabled(available);
  apply_->setToolTip(available ? tr("Apply to the running engine (it restarts with the next run "
                                    "number)")
                               : why);
}

void StreamConfigPanel::showApplying(const QString& text) {
  apply_->setEnabled(false);
  error_->hide();
  status_->setText(text);
}

void StreamConfigPanel::showApplied(const QString& text) {
  apply_->setEnabled(apply_available_);
  error_->hide();
  status_->setText(text);
}

void StreamConfigPanel::showError(const QString& text) {
  apply_->setEnabled(apply_available_);
  error_->setText(text);
  error_->show();
}

QString StreamConfigPanel::statusText() const {
  return status_->text();
}
QString StreamConfigPanel::errorText() const {
  return error_->isHidden() ? QString() : error_->text();
}

void StreamConfigPanel::requestApply() {
  EngineConfig config;
  try {
    config = this->config();
  } catch (const std::exception& error) {
    showError(tr("not applied: %1").arg(QString::fromUtf8(error.what())));
    emit logMessage(
        tr("stream configuration not applied: %1").arg(QString::fromUtf8(error.what())));
    return;
  }
  emit applyRequested(config);
}

void StreamConfigPanel::saveClicked() {
  saveAs(name_->text().trimmed());
}

void StreamConfigPanel::loadClicked() {
  if (const QListWidgetItem* item = saved_list_->currentItem()) loadSaved(item->text());
}

void StreamConfigPanel::deleteClicked() {
  const QListWidgetItem* item = saved_list_->currentItem();
  if (!item) return;
  const QString name = item->text();
  if (saved_.remove(name)) emit logMessage(tr("deleted the saved configuration \"%1\"").arg(name));
  refreshSavedList();
}

}  // namespace livedrp::app
