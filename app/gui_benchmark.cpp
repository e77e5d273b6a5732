#include "app/gui_benchmark.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <QEvent>
#include <QTimer>
#include <QWidget>

#include "widgets/detector_image_view.hpp"

namespace livedrp::app {

double nearestRankPercentile(std::vector<double> values, double q) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(std::clamp(q, 0.0, 1.0) * double(values.size()));
  const std::size_t index = rank < 1 ? 0 : std::size_t(rank) - 1;
  return values[std::min(index, values.size() - 1)];
}

QString GuiBenchmarkReport::text() const {
  QString text = QStringLiteral("livedrp GUI benchmark: %1 s measured\n").arg(seconds, 0, 'f', 1);
  text += QStringLiteral("window repaints: %1 (%2 a second)\n")
              .arg(repaints)
              .arg(repaints_per_s(), 0, 'f', 1);
  if (latency_ms.empty()) {
    text += QStringLiteral("event-to-screen: no image with a source time stamp was drawn\n");
  } else {
    text += QStringLiteral("event-to-screen over %1 images: p50 %2 ms, p95 %3 ms, max %4 ms\n")
                .arg(images)
                .arg(nearestRankPercentile(latency_ms, 0.50), 0, 'f', 1)
                .arg(nearestRankPercentile(latency_ms, 0.95), 0, 'f', 1)
                .arg(*std::max_element(latency_ms.begin(), latency_ms.end()), 0, 'f', 1);
  }
  if (!window_ms.empty()) {
    text += QStringLiteral(
                "publish-to-screen (the network and this window): p50 %1 ms, p95 %2 ms, "
                "max %3 ms\n")
                .arg(nearestRankPercentile(window_ms, 0.50), 0, 'f', 1)
                .arg(nearestRankPercentile(window_ms, 0.95), 0, 'f', 1)
                .arg(*std::max_element(window_ms.begin(), window_ms.end()), 0, 'f', 1);
  }
  return text;
}

GuiBenchmark::GuiBenchmark(QWidget& window, widgets::DetectorImageView& image_view, double seconds,
                           QObject* parent)
    : QObject(parent), window_(window), seconds_(seconds) {
  window_.installEventFilter(this);
  connect(&image_view, &widgets::DetectorImageView::imageDrawn, this, &GuiBenchmark::onImageDrawn);
}

bool GuiBenchmark::eventFilter(QObject* watched, QEvent* event) {
  if (watched == &window_ && event->type() == QEvent::UpdateRequest && clock_.isValid() && !done_)
    ++report_.repaints;
  return QObject::eventFilter(watched, event);
}

void GuiBenchmark::onImageDrawn(qint64 source_time_ns, qint64 message_time_ns, qint64 drawn_ns) {
  if (done_) return;
  if (!clock_.isValid()) {  // the first image: the measurement starts
    clock_.start();
    QTimer::singleShot(int(seconds_ * 1000), this, &GuiBenchmark::finish);
    return;
  }
  if (message_time_ns > 0) report_.window_ms.push_back(double(drawn_ns - message_time_ns) * 1e-6);
  if (source_time_ns <= 0) return;
  ++report_.images;
  report_.latency_ms.push_back(double(drawn_ns - source_time_ns) * 1e-6);
}

void GuiBenchmark::finish() {
  if (done_) return;
  done_ = true;
  report_.seconds = double(clock_.nsecsElapsed()) * 1e-9;
  emit finished(report_.text());
}

}  // namespace livedrp::app
