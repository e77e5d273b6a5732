#include "widgets/counters_view.hpp"

#include <QHeaderView>
#include <QStringList>

#include "widgets/number_format.hpp"
#include "widgets/refresh_coalescer.hpp"
#include "widgets/stats_model.hpp"

namespace livedrp::widgets {
namespace {
QString text(const std::string& value) {
  return value.empty() ? QStringLiteral("-") : QString::fromStdString(value);
}
// Stage times: microseconds below a millisecond, milliseconds above (the CPU backend on a 2-Mpixel
// detector takes tens of them).
QString stageTime(double us) {
  if (us >= 1000) return QString::number(us / 1000, 'f', 1) + QStringLiteral(" ms");
  return QString::number(us, 'f', 1) + QString::fromUtf8(" µs");
}
}  // namespace

CountersView::CountersView(StatsModel* model, QWidget* parent)
    : QTreeWidget(parent), model_(model), coalescer_(new RefreshCoalescer(this)) {
  setObjectName(QStringLiteral("countersView"));
  setColumnCount(2);
  setHeaderLabels({QStringLiteral("quantity"), QStringLiteral("value")});
  setRootIsDecorated(true);
  setUniformRowHeights(true);
  setAlternatingRowColors(true);
  setSelectionMode(QAbstractItemView::NoSelection);
  setFocusPolicy(Qt::NoFocus);
  header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  header()->setStretchLastSection(true);
  for (const char* name : {"Run", "Events", "Throughput", "Ring", "Stages"}) group(name);

  if (model) connect(model, &StatsModel::updated, coalescer_, &RefreshCoalescer::request);
  connect(coalescer_, &RefreshCoalescer::refresh, this, &CountersView::refreshNow);
  refreshNow();
  expandAll();
}

QTreeWidgetItem* CountersView::group(const QString& name) {
  auto it = groups_.find(name);
  if (it != groups_.end()) return it->second;
  auto* item = new QTreeWidgetItem(this, QStringList{name});
  QFont bold = item->font(0);
  bold.setBold(true);
  item->setFont(0, bold);
  item->setFirstColumnSpanned(false);
  groups_.emplace(name, item);
  return item;
}

QTreeWidgetItem* CountersView::child(const QTreeWidgetItem* parent, const QString& name) {
  for (int i = 0; i < parent->childCount(); ++i) {
    if (parent->child(i)->text(0) == name) return parent->child(i);
  }
  return nullptr;
}

QString CountersView::valueText(const QString& group_name, const QString& name) const {
  const auto it = groups_.find(group_name);
  if (it == groups_.end()) return {};
  const QTreeWidgetItem* item = it->second;
  for (const QString& part : name.split(QLatin1Char('/'))) {
    item = child(item, part);
    if (!item) return {};
  }
  return item->text(1);
}

void CountersView::setRows(QTreeWidgetItem* parent, const Rows& rows) {
  while (parent->childCount() > int(rows.size())) delete parent->takeChild(parent->childCount() - 1);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    QTreeWidgetItem* item = i < std::size_t(parent->childCount()) ? parent->child(int(i))
                                                                  : new QTreeWidgetItem(parent);
    if (item->text(0) != rows[i].first) item->setText(0, rows[i].first);
    if (item->text(1) != rows[i].second) item->setText(1, rows[i].second);
  }
}

void CountersView::refreshNow() {
  const protocol::StatsPayload empty_stats;
  const protocol::StatusPayload empty_status;
  const bool has_stats = model_ && model_->hasStats();
  const auto& stats = has_stats ? model_->latestStats() : empty_stats;
  const auto& status = model_ && model_->hasStatus() ? model_->latestStatus() : empty_status;

  setRows(group(QStringLiteral("Run")),
          {{QStringLiteral("state"), text(status.state)},
           {QStringLiteral("source"), text(status.source)},
           {QStringLiteral("detector"), text(status.detector)},
           {QStringLiteral("run"), has_stats ? QString::number(model_->run()) : QStringLiteral("-")},
           {QStringLiteral("elapsed"), formatDuration(stats.elapsed_s)}});

  QTreeWidgetItem* events = group(QStringLiteral("Events"));
  setRows(events, {{QStringLiteral("in"), formatCount(stats.events_in)},
                   {QStringLiteral("processed"), formatCount(stats.events_processed)},
                   {QStringLiteral("dropped"), formatCount(stats.events_dropped)},
                   {QStringLiteral("in flight"), formatCount(stats.events_in_flight)},
                   {QStringLiteral("order errors"), formatCount(stats.order_errors)}});
  Rows reasons;
  for (const auto& [reason, count] : stats.drops_by_reason) {
    reasons.emplace_back(QString::fromStdString(reason), formatCount(count));
  }
  QTreeWidgetItem* dropped = child(events, QStringLiteral("dropped"));
  setRows(dropped, reasons);
  if (!reasons.empty() && !dropped->isExpanded()) dropped->setExpanded(true);

  setRows(group(QStringLiteral("Throughput")),
          {{QStringLiteral("event rate"), formatRateHz(stats.event_rate_hz)},
           {QStringLiteral("input"), formatGbps(stats.input_gbps)}});

  setRows(group(QStringLiteral("Ring")),
          {{QStringLiteral("occupancy"), QStringLiteral("%1 / %2")
                                             .arg(formatCount(stats.ring_occupancy),
                                                  formatCount(stats.ring_slots))}});

  // One row per stage with its throughput, its times per event below it.
  QTreeWidgetItem* stages_group = group(QStringLiteral("Stages"));
  Rows stages;
  for (const auto& stage : stats.stages) {
    stages.emplace_back(QString::fromStdString(stage.name), formatGbps(stage.gbps));
  }
  setRows(stages_group, stages);
  for (std::size_t i = 0; i < stats.stages.size(); ++i) {
    QTreeWidgetItem* stage = stages_group->child(int(i));
    const bool fresh = stage->childCount() == 0;
    setRows(stage, {{QStringLiteral("mean time"), stageTime(stats.stages[i].mean_us)},
                    {QStringLiteral("max time"), stageTime(stats.stages[i].max_us)}});
    if (fresh) stage->setExpanded(true);
  }
}

}  // namespace livedrp::widgets
