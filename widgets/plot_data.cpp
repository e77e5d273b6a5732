#include "widgets/plot_data.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <qwt_plot.h>
#include <qwt_plot_curve.h>
#include <qwt_plot_histogram.h>
#include <qwt_plot_multi_barchart.h>
#include <qwt_text.h>

#include "widgets/detector_image_plot.hpp"
#include "widgets/profile_raster_data.hpp"
#include "widgets/profile_waterfall.hpp"
#include "widgets/radial_profile_plot.hpp"
#include "widgets/radial_unit_text.hpp"

namespace livedrp::widgets {
namespace {

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

QString axisText(const QwtPlot& plot, QwtAxisId axis) {
  return plot.axisTitle(axis).text();
}

QString sideText(QwtAxisId axis) {
  return axis == QwtAxis::YRight ? QObject::tr("right axis") : QObject::tr("left axis");
}

CsvTable profileTable(const RadialProfilePlot& plot) {
  CsvTable table;
  table.columns = {QStringLiteral("radial"), QStringLiteral("intensity_latest"),
                   QStringLiteral("intensity_average")};
  table.values.resize(3);
  if (!plot.hasProfile()) {
    table.notes << QObject::tr("livedrp radial profile: none received yet");
    return table;
  }
  const protocol::RadialProfile& profile = plot.profile();
  table.notes << QObject::tr(
                     "livedrp radial profile: latest event #%1 (pulse id %2), average of "
                     "%3 events (window %4)")
                     .arg(profile.sequence)
                     .arg(profile.pulse_id)
                     .arg(profile.average_events)
                     .arg(profile.average_window);
  table.notes << QObject::tr("unit: %1 (%2); intensity: mean per pixel of the bin")
                     .arg(radialUnitWireName(profile.unit), radialAxisTitle(profile.unit));
  table.notes << QObject::tr("nan: a bin without pixels");
  table.values[0] = profile.centres;
  table.values[1] = profile.latest;
  table.values[2] = profile.average;
  return table;
}

CsvTable waterfallTable(const ProfileWaterfall& plot) {
  const ProfileRasterData& raster = *plot.rasterData();
  CsvTable table;
  table.notes << QObject::tr(
                     "livedrp radial profile history: the latest event's profile of each "
                     "update, newest first")
              << QObject::tr("radial axis: %1; the columns after updates_ago are the bin centres")
                     .arg(axisText(plot, QwtAxis::XBottom))
              << QObject::tr("nan: a bin without pixels");
  table.columns << QStringLiteral("updates_ago");
  QByteArray name;
  for (const double centre : raster.centres()) {
    name.clear();
    appendNumber(name, centre);
    table.columns << QString::fromLatin1(name);
  }
  table.values.assign(raster.binCount() + 1, {});
  for (std::size_t age = 0; age < raster.rowCount(); ++age) {
    table.values[0].push_back(double(age));
    const std::vector<double>& row = raster.row(age);
    for (std::size_t bin = 0; bin < raster.binCount(); ++bin)
      table.values[bin + 1].push_back(bin < row.size() ? row[bin] : kMissing);
  }
  return table;
}

std::vector<const QwtPlotCurve*> visibleCurves(const QwtPlot& plot) {
  std::vector<const QwtPlotCurve*> curves;
  for (const QwtPlotItem* item : plot.itemList(QwtPlotItem::Rtti_PlotCurve))
    if (item->isVisible()) curves.push_back(static_cast<const QwtPlotCurve*>(item));
  return curves;
}

// One x column shared by every curve: the union of their x values. A strip chart's curves are
// sampled at the same times, so this is "time, one column per quantity"; where one curve has a
// point the other has not (the comparison's runs), its cell is nan.
CsvTable curvesTable(const QwtPlot& plot, const std::vector<const QwtPlotCurve*>& curves) {
  CsvTable table;
  table.columns << axisText(plot, curves.front()->xAxis());
  std::vector<double> xs;
  for (const QwtPlotCurve* curve : curves) {
    table.columns << curve->title().text();
    table.notes << QObject::tr("%1: %2 (%3)")
                       .arg(curve->title().text(), axisText(plot, curve->yAxis()),
                            sideText(curve->yAxis()));
    for (std::size_t i = 0; i < curve->dataSize(); ++i) xs.push_back(curve->sample(int(i)).x());
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  table.values.push_back(xs);
  for (const QwtPlotCurve* curve : curves) {
    std::vector<double> ys(xs.size(), kMissing);
    for (std::size_t i = 0; i < curve->dataSize(); ++i) {
      const QPointF point = curve->sample(int(i));
      const auto at = std::lower_bound(xs.begin(), xs.end(), point.x());
      // Several points of one curve at the same x (none of the window's curves has any): the
      // last one drawn wins.
      ys[std::size_t(at - xs.begin())] = point.y();
    }
    table.values.push_back(std::move(ys));
  }
  return table;
}

CsvTable histogramTable(const QwtPlot& plot, const QwtPlotHistogram& histogram) {
  CsvTable table;
  const QString x = axisText(plot, histogram.xAxis());
  table.columns << QObject::tr("%1 from").arg(x) << QObject::tr("%1 to").arg(x)
                << histogram.title().text();
  table.notes << QObject::tr("%1: %2").arg(histogram.title().text(),
                                           axisText(plot, histogram.yAxis()));
  table.values.resize(3);
  for (std::size_t i = 0; i < histogram.dataSize(); ++i) {
    const QwtIntervalSample bin = histogram.sample(int(i));
    table.values[0].push_back(bin.interval.minValue());
    table.values[1].push_back(bin.interval.maxValue());
    table.values[2].push_back(bin.value);
  }
  return table;
}

CsvTable barsTable(const QwtPlot& plot, const QwtPlotMultiBarChart& chart) {
  CsvTable table;
  table.columns << axisText(plot, chart.xAxis());
  const QList<QwtText> titles = chart.barTitles();
  for (const QwtText& title : titles) table.columns << title.text();
  table.notes << QObject::tr("%1: %2").arg(chart.title().text(), axisText(plot, chart.yAxis()));
  table.values.resize(std::size_t(titles.size()) + 1);
  for (std::size_t i = 0; i < chart.dataSize(); ++i) {
    const QwtSetSample sample = chart.sample(int(i));
    table.values[0].push_back(sample.value);
    for (qsizetype bar = 0; bar < titles.size(); ++bar)
      table.values[std::size_t(bar) + 1].push_back(bar < sample.set.size() ? sample.set[bar]
                                                                           : kMissing);
  }
  return table;
}

}  // namespace

std::optional<CsvTable> plotTable(const QwtPlot& plot) {
  if (qobject_cast<const DetectorImagePlot*>(&plot)) return std::nullopt;
  if (const auto* profile = qobject_cast<const RadialProfilePlot*>(&plot))
    return profileTable(*profile);
  if (const auto* waterfall = qobject_cast<const ProfileWaterfall*>(&plot))
    return waterfallTable(*waterfall);
  if (const auto curves = visibleCurves(plot); !curves.empty()) return curvesTable(plot, curves);
  for (const QwtPlotItem* item : plot.itemList(QwtPlotItem::Rtti_PlotHistogram))
    return histogramTable(plot, *static_cast<const QwtPlotHistogram*>(item));
  for (const QwtPlotItem* item : plot.itemList(QwtPlotItem::Rtti_PlotMultiBarChart))
    return barsTable(plot, *static_cast<const QwtPlotMultiBarChart*>(item));
  return std::nullopt;
}

bool hasPlotTable(const QwtPlot& plot) {
  if (qobject_cast<const DetectorImagePlot*>(&plot)) return false;
  if (qobject_cast<const RadialProfilePlot*>(&plot) || qobject_cast<const ProfileWaterfall*>(&plot))
    return true;
  return !visibleCurves(plot).empty() ||
         !plot.itemList(QwtPlotItem::Rtti_PlotHistogram).isEmpty() ||
         !plot.itemList(QwtPlotItem::Rtti_PlotMultiBarChart).isEmpty();
}

}  // namespace livedrp::widgets
