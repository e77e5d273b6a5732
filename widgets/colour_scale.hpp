#pragma once
// How the detector image turns values into colours: the colour maps (a few published palettes,
// each a 256-entry table built from its published stops), the scale (linear, logarithmic, or a
// percentile clip) and the range a scale takes from a frame. No widget here: the image view, its
// colour bar and the tests share these functions, so what is drawn and what is checked agree.
#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include <QColor>
#include <QRgb>
#include <QString>
#include <QStringList>

#include <qwt_color_map.h>
#include <qwt_interval.h>

namespace livedrp::widgets {

enum class ColourScale { Linear, Log, Percentile };
enum class ColourPalette { Grey, Viridis, Inferno, Magma };

QString colourScaleName(ColourScale scale);        // "linear", "log", "percentile"
QString colourPaletteName(ColourPalette palette);  // "grey", "viridis", ...
QStringList colourScaleNames();                    // in enum order, for combo boxes
QStringList colourPaletteNames();

// A palette sampled at 256 evenly spaced positions (linear interpolation between its stops).
using ColourTable = std::array<QRgb, 256>;
const ColourTable& colourTable(ColourPalette palette);
// The table entry for a position in [0, 1] (clamped): what a pixel at that fraction of the
// colour range is drawn with.
QRgb colourAtPosition(ColourPalette palette, double position);

// Percentiles of the percentile scale: the defaults clip the few hottest pixels (a Bragg peak,
// a hot pixel) and the coldest, so the background's structure shows.
inline constexpr double kDefaultLowPercentile = 1.0;
inline constexpr double kDefaultHighPercentile = 99.5;
// The percentile range is taken from at most this many finite values, evenly strided over the
// frame: 64k values place a percentile within ~0.01 % of the exact one, at a small fraction of
// the cost of a 2-Mpixel sort.
inline constexpr std::size_t kPercentileSample = 65'536;

// The colour range (z interval) of `values` for `scale`, over finite values only (NaN = gaps):
//   Linear      [min, max]
//   Log         [smallest positive, max]; invalid when no value is positive
//   Percentile  [the low_pct and high_pct percentiles] (nearest rank on the sample)
// A range of zero width is widened by 0.5 each way (a constant image still gets colours); an
// invalid interval means nothing can be shown.
QwtInterval colourRange(std::span<const float> values, ColourScale scale,
                        double low_pct = kDefaultLowPercentile,
                        double high_pct = kDefaultHighPercentile);

// Where `value` sits in `range` on `scale`'s axis, in [0, 1] (clamped); NaN for NaN. A log scale
// puts values <= 0 at 0.
double colourPosition(double value, const QwtInterval& range, ColourScale scale);

// The QwtColorMap of a palette and a scale: the spectrogram and the colour bar use one each.
// NaN is transparent (the canvas background shows through gaps).
class ImageColourMap : public QwtColorMap {
 public:
  ImageColourMap(ColourPalette palette, ColourScale scale);
  QRgb rgb(const QwtInterval& interval, double value) const override;
  uint colorIndex(int num_colors, const QwtInterval& interval, double value) const override;

 private:
  ColourPalette palette_;
  ColourScale scale_;
};

}  // namespace livedrp::widgets
