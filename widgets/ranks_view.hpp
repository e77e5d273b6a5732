#pragma once
// A run of many engines (MPI, engine/mpi): one row per processing rank of the latest `stats`'
// `ranks` block (its host and process, state, events in, processed and dropped, rate, backend,
// how long since the collector heard from it) and a row of the merged totals the collector
// publishes. Lost and failed ranks are drawn red with their reason. Hidden for a single engine
// (no `ranks` block).
#include <QPointer>
#include <QWidget>

#include "protocol/topics.hpp"

class QLabel;
class QTableWidget;

namespace livedrp::widgets {

class StatsModel;

class RanksView : public QWidget {
  Q_OBJECT

 public:
  enum Column { Rank, Where, State, In, Processed, Dropped, Rate, Backend, Heard, ColumnCount };

  explicit RanksView(StatsModel* model, QWidget* parent = nullptr);

  // Shows `stats`' ranks (hides the view when it has none).
  void showStats(const protocol::StatsPayload& stats);
  QTableWidget* table() const { return table_; }
  QLabel* summary() const { return summary_; }

 private:
  QPointer<StatsModel> model_;
  QLabel* summary_;
  QTableWidget* table_;
};

}  // namespace livedrp::widgets
