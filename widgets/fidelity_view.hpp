#pragma once
// Compression fidelity, live (the `fidelity` topic, docs/protocol.md): what the lossy codec's
// error bound costs one sampled event. A curve of the relative profile difference per radial bin
// ((decompressed - original) / |original|, in percent; bins that cannot be compared are left
// out), and the numbers: the difference's largest, mean and rms, the peaks kept, lost and added
// with recall, precision and the centroid shift, the largest pixel error against the bound, and
// the sampler's counts. Only the newest message of a batch is shown; the replot is coalesced and
// skipped while the view is hidden. Messages that do not decode are counted, not shown.
#include <cstdint>
#include <map>

#include <QString>
#include <QWidget>

#include "protocol/fidelity_topic.hpp"
#include "widgets/protocol_metatypes.hpp"

class QLabel;
class QwtPlot;
class QwtPlotCurve;

namespace livedrp::widgets {

class RefreshCoalescer;

class FidelityView : public QWidget {
  Q_OBJECT

 public:
  explicit FidelityView(QWidget* parent = nullptr);

  // Decodes every `fidelity` message of the batch (other topics are ignored) and shows the newest
  // one that decodes.
  void apply(const MessageBatch& batch);
  // One message; returns whether it was a valid `fidelity` message (and is now shown).
  bool apply(const protocol::Message& message);
  void showReport(const protocol::FidelityReport& report, std::int64_t run);
  void clear();

  bool hasReport() const { return reports_ > 0; }
  const protocol::FidelityReport& report() const { return report_; }
  std::uint64_t reportCount() const { return reports_; }
  std::uint64_t rejectedCount() const { return rejected_; }
  QString lastRejection() const { return last_rejection_; }

  // The value shown for a field: "recall", "precision", "kept", "lost", "added",
  // "mean_shift_px", "max_shift_px", "max_abs_relative", "mean_abs_relative", "rms_relative",
  // "max_pixel_error", "error_bound", "ratio", "samples", "skipped"; empty for another name.
  QString valueText(const QString& field) const;
  QLabel* summaryLabel() const { return summary_; }
  QwtPlot* plot() const { return plot_; }
  const QwtPlotCurve* relativeCurve() const { return relative_curve_; }
  std::uint64_t replotCount() const { return replots_; }

  // How the numbers read (one place, so that the tests format what they expect the same way).
  // A fraction as percent with three significant digits ("0.123 %"); "n/a" for NaN.
  static QString percentText(double fraction);
  // Recall and precision: three decimals ("0.955"); "n/a" for NaN.
  static QString shareText(double value);
  // Pixels, two decimals ("0.42 px"); "n/a" for NaN.
  static QString pixelsText(double pixels);
  // A calibrated value (pixel error, bound): five significant digits ("0.49998").
  static QString valueInUnitText(double value);

 signals:
  void rejected(quint64 count, const QString& error);
  // A report is shown (report() is it).
  void reportShown();

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  QLabel* addValue(const QString& field);  // the value label of `field`, kept in values_
  void redraw();
  void replotIfVisible();

  protocol::FidelityReport report_;
  std::int64_t run_ = 0;
  std::uint64_t reports_ = 0;
  std::uint64_t rejected_ = 0;
  QString last_rejection_;
  QLabel* summary_ = nullptr;
  std::map<QString, QLabel*> values_;
  QwtPlot* plot_ = nullptr;
  QwtPlotCurve* relative_curve_ = nullptr;
  RefreshCoalescer* coalescer_ = nullptr;
  std::uint64_t replots_ = 0;
};

}  // namespace livedrp::widgets
