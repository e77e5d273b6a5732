#include "widgets/refresh_coalescer.hpp"

namespace livedrp::widgets {

RefreshCoalescer::RefreshCoalescer(QObject* parent, int interval_ms) : QObject(parent) {
  timer_.setSingleShot(true);
  timer_.setInterval(interval_ms);
  timer_.setTimerType(Qt::PreciseTimer);
  connect(&timer_, &QTimer::timeout, this, [this] {
    ++refreshes_;
    emit refresh();
  });
}

void RefreshCoalescer::request() {
  ++requests_;
  if (!timer_.isActive()) timer_.start();
}

}  // namespace livedrp::widgets
