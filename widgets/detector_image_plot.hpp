#pragma once
// The detector image: the assembled calibrated frame on a Qwt spectrogram (raster data reading
// the frame in place), a colour bar, the found peaks as circles, square pixels at every zoom, and
// the pixel under the mouse read out. Row 0 is at the top. Like the other plots it leaves replots
// to its owner (the view coalesces them), except zooming, which the user sees at once.
#include <cstddef>
#include <optional>

#include <QSize>

#include <qwt_plot.h>

#include "protocol/peaks_topic.hpp"
#include "widgets/colour_scale.hpp"
#include "widgets/image_raster_data.hpp"

class QwtPlotSpectrogram;

namespace livedrp::widgets {

class ImageZoomer;
class PeakOverlay;

class DetectorImagePlot : public QwtPlot {
  Q_OBJECT

 public:
  explicit DetectorImagePlot(QWidget* parent = nullptr);

  // Shows `frame` (shared, not copied) and, when it carries them, its peaks. A frame of another
  // size resets the zoom to the whole image; one of the same size keeps the zoom.
  void setFrame(ImageFramePtr frame);
  // Circles for `peaks` (the peak list of the event shown; the caller checks the sequence).
  void setPeaks(const protocol::EventPeaks& peaks);
  void clearPeaks();
  void clear();
  // Which event's peaks are drawn; nullopt when none.
  std::optional<std::uint64_t> peaksSequence() const { return peaks_sequence_; }

  void setColourScale(ColourScale scale);
  void setPalette(ColourPalette palette);
  void setPercentiles(double low_pct, double high_pct);
  // A colour range the operator fixed, used instead of the scale's automatic one (nullopt: back
  // to automatic). The caller checks it: minimum below maximum, and above 0 on the log scale.
  void setFixedRange(std::optional<QwtInterval> range);
  std::optional<QwtInterval> fixedRange() const { return fixed_range_; }
  ColourScale colourScale() const { return scale_; }
  ColourPalette palette() const { return palette_; }
  // The colour range of the frame shown on the current scale (invalid: nothing to show).
  QwtInterval colourRange() const;

  // Highlights peak `index` of the list drawn and centres the view on it.
  void highlightPeak(std::optional<std::size_t> index);

  const ImageRasterData* rasterData() const { return raster_; }
  const PeakOverlay* overlay() const { return overlay_; }
  const QwtPlotSpectrogram* spectrogram() const { return spectrogram_; }
  ImageZoomer* zoomer() const { return zoomer_; }

 signals:
  void readoutChanged(QString text);
  // The canvas finished painting: what it draws is in the window's backing store, which the same
  // update flushes to the screen (a replot only asks for that paint).
  void canvasPainted();

 protected:
  void updateLayout() override;

 private:
  // The colour range, the spectrogram's colour map and the colour bar follow the scale, palette
  // and frame.
  void updateColours();

  QwtPlotSpectrogram* spectrogram_ = nullptr;
  ImageRasterData* raster_ = nullptr;  // owned by spectrogram_
  PeakOverlay* overlay_ = nullptr;     // owned by the plot
  ImageZoomer* zoomer_ = nullptr;
  ColourScale scale_ = ColourScale::Percentile;
  ColourPalette palette_ = ColourPalette::Viridis;
  double low_pct_ = kDefaultLowPercentile;
  double high_pct_ = kDefaultHighPercentile;
  std::optional<std::uint64_t> peaks_sequence_;
  bool log_bar_ = false;
  std::optional<QwtInterval> fixed_range_;
  QSize squared_for_;
  bool rescale_pending_ = false;  // the canvas size the zoom was last made square for  // the
                                  // colour bar's axis is logarithmic
};

}  // namespace livedrp::widgets
