#pragma once
// The "Peaks" dock: the latest peak list (a hit's `peaks` message, or a re-run's) in a sortable
// table, under a line saying which event it is, how many peaks were found (and listed: the
// engine lists at most max_num_peaks), whether the event is a hit, the parameter set that found
// them and whether it was a re-run. Selecting a row emits peakSelected with the peak's index in
// the list as received (the image view highlights and centres on it).
#include <cstddef>
#include <optional>

#include <QPointer>
#include <QString>
#include <QWidget>

#include "protocol/peaks_topic.hpp"

class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace livedrp::widgets {

class PeakFindingModel;
class PeakTableModel;

class PeakTableView : public QWidget {
  Q_OBJECT

 public:
  explicit PeakTableView(PeakFindingModel* model, QWidget* parent = nullptr);

  static QString noDataText();
  void showPeaks(const protocol::EventPeaks& peaks);
  void clear();

  QString summaryText() const;
  PeakTableModel* tableModel() const { return table_model_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QTableView* table() const { return table_; }
  // The list index of the row shown at `row` of the (sorted) table; nullopt out of range.
  std::optional<std::size_t> peakIndexAtRow(int row) const;

 signals:
  // The list shown and the index (in it) of the selected peak; nullopt when the selection is
  // cleared. Emitted synchronously: `peaks` is valid during the call.
  void peakSelected(const livedrp::protocol::EventPeaks& peaks, std::optional<std::size_t> index);

 private:
  void selectionChanged();

  QPointer<PeakFindingModel> model_;
  PeakTableModel* table_model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  QLabel* summary_ = nullptr;
};

}  // namespace livedrp::widgets
