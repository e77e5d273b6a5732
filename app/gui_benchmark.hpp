#pragma once
// `livedrp --benchmark-gui SECONDS` (docs/benchmarks.md, "GUI"): measures the window as it runs:
// how many times a second it repaints (the top-level window's update requests: each is one frame
// put on the screen), and each image's event-to-screen time (from its event's source time stamp
// to the end of its drawing; the engine's and the GUI's clocks must agree, as on one machine).
// The clock starts at the first image drawn (the engine's start-up is not the GUI's) and runs
// SECONDS; then the report is emitted.
#include <cstdint>
#include <vector>

#include <QElapsedTimer>
#include <QObject>
#include <QString>

class QWidget;

namespace livedrp::widgets {
class DetectorImageView;
}

namespace livedrp::app {

struct GuiBenchmarkReport {
  double seconds = 0;              // measured
  std::uint64_t repaints = 0;      // the window's frames in that time
  std::uint64_t images = 0;        // images drawn (with a source time stamp)
  std::vector<double> latency_ms;  // event-to-screen, one per image
  // Publish-to-screen (from the image message's making: the network and this window), one per
  // image whose message time is known.
  std::vector<double> window_ms;
  double repaints_per_s() const { return seconds > 0 ? double(repaints) / seconds : 0; }
  QString text() const;  // the lines printed
};

// The q-quantile (0..1) by nearest rank: the smallest value with at least q of the values at or
// below it. NaN for no values.
double nearestRankPercentile(std::vector<double> values, double q);

class GuiBenchmark : public QObject {
  Q_OBJECT

 public:
  GuiBenchmark(QWidget& window, widgets::DetectorImageView& image_view, double seconds,
               QObject* parent = nullptr);

  const GuiBenchmarkReport& report() const { return report_; }
  bool running() const { return clock_.isValid(); }

 signals:
  void finished(const QString& report);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void onImageDrawn(qint64 source_time_ns, qint64 message_time_ns, qint64 drawn_ns);
  void finish();

  QWidget& window_;
  double seconds_;
  QElapsedTimer clock_;
  GuiBenchmarkReport report_;
  bool done_ = false;
};

}  // namespace livedrp::app
