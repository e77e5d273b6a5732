#include "app/analysis_panel.hpp"

#include <algorithm>
#include <exception>

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include "app/analysis_files.hpp"
#include "calib/constants.hpp"
#include "widgets/radial_unit_text.hpp"

namespace livedrp::app {
namespace {

// The name the engine's reader gives the dock's configuration in its messages.
constexpr const char* kOrigin = "from the Analysis dock";
// The bins box reaches past what the engine accepts (1..65536), so that a value out of range is
// refused with the engine's reason rather than silently clamped by the widget.
constexpr int kBinsFieldLimit = 1'000'000;
// Significant digits a number is shown with: enough that what is shown reads back as the value.
constexpr int kShownDigits = 15;
constexpr int kGainConfigsPerRow = 3;
const char* kArrayFilter = "Arrays (*.npy *.h5 *.hdf5 *.cxi *.nxs);;All files (*)";

// A number field's JSON for the engine's reader: null when empty (the engine's "none"), the number
// when the text reads as one (C locale, the JSON's own notation), else the text itself, so that
// the reader refuses it naming the field and showing what was typed.
nlohmann::json numberField(const QLineEdit* edit) {
  const QString text = edit->text().trimmed();
  if (text.isEmpty()) return nullptr;
  bool ok = false;
  const double value = QLocale::c().toDouble(text, &ok);
  if (ok) return value;
  return text.toStdString();
}

// [A, B] from two fields, or null when both are empty; one empty goes as null inside the pair
// for the reader to refuse.
nlohmann::json pairField(const QLineEdit* first, const QLineEdit* second) {
  if (first->text().trimmed().isEmpty() && second->text().trimmed().isEmpty()) return nullptr;
  return nlohmann::json::array({numberField(first), numberField(second)});
}

std::string pathField(const QLineEdit* edit) {
  return edit->text().trimmed().toStdString();
}

QString shownNumber(double value) {
  return QString::number(value, 'g', kShownDigits);
}

void showOptionalPair(const std::optional<std::pair<double, double>>& pair, QLineEdit* first,
                      QLineEdit* second) {
  first->setText(pair ? shownNumber(pair->first) : QString());
  second->setText(pair ? shownNumber(pair->second) : QString());
}

QLineEdit* makeEdit(const QString& name, const QString& placeholder, const QString& tip,
                    QWidget* parent) {
  auto* edit = new QLineEdit(parent);
  edit->setObjectName(name);
  edit->setPlaceholderText(placeholder);
  edit->setToolTip(tip);
  return edit;
}

}  // namespace

EngineConfig withAnalysisSections(const EngineConfig& config, const nlohmann::json& sections) {
  nlohmann::json merged = config.to_json();
  // As EngineController::apply_json merges a change: a section's keys replace those given, the
  // section's other keys (peak_finding.params, integration.method, ...) stay.
  for (const auto& [key, value] : sections.items()) {
    nlohmann::json& target = merged[key];
    if (value.is_object() && target.is_object())
      for (const auto& [inner_key, inner_value] : value.items()) target[inner_key] = inner_value;
    else
      target = value;
  }
  return EngineConfig::from_json(merged, kOrigin);
}

AnalysisPanel::AnalysisPanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("analysisPanel"));
  auto* stages = new QWidget;
  auto* stages_layout = new QVBoxLayout(stages);
  stages_layout->addWidget(buildCompression());
  stages_layout->addWidget(buildIntegration());
  stages_layout->addWidget(buildPeakFinding());
  stages_layout->addStretch(1);
  // A dock tabbed in a short column still reaches every field.
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(stages);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);

  apply_ = new QPushButton(tr("Apply"), this);
  apply_->setObjectName(QStringLiteral("analysisApplyButton"));
  revert_ = new QPushButton(tr("Revert"), this);
  revert_->setObjectName(QStringLiteral("analysisRevertButton"));
  revert_->setToolTip(tr("Show the configuration in force again, dropping the edits"));
  error_ = new QLabel(this);
  error_->setObjectName(QStringLiteral("analysisErrorLabel"));
  error_->setWordWrap(true);
  error_->setTextFormat(Qt::PlainText);
  error_->setStyleSheet(QStringLiteral("QLabel { color: #c62828; }"));
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->hide();
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("analysisStatusLabel"));
  status_->setWordWrap(true);
  status_->setTextFormat(Qt::PlainText);

  auto* apply_row = new QHBoxLayout;
  apply_row->addWidget(apply_, 0, Qt::AlignTop);
  apply_row->addWidget(revert_, 0, Qt::AlignTop);
  apply_row->addWidget(error_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(scroll, 1);
  layout->addLayout(apply_row);
  layout->addWidget(status_);

  connect(apply_, &QPushButton::clicked, this, &AnalysisPanel::apply);
  connect(revert_, &QPushButton::clicked, this, [this] {
    showFields(shown_);
    status_->setText(tr("showing the configuration in force"));
  });
  setApplyAvailable(true);
  setConfig(EngineConfig{});
}

QWidget* AnalysisPanel::buildCompression() {
  compression_ = new QGroupBox(tr("Compression"));
  compression_->setObjectName(QStringLiteral("compressionBox"));
  compression_->setCheckable(true);
  compression_->setToolTip(tr("Compress every processed event (compression.codec; off: \"off\")"));
  codec_ = new QComboBox;
  codec_->setObjectName(QStringLiteral("analysisCodecCombo"));
  codec_->addItems({QStringLiteral("lossless"), QStringLiteral("lossy")});
  codec_->setToolTip(
      tr("lossless compresses the raw detector data; lossy the calibrated image within the "
         "error bound (compression.codec)"));
  error_bound_ = makeEdit(
      QStringLiteral("errorBoundEdit"), QString(),
      tr("Absolute error bound of the lossy codec, in the calibrated unit (keV or photons); "
         "compression.error_bound"),
      compression_);
  auto* form = new QFormLayout(compression_);
  form->addRow(tr("codec"), codec_);
  form->addRow(tr("error bound"), error_bound_);
  return compression_;
}

QWidget* AnalysisPanel::buildIntegration() {
  integration_ = new QGroupBox(tr("Azimuthal integration"));
  integration_->setObjectName(QStringLiteral("integrationBox"));
  integration_->setCheckable(true);
  integration_->setToolTip(tr("A radial profile of every processed event (integration.enabled)"));
  poni_ = makeEdit(QStringLiteral("poniEdit"), tr("builtin:NAME or FILE.poni"),
                   tr("pyFAI PONI file of the experiment's geometry, or a shipped one "
                      "(builtin:epix10ka2m, ...); integration.poni"),
                   integration_);
  bins_ = new QSpinBox;
  bins_->setObjectName(QStringLiteral("binsSpin"));
  bins_->setRange(-kBinsFieldLimit, kBinsFieldLimit);
  bins_->setToolTip(tr("Radial bins of the profile (integration.npt)"));
  unit_ = new QComboBox;
  unit_->setObjectName(QStringLiteral("analysisUnitCombo"));
  for (const protocol::RadialUnit unit : protocol::all_radial_units())
    unit_->addItem(widgets::radialAxisTitle(unit), widgets::radialUnitWireName(unit));
  unit_->setToolTip(tr("The profile's radial unit (integration.unit); the range is in it"));
  radial_min_ = makeEdit(QStringLiteral("radialMinEdit"), tr("min"),
                         tr("Radial range, in the unit; both empty: pyFAI's default, the whole "
                            "detector (integration.radial_range)"),
                         integration_);
  radial_max_ =
      makeEdit(QStringLiteral("radialMaxEdit"), tr("max"), radial_min_->toolTip(), integration_);
  integration_mask_ =
      makeEdit(QStringLiteral("integrationMaskEdit"), tr("none"),
               tr("FILE.npy or FILE.h5:/dataset, one event's pixels; non-zero masks a pixel "
                  "(the constants' bad pixels are masked too); integration.mask"),
               integration_);
  polarization_ = makeEdit(QStringLiteral("polarizationEdit"), tr("none"),
                           tr("Polarisation factor, -1 to 1 (0.99 at most XFEL and synchrotron "
                              "beamlines); empty: no correction (integration.polarization)"),
                           integration_);
  auto* range = new QHBoxLayout;
  range->addWidget(radial_min_);
  range->addWidget(new QLabel(QStringLiteral("–")));
  range->addWidget(radial_max_);
  auto* form = new QFormLayout(integration_);
  form->addRow(tr("PONI file"), fileRow(poni_, tr("PONI file"), tr("pyFAI geometry (*.poni)")));
  form->addRow(tr("bins"), bins_);
  form->addRow(tr("unit"), unit_);
  form->addRow(tr("radial range"), range);
  form->addRow(tr("mask"), fileRow(integration_mask_, tr("Integration mask"),
                                   QString::fromLatin1(kArrayFilter)));
  form->addRow(tr("polarisation"), polarization_);
  return integration_;
}

QWidget* AnalysisPanel::buildPeakFinding() {
  peak_finding_ = new QGroupBox(tr("Peak finding"));
  peak_finding_->setObjectName(QStringLiteral("peakFindingBox"));
  peak_finding_->setCheckable(true);
  peak_finding_->setToolTip(
      tr("peakfinder8 on every processed event (peak_finding.enabled); its parameters are in the "
         "Peak finder tuning dock"));
  peak_mask_ = makeEdit(QStringLiteral("peakMaskEdit"), tr("none"),
                        tr("FILE.npy or FILE.h5:/dataset, one event's pixels; non-zero = bad "
                           "(peak_finding.mask)"),
                        peak_finding_);
  beam_x_ = makeEdit(QStringLiteral("beamXEdit"), tr("x"),
                     tr("Beam centre in assembled-image pixels; both empty: the image's centre, "
                        "where the simulator puts it (peak_finding.beam)"),
                     peak_finding_);
  beam_y_ = makeEdit(QStringLiteral("beamYEdit"), tr("y"), beam_x_->toolTip(), peak_finding_);
  radius_map_ = makeEdit(QStringLiteral("radiusMapEdit"), tr("none: from the beam centre"),
                         tr("FILE.npy or FILE.h5:/dataset, each pixel's radius; replaces the "
                            "beam centre (peak_finding.radius_map)"),
                         peak_finding_);
  auto* beam = new QHBoxLayout;
  beam->addWidget(beam_x_);
  beam->addWidget(beam_y_);
  // Three to a row, so that the dock stays narrow enough to sit in a column of panels.
  auto* gains = new QGridLayout;
  for (const std::string& name : epix10ka_config_names()) {
    auto* check = new QCheckBox(QString::fromStdString(name), peak_finding_);
    check->setObjectName(QStringLiteral("gainConfig_%1").arg(QString::fromStdString(name)));
    check->setToolTip(
        tr("Search the pixels of this ePix10ka gain configuration; none ticked: every pixel "
           "(peak_finding.search_gain_configs)"));
    const int index = int(gain_configs_.size());
    gains->addWidget(check, index / kGainConfigsPerRow, index % kGainConfigsPerRow);
    gain_configs_[name] = check;
  }
  auto* form = new QFormLayout(peak_finding_);
  form->addRow(tr("mask"),
               fileRow(peak_mask_, tr("Peak-finding mask"), QString::fromLatin1(kArrayFilter)));
  form->addRow(tr("beam centre"), beam);
  form->addRow(tr("radius map"),
               fileRow(radius_map_, tr("Radius map"), QString::fromLatin1(kArrayFilter)));
  form->addRow(tr("gain configurations"), gains);
  return peak_finding_;
}

QWidget* AnalysisPanel::fileRow(QLineEdit* edit, const QString& caption, const QString& filter) {
  auto* row = new QWidget;
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* browse = new QToolButton(row);
  browse->setText(QStringLiteral("..."));
  browse->setToolTip(tr("Choose the file"));
  layout->addWidget(edit, 1);
  layout->addWidget(browse);
  connect(browse, &QToolButton::clicked, this, [this, edit, caption, filter] {
    const QString path = QFileDialog::getOpenFileName(
        this, caption, QFileInfo(edit->text().trimmed()).absolutePath(), filter);
    if (!path.isEmpty()) edit->setText(path);
  });
  return row;
}

QCheckBox* AnalysisPanel::gainConfigCheck(const std::string& name) const {
  const auto it = gain_configs_.find(name);
  return it == gain_configs_.end() ? nullptr : it->second;
}

void AnalysisPanel::setConfig(const EngineConfig& config) {
  if (applying_ && sectionsJson() != fields_at_apply_) {
    // Edited while an Apply was checked or applied: the fields keep the edits (not sent, and
    // said so when the answer comes); the configuration in force is the next Apply's base.
    shown_ = config;
    emit configShown(config);
    return;
  }
  showFields(config);
}

void AnalysisPanel::showFields(const EngineConfig& config) {
  shown_ = config;
  const CompressionConfig& compression = config.compression;
  compression_->setChecked(compression.enabled());
  // Off keeps the codec last chosen, for when it is turned on again.
  if (compression.enabled()) codec_->setCurrentText(QString::fromStdString(compression.codec));
  error_bound_->setText(shownNumber(compression.error_bound));

  const LiveIntegrationConfig& integration = config.integration;
  integration_->setChecked(integration.enabled);
  poni_->setText(QString::fromStdString(integration.poni));
  bins_->setValue(integration.npt);
  const QString unit = QString::fromStdString(integration.unit);
  if (unit_->findData(unit) < 0) unit_->addItem(unit, unit);  // a unit this GUI does not name
  unit_->setCurrentIndex(unit_->findData(unit));
  showOptionalPair(integration.radial_range, radial_min_, radial_max_);
  integration_mask_->setText(QString::fromStdString(integration.mask));
  polarization_->setText(integration.polarization ? shownNumber(*integration.polarization)
                                                  : QString());

  const LivePeakFindingConfig& peaks = config.peak_finding;
  peak_finding_->setChecked(peaks.enabled);
  peak_mask_->setText(QString::fromStdString(peaks.mask));
  showOptionalPair(peaks.beam, beam_x_, beam_y_);
  radius_map_->setText(QString::fromStdString(peaks.radius_map));
  for (const auto& [name, check] : gain_configs_)
    check->setChecked(std::find(peaks.search_gain_configs.begin(), peaks.search_gain_configs.end(),
                                name) != peaks.search_gain_configs.end());
  error_->hide();  // a refusal was about fields that are now replaced
  emit configShown(config);
}

nlohmann::json AnalysisPanel::sectionsJson() const {
  nlohmann::json gain_configs = nlohmann::json::array();
  for (const std::string& name : epix10ka_config_names())  // the engine's order of names
    if (gain_configs_.at(name)->isChecked()) gain_configs.push_back(name);
  return {{"compression",
           {{"codec", compression_->isChecked() ? codec_->currentText().toStdString() : "off"},
            {"error_bound", numberField(error_bound_)}}},
          {"integration",
           {{"enabled", integration_->isChecked()},
            {"poni", pathField(poni_)},
            {"npt", bins_->value()},
            {"unit", unit_->currentData().toString().toStdString()},
            {"radial_range", pairField(radial_min_, radial_max_)},
            {"mask", pathField(integration_mask_)},
            {"polarization", numberField(polarization_)}}},
          {"peak_finding",
           {{"enabled", peak_finding_->isChecked()},
            {"mask", pathField(peak_mask_)},
            {"beam", pairField(beam_x_, beam_y_)},
            {"radius_map", pathField(radius_map_)},
            {"search_gain_configs", gain_configs}}}};
}

EngineConfig AnalysisPanel::config() const {
  EngineConfig next = withAnalysisSections(shown_, sectionsJson());
  if (checks_files_) checkAnalysisFiles(next);
  return next;
}

bool AnalysisPanel::apply() {
  // One Apply at a time: the next is built over the answer to this one.
  if (applying_) return false;
  const nlohmann::json sections = sectionsJson();
  try {
    config();
  } catch (const std::exception& error) {
    const QString reason = QString::fromUtf8(error.what());
    showError(tr("not applied: %1").arg(reason));
    emit logMessage(tr("analysis not applied: %1").arg(reason));
    return false;
  }
  error_->hide();
  emit applyRequested(sections);
  return true;
}

void AnalysisPanel::setApplyAvailable(bool available, const QString& why) {
  apply_available_ = available;
  apply_->setEnabled(available && !applying_);
  apply_->setToolTip(available ? tr("Send the stages' settings to the engine: a running run "
                                    "restarts with them (the next run number); with no run, "
                                    "the next run starts with them")
                               : why);
}

void AnalysisPanel::showApplying(const QString& text) {
  if (!applying_) fields_at_apply_ = sectionsJson();
  applying_ = true;
  apply_->setEnabled(false);
  error_->hide();
  status_->setText(text);
}

void AnalysisPanel::showApplied(const QString& text) {
  const bool edited = applying_ && sectionsJson() != fields_at_apply_;
  applying_ = false;
  apply_->setEnabled(apply_available_);
  error_->hide();
  status_->setText(edited ? tr("%1; the fields hold edits made since, not applied").arg(text)
                          : text);
}

void AnalysisPanel::showError(const QString& text) {
  applying_ = false;
  apply_->setEnabled(apply_available_);
  error_->setText(text);
  error_->show();
}

QString AnalysisPanel::statusText() const {
  return status_->text();
}

QString AnalysisPanel::errorText() const {
  return error_->isHidden() ? QString() : error_->text();
}

}  // namespace livedrp::app
