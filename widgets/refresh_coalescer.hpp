#pragma once
// Turns a flood of "something changed" into at most one refresh per interval: the first request
// arms a single-shot timer, later requests inside the interval only ride along. Views redraw from
// refresh(), never from the model's signal directly, so data arriving at any rate never floods the
// painter (the PlotJuggler pattern).
#include <cstdint>

#include <QObject>
#include <QTimer>

namespace livedrp::widgets {

class RefreshCoalescer : public QObject {
  Q_OBJECT

 public:
  // 33 ms: at most ~30 refreshes a second, smooth to the eye and cheap for the GUI thread.
  static constexpr int kDefaultIntervalMs = 33;

  explicit RefreshCoalescer(QObject* parent = nullptr, int interval_ms = kDefaultIntervalMs);

  void request();
  bool pending() const { return timer_.isActive(); }
  int intervalMs() const { return timer_.interval(); }
  std::uint64_t requestCount() const { return requests_; }
  std::uint64_t refreshCount() const { return refreshes_; }

 signals:
  void refresh();

 private:
  QTimer timer_;
  std::uint64_t requests_ = 0;
  std::uint64_t refreshes_ = 0;
};

}  // namespace livedrp::widgets
