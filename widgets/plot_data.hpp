#pragma once
// What a plot's CSV export holds: the numbers the plot draws, as a table (csv_table.hpp).
//  - The radial profile: radial, intensity_latest, intensity_average, one row per bin (bins
//    without pixels nan, so the rows are the protocol's bins whatever the log scale leaves out),
//    with the unit and the events in a note.
//  - Its waterfall: one row per profile kept, newest first (updates_ago 0), one column per bin.
//  - Any other plot by its items: curves share one x column (the union of their x values, nan
//    where a curve has none; strip charts: run time, then one column per quantity), histograms
//    give bin edges and values, stacked bars one column per bar title.
// The detector image is not a table here: plot_export writes it whole (CSV rows or .npy).
#include <optional>

#include "widgets/csv_table.hpp"

class QwtPlot;

namespace livedrp::widgets {

// nullopt for a plot with nothing tabular (the detector image, a plot of no known item).
std::optional<CsvTable> plotTable(const QwtPlot& plot);
// Whether plotTable(plot) has a table, without building it (a menu asks on every right click).
bool hasPlotTable(const QwtPlot& plot);

}  // namespace livedrp::widgets
