#include "widgets/run_status_widget.hpp"

#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QStringList>

#include "widgets/number_format.hpp"
#include "widgets/refresh_coalescer.hpp"
#include "widgets/stats_model.hpp"

namespace livedrp::widgets {
namespace {
QLabel* makeLabel(const QString& name, QWidget* parent) {
  auto* label = new QLabel(parent);
  label->setObjectName(name);
  label->setTextFormat(Qt::PlainText);
  return label;
}

QFrame* separator(QWidget* parent) {
  auto* line = new QFrame(parent);
  line->setFrameShape(QFrame::VLine);
  line->setFrameShadow(QFrame::Sunken);
  return line;
}

// Re-polishing is not free: only touch the style sheet when it changes.
void setStyleSheetIfChanged(QWidget* widget, const QString& sheet) {
  if (widget->styleSheet() != sheet) widget->setStyleSheet(sheet);
}

QString orDash(const std::string& text) {
  return text.empty() ? QStringLiteral("-") : QString::fromStdString(text);
}
}  // namespace

QColor RunStatusWidget::stateColor(const QString& state) {
  if (state == QLatin1String("running")) return QColor(0x2e, 0x7d, 0x32);  // green
  if (state == QLatin1String("starting") || state == QLatin1String("stopping")) {
    return QColor(0xb2, 0x6a, 0x00);  // amber
  }
  if (state == QLatin1String("error")) return QColor(0xc6, 0x28, 0x28);  // red
  return QColor(0x55, 0x55, 0x55);                                       // idle, finished, unknown
}

RunStatusWidget::RunStatusWidget(StatsModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      coalescer_(new RefreshCoalescer(this)),
      state_(makeLabel(QStringLiteral("stateLabel"), this)),
      backend_(makeLabel(QStringLiteral("backendLabel"), this)),
      device_(makeLabel(QStringLiteral("deviceLabel"), this)),
      events_(makeLabel(QStringLiteral("eventsLabel"), this)),
      drops_(makeLabel(QStringLiteral("dropsLabel"), this)),
      malformed_(makeLabel(QStringLiteral("malformedLabel"), this)) {
  setObjectName(QStringLiteral("runStatus"));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 0, 4, 0);
  layout->setSpacing(8);
  layout->addWidget(malformed_);
  for (QLabel* label : {state_, backend_, device_, events_, drops_}) {
    layout->addWidget(separator(this));
    layout->addWidget(label);
  }
  QFont bold = state_->font();
  bold.setBold(true);
  state_->setFont(bold);
  malformed_->setStyleSheet(QStringLiteral("color: #c62828;"));

  if (model) connect(model, &StatsModel::updated, coalescer_, &RefreshCoalescer::request);
  connect(coalescer_, &RefreshCoalescer::refresh, this, &RunStatusWidget::refreshNow);
  refreshNow();
}

void RunStatusWidget::setMalformedCount(std::uint64_t count, const QString& last_error) {
  link_malformed_ = count;
  link_error_ = last_error;
  coalescer_->request();
}

void RunStatusWidget::setEngineLost(const QString& why) {
  lost_why_ = why;
  coalescer_->request();
}

void RunStatusWidget::refreshNow() {
  const bool has_stats = model_ && model_->hasStats();
  const bool has_status = model_ && model_->hasStatus();
  const protocol::StatsPayload empty_stats;
  const protocol::StatusPayload empty_status;
  const auto& stats = has_stats ? model_->latestStats() : empty_stats;
  const auto& status = has_status ? model_->latestStatus() : empty_status;

  const QString state =
      has_status ? QString::fromStdString(status.state)
                 : (has_stats ? QStringLiteral("running") : QStringLiteral("waiting for engine"));
  if (!lost_why_.isEmpty()) {
    state_->setText(QStringLiteral("engine lost"));
    setStyleSheetIfChanged(state_, QStringLiteral("color: %1;").arg(stateColor("error").name()));
    state_->setToolTip(lost_why_);
  } else {
    state_->setText(state);
    setStyleSheetIfChanged(state_, QStringLiteral("color: %1;").arg(stateColor(state).name()));
    state_->setToolTip(status.message.empty() ? QString() : QString::fromStdString(status.message));
  }

  // Stats carry what the engine actually runs on; status may arrive first.
  const std::string& backend = !stats.backend.empty() ? stats.backend : status.backend;
  const std::string& device = !stats.device.empty() ? stats.device : status.device;
  backend_->setText(QStringLiteral("backend: ") + orDash(backend));
  device_->setText(QStringLiteral("device: ") + orDash(device));
  device_->setToolTip(status.source.empty()
                          ? QString()
                          : QStringLiteral("source: ") + QString::fromStdString(status.source));

  events_->setText(QStringLiteral("events: ") + formatCount(stats.events_processed));
  events_->setToolTip(QStringLiteral("in: %1\nprocessed: %2\nin flight: %3\norder errors: %4")
                          .arg(formatCount(stats.events_in), formatCount(stats.events_processed),
                               formatCount(stats.events_in_flight),
                               formatCount(stats.order_errors)));

  drops_->setText(QStringLiteral("drops: ") + formatCount(stats.events_dropped));
  QStringList reasons;
  for (const auto& [reason, count] : stats.drops_by_reason) {
    reasons << QStringLiteral("%1: %2").arg(QString::fromStdString(reason), formatCount(count));
  }
  drops_->setToolTip(reasons.isEmpty() ? QStringLiteral("no events dropped")
                                       : reasons.join(QLatin1Char('\n')));
  setStyleSheetIfChanged(drops_, stats.events_dropped > 0
                                     ? QStringLiteral("color: #c62828; font-weight: bold;")
                                     : QString());

  const std::uint64_t malformed = link_malformed_ + (model_ ? model_->rejectedCount() : 0);
  malformed_->setVisible(malformed > 0);
  malformed_->setText(QStringLiteral("%1 malformed").arg(formatCount(malformed)));
  const QString last =
      model_ && model_->rejectedCount() > 0 ? model_->lastRejection() : link_error_;
  malformed_->setToolTip(QStringLiteral("messages rejected by the decoder; last: ") + last);
}

}  // namespace livedrp::widgets
