#pragma once
// Turns a flood of "something changed" into at most one refresh per interval: the first request
// arms a single-shot timer, later requests until it fires only ride along. Views redraw from
// refresh(), never from the model's signal directly, so data arriving at any rate never floods the
// painter (the PlotJuggler pattern).
//
// The timer waits only as long as the interval requires: a view that has not refreshed for a
// whole interval refreshes on the next turn of the event loop (the requests of this turn ride
// along), and otherwise an interval after its last refresh. So data that arrives now and then
// (an image of a 5 Hz run) is drawn at once rather than an interval late, a third of the
// event-to-screen bound (docs/benchmarks.md, GUI, Session 37).
#include <cstdint>

#include <QElapsedTimer>
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
  int intervalMs() const { return interval_ms_; }
  std::uint64_t requestCount() const { return requests_; }
  std::uint64_t refreshCount() const { return refreshes_; }

 signals:
  void refresh();

 private:
  QTimer timer_;
  const int interval_ms_;
  QElapsedTimer last_refresh_;  // invalid before the first
  std::uint64_t requests_ = 0;
  std::uint64_t refreshes_ = 0;
};

}  // namespace livedrp::widgets
