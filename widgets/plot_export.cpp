#include "widgets/plot_export.hpp"

#include <QBuffer>
#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QSaveFile>
#include <QSvgGenerator>

#include <qwt_plot.h>
#include <qwt_plot_renderer.h>

#include "widgets/detector_image_plot.hpp"
#include "widgets/image_export.hpp"
#include "widgets/plot_data.hpp"

namespace livedrp::widgets {
namespace {

constexpr double kInchesPerMetre = 1.0 / 0.0254;

std::optional<QString> writeFile(const QString& path, const QByteArray& bytes) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly))
    return QObject::tr("cannot write %1: %2").arg(path, file.errorString());
  if (file.write(bytes) != bytes.size() || !file.commit())
    return QObject::tr("cannot write %1: %2").arg(path, file.errorString());
  return std::nullopt;
}

QByteArray renderPng(QwtPlot& plot, const QSize& size) {
  // The image says kPngScale times the plot's dpi; the renderer scales the plot's layout by the
  // ratio of the two, so fonts and lines keep their proportions at the larger size.
  QImage image(size * kPngScale, QImage::Format_ARGB32);
  image.setDotsPerMeterX(qRound(plot.logicalDpiX() * kPngScale * kInchesPerMetre));
  image.setDotsPerMeterY(qRound(plot.logicalDpiY() * kPngScale * kInchesPerMetre));
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    QwtPlotRenderer().render(&plot, &painter, QRectF(QPointF(), QSizeF(image.size())));
  }
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  image.save(&buffer, "PNG");
  return bytes;
}

QByteArray renderSvg(QwtPlot& plot, const QSize& size) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  QSvgGenerator generator;
  generator.setOutputDevice(&buffer);
  generator.setSize(size);
  generator.setViewBox(QRect(QPoint(), size));
  // At the plot's own dpi the renderer draws at scale 1: SVG units are screen pixels.
  generator.setResolution(plot.logicalDpiX());
  generator.setTitle(plot.objectName());
  generator.setDescription(QObject::tr("exported by livedrp"));
  {
    QPainter painter(&generator);
    QwtPlotRenderer().render(&plot, &painter, QRectF(QPointF(), QSizeF(size)));
  }
  return bytes;
}

std::optional<QByteArray> imageData(const DetectorImagePlot& plot, ExportFormat format) {
  const ImageFramePtr& frame = plot.rasterData()->frame();
  if (!frame) return std::nullopt;
  return format == ExportFormat::Npy ? imageNpy(*frame) : imageCsv(*frame);
}

}  // namespace

QString formatSuffix(ExportFormat format) {
  switch (format) {
    case ExportFormat::Png:
      return QStringLiteral("png");
    case ExportFormat::Svg:
      return QStringLiteral("svg");
    case ExportFormat::Csv:
      return QStringLiteral("csv");
    case ExportFormat::Npy:
      return QStringLiteral("npy");
  }
  return {};
}

QString formatFilter(ExportFormat format) {
  switch (format) {
    case ExportFormat::Png:
      return QObject::tr("PNG image (*.png)");
    case ExportFormat::Svg:
      return QObject::tr("SVG drawing (*.svg)");
    case ExportFormat::Csv:
      return QObject::tr("CSV data (*.csv)");
    case ExportFormat::Npy:
      return QObject::tr("NumPy array (*.npy)");
  }
  return {};
}

std::optional<ExportFormat> formatForPath(const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  for (const ExportFormat format :
       {ExportFormat::Png, ExportFormat::Svg, ExportFormat::Csv, ExportFormat::Npy})
    if (suffix == formatSuffix(format)) return format;
  return std::nullopt;
}

std::vector<ExportFormat> exportFormats(const QwtPlot& plot) {
  std::vector<ExportFormat> formats{ExportFormat::Png, ExportFormat::Svg};
  if (qobject_cast<const DetectorImagePlot*>(&plot)) {
    formats.push_back(ExportFormat::Csv);
    formats.push_back(ExportFormat::Npy);
  } else if (hasPlotTable(plot)) {
    formats.push_back(ExportFormat::Csv);
  }
  return formats;
}

QSize exportSize(const QwtPlot& plot) {
  const QSize size = plot.size();
  return size.width() >= kMinExportSize.width() && size.height() >= kMinExportSize.height()
             ? size
             : kDefaultExportSize;
}

std::optional<QString> exportPlot(QwtPlot& plot, const QString& path, ExportFormat format) {
  // Autoscaled axes follow the data now, even where the owner's coalesced replot is still due.
  plot.updateAxes();
  switch (format) {
    case ExportFormat::Png:
      return writeFile(path, renderPng(plot, exportSize(plot)));
    case ExportFormat::Svg:
      return writeFile(path, renderSvg(plot, exportSize(plot)));
    case ExportFormat::Csv:
    case ExportFormat::Npy:
      break;
  }
  if (const auto* image = qobject_cast<const DetectorImagePlot*>(&plot)) {
    const auto bytes = imageData(*image, format);
    if (!bytes) return QObject::tr("%1 not written: no detector image received yet").arg(path);
    return writeFile(path, *bytes);
  }
  if (format == ExportFormat::Npy)
    return QObject::tr("%1 not written: only the detector image exports to .npy").arg(path);
  const auto table = plotTable(plot);
  if (!table) return QObject::tr("%1 not written: this plot has no data to export").arg(path);
  return writeFile(path, csvText(*table));
}

}  // namespace livedrp::widgets
