#include "widgets/colour_scale.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace livedrp::widgets {
namespace {

struct Stop {
  double position;
  QRgb rgb;
};

// Published stops: matplotlib's viridis, inferno and magma at 0, 1/4, 1/2, 3/4, 1 (their
// perceptually uniform tables sampled; linear interpolation between five stops stays within a
// few levels of the full tables), and a plain black-to-white grey.
const std::vector<Stop>& stopsOf(ColourPalette palette) {
  static const std::vector<Stop> grey{{0.0, qRgb(0, 0, 0)}, {1.0, qRgb(255, 255, 255)}};
  static const std::vector<Stop> viridis{{0.0, qRgb(0x44, 0x01, 0x54)},
                                         {0.25, qRgb(0x3b, 0x52, 0x8b)},
                                         {0.5, qRgb(0x21, 0x91, 0x8c)},
                                         {0.75, qRgb(0x5e, 0xc9, 0x62)},
                                         {1.0, qRgb(0xfd, 0xe7, 0x25)}};
  static const std::vector<Stop> inferno{{0.0, qRgb(0x00, 0x00, 0x04)},
                                         {0.25, qRgb(0x57, 0x10, 0x6e)},
                                         {0.5, qRgb(0xbc, 0x37, 0x54)},
                                         {0.75, qRgb(0xf9, 0x8e, 0x09)},
                                         {1.0, qRgb(0xfc, 0xff, 0xa4)}};
  static const std::vector<Stop> magma{{0.0, qRgb(0x00, 0x00, 0x04)},
                                       {0.25, qRgb(0x51, 0x12, 0x7c)},
                                       {0.5, qRgb(0xb7, 0x37, 0x79)},
                                       {0.75, qRgb(0xfc, 0x89, 0x61)},
                                       {1.0, qRgb(0xfc, 0xfd, 0xbf)}};
  switch (palette) {
    case ColourPalette::Grey:
      return grey;
    case ColourPalette::Viridis:
      return viridis;
    case ColourPalette::Inferno:
      return inferno;
    case ColourPalette::Magma:
      return magma;
  }
  return grey;
}

ColourTable buildTable(ColourPalette palette) {
  const std::vector<Stop>& stops = stopsOf(palette);
  ColourTable table{};
  for (std::size_t i = 0; i < table.size(); ++i) {
    const double position = double(i) / double(table.size() - 1);
    std::size_t upper = 1;
    while (upper + 1 < stops.size() && stops[upper].position < position) ++upper;
    const Stop& a = stops[upper - 1];
    const Stop& b = stops[upper];
    const double t = std::clamp((position - a.position) / (b.position - a.position), 0.0, 1.0);
    const auto mix = [t](int from, int to) { return int(std::lround(from + t * (to - from))); };
    table[i] = qRgb(mix(qRed(a.rgb), qRed(b.rgb)), mix(qGreen(a.rgb), qGreen(b.rgb)),
                    mix(qBlue(a.rgb), qBlue(b.rgb)));
  }
  return table;
}

std::size_t tableIndex(double position) {
  return std::size_t(std::lround(std::clamp(position, 0.0, 1.0) * 255.0));
}

QwtInterval widened(double low, double high) {
  if (!(low <= high)) return QwtInterval();
  if (low == high) return QwtInterval(low - 0.5, high + 0.5);
  return QwtInterval(low, high);
}

}  // namespace

QString colourScaleName(ColourScale scale) {
  switch (scale) {
    case ColourScale::Linear:
      return QStringLiteral("linear");
    case ColourScale::Log:
      return QStringLiteral("log");
    case ColourScale::Percentile:
      return QStringLiteral("percentile");
  }
  return {};
}

QString colourPaletteName(ColourPalette palette) {
  switch (palette) {
    case ColourPalette::Grey:
      return QStringLiteral("grey");
    case ColourPalette::Viridis:
      return QStringLiteral("viridis");
    case ColourPalette::Inferno:
      return QStringLiteral("inferno");
    case ColourPalette::Magma:
      return QStringLiteral("magma");
  }
  return {};
}

QStringList colourScaleNames() {
  return {colourScaleName(ColourScale::Linear), colourScaleName(ColourScale::Log),
          colourScaleName(ColourScale::Percentile)};
}

QStringList colourPaletteNames() {
  return {colourPaletteName(ColourPalette::Grey), colourPaletteName(ColourPalette::Viridis),
          colourPaletteName(ColourPalette::Inferno), colourPaletteName(ColourPalette::Magma)};
}

const ColourTable& colourTable(ColourPalette palette) {
  static const std::array<ColourTable, 4> tables{
      buildTable(ColourPalette::Grey), buildTable(ColourPalette::Viridis),
      buildTable(ColourPalette::Inferno), buildTable(ColourPalette::Magma)};
  return tables[std::size_t(palette)];
}

QRgb colourAtPosition(ColourPalette palette, double position) {
  return colourTable(palette)[tableIndex(position)];
}

QwtInterval colourRange(std::span<const float> values, ColourScale scale, double low_pct,
                        double high_pct) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (scale == ColourScale::Percentile) {
    const std::size_t stride = std::max<std::size_t>(1, values.size() / kPercentileSample);
    std::vector<float> sample;
    sample.reserve(std::min(values.size(), kPercentileSample + 1));
    for (std::size_t i = 0; i < values.size(); i += stride)
      if (std::isfinite(values[i])) sample.push_back(values[i]);
    if (sample.empty()) return QwtInterval();
    const auto rank = [&](double pct) {
      const double fraction = std::clamp(pct / 100.0, 0.0, 1.0);
      return std::size_t(std::lround(fraction * double(sample.size() - 1)));
    };
    const std::size_t low_rank = rank(low_pct), high_rank = rank(high_pct);
    std::nth_element(sample.begin(), sample.begin() + std::ptrdiff_t(high_rank), sample.end());
    const double high = sample[high_rank];
    // The low rank lies in the part before the high one, which nth_element left unordered.
    std::nth_element(sample.begin(), sample.begin() + std::ptrdiff_t(low_rank),
                     sample.begin() + std::ptrdiff_t(high_rank) + 1);
    return widened(sample[low_rank], high);
  }
  double low = kInf, high = -kInf;
  for (const float value : values) {
    if (!std::isfinite(value)) continue;
    if (scale == ColourScale::Log && !(value > 0)) continue;
    low = std::min(low, double(value));
    high = std::max(high, double(value));
  }
  if (scale == ColourScale::Log && low == high && low <= high)
    return QwtInterval(low / 10.0, high * 10.0);  // one decade each way: a log scale cannot go <= 0
  return widened(low, high);
}

double colourPosition(double value, const QwtInterval& range, ColourScale scale) {
  if (std::isnan(value) || !range.isValid()) return std::numeric_limits<double>::quiet_NaN();
  if (scale == ColourScale::Log) {
    if (!(value > 0) || !(range.minValue() > 0)) return 0.0;
    const double low = std::log10(range.minValue()), high = std::log10(range.maxValue());
    if (!(high > low)) return 0.0;
    return std::clamp((std::log10(value) - low) / (high - low), 0.0, 1.0);
  }
  if (!(range.width() > 0)) return 0.0;
  return std::clamp((value - range.minValue()) / range.width(), 0.0, 1.0);
}

ImageColourMap::ImageColourMap(ColourPalette palette, ColourScale scale)
    : QwtColorMap(QwtColorMap::RGB), palette_(palette), scale_(scale) {}

QRgb ImageColourMap::rgb(const QwtInterval& interval, double value) const {
  const double position = colourPosition(value, interval, scale_);
  if (std::isnan(position)) return 0u;  // transparent: the background shows
  return colourTable(palette_)[tableIndex(position)];
}

uint ImageColourMap::colorIndex(int num_colors, const QwtInterval& interval, double value) const {
  const double position = colourPosition(value, interval, scale_);
  if (std::isnan(position) || num_colors <= 1) return 0;
  return uint(std::lround(position * (num_colors - 1)));
}

}  // namespace livedrp::widgets
