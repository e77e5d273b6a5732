#include "widgets/detector_image_view.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QStackedWidget>
#include <QVBoxLayout>

#include "widgets/colour_scale.hpp"
#include "widgets/detector_image_plot.hpp"
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

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("scale")));
  controls->addWidget(scale_selector_);
  controls->addWidget(new QLabel(tr("colours")));
  controls->addWidget(palette_selector_);
  controls->addWidget(reset_zoom_);
  controls->addStretch(1);

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
  connect(plot_, &DetectorImagePlot::readoutChanged, this, [this](const QString& text) {
    if (!text.isEmpty()) readout_->setText(text);
  });
  connect(coalescer_, &RefreshCoalescer::refresh, this, &DetectorImageView::replotIfVisible);
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
  run_ = run;
  plot_->setFrame(std::move(image));
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
  if (!shown || shown->sequence != peaks.sequence) return;
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
    readout_->setText(tr("peak %1: column %2, row %3, intensity %4, SNR %5")
                          .arg(*index)
                          .arg(peak.x, 0, 'f', 1)
                          .arg(peak.y, 0, 'f', 1)
                          .arg(peak.intensity, 0, 'g', 5)
                          .arg(peak.snr, 0, 'f', 1));
  }
  coalescer_->request();
}

void DetectorImageView::clear() {
  plot_->clear();
  summary_->clear();
  placeholder_->setText(noDataText());
  stack_->setCurrentIndex(kPlaceholderPage);
  coalescer_->request();
}

void DetectorImageView::updateSummary() {
  const ImageFramePtr& frame = plot_->rasterData()->frame();
  if (!frame) return;
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
          .arg(peaks));
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
}

}  // namespace livedrp::widgets
