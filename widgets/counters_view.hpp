#pragma once
// Every counter of the latest `stats` and `status` payloads as a two-column tree (quantity, value),
// grouped: run, events (with the drop reasons under "dropped"), throughput, ring, stages. Rows for
// drop reasons and stages follow the payload: they appear and disappear with it.
#include <map>
#include <utility>
#include <vector>

#include <QPointer>
#include <QString>
#include <QTreeWidget>

namespace livedrp::widgets {

class RefreshCoalescer;
class StatsModel;

class CountersView : public QTreeWidget {
  Q_OBJECT

 public:
  explicit CountersView(StatsModel* model, QWidget* parent = nullptr);

  // The value column of row `name` in group `group` (e.g. "Events", "processed"); a null QString
  // when there is no such row. Child rows are addressed as "parent/child" ("dropped/ring_full").
  QString valueText(const QString& group, const QString& name) const;
  RefreshCoalescer* coalescer() const { return coalescer_; }

 private:
  using Rows = std::vector<std::pair<QString, QString>>;
  void refreshNow();
  QTreeWidgetItem* group(const QString& name);
  // Makes `parent`'s children exactly `rows`, in order, reusing the items already there.
  static void setRows(QTreeWidgetItem* parent, const Rows& rows);
  static QTreeWidgetItem* child(const QTreeWidgetItem* parent, const QString& name);

  QPointer<StatsModel> model_;
  RefreshCoalescer* coalescer_;
  std::map<QString, QTreeWidgetItem*> groups_;
};

}  // namespace livedrp::widgets
