#include "app/peak_tuning_panel.hpp"

#include <exception>
#include <fstream>

#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace livedrp::app {
namespace {

// Every parameter, with the member it sets: one table, so the form, the JSON and the checks
// cannot disagree on a name.
struct IntParam {
  const char* name;
  int peaks::PeakFinderParams::*member;
};
struct FloatParam {
  const char* name;
  float peaks::PeakFinderParams::*member;
};
constexpr IntParam kIntParams[] = {
    {"max_num_peaks", &peaks::PeakFinderParams::max_num_peaks},
    {"min_pixel_count", &peaks::PeakFinderParams::min_pixel_count},
    {"max_pixel_count", &peaks::PeakFinderParams::max_pixel_count},
    {"local_bg_radius", &peaks::PeakFinderParams::local_bg_radius},
    {"iterations", &peaks::PeakFinderParams::iterations},
    {"min_peaks_for_hit", &peaks::PeakFinderParams::min_peaks_for_hit}};
constexpr FloatParam kFloatParams[] = {{"adc_threshold", &peaks::PeakFinderParams::adc_threshold},
                                       {"minimum_snr", &peaks::PeakFinderParams::minimum_snr},
                                       {"min_res", &peaks::PeakFinderParams::min_res},
                                       {"max_res", &peaks::PeakFinderParams::max_res}};

// The spin boxes reach past what peaks::validate accepts, so that a value out of range is
// refused with its reason rather than silently clamped by the widget.
constexpr int kIntFieldLimit = 1'000'000;
constexpr double kFloatFieldLimit = 1e9;

}  // namespace

PeakTuningPanel::PeakTuningPanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("peakTuningPanel"));
  form_ = new QFormLayout;
  // In the order a user tunes them: thresholds, peak size, background, resolution, hits.
  addFloatField("adc_threshold", -kFloatFieldLimit, kFloatFieldLimit, 2,
                tr("Floor of every radius bin's upper threshold (calibrated units)"));
  addFloatField("minimum_snr", -1000, 1000, 2,
                tr("Signal-to-noise threshold of the radial statistics and of each peak"));
  addIntField("min_pixel_count", -kIntFieldLimit, kIntFieldLimit,
              tr("Fewest pixels a peak may have"));
  addIntField("max_pixel_count", -kIntFieldLimit, kIntFieldLimit,
              tr("Most pixels a peak may have"));
  addIntField("local_bg_radius", -kIntFieldLimit, kIntFieldLimit,
              tr("Radius (pixels) of the local background ring around each peak"));
  addFloatField("min_res", -kFloatFieldLimit, kFloatFieldLimit, 1,
                tr("Pixels closer to the beam than this (pixels) are not searched"));
  addFloatField("max_res", -kFloatFieldLimit, kFloatFieldLimit, 1,
                tr("Pixels farther from the beam than this (pixels) are not searched"));
  addIntField("iterations", -kIntFieldLimit, kIntFieldLimit,
              tr("Iterations of the radial statistics (5 in the reference)"));
  addIntField("max_num_peaks", -kIntFieldLimit, kIntFieldLimit,
              tr("Peaks listed per event (more are counted, not listed)"));
  addIntField("min_peaks_for_hit", -kIntFieldLimit, kIntFieldLimit,
              tr("An event with at least this many peaks is a hit"));
  setFormParams(in_force_);

  apply_button_ = new QPushButton(tr("Apply"));
  apply_button_->setObjectName(QStringLiteral("peakTuningApply"));
  apply_button_->setToolTip(
      tr("Send the changed parameters to the engine; the running run "
         "keeps going and later events use them"));
  revert_button_ = new QPushButton(tr("Revert"));
  revert_button_->setToolTip(tr("Show the parameters in force again"));
  refresh_button_ = new QPushButton(tr("Read from engine"));
  refresh_button_->setToolTip(tr("Ask the engine for the parameters in force"));
  rerun_frames_ = new QSpinBox;
  rerun_frames_->setObjectName(QStringLiteral("peakTuningRerunFrames"));
  rerun_frames_->setRange(1, kMaxRerunFrames);
  rerun_frames_->setValue(kDefaultRerunFrames);
  rerun_frames_->setSuffix(tr(" frames"));
  rerun_button_ = new QPushButton(tr("Re-run on recent frames"));
  rerun_button_->setObjectName(QStringLiteral("peakTuningRerun"));
  rerun_button_->setToolTip(
      tr("Run the parameters in force over the newest frames the engine "
         "keeps (peak_finding.recent_frames); their peaks are published "
         "as re-run `peaks` messages"));
  save_button_ = new QPushButton(tr("Save…"));
  save_button_->setToolTip(
      tr("Save the form's values as PARAMS.json (livedrp-engine peaks "
         "--params reads it)"));
  load_button_ = new QPushButton(tr("Load…"));
  load_button_->setToolTip(tr("Load a PARAMS.json into the form (Apply sends it)"));

  refusal_ = new QLabel;
  refusal_->setObjectName(QStringLiteral("peakTuningRefusal"));
  refusal_->setWordWrap(true);
  refusal_->setStyleSheet(QStringLiteral("color: #c00000; font-weight: bold;"));
  refusal_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  refusal_->hide();
  status_ = new QLabel;
  status_->setObjectName(QStringLiteral("peakTuningStatus"));
  status_->setWordWrap(true);

  auto* apply_row = new QHBoxLayout;
  apply_row->addWidget(apply_button_);
  apply_row->addWidget(revert_button_);
  apply_row->addWidget(refresh_button_);
  apply_row->addStretch(1);
  auto* rerun_row = new QHBoxLayout;
  rerun_row->addWidget(rerun_button_);
  rerun_row->addWidget(rerun_frames_);
  rerun_row->addStretch(1);
  auto* file_row = new QHBoxLayout;
  file_row->addWidget(save_button_);
  file_row->addWidget(load_button_);
  file_row->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form_);
  layout->addLayout(apply_row);
  layout->addLayout(rerun_row);
  layout->addLayout(file_row);
  layout->addWidget(refusal_);
  layout->addWidget(status_);
  layout->addStretch(1);

  connect(apply_button_, &QPushButton::clicked, this, [this] { apply(); });
  connect(revert_button_, &QPushButton::clicked, this, [this] {
    setFormParams(in_force_);
    setRefusal(QString());
  });
  connect(refresh_button_, &QPushButton::clicked, this, [this] { emit paramsRequested(); });
  connect(rerun_button_, &QPushButton::clicked, this, [this] { rerun(); });
  connect(save_button_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save peak-finder parameters"),
                                                      QString(), tr("JSON (*.json)"));
    if (!path.isEmpty()) saveToFile(path.endsWith(QLatin1String(".json")) ? path : path + ".json");
  });
  connect(load_button_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Load peak-finder parameters"),
                                                      QString(), tr("JSON (*.json)"));
    if (!path.isEmpty()) loadFromFile(path);
  });
  updatePending();
}

void PeakTuningPanel::addIntField(const std::string& name, int minimum, int maximum,
                                  const QString& tip) {
  auto* box = new QSpinBox;
  box->setObjectName(QString::fromStdString("peakParam_" + name));
  box->setRange(minimum, maximum);
  box->setToolTip(tip);
  fields_[name] = box;
  auto* label = new QLabel(QString::fromStdString(name));
  label->setToolTip(tip);
  form_->addRow(label, box);
  connect(box, &QSpinBox::valueChanged, this, &PeakTuningPanel::updatePending);
}

void PeakTuningPanel::addFloatField(const std::string& name, double minimum, double maximum,
                                    int decimals, const QString& tip) {
  auto* box = new QDoubleSpinBox;
  box->setObjectName(QString::fromStdString("peakParam_" + name));
  box->setDecimals(decimals);
  box->setRange(minimum, maximum);
  box->setToolTip(tip);
  fields_[name] = box;
  auto* label = new QLabel(QString::fromStdString(name));
  label->setToolTip(tip);
  form_->addRow(label, box);
  connect(box, &QDoubleSpinBox::valueChanged, this, &PeakTuningPanel::updatePending);
}

QAbstractSpinBox* PeakTuningPanel::field(const std::string& name) const {
  const auto it = fields_.find(name);
  return it == fields_.end() ? nullptr : it->second;
}

peaks::PeakFinderParams PeakTuningPanel::formParams() const {
  peaks::PeakFinderParams params;
  for (const IntParam& p : kIntParams)
    params.*p.member = static_cast<QSpinBox*>(fields_.at(p.name))->value();
  for (const FloatParam& p : kFloatParams)
    params.*p.member = float(static_cast<QDoubleSpinBox*>(fields_.at(p.name))->value());
  return params;
}

void PeakTuningPanel::setFormParams(const peaks::PeakFinderParams& params) {
  for (const IntParam& p : kIntParams)
    static_cast<QSpinBox*>(fields_.at(p.name))->setValue(params.*p.member);
  for (const FloatParam& p : kFloatParams)
    static_cast<QDoubleSpinBox*>(fields_.at(p.name))->setValue(double(params.*p.member));
  updatePending();
}

nlohmann::json PeakTuningPanel::changedParams() const {
  const nlohmann::json form = peaks::to_json(formParams());
  const nlohmann::json force = peaks::to_json(in_force_);
  nlohmann::json changed = nlohmann::json::object();
  for (const auto& [name, value] : form.items())
    if (!force.contains(name) || force.at(name) != value) changed[name] = value;
  return changed;
}

bool PeakTuningPanel::apply() {
  if (const std::string problem = peaks::validate(formParams()); !problem.empty()) {
    setRefusal(tr("not sent: %1").arg(QString::fromStdString(problem)));
    return false;
  }
  const nlohmann::json changed = changedParams();
  if (changed.empty()) {
    setRefusal(QString());
    status_->setText(tr("nothing to apply: the form shows the parameters in force"));
    return false;
  }
  setRefusal(QString());
  status_->setText(tr("applying %1 …").arg(QString::fromStdString(changed.dump())));
  emit applyRequested({{"params", changed}});
  return true;
}

void PeakTuningPanel::rerun() {
  setRefusal(QString());
  status_->setText(tr("re-running on the newest %1 frames …").arg(rerun_frames_->value()));
  emit rerunRequested({{"frames", rerun_frames_->value()}});
}

bool PeakTuningPanel::saveToFile(const QString& path) {
  const peaks::PeakFinderParams params = formParams();
  if (const std::string problem = peaks::validate(params); !problem.empty()) {
    setRefusal(tr("not saved: %1").arg(QString::fromStdString(problem)));
    return false;
  }
  std::ofstream out(path.toStdString());
  out << peaks::to_json(params).dump(2) << '\n';
  out.close();
  if (!out) {
    setRefusal(tr("cannot write %1").arg(path));
    return false;
  }
  setRefusal(QString());
  status_->setText(tr("saved to %1").arg(path));
  return true;
}

bool PeakTuningPanel::loadFromFile(const QString& path) {
  try {
    setFormParams(peaks::load_peak_params(path.toStdString()));
  } catch (const std::exception& error) {
    setRefusal(tr("not loaded: %1").arg(QString::fromUtf8(error.what())));
    return false;
  }
  setRefusal(QString());
  updatePending();
  status_->setText(status_->text() + tr(" · loaded %1 (Apply sends it)").arg(path));
  return true;
}

void PeakTuningPanel::setSendAvailable(bool available, const QString& why) {
  send_available_ = available;
  send_unavailable_why_ = why;
  updateSendControls();
}

void PeakTuningPanel::showParams(const nlohmann::json& reply) {
  try {
    const peaks::PeakFinderParams params =
        peaks::parse_peak_params(reply.at("params"), "the engine's peak-finder parameters");
    in_force_ = params;
    version_ = reply.at("params_version").get<std::uint64_t>();
    enabled_ = reply.at("enabled").get<bool>();
  } catch (const std::exception& error) {
    setRefusal(tr("the engine's reply is not readable: %1").arg(QString::fromUtf8(error.what())));
    return;
  }
  setRefusal(QString());
  setFormParams(in_force_);
  updateSendControls();
}

void PeakTuningPanel::showRefusal(const QString& reason) {
  setRefusal(reason);
  updatePending();
}

void PeakTuningPanel::showRerun(const nlohmann::json& result) {
  try {
    QStringList per_frame;
    for (const auto& count : result.at("peaks_per_frame"))
      per_frame << QString::number(count.get<std::uint64_t>());
    rerun_text_ = tr("re-run with parameters v%1 on %2 frame(s): %3 hit(s); peaks per frame %4")
                      .arg(result.at("params_version").get<std::uint64_t>())
                      .arg(result.at("frames").get<std::uint64_t>())
                      .arg(result.at("hits").get<std::uint64_t>())
                      .arg(per_frame.join(QStringLiteral(", ")));
  } catch (const std::exception& error) {
    setRefusal(
        tr("the engine's re-run reply is not readable: %1").arg(QString::fromUtf8(error.what())));
    return;
  }
  setRefusal(QString());
  updatePending();
}

QString PeakTuningPanel::refusalText() const {
  return refusal_->text();
}

QString PeakTuningPanel::statusText() const {
  return status_->text();
}

void PeakTuningPanel::setRefusal(const QString& text) {
  refusal_->setText(text);
  refusal_->setVisible(!text.isEmpty());
}

void PeakTuningPanel::updatePending() {
  if (!status_) return;  // still building the form
  QStringList lines;
  if (version_)
    lines << tr("in force on the engine: parameters v%1%2")
                 .arg(*version_)
                 .arg(enabled_ && !*enabled_ ? tr(" (peak finding is off)") : QString());
  else
    lines << tr("parameters in force: not read from the engine yet (the form shows defaults)");
  const nlohmann::json changed = changedParams();
  if (!changed.empty())
    lines << tr("%n change(s) not applied: %1", nullptr, int(changed.size()))
                 .arg(QString::fromStdString(changed.dump()));
  if (!rerun_text_.isEmpty()) lines << rerun_text_;
  status_->setText(lines.join(QLatin1Char('\n')));
  // Fields that differ from the parameters in force are shown in bold.
  for (const auto& [name, box] : fields_) {
    QFont font = box->font();
    font.setBold(changed.contains(name));
    box->setFont(font);
  }
}

void PeakTuningPanel::updateSendControls() {
  QString why;
  if (!send_available_)
    why = send_unavailable_why_;
  else if (enabled_ && !*enabled_)
    why =
        tr("peak finding is off on the engine: turn it on in the engine configuration "
           "(peak_finding.enabled: true) first");
  for (QPushButton* button : {apply_button_, rerun_button_, refresh_button_}) {
    // The button's own tooltip is kept aside while the reason it is disabled replaces it.
    if (!button->property("usualToolTip").isValid())
      button->setProperty("usualToolTip", button->toolTip());
    const bool enabled = button == refresh_button_ ? send_available_ : why.isEmpty();
    button->setEnabled(enabled);
    button->setToolTip(enabled ? button->property("usualToolTip").toString() : why);
  }
}

}  // namespace livedrp::app
