#include "widgets/detector_pixel_text.hpp"

#include <QCoreApplication>

namespace livedrp::widgets {

namespace {
QString tr(const char* text) {
  return QCoreApplication::translate("DetectorPixelText", text);
}
}  // namespace

QString detectorPixelText(const DetectorPixel& pixel) {
  return tr("segment %1, ss %2, fs %3 (raw pixel %4)")
      .arg(pixel.segment)
      .arg(pixel.ss)
      .arg(pixel.fs)
      .arg(pixel.index);
}

QString unknownSegmentText() {
  return tr("segment unknown (the image came without its assembly)");
}

QString peakPixelText(const protocol::PeakRow& peak, const protocol::ImageFrame* image) {
  if (!image || !image->assembly) return tr("segment %1").arg(peak.segment);
  // Slab coordinates stack the segments along the slow scan.
  const double ss = double(peak.ss) - double(peak.segment) * image->assembly->grid.rows;
  return tr("segment %1, ss %2, fs %3")
      .arg(peak.segment)
      .arg(ss, 0, 'f', 1)
      .arg(double(peak.fs), 0, 'f', 1);
}

}  // namespace livedrp::widgets
