#include "app/comparison_panel.hpp"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSaveFile>
#include <QSpinBox>
#include <QVBoxLayout>

#include "app/app_options.hpp"
#include "app/comparison_runner.hpp"
#include "app/saved_configurations.hpp"
#include "widgets/comparison_model.hpp"
#include "widgets/comparison_view.hpp"

namespace livedrp::app {
namespace {
// Enough to see a few stats intervals on a CPU, small enough to wait for.
constexpr int kMaxEvents = 10'000'000;
constexpr double kMaxRateHz = 1e6;

bool writeFile(const QString& path, const QByteArray& bytes, QString* error) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
    *error = QObject::tr("cannot write %1: %2").arg(path, file.errorString());
    return false;
  }
  return true;
}
}  // namespace

ComparisonPanel::ComparisonPanel(QWidget* parent)
    : QWidget(parent),
      directory_(SavedConfigurations::defaultDirectory()),
      model_(new widgets::ComparisonModel(this)),
      runner_(new ComparisonRunner(model_, this)),
      list_(new QListWidget(this)),
      detector_(new QComboBox(this)),
      events_(new QSpinBox(this)),
      rate_(new QDoubleSpinBox(this)),
      run_(new QPushButton(tr("Run"), this)),
      cancel_(new QPushButton(tr("Stop"), this)),
      export_csv_(new QPushButton(tr("Export CSV..."), this)),
      export_json_(new QPushButton(tr("Export JSON..."), this)),
      progress_(new QLabel(this)),
      view_(new widgets::ComparisonView(model_, this)) {
  setObjectName(QStringLiteral("comparisonPanel"));
  list_->setObjectName(QStringLiteral("comparisonConfigurations"));
  list_->setToolTip(tr("Tick two or more saved configurations; they run in this order"));
  detector_->setObjectName(QStringLiteral("comparisonDetector"));
  detector_->setEditable(true);
  for (const char* source : kSimulatorSources) detector_->addItem(QString::fromLatin1(source));
  events_->setObjectName(QStringLiteral("comparisonEvents"));
  events_->setRange(1, kMaxEvents);
  events_->setValue(kDefaultEvents);
  rate_->setObjectName(QStringLiteral("comparisonRate"));
  rate_->setRange(0, kMaxRateHz);
  rate_->setDecimals(0);
  rate_->setSuffix(tr(" Hz"));
  rate_->setSpecialValueText(tr("as fast as possible"));
  progress_->setObjectName(QStringLiteral("comparisonProgress"));
  progress_->setWordWrap(true);
  progress_->setTextFormat(Qt::PlainText);

  auto* form = new QFormLayout;
  form->addRow(tr("detector"), detector_);
  form->addRow(tr("events"), events_);
  form->addRow(tr("rate"), rate_);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_);
  buttons->addWidget(cancel_);
  auto* exports = new QHBoxLayout;
  exports->addWidget(export_csv_);
  exports->addWidget(export_json_);

  auto* side = new QVBoxLayout;
  side->addWidget(new QLabel(tr("Saved configurations"), this));
  side->addWidget(list_, 1);
  side->addLayout(form);
  side->addLayout(buttons);
  side->addLayout(exports);
  side->addWidget(progress_);
  auto* side_widget = new QWidget(this);
  side_widget->setLayout(side);
  side_widget->setMaximumWidth(280);

  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(side_widget);
  layout->addWidget(view_, 1);

  connect(run_, &QPushButton::clicked, this, &ComparisonPanel::run);
  connect(cancel_, &QPushButton::clicked, this, &ComparisonPanel::cancel);
  connect(export_csv_, &QPushButton::clicked, this, [this] { exportDialog(true); });
  connect(export_json_, &QPushButton::clicked, this, [this] { exportDialog(false); });
  connect(runner_, &ComparisonRunner::progress, this, [this](const QString& text) {
    progress_->setText(text);
    emit logMessage(text);
  });
  connect(runner_, &ComparisonRunner::finished, this, [this] {
    updateButtons();
    emit finished();
  });
  refreshList();
  updateButtons();
}

void ComparisonPanel::setDirectory(const QString& directory) {
  directory_ = directory;
  refreshList();
}

void ComparisonPanel::refreshList() {
  const QStringList checked = checkedNames();
  list_->clear();
  for (const QString& name : SavedConfigurations(directory_).names()) {
    auto* item = new QListWidgetItem(name, list_);
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    item->setCheckState(checked.contains(name) ? Qt::Checked : Qt::Unchecked);
  }
}

void ComparisonPanel::setChecked(const QStringList& names) {
  for (int i = 0; i < list_->count(); ++i) {
    list_->item(i)->setCheckState(names.contains(list_->item(i)->text()) ? Qt::Checked
                                                                         : Qt::Unchecked);
  }
}

QStringList ComparisonPanel::checkedNames() const {
  QStringList names;
  for (int i = 0; i < list_->count(); ++i) {
    if (list_->item(i)->checkState() == Qt::Checked) names << list_->item(i)->text();
  }
  return names;
}

bool ComparisonPanel::run() {
  if (runner_->isRunning()) return false;
  const QStringList names = checkedNames();
  if (names.size() < 2) {
    progress_->setText(tr("tick at least two saved configurations to compare"));
    return false;
  }
  const SavedConfigurations saved(directory_);
  std::vector<ComparisonEntry> entries;
  for (const QString& name : names) {
    ComparisonEntry entry;
    entry.name = name;
    try {
      entry.config = saved.load(name);
    } catch (const std::exception& error) {
      entry.load_error = QString::fromUtf8(error.what());
    }
    entries.push_back(std::move(entry));
  }
  ComparisonSettings settings;
  settings.source = detector_->currentText().trimmed().toStdString();
  settings.events = std::uint64_t(events_->value());
  settings.rate_hz = rate_->value();
  // The same events for every run: the first loadable configuration's seed and pool.
  for (const ComparisonEntry& entry : entries) {
    if (entry.load_error.isEmpty()) {
      settings.seed = entry.config.seed;
      settings.simulator_pool = entry.config.simulator_pool;
      break;
    }
  }
  emit aboutToRun();
  const bool started = runner_->start(entries, settings);
  if (started) {
    emit logMessage(tr("comparing %1 on %2, %3 events each")
                        .arg(names.join(QStringLiteral(", ")), detector_->currentText())
                        .arg(settings.events));
  }
  updateButtons();
  return started;
}

void ComparisonPanel::cancel() { runner_->cancel(); }

bool ComparisonPanel::isRunning() const { return runner_->isRunning(); }

bool ComparisonPanel::exportCsv(const QString& path) {
  QString error;
  if (!writeFile(path, model_->toCsv().toUtf8(), &error)) {
    progress_->setText(error);
    emit logMessage(error);
    return false;
  }
  emit logMessage(tr("comparison table exported to %1").arg(path));
  return true;
}

bool ComparisonPanel::exportJson(const QString& path) {
  QString error;
  if (!writeFile(path, QByteArray::fromStdString(model_->toJson().dump(2) + "\n"), &error)) {
    progress_->setText(error);
    emit logMessage(error);
    return false;
  }
  emit logMessage(tr("comparison exported to %1").arg(path));
  return true;
}

void ComparisonPanel::exportDialog(bool csv) {
  const QString filter = csv ? tr("CSV table (*.csv)") : tr("JSON (*.json)");
  const QString suffix = csv ? QStringLiteral(".csv") : QStringLiteral(".json");
  QString path = QFileDialog::getSaveFileName(this, tr("Export the comparison"), QString(), filter);
  if (path.isEmpty()) return;
  if (!path.endsWith(suffix)) path += suffix;
  csv ? exportCsv(path) : exportJson(path);
}

void ComparisonPanel::updateButtons() {
  const bool running = runner_->isRunning();
  run_->setEnabled(!running);
  cancel_->setEnabled(running);
}

}  // namespace livedrp::app
