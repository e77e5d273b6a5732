#pragma once
// The status-bar strip: run state, backend, device, events processed and events dropped (the drop
// reasons in the tooltip), plus a warning when messages were rejected. Reads the StatsModel,
// refreshes through a RefreshCoalescer.
#include <cstdint>

#include <QPointer>
#include <QString>
#include <QWidget>

class QLabel;

namespace livedrp::widgets {

class RefreshCoalescer;
class StatsModel;

class RunStatusWidget : public QWidget {
  Q_OBJECT

 public:
  explicit RunStatusWidget(StatsModel* model, QWidget* parent = nullptr);

  // Messages the subscriber could not decode (the model adds the payloads it rejected itself).
  void setMalformedCount(std::uint64_t count, const QString& last_error);
  // The engine went silent in a live run (`why` says since when), or is heard again (empty):
  // the state reads "engine lost" in red until then.
  void setEngineLost(const QString& why);
  bool engineLost() const { return !lost_why_.isEmpty(); }

  QLabel* stateLabel() const { return state_; }
  QLabel* backendLabel() const { return backend_; }
  QLabel* deviceLabel() const { return device_; }
  QLabel* eventsLabel() const { return events_; }
  QLabel* dropsLabel() const { return drops_; }
  QLabel* malformedLabel() const { return malformed_; }
  RefreshCoalescer* coalescer() const { return coalescer_; }

  static QColor stateColor(const QString& state);

 private:
  void refreshNow();

  QPointer<StatsModel> model_;
  RefreshCoalescer* coalescer_;
  QLabel* state_;
  QLabel* backend_;
  QLabel* device_;
  QLabel* events_;
  QLabel* drops_;
  QLabel* malformed_;
  QString lost_why_;
  std::uint64_t link_malformed_ = 0;
  QString link_error_;
};

}  // namespace livedrp::widgets
