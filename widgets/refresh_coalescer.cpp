#include "widgets/refresh_coalescer.hpp"

#include <algorithm>

namespace livedrp::widgets {

RefreshCoalescer::RefreshCoalescer(QObject* parent, int interval_ms)
    : QObject(parent), interval_ms_(interval_ms) {
  timer_.setSingleShot(true);
  timer_.setTimerType(Qt::PreciseTimer);
  connect(&timer_, &QTimer::timeout, this, [this] {
    last_refresh_.start();
    ++refreshes_;
    emit refresh();
  });
}

void RefreshCoalescer::request() {
  ++requests_;
  if (timer_.isActive()) return;
  const qint64 since = last_refresh_.isValid() ? last_refresh_.elapsed() : interval_ms_;
  timer_.start(int(std::max<qint64>(0, interval_ms_ - since)));
}

}  // namespace livedrp::widgets
