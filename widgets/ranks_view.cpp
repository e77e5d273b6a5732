#include "widgets/ranks_view.hpp"

#include <cmath>

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include "widgets/stats_model.hpp"

namespace livedrp::widgets {

namespace {

const QColor kProblemBackground(0xff, 0xcd, 0xd2);  // lost or failed: a light red row

QString count(std::uint64_t value) {
  return QString::number(value);
}

QString rate(double hz) {
  return std::isfinite(hz) ? QString::number(hz, 'f', 1) : QStringLiteral("-");
}

QString drops(std::uint64_t total, const std::map<std::string, std::uint64_t>& by_reason) {
  QString text = count(total);
  QStringList reasons;
  for (const auto& [reason, n] : by_reason)
    if (n > 0) reasons << QStringLiteral("%1 %2").arg(QString::fromStdString(reason)).arg(n);
  if (!reasons.isEmpty()) text += QStringLiteral(" (") + reasons.join(QStringLiteral(", ")) + ')';
  return text;
}

}  // namespace

RanksView::RanksView(StatsModel* model, QWidget* parent)
    : QWidget(parent), model_(model), summary_(new QLabel), table_(new QTableWidget) {
  setObjectName(QStringLiteral("ranksView"));
  table_->setObjectName(QStringLiteral("ranksTable"));
  table_->setColumnCount(ColumnCount);
  table_->setHorizontalHeaderLabels({tr("rank"), tr("host, pid"), tr("state"), tr("in"),
                                     tr("processed"), tr("dropped"), tr("events/s"), tr("backend"),
                                     tr("heard (s ago)")});
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(summary_);
  layout->addWidget(table_);
  setVisible(false);
  if (model) {
    connect(model, &StatsModel::updated, this, [this] {
      if (model_ && model_->hasStats()) showStats(model_->latestStats());
    });
  }
}

void RanksView::showStats(const protocol::StatsPayload& stats) {
  if (!stats.ranks) {
    setVisible(false);
    return;
  }
  const protocol::RanksBlock& ranks = *stats.ranks;
  summary_->setText(
      tr("MPI run: %1 ranks, rank %2 collects%3")
          .arg(ranks.size)
          .arg(ranks.collector)
          .arg(ranks.collector_processes ? tr(" and processes") : tr(" (it processes no share)")));
  const int rows = int(ranks.processing.size()) + 1;
  table_->setRowCount(rows);
  const auto set = [&](int row, int column, const QString& text, const QColor& background) {
    auto* item = new QTableWidgetItem(text);
    if (background.isValid()) item->setBackground(background);
    if (column >= In && column <= Rate) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    table_->setItem(row, column, item);
  };
  int row = 0;
  for (const protocol::RankStats& rank : ranks.processing) {
    const bool problem = rank.state == protocol::kRankLost || rank.state == protocol::kRankFailed;
    const QColor background = problem ? kProblemBackground : QColor();
    QString state = QString::fromStdString(rank.state);
    if (!rank.error.empty()) state += QStringLiteral(": ") + QString::fromStdString(rank.error);
    set(row, Rank, count(rank.rank), background);
    set(row, Where,
        rank.host.empty()
            ? tr("-")
            : QStringLiteral("%1, %2").arg(QString::fromStdString(rank.host)).arg(rank.pid),
        background);
    set(row, State, state, background);
    set(row, In, count(rank.events_in), background);
    set(row, Processed, count(rank.events_processed), background);
    set(row, Dropped, drops(rank.events_dropped, rank.drops_by_reason), background);
    set(row, Rate, rate(rank.event_rate_hz), background);
    set(row, Backend,
        rank.device.empty() ? QString::fromStdString(rank.backend)
                            : QStringLiteral("%1 (%2)").arg(QString::fromStdString(rank.backend),
                                                            QString::fromStdString(rank.device)),
        background);
    set(row, Heard, QString::number(rank.report_age_s, 'f', 1), background);
    ++row;
  }
  // The merged counts the collector publishes (the sum of the ranks' as it merged them).
  set(row, Rank, tr("total"), QColor());
  set(row, Where, QString(), QColor());
  set(row, State, QString(), QColor());
  set(row, In, count(stats.events_in), QColor());
  set(row, Processed, count(stats.events_processed), QColor());
  set(row, Dropped, drops(stats.events_dropped, stats.drops_by_reason), QColor());
  set(row, Rate, rate(stats.event_rate_hz), QColor());
  set(row, Backend, QString(), QColor());
  set(row, Heard, QString(), QColor());
  QFont bold = table_->font();
  bold.setBold(true);
  for (int column = 0; column < ColumnCount; ++column) table_->item(row, column)->setFont(bold);
  setVisible(true);
}

}  // namespace livedrp::widgets
