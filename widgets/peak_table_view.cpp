#include "widgets/peak_table_view.hpp"

#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "widgets/number_format.hpp"
#include "widgets/peak_finding_model.hpp"
#include "widgets/peak_table_model.hpp"

namespace livedrp::widgets {

QString PeakTableView::noDataText() {
  return tr(
      "no peaks yet: the engine publishes the peaks of hit events when peak finding is on "
      "(peak_finding.enabled)");
}

PeakTableView::PeakTableView(PeakFindingModel* model, QWidget* parent)
    : QWidget(parent), model_(model) {
  setObjectName(QStringLiteral("peakTableView"));
  table_model_ = new PeakTableModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(table_model_);
  proxy_->setSortRole(Qt::DisplayRole);  // the numbers themselves: numeric order

  summary_ = new QLabel(noDataText());
  summary_->setObjectName(QStringLiteral("peakTableSummary"));
  summary_->setWordWrap(true);
  table_ = new QTableView;
  table_->setObjectName(QStringLiteral("peakTable"));
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(PeakTableModel::Snr, Qt::DescendingOrder);  // strongest first
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(summary_);
  layout->addWidget(table_, 1);

  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &PeakTableView::selectionChanged);
  if (model) {
    connect(model, &PeakFindingModel::peaksReceived, this, &PeakTableView::showPeaks);
    connect(model, &PeakFindingModel::cleared, this, &PeakTableView::clear);
  }
}

void PeakTableView::showPeaks(const protocol::EventPeaks& peaks) {
  table_model_->setPeaks(peaks);
  QString listed;
  if (peaks.found > peaks.peaks.size())
    listed = tr(" (%1 listed: max_num_peaks)").arg(formatCount(peaks.peaks.size()));
  summary_->setText(tr("event #%1 · pulse %2 · %3 peak(s) found%4 · %5 (at least %6) · "
                       "parameters v%7%8")
                        .arg(peaks.sequence)
                        .arg(peaks.pulse_id)
                        .arg(formatCount(peaks.found))
                        .arg(listed)
                        .arg(peaks.hit ? tr("hit") : tr("not a hit"))
                        .arg(peaks.min_peaks_for_hit)
                        .arg(peaks.params_version)
                        .arg(peaks.rerun ? tr(" · re-run on a recent frame") : QString()));
}

void PeakTableView::clear() {
  table_model_->clear();
  summary_->setText(noDataText());
}

QString PeakTableView::summaryText() const {
  return summary_->text();
}

std::optional<std::size_t> PeakTableView::peakIndexAtRow(int row) const {
  if (row < 0 || row >= proxy_->rowCount()) return std::nullopt;
  return std::size_t(proxy_->index(row, 0).data(PeakTableModel::kPeakIndexRole).toInt());
}

void PeakTableView::selectionChanged() {
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  std::optional<std::size_t> index;
  if (!rows.isEmpty()) index = peakIndexAtRow(rows.front().row());
  emit peakSelected(table_model_->peaks(), index);
}

}  // namespace livedrp::widgets
