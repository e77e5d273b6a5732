#include "app/fidelity_panel.hpp"

#include <exception>

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "app/analysis_panel.hpp"

namespace livedrp::app {

namespace {

// A field that reads as a number goes as one; anything else goes as the text typed, so that the
// engine's reader names the field and the value.
nlohmann::json numberOrText(const QLineEdit* field) {
  bool ok = false;
  const double value = field->text().trimmed().toDouble(&ok);
  if (ok) return value;
  return field->text().toStdString();
}

}  // namespace

FidelityPanel::FidelityPanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("fidelityPanel"));
  view_ = new widgets::FidelityView(this);
  sampling_ = new QCheckBox(tr("Sample"), this);
  sampling_->setObjectName(QStringLiteral("fidelitySampling"));
  sampling_->setToolTip(
      tr("Decode sampled events' lossy streams and compare them (CPU backend, "
         "or CUDA with runtime.source host)"));
  samples_hz_ = new QLineEdit(this);
  samples_hz_->setObjectName(QStringLiteral("fidelitySamplesHz"));
  samples_hz_->setMaximumWidth(60);
  bound_ = new QLineEdit(this);
  bound_->setObjectName(QStringLiteral("fidelityBound"));
  bound_->setMaximumWidth(80);
  bound_->setToolTip(tr("The lossy codec's absolute error bound, in the calibrated unit"));
  apply_ = new QPushButton(tr("Apply"), this);
  apply_->setObjectName(QStringLiteral("fidelityApplyButton"));
  error_ = new QLabel(this);
  error_->setObjectName(QStringLiteral("fidelityError"));
  error_->setStyleSheet(QStringLiteral("color: #c00000;"));
  error_->setWordWrap(true);
  error_->hide();

  auto* controls = new QHBoxLayout;
  controls->addWidget(sampling_);
  controls->addWidget(samples_hz_);
  controls->addWidget(new QLabel(tr("/s  lossy bound"), this));
  controls->addWidget(bound_);
  controls->addWidget(apply_);
  controls->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(view_, 1);
  layout->addLayout(controls);
  layout->addWidget(error_);

  for (QLineEdit* field : {samples_hz_, bound_})
    connect(field, &QLineEdit::textEdited, this, [this] { edited_ = true; });
  connect(sampling_, &QCheckBox::clicked, this, [this] { edited_ = true; });
  connect(apply_, &QPushButton::clicked, this, &FidelityPanel::apply);
  connect(view_, &widgets::FidelityView::reportShown, this, &FidelityPanel::followReport);
  setConfig(EngineConfig());
}

void FidelityPanel::setConfig(const EngineConfig& config) {
  sampling_->setChecked(config.fidelity.enabled);
  samples_hz_->setText(QString::number(config.fidelity.samples_hz));
  bound_->setText(QString::number(config.compression.error_bound));
  edited_ = false;
}

nlohmann::json FidelityPanel::sectionsJson() const {
  return {{"compression", {{"codec", "lossy"}, {"error_bound", numberOrText(bound_)}}},
          {"fidelity",
           {{"enabled", sampling_->isChecked()}, {"samples_hz", numberOrText(samples_hz_)}}}};
}

// A report is the engine's word on what is in force (an apply from another dock, a remote
// engine): the fields show it unless the user is editing them.
void FidelityPanel::followReport() {
  if (edited_) return;
  const protocol::FidelityReport& report = view_->report();
  sampling_->setChecked(true);
  samples_hz_->setText(QString::number(report.samples_hz));
  if (report.codec == "lossy") bound_->setText(QString::number(report.error_bound));
}

bool FidelityPanel::apply() {
  const nlohmann::json sections = sectionsJson();
  try {
    withAnalysisSections(base_ ? base_() : EngineConfig(), sections);
  } catch (const std::exception& error) {
    error_->setText(tr("not applied: %1").arg(QString::fromUtf8(error.what())));
    error_->show();
    return false;
  }
  error_->hide();
  edited_ = false;
  applying_ = true;
  emit applyRequested(sections);
  return true;
}

void FidelityPanel::showRefusal(const QString& text) {
  applying_ = false;
  error_->setText(text);
  error_->show();
}

void FidelityPanel::showApplied() {
  applying_ = false;
  error_->hide();
}

void FidelityPanel::setApplyAvailable(bool available, const QString& why) {
  apply_->setEnabled(available);
  apply_->setToolTip(why);
}

QString FidelityPanel::errorText() const {
  return error_->isHidden() ? QString() : error_->text();
}

}  // namespace livedrp::app
