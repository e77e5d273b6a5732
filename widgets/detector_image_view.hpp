#pragma once
// The "Detector image" dock: the detector image plot with its controls (colour scale, palette,
// reset zoom), a line naming the event shown (sequence, pulse, size, unit, peaks drawn) and the
// pixel read-out. It follows a PeakFindingModel: every image replaces the one shown, and a peak
// list for the event shown (a `peaks` message, a re-run) replaces its circles. Replots go
// through a RefreshCoalescer: images arriving faster than the screen can take are never queued.
// Until the first image arrives it says why there is nothing to show.
#include <cstddef>
#include <cstdint>
#include <optional>

#include <QPointer>
#include <QString>
#include <QWidget>

#include "protocol/peaks_topic.hpp"
#include "widgets/image_raster_data.hpp"

class QComboBox;
class QLabel;
class QPushButton;
class QStackedWidget;

namespace livedrp::widgets {

class DetectorImagePlot;
class PeakFindingModel;
class RefreshCoalescer;

class DetectorImageView : public QWidget {
  Q_OBJECT

 public:
  explicit DetectorImageView(PeakFindingModel* model, QWidget* parent = nullptr);

  static QString noDataText();

  void showImage(ImageFramePtr image, std::int64_t run = 0);
  // Draws `peaks` when they are the event shown's; other events' lists are ignored.
  void showPeaks(const protocol::EventPeaks& peaks);
  // Highlights and centres on peak `index` of `peaks` (the peak table's selection); when the list
  // is another event's than the image's, says so in the read-out line instead.
  void selectPeak(const protocol::EventPeaks& peaks, std::optional<std::size_t> index);
  void clear();

  bool showingPlaceholder() const;
  QString placeholderText() const;
  QString summaryText() const;
  QString readoutText() const;
  DetectorImagePlot* plot() const { return plot_; }
  QComboBox* scaleSelector() const { return scale_selector_; }
  QComboBox* paletteSelector() const { return palette_selector_; }
  RefreshCoalescer* coalescer() const { return coalescer_; }
  std::uint64_t replotCount() const { return replots_; }

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void updateSummary();
  void showRejection(quint64 count, const QString& error);
  void replotIfVisible();

  QPointer<PeakFindingModel> model_;
  RefreshCoalescer* coalescer_ = nullptr;
  std::uint64_t replots_ = 0;
  std::int64_t run_ = 0;
  QStackedWidget* stack_ = nullptr;
  QLabel* placeholder_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* readout_ = nullptr;
  QComboBox* scale_selector_ = nullptr;
  QComboBox* palette_selector_ = nullptr;
  QPushButton* reset_zoom_ = nullptr;
  DetectorImagePlot* plot_ = nullptr;
};

}  // namespace livedrp::widgets
