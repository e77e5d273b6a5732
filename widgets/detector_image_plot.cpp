#include "widgets/detector_image_plot.hpp"

#include <functional>
#include <utility>

#include <QFontMetrics>
#include <QTimer>

#include <qwt_plot_canvas.h>
#include <qwt_plot_spectrogram.h>
#include <qwt_scale_draw.h>
#include <qwt_scale_engine.h>
#include <qwt_scale_widget.h>

#include "widgets/image_zoomer.hpp"
#include "widgets/peak_overlay.hpp"

namespace livedrp::widgets {
namespace {

// Qwt's canvas, saying when a paint has ended (canvasPainted).
class PaintReportingCanvas : public QwtPlotCanvas {
 public:
  PaintReportingCanvas(QwtPlot* plot, std::function<void()> painted)
      : QwtPlotCanvas(plot), painted_(std::move(painted)) {}

 protected:
  void paintEvent(QPaintEvent* event) override {
    QwtPlotCanvas::paintEvent(event);
    painted_();
  }

 private:
  std::function<void()> painted_;
};

}  // namespace

DetectorImagePlot::DetectorImagePlot(QWidget* parent) : QwtPlot(parent) {
  setObjectName(QStringLiteral("detectorImagePlot"));
  setAutoReplot(false);
  setCanvas(new PaintReportingCanvas(this, [this] { emit canvasPainted(); }));
  // Gaps (NaN) are transparent: this is the colour they show, unlike any palette's.
  setCanvasBackground(QColor(0xd8, 0xd8, 0xd8));
  if (auto* canvas = qobject_cast<QwtPlotCanvas*>(this->canvas())) {
    canvas->setFrameStyle(QFrame::NoFrame);
    canvas->setLineWidth(0);
  }
  raster_ = new ImageRasterData;
  spectrogram_ = new QwtPlotSpectrogram(tr("detector image"));
  // The image is rendered at the canvas's resolution; two threads keep a 2-Mpixel frame's
  // repaint short without taking every core from the engine.
  spectrogram_->setRenderThreadCount(2);
  spectrogram_->setData(raster_);
  spectrogram_->attach(this);
  overlay_ = new PeakOverlay;
  overlay_->attach(this);

  setAxisTitle(QwtAxis::XBottom, tr("column (px)"));
  setAxisTitle(QwtAxis::YLeft, tr("row (px)"));
  setAxisVisible(QwtAxis::YRight, true);
  QwtScaleWidget* bar = axisWidget(QwtAxis::YRight);
  bar->setColorBarEnabled(true);
  bar->setColorBarWidth(14);

  // Axes keep their width whatever their labels ("5" or "1.5e+04"): a layout that moved with
  // every frame's colour range would change the canvas, and with it the square-pixel zoom.
  const int label_room = QFontMetrics(font()).horizontalAdvance(QStringLiteral("-0.000e+00")) + 12;
  axisScaleDraw(QwtAxis::YLeft)->setMinimumExtent(label_room);
  axisScaleDraw(QwtAxis::YRight)->setMinimumExtent(label_room);

  zoomer_ = new ImageZoomer(this, raster_);
  connect(zoomer_, &ImageZoomer::readoutChanged, this, &DetectorImagePlot::readoutChanged);
  zoomer_->setImageRect(QRectF(-0.5, -0.5, 1, 1));
  updateColours();
}

void DetectorImagePlot::setFrame(ImageFramePtr frame) {
  const std::size_t old_width = raster_->width(), old_height = raster_->height();
  raster_->setFrame(std::move(frame));
  const ImageFramePtr& shown = raster_->frame();
  zoomer_->setUnit(shown ? QString::fromStdString(shown->unit) : QString());
  if (raster_->width() != old_width || raster_->height() != old_height) {
    const double width = std::max<double>(1.0, double(raster_->width()));
    const double height = std::max<double>(1.0, double(raster_->height()));
    zoomer_->setImageRect(QRectF(-0.5, -0.5, width, height));
  }
  if (shown && shown->has_peaks)
    setPeaks(shown->peaks);
  else if (!shown || !peaks_sequence_ || *peaks_sequence_ != shown->sequence)
    clearPeaks();  // circles of another event would mislead
  updateColours();
}

void DetectorImagePlot::setPeaks(const protocol::EventPeaks& peaks) {
  overlay_->setPeaks(peaks.peaks);
  peaks_sequence_ = peaks.sequence;
}

void DetectorImagePlot::clearPeaks() {
  overlay_->clear();
  peaks_sequence_.reset();
}

void DetectorImagePlot::clear() {
  setFrame(nullptr);
  clearPeaks();
}

void DetectorImagePlot::setColourScale(ColourScale scale) {
  scale_ = scale;
  updateColours();
}

void DetectorImagePlot::setPalette(ColourPalette palette) {
  palette_ = palette;
  updateColours();
}

void DetectorImagePlot::setPercentiles(double low_pct, double high_pct) {
  low_pct_ = low_pct;
  high_pct_ = high_pct;
  updateColours();
}

void DetectorImagePlot::setFixedRange(std::optional<QwtInterval> range) {
  fixed_range_ = range;
  updateColours();
}

QwtInterval DetectorImagePlot::colourRange() const {
  return raster_->interval(Qt::ZAxis);
}

void DetectorImagePlot::highlightPeak(std::optional<std::size_t> index) {
  overlay_->setHighlighted(index);
  if (overlay_->highlighted()) zoomer_->centreOn(overlay_->circle(*overlay_->highlighted()).centre);
}

void DetectorImagePlot::updateColours() {
  const ImageFramePtr& frame = raster_->frame();
  QwtInterval range;
  if (frame)
    range = fixed_range_ ? *fixed_range_
                         : widgets::colourRange(frame->pixels, scale_, low_pct_, high_pct_);
  raster_->setColourRange(range);
  spectrogram_->setColorMap(new ImageColourMap(palette_, scale_));

  // The colour bar: the same map over the same range, on a log axis for the log scale.
  const QwtInterval bar_range = range.isValid() ? range : QwtInterval(1.0, 10.0);
  const bool log_bar = scale_ == ColourScale::Log;
  if (log_bar != log_bar_) {
    log_bar_ = log_bar;
    if (log_bar)
      setAxisScaleEngine(QwtAxis::YRight, new QwtLogScaleEngine);
    else
      setAxisScaleEngine(QwtAxis::YRight, new QwtLinearScaleEngine);
  }
  axisWidget(QwtAxis::YRight)->setColorMap(bar_range, new ImageColourMap(palette_, scale_));
  setAxisScale(QwtAxis::YRight, bar_range.minValue(), bar_range.maxValue());
  const QString unit =
      frame && !frame->unit.empty() ? QString::fromStdString(frame->unit) : tr("calibrated value");
  setAxisTitle(QwtAxis::YRight, QStringLiteral("%1 (%2)").arg(unit, colourScaleName(scale_)));
  spectrogram_->invalidateCache();
  spectrogram_->itemChanged();
}

void DetectorImagePlot::updateLayout() {
  QwtPlot::updateLayout();
  // The canvas changed size (a resize, or the colour bar's labels grew): keep pixels square.
  // Queued, once: rescaling replots, and a replot may lay the plot out again.
  const QSize canvas_size = canvas()->contentsRect().size();
  if (!zoomer_ || canvas_size == squared_for_ || rescale_pending_) return;
  rescale_pending_ = true;
  QTimer::singleShot(0, this, [this] {
    rescale_pending_ = false;
    squared_for_ = canvas()->contentsRect().size();
    zoomer_->rescale();
  });
}

}  // namespace livedrp::widgets
