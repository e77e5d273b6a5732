#include "widgets/detector_image_view.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <utility>

#include "widgets/colour_scale.hpp"
#include "widgets/detector_image_plot.hpp"
#include "widgets/detector_pixel_text.hpp"
#include "widgets/image_zoomer.hpp"
#include "widgets/peak_finding_model.hpp"
#include "widgets/peak_overlay.hpp"
#include "widgets/refresh_coalescer.hpp"

namespace livedrp::widgets {
namespace {
constexpr int kPlaceholderPage = 0;
constexpr int kDataPage = 1;
}  // namespace

QString DetectorImageView::noDataText() {
  return tr(
      "no detector image yet: the engine publishes `image` a few times a second while a run "
      "goes (image.publish_hz; 0 turns it off)");
}

DetectorImageView::DetectorImageView(PeakFindingModel* model, QWidget* parent)
    : QWidget(parent), model_(model), coalescer_(new RefreshCoalescer(this)) {
  setObjectName(QStringLiteral("detectorImageView"));

  placeholder_ = new QLabel(noDataText());
  placeholder_->setObjectName(QStringLiteral("detectorImagePlaceholder"));
  placeholder_->setAlignment(Qt::AlignCenter);
  placeholder_->setWordWrap(true);

  scale_selector_ = new QComboBox;
  scale_selector_->setObjectName(QStringLiteral("imageColourScale"));
  scale_selector_->addItems(colourScaleNames());
  scale_selector_->setToolTip(
      tr("linear: minimum to maximum; log: smallest positive value to maximum (values <= 0 take "
         "the lowest colour); percentile: %1 % to %2 % of the finite values (the hottest and "
         "coldest pixels clip)")
          .arg(kDefaultLowPercentile)
          .arg(kDefaultHighPercentile));
  palette_selector_ = new QComboBox;
  palette_selector_->setObjectName(QStringLiteral("imagePalette"));
  palette_selector_->addItems(colourPaletteNames());
  reset_zoom_ = new QPushButton(tr("Whole image"));
  reset_zoom_->setToolTip(
      tr("Back to the whole image (drag on the image to zoom, middle click goes one zoom back; "
         "the right-click menu also has Whole Image, and exports)"));

  plot_ = new DetectorImagePlot;
  scale_selector_->setCurrentIndex(int(plot_->colourScale()));
  palette_selector_->setCurrentIndex(int(plot_->palette()));

  show_selector_ = new QComboBox;
  show_selector_->setObjectName(QStringLiteral("imageShowMode"));
  show_selector_->addItems({tr("latest image"), tr("maximum since reset"), tr("mean since reset")});
  show_selector_->setToolTip(
      tr("maximum since reset: each pixel's largest value over the images received since Reset "
         "(a virtual powder pattern); mean since reset: each pixel's mean over them (the "
         "engine sends image.publish_hz images a second, not every event; File > Export Average "
         "Image (HDF5) writes the mean of those received since the run started, and "
         "livedrp-engine run --write-average the mean of every event)"));
  reset_maximum_ = new QPushButton(tr("Reset"));
  reset_maximum_->setObjectName(QStringLiteral("imageResetMaximum"));
  freeze_ = new QPushButton(tr("Freeze"));
  freeze_->setObjectName(QStringLiteral("imageFreeze"));
  freeze_->setCheckable(true);
  freeze_->setToolTip(
      tr("Keep the image shown; newer ones are counted and the newest is shown "
         "when you unfreeze"));
  fixed_range_ = new QCheckBox(tr("fixed range"));
  fixed_range_->setObjectName(QStringLiteral("imageFixedRange"));
  range_minimum_ = new QDoubleSpinBox;
  range_maximum_ = new QDoubleSpinBox;
  for (QDoubleSpinBox* box : {range_minimum_, range_maximum_}) {
    box->setRange(-1e9, 1e9);
    box->setDecimals(3);
    box->setEnabled(false);
  }
  range_minimum_->setObjectName(QStringLiteral("imageRangeMinimum"));
  range_maximum_->setObjectName(QStringLiteral("imageRangeMaximum"));
  range_maximum_->setValue(100);
  range_problem_ = new QLabel;
  range_problem_->setStyleSheet(QStringLiteral("color: #d32f2f;"));

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("scale")));
  controls->addWidget(scale_selector_);
  controls->addWidget(new QLabel(tr("colours")));
  controls->addWidget(palette_selector_);
  controls->addWidget(reset_zoom_);
  controls->addWidget(freeze_);
  controls->addStretch(1);
  auto* extras = new QHBoxLayout;
  extras->addWidget(show_selector_);
  extras->addWidget(reset_maximum_);
  extras->addWidget(fixed_range_);
  extras->addWidget(range_minimum_);
  extras->addWidget(new QLabel(tr("to")));
  extras->addWidget(range_maximum_);
  extras->addWidget(range_problem_, 1);

  summary_ = new QLabel;
  summary_->setObjectName(QStringLiteral("detectorImageSummary"));
  summary_->setWordWrap(true);
  readout_ = new QLabel(tr("move the mouse over the image for a read-out"));
  readout_->setObjectName(QStringLiteral("detectorImageReadout"));
  readout_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* data_page = new QWidget;
  auto* data_layout = new QVBoxLayout(data_page);
  data_layout->setContentsMargins(0, 0, 0, 0);
  data_layout->addLayout(controls);
  data_layout->addLayout(extras);
  data_layout->addWidget(summary_);
  data_layout->addWidget(plot_, 1);
  data_layout->addWidget(readout_);

  stack_ = new QStackedWidget;
  stack_->insertWidget(kPlaceholderPage, placeholder_);
  stack_->insertWidget(kDataPage, data_page);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(stack_);
  stack_->setCurrentIndex(kPlaceholderPage);

  connect(scale_selector_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index < 0) return;
    plot_->setColourScale(ColourScale(index));
    coalescer_->request();
  });
  connect(palette_selector_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index < 0) return;
    plot_->setPalette(ColourPalette(index));
    coalescer_->request();
  });
  connect(reset_zoom_, &QPushButton::clicked, this, [this] { plot_->zoomer()->zoom(0); });
  connect(fixed_range_, &QCheckBox::toggled, this, [this](bool on) {
    range_minimum_->setEnabled(on);
    range_maximum_->setEnabled(on);
    applyFixedRange();
  });
  connect(range_minimum_, &QDoubleSpinBox::valueChanged, this, &DetectorImageView::applyFixedRange);
  connect(range_maximum_, &QDoubleSpinBox::valueChanged, this, &DetectorImageView::applyFixedRange);
  connect(scale_selector_, &QComboBox::currentIndexChanged, this,
          &DetectorImageView::applyFixedRange);
  connect(freeze_, &QPushButton::toggled, this, [this](bool frozen) {
    if (frozen || !latest_) {
      updateSummary();
      return;
    }
    held_back_ = 0;
    foldPending();
    display(shownFor(show_selector_->currentIndex()));
  });
  connect(show_selector_, &QComboBox::currentIndexChanged, this, [this](int mode) {
    foldPending();
    if (!latest_ || freeze_->isChecked()) return;
    display(shownFor(mode));
  });
  connect(reset_maximum_, &QPushButton::clicked, this, [this] {
    foldPending();
    maximum_.reset();
    mean_.reset();
    if (latest_) {  // the maximum and the mean start again from the newest
      maximum_.add(latest_, run_);
      mean_.add(latest_, run_);
    }
    if (!freeze_->isChecked() && show_selector_->currentIndex() != int(ShowMode::Latest))
      display(shownFor(show_selector_->currentIndex()));
  });
  connect(plot_, &DetectorImagePlot::readoutChanged, this, [this](const QString& text) {
    if (!text.isEmpty()) readout_->setText(text);
  });
  connect(coalescer_, &RefreshCoalescer::refresh, this, &DetectorImageView::replotIfVisible);
  connect(plot_, &DetectorImagePlot::canvasPainted, this, &DetectorImageView::afterPaint);
  if (model) {
    connect(model, &PeakFindingModel::imageReceived, this,
            [this](const ImageFramePtr& image) { showImage(image, model_ ? model_->run() : 0); });
    connect(model, &PeakFindingModel::peaksReceived, this, &DetectorImageView::showPeaks);
    connect(model, &PeakFindingModel::cleared, this, &DetectorImageView::clear);
    connect(model, &PeakFindingModel::rejected, this, &DetectorImageView::showRejection);
  }
}

void DetectorImageView::showImage(ImageFramePtr image, std::int64_t run) {
  if (!image) return;
  foldPending();  // the image before, if its paint never came (a minimised window)
  run_ = run;
  latest_ = image;
  unfolded_ = image;
  const bool frozen = freeze_->isChecked() && !showingPlaceholder();
  // The maximum, the mean and the run's average take the image in after it is painted
  // (afterPaint): 2-3 passes over its pixels, a third of the window's share of the
  // event-to-screen time on the 2-core machine (docs/benchmarks.md, GUI, Session 37). Unless
  // they are what is drawn, or nothing of it is drawn now.
  if (frozen || show_selector_->currentIndex() != int(ShowMode::Latest) || !isVisible())
    foldPending();
  if (frozen) {
    ++held_back_;
    updateSummary();
    return;
  }
  display(shownFor(show_selector_->currentIndex()));
}

void DetectorImageView::foldPending() {
  if (!unfolded_) return;
  const ImageFramePtr image = std::exchange(unfolded_, nullptr);
  maximum_.add(image, run_);
  mean_.add(image, run_);
  run_average_.fold(image, run_);
  emit runAverageChanged(run_average_.images(), run_average_.run());
}

void DetectorImageView::afterPaint() {
  if (drawn_pending_ && last_drawn_) {
    drawn_pending_ = false;
    const ImageFramePtr& frame = last_drawn_;
    emit imageDrawn(frame->source_time_ns, frame->message_time_ns,
                    QDateTime::currentMSecsSinceEpoch() * 1'000'000);
  }
  foldPending();
}

const ImageMean& DetectorImageView::runAverage() {
  foldPending();
  return run_average_;
}

ImageFramePtr DetectorImageView::shownFor(int mode) const {
  if (mode == int(ShowMode::Maximum)) return maximum_.maximum();
  if (mode == int(ShowMode::Mean)) return mean_.mean();
  return latest_;
}

QString DetectorImageView::rangeProblem() const {
  return range_problem_->text();
}

void DetectorImageView::applyFixedRange() {
  range_problem_->clear();
  if (!fixed_range_->isChecked()) {
    plot_->setFixedRange(std::nullopt);
  } else {
    const double low = range_minimum_->value(), high = range_maximum_->value();
    if (!(low < high)) {
      range_problem_->setText(tr("the range's minimum must be below its maximum: automatic range"));
      plot_->setFixedRange(std::nullopt);
    } else if (plot_->colourScale() == ColourScale::Log && low <= 0) {
      range_problem_->setText(tr("the log scale needs a minimum above 0: automatic range"));
      plot_->setFixedRange(std::nullopt);
    } else {
      plot_->setFixedRange(QwtInterval(low, high));
    }
  }
  coalescer_->request();
}

void DetectorImageView::display(const ImageFramePtr& image) {
  if (!image) return;
  const bool accumulated = image == maximum_.maximum() || image == mean_.mean();
  plot_->setFrame(image);
  if (accumulated) {
    plot_->clearPeaks();  // peaks belong to one event, not to a maximum or mean over many
    updateSummary();
    stack_->setCurrentIndex(kDataPage);
    coalescer_->request();
    return;
  }
  // The latest `peaks` list may be this event's (a hit published before its image).
  const ImageFramePtr& shown = plot_->rasterData()->frame();
  if (!shown->has_peaks && model_ && model_->hasPeaks() &&
      model_->latestPeaks().sequence == shown->sequence)
    plot_->setPeaks(model_->latestPeaks());
  updateSummary();
  stack_->setCurrentIndex(kDataPage);
  coalescer_->request();
}

void DetectorImageView::showPeaks(const protocol::EventPeaks& peaks) {
  const ImageFramePtr& shown = plot_->rasterData()->frame();
  if (!shown || shown->sequence != peaks.sequence || shown == maximum_.maximum() ||
      shown == mean_.mean())
    return;
  plot_->setPeaks(peaks);
  updateSummary();
  coalescer_->request();
}

void DetectorImageView::selectPeak(const protocol::EventPeaks& peaks,
                                   std::optional<std::size_t> index) {
  const ImageFramePtr& shown = plot_->rasterData()->frame();
  if (!shown || shown->sequence != peaks.sequence) {
    if (index)
      readout_->setText(tr("peak of event #%1 not drawn: the image shows event #%2")
                            .arg(peaks.sequence)
                            .arg(shown ? QString::number(shown->sequence) : tr("none")));
    return;
  }
  if (plot_->peaksSequence() != peaks.sequence ||
      plot_->overlay()->circleCount() != peaks.peaks.size())
    plot_->setPeaks(peaks);
  plot_->highlightPeak(index);
  if (index && *index < peaks.peaks.size()) {
    const protocol::PeakRow& peak = peaks.peaks[*index];
    readout_->setText(tr("peak %1: column %2, row %3 · %4 · intensity %5, SNR %6")
                          .arg(*index)
                          .arg(peak.x, 0, 'f', 1)
                          .arg(peak.y, 0, 'f', 1)
                          .arg(peakPixelText(peak, shown.get()))
                          .arg(peak.intensity, 0, 'g', 5)
                          .arg(peak.snr, 0, 'f', 1));
  }
  coalescer_->request();
}

void DetectorImageView::clear() {
  latest_.reset();
  unfolded_.reset();
  maximum_.reset();
  mean_.reset();
  run_average_.reset();
  emit runAverageChanged(0, 0);
  held_back_ = 0;
  plot_->clear();
  summary_->clear();
  placeholder_->setText(noDataText());
  stack_->setCurrentIndex(kPlaceholderPage);
  coalescer_->request();
}

void DetectorImageView::updateSummary() {
  const ImageFramePtr& frame = plot_->rasterData()->frame();
  if (!frame) return;
  QString frozen;
  if (freeze_->isChecked())
    frozen = tr(" · frozen: %n newer image(s) not shown", nullptr, int(held_back_));
  if (frame == maximum_.maximum()) {
    summary_->setText(tr("run %1 · maximum of %n image(s) since reset, events #%2 to #%3 · %4 x %5 "
                         "px",
                         nullptr, int(maximum_.images()))
                          .arg(run_)
                          .arg(maximum_.first_sequence())
                          .arg(maximum_.last_sequence())
                          .arg(frame->width)
                          .arg(frame->height) +
                      frozen);
    return;
  }
  if (frame == mean_.mean()) {
    summary_->setText(
        tr("run %1 · mean of %n image(s) since reset, events #%2 to #%3 · %4 x %5 "
           "px · %6",
           nullptr, int(mean_.images()))
            .arg(run_)
            .arg(mean_.first_sequence())
            .arg(mean_.last_sequence())
            .arg(frame->width)
            .arg(frame->height)
            .arg(frame->unit.empty() ? tr("no unit") : QString::fromStdString(frame->unit)) +
        frozen);
    return;
  }
  const QString peaks = plot_->peaksSequence()
                            ? tr("%n peak(s) drawn", nullptr, int(plot_->overlay()->circleCount()))
                            : (frame->has_peaks ? tr("no peaks") : tr("peak finding off"));
  summary_->setText(
      tr("run %1 · event #%2 · pulse %3 · %4 x %5 px · %6 · %7")
          .arg(run_)
          .arg(frame->sequence)
          .arg(frame->pulse_id)
          .arg(frame->width)
          .arg(frame->height)
          .arg(frame->unit.empty() ? tr("no unit") : QString::fromStdString(frame->unit))
          .arg(peaks) +
      frozen);
}

// Images that arrive but do not decode: "nothing published" would then be wrong.
void DetectorImageView::showRejection(quint64 count, const QString& error) {
  if (!showingPlaceholder()) return;
  placeholder_->setText(
      tr("no image shown: %1 message(s) refused; last: %2").arg(count).arg(error));
}

bool DetectorImageView::showingPlaceholder() const {
  return stack_->currentIndex() == kPlaceholderPage;
}
QString DetectorImageView::placeholderText() const {
  return placeholder_->text();
}
QString DetectorImageView::summaryText() const {
  return summary_->text();
}
QString DetectorImageView::readoutText() const {
  return readout_->text();
}

void DetectorImageView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  coalescer_->request();
}

// A hidden view (its dock tabbed away) costs nothing; it catches up when shown.
void DetectorImageView::replotIfVisible() {
  if (!isVisible()) return;
  plot_->replot();
  ++replots_;
  const ImageFramePtr& frame = plot_->rasterData()->frame();
  if (frame && frame != last_drawn_ && frame == latest_) {
    // imageDrawn once the canvas has painted it (afterPaint): the replot only asks for that.
    last_drawn_ = frame;
    drawn_pending_ = true;
  }
}

}  // namespace livedrp::widgets
