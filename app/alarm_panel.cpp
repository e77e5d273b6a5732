#include "app/alarm_panel.hpp"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QTimer>
#include <QVBoxLayout>

#include "core/error.hpp"

namespace livedrp::app {

namespace {

constexpr int kTickMs = 500;  // amber turns red without waiting for the next stats message

// Indicator colours: amber and red as signal lamps, readable text on each.
constexpr const char* kAmberStyle = "QLabel { background: #ffbf00; color: black; padding: 0 6px; }";
constexpr const char* kRedStyle = "QLabel { background: #d32f2f; color: white; padding: 0 6px; }";
constexpr const char* kOkStyle = "QLabel { padding: 0 6px; }";

QDoubleSpinBox* spin(double maximum, double value, const QString& suffix, int decimals = 1) {
  auto* box = new QDoubleSpinBox;
  box->setRange(0, maximum);
  box->setDecimals(decimals);
  box->setValue(value);
  box->setSuffix(suffix);
  return box;
}

}  // namespace

AlarmPanel::AlarmPanel(QWidget* parent) : QWidget(parent), tick_(new QTimer(this)) {
  clock_.start();
  rate_on_ = new QCheckBox(tr("Event rate below"));
  rate_floor_ = spin(1e7, 1000, tr(" events/s"), 0);
  drops_on_ = new QCheckBox(tr("Drops above"));
  drop_ceiling_ = spin(100, 1, tr(" %"));
  hits_on_ = new QCheckBox(tr("Hit rate outside"));
  hit_min_ = spin(100, 5, tr(" %"));
  hit_max_ = spin(100, 20, tr(" %"));
  gain_on_ = new QCheckBox(tr("Gain mode above"));
  gain_ceiling_ = spin(100, 5, tr(" %"));
  gain_mode_ = new QLineEdit(QStringLiteral("bad"));
  gain_mode_->setToolTip(
      tr("The gain mode as the detector names it (the Gain modes dock's legend), or \"bad\"; "
         "the alarm watches the worst segment"));
  red_after_ = spin(3600, 10, tr(" s"));
  errors_on_ = new QCheckBox(tr("Engine errors turn red"));
  errors_on_->setChecked(true);
  acknowledge_ = new QPushButton(tr("Acknowledge errors"));
  problem_ = new QLabel;
  problem_->setStyleSheet(QStringLiteral("color: #d32f2f;"));
  problem_->setWordWrap(true);
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  indicator_ = new QLabel;
  indicator_->setObjectName(QStringLiteral("alarmIndicator"));
  rate_on_->setObjectName(QStringLiteral("alarmRateOn"));
  rate_floor_->setObjectName(QStringLiteral("alarmRateFloor"));
  drops_on_->setObjectName(QStringLiteral("alarmDropsOn"));
  drop_ceiling_->setObjectName(QStringLiteral("alarmDropCeiling"));
  hits_on_->setObjectName(QStringLiteral("alarmHitsOn"));
  hit_min_->setObjectName(QStringLiteral("alarmHitMin"));
  hit_max_->setObjectName(QStringLiteral("alarmHitMax"));
  gain_on_->setObjectName(QStringLiteral("alarmGainOn"));
  gain_ceiling_->setObjectName(QStringLiteral("alarmGainCeiling"));
  gain_mode_->setObjectName(QStringLiteral("alarmGainMode"));
  red_after_->setObjectName(QStringLiteral("alarmRedAfter"));
  acknowledge_->setObjectName(QStringLiteral("alarmAcknowledge"));

  auto* band = new QHBoxLayout;
  band->addWidget(hit_min_);
  band->addWidget(new QLabel(tr("to")));
  band->addWidget(hit_max_);
  auto* form = new QFormLayout;
  form->addRow(rate_on_, rate_floor_);
  form->addRow(drops_on_, drop_ceiling_);
  form->addRow(hits_on_, band);
  auto* gain = new QHBoxLayout;
  gain->addWidget(gain_ceiling_);
  gain->addWidget(new QLabel(tr("of a segment in")));
  gain->addWidget(gain_mode_);
  form->addRow(gain_on_, gain);
  form->addRow(tr("Red after"), red_after_);
  form->addRow(errors_on_, acknowledge_);
  // In a scroll area: the dock shares its column with the Log in the default 1920x1080 layout,
  // and its form must not set that column's minimum height.
  auto* content = new QWidget;
  auto* layout = new QVBoxLayout(content);
  layout->addLayout(form);
  layout->addWidget(problem_);
  layout->addWidget(summary_);
  layout->addStretch(1);
  auto* scroll = new QScrollArea;
  scroll->setWidget(content);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->addWidget(scroll);

  for (QCheckBox* box : {rate_on_, drops_on_, hits_on_, gain_on_, errors_on_})
    connect(box, &QCheckBox::toggled, this, &AlarmPanel::onFieldsChanged);
  for (QDoubleSpinBox* box :
       {rate_floor_, drop_ceiling_, hit_min_, hit_max_, gain_ceiling_, red_after_})
    connect(box, &QDoubleSpinBox::valueChanged, this, &AlarmPanel::onFieldsChanged);
  connect(gain_mode_, &QLineEdit::textChanged, this, &AlarmPanel::onFieldsChanged);
  connect(acknowledge_, &QPushButton::clicked, this, &AlarmPanel::acknowledge);
  connect(tick_, &QTimer::timeout, this, &AlarmPanel::refresh);
  tick_->start(kTickMs);
  onFieldsChanged();
}

void AlarmPanel::useSettings(QSettings* settings) {
  settings_ = settings;
  if (settings_) {
    loading_ = true;
    const auto load = [&](QCheckBox* on, QDoubleSpinBox* box, const QString& key) {
      if (on)
        on->setChecked(settings_->value(key + QStringLiteral("_on"), on->isChecked()).toBool());
      box->setValue(settings_->value(key, box->value()).toDouble());
    };
    load(rate_on_, rate_floor_, QStringLiteral("alarms/rate_floor_hz"));
    load(drops_on_, drop_ceiling_, QStringLiteral("alarms/drop_ceiling_pct"));
    load(hits_on_, hit_min_, QStringLiteral("alarms/hit_rate_min_pct"));
    load(nullptr, hit_max_, QStringLiteral("alarms/hit_rate_max_pct"));
    load(gain_on_, gain_ceiling_, QStringLiteral("alarms/gain_ceiling_pct"));
    gain_mode_->setText(
        settings_->value(QStringLiteral("alarms/gain_mode"), gain_mode_->text()).toString());
    load(nullptr, red_after_, QStringLiteral("alarms/red_after_s"));
    errors_on_->setChecked(settings_->value(QStringLiteral("alarms/engine_errors"), true).toBool());
    loading_ = false;
  }
  onFieldsChanged();
}

void AlarmPanel::onFieldsChanged() {
  if (loading_) return;
  AlarmSettings s;
  if (rate_on_->isChecked()) s.rate_floor_hz = rate_floor_->value();
  if (drops_on_->isChecked()) s.drop_ceiling_pct = drop_ceiling_->value();
  if (hits_on_->isChecked()) {
    s.hit_rate_min_pct = hit_min_->value();
    s.hit_rate_max_pct = hit_max_->value();
  }
  if (gain_on_->isChecked()) s.gain_ceiling_pct = gain_ceiling_->value();
  s.gain_mode = gain_mode_->text().trimmed().toStdString();
  s.red_after_s = red_after_->value();
  s.engine_errors = errors_on_->isChecked();
  try {
    monitor_.set_settings(s);
    problem_->clear();
  } catch (const InputError& error) {
    problem_->setText(QString::fromUtf8(error.what()) + tr(" (the alarms in force are kept)"));
    return;
  }
  if (settings_) {
    settings_->setValue(QStringLiteral("alarms/rate_floor_hz_on"), rate_on_->isChecked());
    settings_->setValue(QStringLiteral("alarms/rate_floor_hz"), rate_floor_->value());
    settings_->setValue(QStringLiteral("alarms/drop_ceiling_pct_on"), drops_on_->isChecked());
    settings_->setValue(QStringLiteral("alarms/drop_ceiling_pct"), drop_ceiling_->value());
    settings_->setValue(QStringLiteral("alarms/hit_rate_min_pct_on"), hits_on_->isChecked());
    settings_->setValue(QStringLiteral("alarms/hit_rate_min_pct"), hit_min_->value());
    settings_->setValue(QStringLiteral("alarms/hit_rate_max_pct"), hit_max_->value());
    settings_->setValue(QStringLiteral("alarms/gain_ceiling_pct_on"), gain_on_->isChecked());
    settings_->setValue(QStringLiteral("alarms/gain_ceiling_pct"), gain_ceiling_->value());
    settings_->setValue(QStringLiteral("alarms/gain_mode"), gain_mode_->text().trimmed());
    settings_->setValue(QStringLiteral("alarms/red_after_s"), red_after_->value());
    settings_->setValue(QStringLiteral("alarms/engine_errors"), errors_on_->isChecked());
  }
  refresh();
}

void AlarmPanel::setAlarmSettings(const AlarmSettings& s) {
  validate(s);
  loading_ = true;
  rate_on_->setChecked(s.rate_floor_hz.has_value());
  if (s.rate_floor_hz) rate_floor_->setValue(*s.rate_floor_hz);
  drops_on_->setChecked(s.drop_ceiling_pct.has_value());
  if (s.drop_ceiling_pct) drop_ceiling_->setValue(*s.drop_ceiling_pct);
  hits_on_->setChecked(s.hit_rate_min_pct || s.hit_rate_max_pct);
  hit_min_->setValue(s.hit_rate_min_pct.value_or(0));
  hit_max_->setValue(s.hit_rate_max_pct.value_or(100));
  gain_on_->setChecked(s.gain_ceiling_pct.has_value());
  if (s.gain_ceiling_pct) gain_ceiling_->setValue(*s.gain_ceiling_pct);
  gain_mode_->setText(QString::fromStdString(s.gain_mode));
  red_after_->setValue(s.red_after_s);
  errors_on_->setChecked(s.engine_errors);
  loading_ = false;
  onFieldsChanged();
}

QString AlarmPanel::fieldProblem() const {
  return problem_->text();
}

void AlarmPanel::acknowledge() {
  monitor_.acknowledge();
  refresh();
}

void AlarmPanel::apply(const widgets::MessageBatch& batch) {
  bool changed = false;
  for (const widgets::MessagePtr& message : batch) {
    if (!message) continue;
    try {
      if (message->topic == protocol::kTopicStats) {
        monitor_.on_stats(protocol::stats_from_json(message->payload), seconds());
        changed = true;
      } else if (message->topic == protocol::kTopicStatus) {
        const std::string state = protocol::status_from_json(message->payload).state;
        if (state != "running" && state != "starting") {
          monitor_.on_idle();
          changed = true;
        }
      } else if (message->topic == protocol::kTopicLog) {
        const protocol::LogEntry entry = protocol::log_entry_from_message(*message);
        monitor_.on_log(entry);
        QString line =
            tr("engine %1: %2")
                .arg(QString::fromUtf8(protocol::to_string(entry.level).data(),
                                       qsizetype(protocol::to_string(entry.level).size())),
                     QString::fromStdString(entry.text));
        if (entry.suppressed > 0)
          line += tr(" (%1 earlier held back by the rate limit)").arg(entry.suppressed);
        emit engineLog(line);
        changed = true;
      }
    } catch (const protocol::ProtocolError& error) {
      emit engineLog(
          tr("a %1 message was not readable: %2")
              .arg(QString::fromStdString(message->topic), QString::fromUtf8(error.what())));
    }
  }
  if (changed) refresh();
}

void AlarmPanel::applyImage(const protocol::ImageFrame& image) {
  monitor_.on_image(image, seconds());
  refresh();
}

void AlarmPanel::refresh() {
  const AlarmState state = monitor_.state(seconds());
  QStringList reasons;
  for (const std::string& reason : state.reasons) reasons << QString::fromStdString(reason);
  switch (state.level) {
    case AlarmLevel::Ok:
      indicator_->setText(tr("Alarms: OK"));
      indicator_->setStyleSheet(QString::fromLatin1(kOkStyle));
      summary_->setText(tr("No alarm."));
      break;
    case AlarmLevel::Amber:
    case AlarmLevel::Red: {
      const QString first = reasons.value(0);
      indicator_->setText(reasons.size() > 1
                              ? tr("Alarm: %1 (+%2)").arg(first).arg(reasons.size() - 1)
                              : tr("Alarm: %1").arg(first));
      indicator_->setStyleSheet(
          QString::fromLatin1(state.level == AlarmLevel::Red ? kRedStyle : kAmberStyle));
      summary_->setText(reasons.join(QLatin1Char('\n')));
      break;
    }
  }
  indicator_->setToolTip(reasons.join(QLatin1Char('\n')));
  acknowledge_->setEnabled(monitor_.unacknowledged_errors() > 0);
}

}  // namespace livedrp::app
