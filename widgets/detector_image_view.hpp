#pragma once
// The "Detector image" dock: the detector image plot with its controls (colour scale, palette,
// reset zoom), a line naming the event shown (sequence, pulse, size, unit, peaks drawn) and the
// pixel read-out. It follows a PeakFindingModel: every image replaces the one shown, and a peak
// list for the event shown (a `peaks` message, a re-run) replaces its circles. Replots go
// through a RefreshCoalescer: images arriving faster than the screen can take are never queued.
// Until the first image arrives it says why there is nothing to show. The operator can freeze
// the image (newer ones are counted, not shown), fix the colour range, and show the pixel-wise
// maximum of the images received since a reset instead of the latest (image_max_projection.hpp).
// Apart from what is shown, it keeps the mean of every image received since the current run
// started (runAverage(): a new run, a new image size or clear() starts it again; Reset, Freeze
// and the show mode do not touch it), which the window exports as the run's average image.
#include <cstddef>
#include <cstdint>
#include <optional>

#include <QPointer>
#include <QString>
#include <QWidget>

#include "protocol/peaks_topic.hpp"
#include "widgets/image_max_projection.hpp"
#include "widgets/image_mean.hpp"
#include "widgets/image_raster_data.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
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
  // What is shown: the latest image, or the maximum since the last reset.
  enum class ShowMode { Latest = 0, Maximum = 1, Mean = 2 };
  QComboBox* showSelector() const { return show_selector_; }
  QPushButton* freezeButton() const { return freeze_; }
  QPushButton* resetMaximumButton() const { return reset_maximum_; }
  QCheckBox* fixedRangeBox() const { return fixed_range_; }
  QDoubleSpinBox* rangeMinimumBox() const { return range_minimum_; }
  QDoubleSpinBox* rangeMaximumBox() const { return range_maximum_; }
  // Why a fixed range the operator typed is not used (empty when it is, or when none is asked).
  QString rangeProblem() const;
  std::uint64_t imagesHeldBack() const { return held_back_; }
  // The images received since the current run started, folded (ImageMean::computeMean() makes
  // their mean): a sample of the run's events, image.publish_hz a second, not every event. The
  // newest image, if not yet folded in (it is, after its paint), is folded in first.
  const ImageMean& runAverage();

 signals:
  // A new image (one not drawn before) was drawn; `source_time_ns` is its event's source time
  // stamp (0 when the engine did not send one), `message_time_ns` when the engine made its
  // message (0 unknown), `drawn_ns` when the canvas finished painting it (all Unix ns).
  void imageDrawn(qint64 source_time_ns, qint64 message_time_ns, qint64 drawn_ns);
  // runAverage() took an image in, or was emptied (images 0).
  void runAverageChanged(quint64 images, qint64 run);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void updateSummary();
  void showRejection(quint64 count, const QString& error);
  void replotIfVisible();
  void applyFixedRange();
  void display(const ImageFramePtr& image);  // the frame to draw now, as the mode says
  // The maximum, the mean and the run's average take in the newest image if they have not yet.
  void foldPending();
  void afterPaint();  // the canvas painted: imageDrawn for a new image, then foldPending

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
  QComboBox* show_selector_ = nullptr;
  QPushButton* freeze_ = nullptr;
  QPushButton* reset_maximum_ = nullptr;
  QCheckBox* fixed_range_ = nullptr;
  QDoubleSpinBox* range_minimum_ = nullptr;
  QDoubleSpinBox* range_maximum_ = nullptr;
  QLabel* range_problem_ = nullptr;
  ImageMaxProjection maximum_;
  ImageMean mean_;
  ImageMean run_average_;                  // since the run started, whatever is shown
  ImageFramePtr shownFor(int mode) const;  // the frame a show mode draws now
  ImageFramePtr latest_;                   // the newest image received, shown or not
  ImageFramePtr unfolded_;      // latest_ while not yet in maximum_, mean_ and run_average_
  bool drawn_pending_ = false;  // last_drawn_ is replotted; imageDrawn waits for its paint
  std::uint64_t held_back_ = 0;
  ImageFramePtr
      last_drawn_;  // the frame of the last imageDrawn            // images received while frozen
  DetectorImagePlot* plot_ = nullptr;
};

}  // namespace livedrp::widgets
