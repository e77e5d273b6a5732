#pragma once
// Exporting a plot: its picture as PNG or SVG (Qwt's QwtPlotRenderer, what the plot shows, at its
// size on screen), and its data as CSV (plot_data.hpp), or, for the detector image, the frame as
// CSV or .npy (image_export.hpp). Files are written whole or not at all (QSaveFile): a failure
// leaves no file, and its reason names the file.
#include <optional>
#include <vector>

#include <QSize>
#include <QString>

class QwtPlot;

namespace livedrp::widgets {

enum class ExportFormat { Png, Svg, Csv, Npy };

// PNGs are rendered at twice the plot's size on screen (and say twice its dpi), so that they stay
// sharp printed or in a document at the size the plot had.
constexpr double kPngScale = 2.0;
// A plot never laid out (a dock not yet shown) is rendered at this size instead of its own.
constexpr QSize kMinExportSize(300, 200);
constexpr QSize kDefaultExportSize(800, 500);

QString formatSuffix(ExportFormat format);  // "png", "svg", "csv", "npy"
QString formatFilter(ExportFormat format);  // "PNG image (*.png)", for a file dialog
// The format a file name asks for by its suffix (any case); nullopt for another suffix.
std::optional<ExportFormat> formatForPath(const QString& path);
// What `plot` can be exported to: PNG and SVG always; CSV where it has data (plot_data.hpp) or is
// the detector image; NPY for the detector image only.
std::vector<ExportFormat> exportFormats(const QwtPlot& plot);
// The logical size a picture of `plot` is laid out at.
QSize exportSize(const QwtPlot& plot);

// Writes `plot` to `path` as `format`. nullopt when written; else why not ("cannot write
// /x/y.png: Permission denied", "the detector image has no frame to export yet"), nothing
// written.
std::optional<QString> exportPlot(QwtPlot& plot, const QString& path, ExportFormat format);

}  // namespace livedrp::widgets
